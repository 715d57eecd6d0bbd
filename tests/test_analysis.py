"""One session analysed once (``ctxhealth.analysis``): each turn record is the Monitor's assessment
at that model response, and the session's figures fold the records."""

from __future__ import annotations

from pathlib import Path

from ctxhealth.accounting.fill import account_session
from ctxhealth.analysis import TurnRecord, analyse_session
from ctxhealth.monitor import Monitor
from ctxhealth.sources import read_session

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "claude-code-session.jsonl"


def test_each_turn_record_is_the_monitors_assessment_at_that_response() -> None:
    session = read_session(EXAMPLE)
    analysis = analyse_session(session)
    account = account_session(session)
    turn_of = {t.message_index: t for t in account.turns}
    expected = [
        (
            turn_of[a.index].turn,
            a.index,
            a.zone.value,
            a.base_zone.value,
            a.action.value,
            a.rule.value,
            round(a.pressure, 4),
            "\n".join(a.reasons),
            a.healthy,
        )
        for a in Monitor(session.model).iter_session(session)
        if a.index in turn_of
    ]
    got = [
        (t.turn, t.message_index, t.zone, t.base_zone, t.action, t.rule, t.pressure, t.reasons, t.healthy)
        for t in analysis.rows.turns
    ]
    assert got == expected and len(got) == len(account.turns) > 0
    assert [t.fill for t in analysis.rows.turns] == [t.tokens for t in account.turns]


def test_the_sessions_figures_fold_its_turn_records() -> None:
    analysis = analyse_session(read_session(EXAMPLE))
    turns: list[TurnRecord] = analysis.rows.turns
    r = analysis.rows
    assert r.prompt_tokens == sum(t.fill for t in turns)
    assert r.max_pressure == max(t.pressure for t in turns)
    assert r.decisions == [t for t in turns if t.action != "continue"]
    first = next((t for t in turns if not t.healthy), None)
    assert r.first_unhealthy_turn == (None if first is None else first.turn)
    assert r.waste_tokens == (0 if first is None else sum(t.fill for t in turns if t.turn >= first.turn))
    row = analysis.session_row("k", 0)
    assert (row.path, row.turns, row.action) == ("k", len(turns), analysis.final.action.value)
