"""The Monitor's two steps: :meth:`Monitor.update` (the cheap per-message step) and
:meth:`Monitor.assess` (the assessment after the latest message) give exactly what ``observe`` gives,
wherever the caller assesses; and a whole session is assessed once, not once per message."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ctxhealth.model import Message, Role, TextBlock, ToolCall, ToolResult, Usage
from ctxhealth.monitor import Monitor
from ctxhealth.policy import Action
from ctxhealth.sources import read_sessions


def _reading(m: Monitor, a: Any) -> tuple[dict[str, Any], dict[str, float]]:
    return a.to_dict(), m.features()


def _messages() -> list[Message]:
    msgs = [
        Message(Role.SYSTEM, (TextBlock("You are a coding agent."),)),
        Message(Role.USER, (TextBlock("Fix the date parser so ISO offsets round-trip."),)),
    ]
    for t in range(30):
        msgs.append(
            Message(
                Role.ASSISTANT,
                (
                    TextBlock(f"Turn {t}: running the tests again."),
                    ToolCall(f"c{t}", "bash", {"command": "pytest"}),
                ),
                usage=Usage(input_tokens=5_000 + 6_000 * t, output_tokens=40),
                model="claude-sonnet-4",
            )
        )
        failed = t % 3 != 0
        msgs.append(
            Message(Role.USER, (ToolResult(f"c{t}", "ValueError: bad" if failed else "ok", is_error=failed),))
        )
    return msgs


def test_update_then_assess_is_observe_at_every_message_with_recoveries_between() -> None:
    msgs = _messages()
    one, two = Monitor(), Monitor()
    for i, message in enumerate(msgs):
        a = one.observe(message)
        two.update(message)
        b = two.assess()
        assert _reading(one, a) == _reading(two, b), f"message {i}"
        assert two.assess() is b  # nothing changed: the same assessment
        if a.action is Action.RESTART:
            one.record_recovery(Action.RESTART)
            two.record_recovery(Action.RESTART)
            # a recovery changes the counters: the next assessment is a new one
            assert _reading(one, one.assess()) == _reading(two, two.assess())
    assert one.counters.restarts >= 1  # the cooldown after a restart was exercised


def test_assessing_only_at_some_messages_gives_the_same_answers_there() -> None:
    msgs = _messages()
    every, some = Monitor(), Monitor()
    for i, message in enumerate(msgs):
        a = every.observe(message)
        some.update(message)
        if message.role is Role.ASSISTANT or i == len(msgs) - 1:
            assert _reading(every, a) == _reading(some, some.assess()), f"message {i}"


def test_a_whole_session_is_assessed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = Monitor._assess

    def counting(self: Monitor, *args: Any, **kwargs: Any) -> Any:
        calls.append(args[0])
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Monitor, "_assess", counting)
    from ctxhealth.model import Format, Session

    msgs = _messages()
    session = Session(path="s", format=Format.OPENAI_CHAT, messages=tuple(msgs), model="claude-sonnet-4")
    final = Monitor().observe_session(session)
    assert calls == [len(msgs) - 1]
    monkeypatch.setattr(Monitor, "_assess", real)
    expected = list(Monitor().iter_session(session))[-1]  # assessed at every message
    assert final.to_dict() == expected.to_dict()


def test_update_at_each_message_assess_at_each_turn_on_real_sessions(claude_code_data: Path) -> None:
    for session in read_sessions([str(claude_code_data)]):
        every, some = Monitor(), Monitor()
        whole = list(every.iter_session(session))
        readings = [a.to_dict() for a in whole]
        for index in some.update_session(session):
            if session.messages[index].role is Role.ASSISTANT:
                assert some.assess().to_dict() == readings[index], (session.path, index)
        if whole:
            assert some.assess().to_dict() == readings[-1]
            assert Monitor().observe_session(session).to_dict() == readings[-1]


def test_a_long_reply_is_read_only_where_a_detector_looks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Drift reads the last ``drift_window_chars`` of output and the indicators the first 2,000
    characters: a long reply's whole text is folded into words only when the hedge count needs it."""
    import ctxhealth.signals.events as events
    import ctxhealth.signals.text as text

    folded: list[int] = []
    real = text.fold

    def recording(value: str) -> bytes:
        folded.append(len(value))
        return real(value)

    monkeypatch.setattr(events, "fold", recording)
    monkeypatch.setattr(text, "fold", recording)
    reply = "The parser reads the offsets and the tests cover each case again. " * 800
    msgs = [
        Message(Role.USER, (TextBlock("Fix the date parser so ISO offsets round-trip."),)),
        Message(Role.ASSISTANT, (TextBlock(reply),), usage=Usage(input_tokens=9_000, output_tokens=900)),
    ]
    m = Monitor("claude-sonnet-4", track_hedges=False)
    for message in msgs:
        m.update(message)
    window = m.profile.drift_window_chars
    assert folded and max(folded) <= window  # the tail only
    folded.clear()
    hedged = Monitor("claude-sonnet-4", track_hedges=True)
    for message in msgs:
        hedged.update(message)
    assert max(folded) == len(reply)  # the hedge count reads every word
    assert m.assess().signals["drift"] == hedged.assess().signals["drift"]  # the same reading
