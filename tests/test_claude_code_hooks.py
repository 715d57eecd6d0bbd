"""Hook payload parsing, hook output, fail-open behaviour (in process and as a whole process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from claude_session import Session
from conftest import invoke
from ctxhealth.errors import InputError
from ctxhealth.integrations.claude_code.assess import tool_counts
from ctxhealth.integrations.claude_code.hooks import run_hook
from ctxhealth.integrations.claude_code.payloads import (
    CompactTrigger,
    HookEvent,
    SessionSource,
    find_event,
    hook_output,
    parse_hook_payload,
)
from ctxhealth.integrations.claude_code.tailstate import SessionCounters, load_counters

FIXTURES = Path(__file__).parent / "fixtures"


def _fixture(name: str, transcript: Path | str = "/nowhere/t.jsonl") -> bytes:
    return (FIXTURES / name).read_text().replace("TRANSCRIPT", str(transcript)).encode()


def test_parse_each_hook_fixture() -> None:
    pre = parse_hook_payload(_fixture("claude-hook-pre-compact.json"))
    assert pre.event is HookEvent.PRE_COMPACT and pre.trigger is CompactTrigger.AUTO
    start = parse_hook_payload(_fixture("claude-hook-session-start-compact.json"))
    assert start.event is HookEvent.SESSION_START and start.source is SessionSource.COMPACT
    prompt = parse_hook_payload(_fixture("claude-hook-user-prompt-submit.json"))
    assert prompt.prompt == "Now add a test for the parser."
    ok = parse_hook_payload(_fixture("claude-hook-post-tool-use.json"))
    assert ok.tool_name == "Bash" and ok.tool_input == {
        "command": "make test",
        "description": "Run the tests",
    }
    assert not ok.failed and ok.tool_use_id == "toolu_01AAAAAAAAAAAAAAAAAAAAAA"
    bad = parse_hook_payload(_fixture("claude-hook-post-tool-use-failure.json"))
    assert bad.failed and bad.error == "Command exited with non-zero status code 2"
    stop = parse_hook_payload(_fixture("claude-hook-stop.json"))
    assert stop.event is HookEvent.STOP and stop.stop_hook_active is False
    assert all(not p.warnings for p in (pre, start, prompt, ok, bad, stop))


def test_parse_is_lenient_about_types_and_names() -> None:
    p = parse_hook_payload(
        b'{"hook_event_name": "PostToolUse", "tool_name": 7, "tool_response": {"success": false}}'
    )
    assert p.tool_name is None and p.warnings and p.failed
    q = parse_hook_payload(b'{"source": "weird"}', HookEvent.SESSION_START)
    assert q.source is SessionSource.UNKNOWN and q.event is HookEvent.SESSION_START
    r = parse_hook_payload(b'{"hook_event_name": "PostToolUseFailure", "error_message": "boom"}')
    assert r.failed and r.error == "boom"
    assert find_event("pre-compact") is HookEvent.PRE_COMPACT and find_event("nope") is None


@pytest.mark.parametrize("raw", [b"", b"   ", b"not json", b"[1, 2]", b'"text"'])
def test_parse_rejects_non_objects(raw: bytes) -> None:
    with pytest.raises(InputError):
        parse_hook_payload(raw)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_parse_never_raises_anything_else(raw: bytes) -> None:
    try:
        payload = parse_hook_payload(raw)
    except InputError as exc:
        assert exc.hint  # a clear error, with what to do
    else:
        assert isinstance(payload.warnings, tuple)


def test_hook_output_shapes() -> None:
    out = json.loads(hook_output(HookEvent.SESSION_START, context="hello"))
    assert out == {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "hello"}}
    assert hook_output(HookEvent.PRE_COMPACT, context="ignored") == ""  # PreCompact takes no context
    assert json.loads(hook_output(HookEvent.STOP, user_message="hi")) == {"systemMessage": "hi"}
    assert hook_output(HookEvent.USER_PROMPT_SUBMIT) == ""


def test_counters_round_trip_and_tolerate_bad_data() -> None:
    c = SessionCounters("/t.jsonl")
    c.observed.append("r:a")
    c.mark_noticed("spiral")
    assert c.noticed("spiral") and c.given_at("spiral") == (0, 0)
    again = SessionCounters.from_dict(json.loads(json.dumps(c.to_dict())), "/t.jsonl")
    assert again.to_dict() == c.to_dict() and again.noticed("spiral")
    odd = SessionCounters.from_dict({"observed": "many", "offset": 5, "bogus": 1}, "/t.jsonl")
    assert odd.observed == [] and odd.offset == 5
    assert SessionCounters.from_dict([1, 2]).observed == []
    weird = SessionCounters.from_dict({"notices": {"spiral": 3, "warn": "x"}}, "/t.jsonl")
    assert not weird.noticed("spiral") and weird.given_at("warn") is None  # an older shape: not given


def _said(out: str) -> str:
    return json.loads(out)["hookSpecificOutput"]["additionalContext"] if out else ""


def test_doom_loop_when_the_monitor_sees_the_same_call_repeated(tmp_path: Path) -> None:
    s = Session(tmp_path)
    outputs = [_said(s.call("Read", {"file_path": "/a.py"}, "x = 1")) for _ in range(4)]
    # the third identical call is the monitor's second repeat (repeated_calls fires at 2): once
    assert outputs[0] == outputs[1] == "" and "Doom loop" in outputs[2] and outputs[3] == ""
    s.hook("Stop")
    counters = load_counters(s.home, str(s.transcript))
    assert counters is not None and tool_counts(counters).calls == 4 and tool_counts(counters).repeats == 3


def test_failure_spiral_told_once_per_episode(tmp_path: Path) -> None:
    s = Session(tmp_path)
    said = [_said(s.call("Bash", {"command": f"make {i}"}, "exit 1", failed=True)) for i in range(6)]
    spiral = [text for text in said if "Failure spiral" in text]
    assert len(spiral) == 1 and "Failure spiral" in said[2]


# -- fail open ---------------------------------------------------------------------------------


def test_run_hook_fails_open_on_garbage(tmp_path: Path) -> None:
    result = run_hook("PostToolUse", b"\x00\xff garbage", home=str(tmp_path / "home"))
    assert result.stdout == "" and result.stderr.startswith("ctxhealth: hook PostToolUse skipped:")
    assert "\n" not in result.stderr


def test_run_hook_fails_open_on_unknown_event(tmp_path: Path) -> None:
    result = run_hook("Bogus", b"{}", home=str(tmp_path / "home"))
    assert result.stdout == "" and "unknown hook event" in result.stderr


def test_missing_transcript_is_not_an_error_for_tool_hooks(tmp_path: Path) -> None:
    payload = json.dumps(
        {"hook_event_name": "UserPromptSubmit", "transcript_path": str(tmp_path / "missing.jsonl")}
    )
    result = run_hook("UserPromptSubmit", payload.encode(), home=str(tmp_path / "home"))
    assert result.stderr == ""


def _run_cli(args: list[str], stdin: bytes, home: Path) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "CTXHEALTH_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", *args], input=stdin, capture_output=True, env=env, timeout=60, check=False
    )


def test_process_garbage_stdin_exits_zero_with_one_line(tmp_path: Path) -> None:
    done = _run_cli(["ctxhealth.cli.hook", "PreCompact"], b"{{{ not json", tmp_path / "home")
    assert done.returncode == 0 and done.stdout == b""
    assert len(done.stderr.decode().strip().splitlines()) == 1


def test_process_missing_transcript_precompact_exits_zero(tmp_path: Path) -> None:
    payload = _fixture("claude-hook-pre-compact.json", tmp_path / "gone.jsonl")
    done = _run_cli(["ctxhealth.cli.hook", "PreCompact"], payload, tmp_path / "home")
    assert done.returncode == 0 and done.stderr == b""
    # The person is told why no checkpoint was saved.
    assert json.loads(done.stdout)["systemMessage"] == (
        "ctxhealth: no checkpoint saved (the transcript is missing)"
    )


def test_process_unwritable_home_exits_zero(tmp_path: Path) -> None:
    home = tmp_path / "home-is-a-file"  # unwritable for anyone, root included
    home.write_text("not a directory")
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("")
    payload = _fixture("claude-hook-post-tool-use.json", transcript)
    done = _run_cli(["ctxhealth.cli.hook", "PostToolUse"], payload, home)
    assert done.returncode == 0
    assert len(done.stderr.decode().strip().splitlines()) == 1


def test_unwritable_home_in_process_fails_open(tmp_path: Path) -> None:
    home = tmp_path / "home-is-a-file"
    home.write_text("not a directory")
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("")
    result = run_hook("PostToolUse", _fixture("claude-hook-post-tool-use.json", transcript), home=str(home))
    assert result.stdout == "" and result.stderr.startswith("ctxhealth: hook PostToolUse skipped:")


def test_click_command_is_registered() -> None:

    result = invoke(["hook", "--help"])
    assert result.exit_code == 0 and "PreCompact" in result.output


def test_parallel_tool_hooks_count_each_call_once(tmp_path: Path) -> None:
    # Six parallel calls whose results are already in the transcript: each hook reads them (or finds
    # them read) and none is counted again from its payload.
    s = Session(tmp_path)
    for i in range(6):
        s.call("Read", {"file_path": f"/f{i}.py"}, f"file {i}")  # (one at a time, to write the lines)
    home = tmp_path / "parallel-home"
    env = {**os.environ, "CTXHEALTH_HOME": str(home)}
    procs = []
    for i in range(6):
        payload = {
            "hook_event_name": "PostToolUse",
            "transcript_path": str(s.transcript),
            "tool_name": "Read",
            "tool_input": {"file_path": f"/f{i}.py"},
            "tool_use_id": f"toolu_{1 + 2 * i}",  # (the ids Session gave them)
        }
        proc = subprocess.Popen(
            [sys.executable, "-m", "ctxhealth.cli.hook", "PostToolUse"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(payload).encode())
        proc.stdin.close()
        procs.append(proc)
    for proc in procs:
        assert proc.wait(timeout=60) == 0
        assert proc.stderr is not None and proc.stderr.read() == b""
    counters = load_counters(str(home), str(s.transcript))
    assert counters is not None and tool_counts(counters).calls == 6


def test_click_hook_and_statusline_commands_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:

    monkeypatch.setenv("CTXHEALTH_HOME", str(tmp_path / "home"))
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("")
    done = invoke(
        ["hook", "PostToolUseFailure"],
        input=_fixture("claude-hook-post-tool-use-failure.json", transcript),
    )
    assert done.exit_code == 0
    counters = load_counters(str(tmp_path / "home"), str(transcript))
    assert counters is not None and any("PostToolUseFailure" in e[0] for e in counters.pending_events)
    status = invoke(
        ["statusline", "--no-color"], input=_fixture("claude-statusline-current.json", transcript)
    )
    assert status.exit_code == 0 and status.output.startswith("● orange")
