"""One fill account: ``check``'s fill, the fill behind pressure and the window the zones use agree.

On every real session in the shared corpus, and on a Codex rollout that states its own window: the
report's peak is the monitor's ``peak_fill``, its current fill is the fill in the pressure signal,
and its usable window is the denominator of capacity pressure. A monitor fed message by message
(as hooks feed it) gets the same fill per turn as the whole-session account when every turn is
reported.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from conftest import FIXTURES, SHARED_DATA, invoke
from ctxhealth.accounting.fill import account_session
from ctxhealth.accounting.types import FillSource
from ctxhealth.model import Role
from ctxhealth.monitor import Monitor
from ctxhealth.sources import read_session, read_sessions

_PRESSURE = re.compile(r"capacity [0-9.]+ = (\d+)/(\d+)\)")


def _reports(*paths: Path) -> list[dict[str, Any]]:
    result = invoke(["check", "--json", *map(str, paths)])
    assert result.exit_code in (0, 1), result.output
    lines = [json.loads(line) for line in result.output.splitlines() if line.startswith("{")]
    return [r for r in lines if "skipped" not in r]


def _assert_one_account(report: dict[str, Any]) -> None:
    where = report["path"]
    fill = report["fill"]
    assert fill["peak"] == report["signals"]["peak_fill"]["value"], where
    match = _PRESSURE.search(report["signals"]["pressure"]["detail"])
    assert match is not None, report["signals"]["pressure"]["detail"]
    behind_pressure, usable = int(match.group(1)), int(match.group(2))
    assert behind_pressure == fill["current"], where
    assert usable == report["usable_window"], where


@pytest.mark.parametrize("corpus", ["claude-code", "mini-swe-agent", "openhands"])
def test_every_real_session_has_one_fill_account(corpus: str) -> None:
    root = SHARED_DATA / corpus
    if not root.is_dir():
        pytest.skip(f"real transcripts not found at {root}")
    reports = _reports(root)
    assert len(reports) >= 10
    for report in reports:
        _assert_one_account(report)


def test_the_window_a_codex_log_states_is_the_window_of_the_zones() -> None:
    path = FIXTURES / "codex-rollout-0.60.jsonl"
    (report,) = _reports(path)
    _assert_one_account(report)
    assert report["window"] == report["usable_window"] == 258_400
    session = read_session(path)
    monitor = Monitor()
    monitor.observe_session(session)
    assert monitor.info.window == 258_400
    assert monitor.pressure.usable == 258_400


def test_a_monitor_fed_message_by_message_keeps_the_same_account(claude_code_data: Path) -> None:
    for session in read_sessions([claude_code_data]):
        account = account_session(session)
        if account.source is not FillSource.REPORTED:
            continue
        monitor = Monitor(session.model)  # no format given: the reader marked the stand-ins
        turn_fills = []
        for message in session.messages:
            before = monitor.account.turns
            a = monitor.observe(message)
            if monitor.account.turns != before:
                assert message.role is Role.ASSISTANT
                turn_fills.append(a.fill)
        assert turn_fills == [t.tokens for t in account.turns], session.path
        assert monitor.pressure.peak == account.peak


def test_assess_uses_the_window_the_log_states() -> None:
    from ctxhealth.monitor import assess

    session = read_session(FIXTURES / "codex-rollout-0.60.jsonl")
    assessment = assess(session)
    assert assessment.fill == 7_420 and assessment.fill_source is FillSource.REPORTED
    capacity = assessment.signals["window_zone"].detail
    assert "of usable 258400" in capacity


def test_a_stand_in_is_no_turn_whatever_the_format() -> None:
    """Accounting reads the reader's mark (``Message.synthetic``), not the log format: a stand-in
    in an OpenAI-chat session is no more a turn than one in a Claude Code log, for the whole-session
    account and for the account fed message by message."""
    from msgspec.structs import replace

    from ctxhealth.accounting.running import RunningFill
    from ctxhealth.model import Format, Message, Session, TextBlock, Usage

    def reply(rid: str, fill: int) -> Message:
        return Message(
            Role.ASSISTANT, (TextBlock("ok"),), response_id=rid, model="gpt-4o", usage=Usage(fill, 5)
        )

    stand_in = Message(Role.ASSISTANT, (TextBlock("API Error: overloaded"),), synthetic=True)
    messages = (
        Message(Role.USER, (TextBlock("go"),)),
        reply("r1", 1_000),
        stand_in,
        Message(Role.USER, (TextBlock("again"),)),
        reply("r2", 1_200),
    )
    for fmt in (Format.OPENAI_CHAT, Format.CLAUDE_CODE):
        session = Session(path="s", format=fmt, messages=messages, model="gpt-4o")
        account = account_session(session)
        assert [t.message_index for t in account.turns] == [1, 4], fmt
        running = RunningFill()
        assert [running.observe(m) for m in messages] == [False, True, False, False, True]
    # the same message unmarked is a turn in any format (an estimated one)
    plain = replace(stand_in, synthetic=False)
    session = Session(path="s", format=Format.CLAUDE_CODE, messages=(*messages[:2], plain), model="gpt-4o")
    assert len(account_session(session).turns) == 2
