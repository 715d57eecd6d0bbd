"""A checkpoint spends the budget it is given, in the spec's priority order, and is built in one pass
(linear work, a bound for callers with a time budget)."""

from __future__ import annotations

from pathlib import Path

import pytest

import ctxhealth.recovery.digest as digest_module
from ctxhealth.model import Format, Message, Role, Session, TextBlock, ToolCall, ToolResult
from ctxhealth.recovery.budget import total_tokens
from ctxhealth.recovery.checkpoint import build_checkpoint, render_text
from ctxhealth.recovery.digest import digest
from ctxhealth.recovery.restart import restart

FIRST = "Set up the build for the sensor firmware and make the unit tests pass on the host."
CURRENT = "Now find why the calibration tables in src/cal are loaded twice at boot and fix it."


def read(i: int, path: str) -> Message:
    return Message(Role.ASSISTANT, (ToolCall(f"r{i}", "Read", {"file_path": path}),))


def result(i: int, text: str = "contents", error: bool = False, prefix: str = "r") -> Message:
    return Message(Role.USER, (ToolResult(f"{prefix}{i}", text, is_error=error),))


def goal_session(files: int = 30) -> Session:
    messages = [
        Message(Role.USER, (TextBlock(FIRST),)),
        Message(Role.ASSISTANT, (ToolCall("e0", "Edit", {"file_path": "/fw/Makefile", "old_string": "a"}),)),
        result(0, "ok", prefix="e"),
        Message(Role.USER, (TextBlock(CURRENT),)),
    ]
    for i in range(files):
        messages += [read(i, f"/fw/src/cal/table_{i:02d}.c"), result(i)]
    for i in range(12):
        text = f"I chose to cache table {i} because the loader {i} runs before the scheduler starts."
        messages.append(Message(Role.ASSISTANT, (TextBlock(text),)))
    return Session("s", Format.ANTHROPIC_MESSAGES, tuple(messages))


def test_files_read_for_the_current_goal_come_first_most_recent_first() -> None:
    cp = build_checkpoint(goal_session(), budget_tokens=2_000)
    assert cp.files[0] == "/fw/src/cal/table_29.c"
    assert cp.files[:30] == tuple(f"/fw/src/cal/table_{i:02d}.c" for i in range(29, -1, -1))
    assert cp.files[30] == "/fw/Makefile"  # edited earlier, for the first request


def test_a_larger_budget_is_spent_in_priority_order() -> None:
    small, large = (build_checkpoint(goal_session(), budget_tokens=b) for b in (500, 2_000))
    assert small.tokens <= 500 < large.tokens <= 2_000
    assert len(large.files) > len(small.files) and set(small.files) <= set(large.files)
    assert set(small.decisions) <= set(large.decisions)


def test_restart_with_a_budget_uses_most_of_it() -> None:
    out, report = restart(goal_session(100), budget_tokens=1_000)
    assert 850 <= report.tokens_after == total_tokens(out.messages) <= 1_000
    assert "table_99.c" in out.messages[-1].text
    # a session with less to say than the budget says all of it
    out, report = restart(goal_session(30), budget_tokens=2_000)
    assert all(f"table_{i:02d}.c" in out.messages[-1].text for i in range(30))


F67 = "-home-kenth56-vsla/f67ab274-e83b-41ac-ac85-77488d6b5c28.jsonl"


def test_restart_on_a_real_session_spends_the_budget(claude_code_data: Path) -> None:
    from ctxhealth.sources import read_session

    session = read_session(claude_code_data / F67)
    _, report = restart(session, budget_tokens=2_000)
    assert 1_700 <= report.tokens_after <= 2_000  # 532 before the checkpoint spent its budget


def failing_session(failures: int, successes: int) -> Session:
    """``failures`` distinct failing commands, then ``successes`` successful unrelated ones."""
    messages: list[Message] = [Message(Role.USER, (TextBlock("Make the build green again please."),))]
    n = 0
    for i in range(failures):
        n += 1
        messages += [
            Message(Role.ASSISTANT, (ToolCall(f"c{n}", "Bash", {"command": f"make target{i}"}),)),
            Message(Role.USER, (ToolResult(f"c{n}", f"make: *** [target{i}] Error 2", is_error=True),)),
        ]
    for i in range(successes):
        n += 1
        messages += [
            Message(Role.ASSISTANT, (ToolCall(f"c{n}", "Bash", {"command": f"ls dir{i}"}),)),
            Message(Role.USER, (ToolResult(f"c{n}", "ok"),)),
        ]
    return Session("s", Format.ANTHROPIC_MESSAGES, tuple(messages))


def test_resolving_errors_is_linear_in_the_results(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = 0
    real = digest_module.call_target

    def counting(call: ToolCall) -> str:
        nonlocal calls
        calls += 1
        return real(call)

    monkeypatch.setattr(digest_module, "call_target", counting)
    d = digest(failing_session(200, 400))
    assert len(d.errors) == 200 and not any(e.resolved for e in d.errors)
    assert calls <= 3 * 600  # a join of every failure with every later result takes ~100,000


def test_an_error_is_resolved_only_by_a_later_success_of_the_same_tool_and_target() -> None:
    msgs = [
        Message(Role.USER, (TextBlock("Fix the flaky parser tests in tests/test_parser.py"),)),
        Message(Role.ASSISTANT, (ToolCall("a", "Bash", {"command": "pytest tests"}),)),
        Message(Role.USER, (ToolResult("a", "1 failed", is_error=True),)),
        Message(Role.ASSISTANT, (ToolCall("b", "Bash", {"command": "pytest tests"}),)),
        Message(Role.USER, (ToolResult("b", "all passed"),)),
        Message(Role.ASSISTANT, (ToolCall("c", "Bash", {"command": "make docs"}),)),
        Message(Role.USER, (ToolResult("c", "Error: sphinx missing", is_error=True),)),
        Message(Role.ASSISTANT, (ToolCall("d", "Bash", {"command": "pytest tests"}),)),
        Message(Role.USER, (ToolResult("d", "all passed"),)),
    ]
    d = digest(Session("s", Format.ANTHROPIC_MESSAGES, tuple(msgs)))
    assert [(e.target, e.resolved) for e in d.errors] == [("pytest tests", True), ("make docs", False)]


def test_max_chars_bounds_what_is_read_but_keeps_the_requests() -> None:
    session = failing_session(300, 300)
    whole = digest(session)
    bounded = digest(session, max_chars=2_000)
    assert bounded.first_message > len(session.messages) - 200
    assert bounded.requests == whole.requests and bounded.instruction == whole.instruction
    assert bounded.tool_result_count < 100 < whole.tool_result_count
    assert len(whole.errors) == 300 and bounded.errors == ()  # the failures are all in the older part
    cp = build_checkpoint(session, max_chars=2_000)
    assert cp.tokens <= 500 and "Make the build green" in render_text(cp)


def test_the_written_checkpoint_takes_the_bound_too(tmp_path: Path) -> None:
    from ctxhealth.state.checkpoint import checkpoint_document

    session = failing_session(300, 300)
    whole, _ = checkpoint_document(session, budget_tokens=500, created_at="t")
    bounded, _ = checkpoint_document(session, budget_tokens=500, created_at="t", max_chars=2_000)
    assert whole["checkpoint"]["errors"] and not bounded["checkpoint"]["errors"]
    assert bounded["checkpoint"]["instruction"] == "Make the build green again please."
