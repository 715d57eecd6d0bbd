"""One session analysed once (``ctxhealth.analysis``): each turn record is the Monitor's assessment
at that model response, and the session's figures fold the records."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxhealth.accounting.fill import account_session
from ctxhealth.analysis import TurnRecord, analyse_session
from ctxhealth.analysis.session import _span
from ctxhealth.analysis.turns import parse_time
from ctxhealth.model import Message, Role
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


def test_a_session_naming_no_model_is_accounted_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A log that names no model (tau-bench): the monitor is given the analysis's account instead of
    accounting the session again, and every turn record is the one it gives accounting on its own."""
    from msgspec.structs import replace

    import ctxhealth.analysis.session as analysis_session

    session = replace(read_session(EXAMPLE), model=None)
    expected = [
        (a.index, a.zone, a.action, a.rule, a.pressure, a.reasons, a.fill, a.model, a.risk)
        for a in Monitor(None).iter_session(session)
    ]
    calls: list[str] = []

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append("account")
        return account_session(*args, **kwargs)

    monkeypatch.setattr(analysis_session, "account_session", counted)
    monkeypatch.setattr("ctxhealth.accounting.fill.account_session", counted)
    analysis = analyse_session(session)
    assert calls == ["account"]
    turn_at = {t.message_index for t in analysis.account.turns}
    got = {t.message_index: (t.zone, t.action, t.rule, t.pressure, t.reasons) for t in analysis.rows.turns}
    want = {
        i: (z.value, act.value, rule.value, round(p, 4), "\n".join(r))
        for i, z, act, rule, p, r, _, _, _ in expected
        if i in turn_at
    }
    assert got == want and len(got) > 0
    final = analysis.final
    index, zone, action, _, _, _, fill, model, risk = expected[-1]
    assert (final.index, final.zone, final.action, final.fill, final.model, final.risk) == (
        index,
        zone,
        action,
        fill,
        model,
        risk,
    )


def _span_definition(messages: Any) -> tuple[Any, Any]:
    """The session's span as defined: every timestamp read in order, the first and the last readable."""
    first = last = None
    for m in messages:
        if m.timestamp:
            t = parse_time(m.timestamp)
            if t is not None:
                if first is None:
                    first = t
                last = t
    return first, last


_STAMPS = (
    st.none()
    | st.sampled_from(["", "not a time", "2026-13-01T00:00:00Z"])
    | st.datetimes().map(lambda d: d.isoformat())
    | st.datetimes(timezones=st.timezones()).map(lambda d: d.isoformat())
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_STAMPS, max_size=8))
def test_the_span_read_from_both_ends_is_the_span_read_in_order(stamps: list[str | None]) -> None:
    messages = [Message(Role.USER, (), timestamp=s) for s in stamps]
    assert _span(messages) == _span_definition(messages)


def test_a_tool_calls_input_chars_is_the_one_size_of_a_tool_input() -> None:
    """``input_chars`` of a tool-call row is the size the running fill counts for the input
    (``tokens.input_chars``): the characters of its JSON text, not its UTF-8 bytes, a string input's
    length, and ``str`` where JSON fails (an int past 64 bits)."""
    import orjson

    from ctxhealth.accounting.tokens import input_chars
    from ctxhealth.model import Format, Session, ToolCall

    inputs: list[Any] = [{"command": "ls -la", "n": 3}, "plain text é", {"big": 2**70}, {"path": "café/é.py"}]
    blocks = tuple(ToolCall(id=f"c{i}", name="Bash", input=v) for i, v in enumerate(inputs))
    session = Session(
        path="s.jsonl", format=Format.CLAUDE_CODE, messages=(Message(role=Role.ASSISTANT, blocks=blocks),)
    )
    rows = analyse_session(session, health=False).rows.tool_calls
    expected = [
        len(orjson.dumps(inputs[0])),
        len(inputs[1]),
        len(str(inputs[2])),
        len(orjson.dumps(inputs[3]).decode()),
    ]
    assert expected[3] < len(orjson.dumps(inputs[3]))  # characters, not bytes
    assert [input_chars(v) for v in inputs] == expected
    assert [r.input_chars for r in rows] == expected
