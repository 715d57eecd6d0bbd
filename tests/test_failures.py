"""One definition of a failed tool call: every counter (check, the Monitor, fleet, watch, the hooks)
counts with :func:`ctxhealth.failures.is_failure`, so no two screens contradict each other."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import invoke
from ctxhealth.failures import declined, flagged, is_failure, looks_failed
from ctxhealth.model import ToolResult

TRACEBACK = "Traceback (most recent call last):\n  File \"run.py\", line 3, in <module>\nKeyError: 'x'"


def _spiral_chat(path: Path, n: int = 6) -> Path:
    """An OpenAI chat log whose tool results are tracebacks without any error flag or exit code."""
    messages: list[dict[str, object]] = [
        {"role": "system", "content": "You are a coding assistant."},
        {"role": "user", "content": "Make run.py work."},
    ]
    for i in range(n):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "shell", "arguments": '{"cmd": "x"}'}}
        usage = {"prompt_tokens": 400 + 50 * i, "completion_tokens": 10, "total_tokens": 410 + 50 * i}
        messages.append({"role": "assistant", "content": None, "tool_calls": [call], "usage": usage})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": TRACEBACK})
    path.write_text(json.dumps({"model": "gpt-4o-2024-08-06", "messages": messages}))
    return path


def test_the_definition() -> None:
    assert is_failure(ToolResult("t", "ok", is_error=True)) and flagged(ToolResult("t", "ok", is_error=True))
    assert not is_failure(ToolResult("t", TRACEBACK, exit_code=0))  # the stated exit code wins
    assert is_failure(ToolResult("t", "done", exit_code=2))
    assert is_failure(ToolResult("t", TRACEBACK)) and looks_failed(ToolResult("t", TRACEBACK))
    assert not flagged(ToolResult("t", TRACEBACK))
    assert not is_failure(ToolResult("t", "all 12 tests passed"))
    no = ToolResult("t", "The user doesn't want to proceed with this tool use.", is_error=True)
    assert declined(no) and is_failure(no)  # counted (the agent got nothing), but declined


def test_check_counts_the_failures_its_spiral_names(tmp_path: Path) -> None:
    # check used to print "tools 6 calls, 0 errors" on the same screen as "failure spiral: 100% of
    # the last 6 tool calls failed": the tool count knew only the error flag.
    log = _spiral_chat(tmp_path / "spiral.json")
    result = invoke(["check", "--json", str(log)])
    report = json.loads(result.output)
    assert report["tool_calls"] == 6 and report["tool_errors"] == 6, report
    text = invoke(["check", str(log)]).output
    assert "6 calls, 6 errors" in text


def test_a_hook_judges_a_call_as_the_transcript_does(tmp_path: Path) -> None:
    # PostToolUse judges a call before the transcript has its result, the monitor the transcript's
    # result afterwards: both by the one definition (a pipeline that exited 0 with "command not
    # found", no error flag), so the streak notice and the saved counts agree.
    from claude_session import Session
    from ctxhealth.integrations.claude_code.assess import tool_counts
    from ctxhealth.integrations.claude_code.tailstate import load_counters

    s = Session(tmp_path)
    said = [
        s.call(
            "Bash", {"command": f"gcc-12 x{i}.c | tee log"}, "/bin/bash: line 1: gcc-12: command not found"
        )
        for i in range(3)
    ]
    assert ["consecutive tool failures" in out for out in said] == [False, False, True]
    s.hook("Stop")
    counters = load_counters(s.home, str(s.transcript))
    assert counters is not None
    assert (tool_counts(counters).calls, tool_counts(counters).failed) == (3, 3)


DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "claude-code"


def test_the_hooks_and_check_count_the_same_calls_on_real_sessions(tmp_path: Path) -> None:
    # The status line / watch count the main thread's calls (from the hooks' tail); check counts
    # every thread and says which part is the sub-agents'. With those labels they agree.
    import pytest

    from ctxhealth.integrations.claude_code.assess import tool_counts
    from ctxhealth.integrations.claude_code.tail import read_tail
    from ctxhealth.integrations.claude_code.tailstate import SessionCounters

    sessions = sorted(DATA.rglob("*.jsonl")) if DATA.is_dir() else []
    if not sessions:
        pytest.skip("../shared/data/claude-code is absent")
    labelled = 0
    for path in sessions:
        counters = SessionCounters(str(path))
        read_tail(counters, str(path))
        result = invoke(["check", "--json", str(path)])
        report = json.loads(result.output)
        main_calls = report["tool_calls"] - report["subagent_tool_calls"]
        main_errors = report["tool_errors"] - report["subagent_tool_errors"]
        # the hooks count finished calls (a result arrived); check counts calls made, so a call the
        # session ended on, without a result, is one more in check (session f6108699)
        tools = tool_counts(counters)  # the session monitor's
        assert tools.failed == main_errors, path.name
        assert 0 <= main_calls - tools.calls <= 1, path.name
        labelled += report["subagent_tool_calls"] > 0
    assert labelled >= 1  # at least one real session has sub-agent calls, and check says so
