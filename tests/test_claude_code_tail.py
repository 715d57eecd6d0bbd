"""Reading only the new tail of a transcript; notices once per episode; the re-anchor after compaction."""

from __future__ import annotations

import json
from pathlib import Path

from ctxhealth.accounting.registry import ModelRegistry
from ctxhealth.integrations.claude_code.assess import tool_counts
from ctxhealth.integrations.claude_code.hooks import reanchor_after_compaction, run_hook
from ctxhealth.integrations.claude_code.tail import read_tail
from ctxhealth.integrations.claude_code.tailstate import SessionCounters, load_counters
from ctxhealth.policy.profile import default_profile

INSTRUCTION = "Fix the parser bug in src/parse.py so that nested brackets parse correctly"


def _user(n: int, text: str) -> str:
    return json.dumps(
        {"type": "user", "uuid": f"u{n}", "sessionId": "s1", "message": {"role": "user", "content": text}}
    )


def _assistant(n: int, text: str, fill: int) -> str:
    usage = {"input_tokens": 10, "cache_read_input_tokens": fill - 10, "output_tokens": 7}
    message = {
        "id": f"m{n}",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": [{"type": "text", "text": text}],
        "usage": usage,
    }
    return json.dumps({"type": "assistant", "uuid": f"a{n}", "sessionId": "s1", "message": message})


def test_partial_last_line_waits_for_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    first = _user(0, INSTRUCTION) + "\n" + _assistant(1, "Reading the parser.", 1000) + "\n"
    second = _assistant(2, "Found it.", 2000) + "\n"
    path.write_text(first + second[:25])
    c = SessionCounters(str(path))
    read_tail(c, str(path))
    assert c.offset == len(first.encode()) and c.turns == 1 and c.fill == 1000
    assert c.instruction == INSTRUCTION
    with path.open("a") as handle:
        handle.write(second[25:])
    assert len(read_tail(c, str(path))) == 1
    assert c.turns == 2 and c.fill == 2000 and c.offset == path.stat().st_size
    assert read_tail(c, str(path)) == []  # nothing new


def test_rewritten_transcript_starts_over(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(
        "\n".join([_user(0, INSTRUCTION), *(_assistant(i, "step", 1000 * i) for i in range(1, 6))]) + "\n"
    )
    c = SessionCounters(str(path))
    read_tail(c, str(path))
    assert c.turns == 5
    path.write_text(_user(0, "Another task entirely") + "\n" + _assistant(1, "ok", 500) + "\n")
    read_tail(c, str(path))
    assert c.turns == 1 and c.fill == 500 and c.instruction == "Another task entirely"


def test_cold_read_of_a_huge_transcript_is_bounded(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    lines = [_user(0, INSTRUCTION)] + [_assistant(i, "x" * 200, 1000 + i) for i in range(1, 3001)]
    path.write_text("\n".join(lines) + "\n")
    c = SessionCounters(str(path))
    read_tail(c, str(path), max_bytes=64 * 1024)
    assert c.instruction == INSTRUCTION  # kept from the head
    assert c.offset == path.stat().st_size and c.fill == 4000  # the latest turn, from the tail
    assert c.turns < 1000  # the middle was skipped


def _fire(event: str, home: Path, transcript: Path, **fields: object) -> str:
    payload = {"hook_event_name": event, "session_id": "s1", "transcript_path": str(transcript), **fields}
    result = run_hook(event, json.dumps(payload).encode(), home=str(home))
    assert result.stderr == "", result.stderr
    return result.stdout


def test_reanchor_given_once_while_in_context_then_after_a_compaction(tmp_path: Path) -> None:
    home, path = tmp_path / "home", tmp_path / "t.jsonl"
    drifted = "The weather in Lisbon was lovely; tram 28 climbs through Alfama past many cafés."
    # a whole drift window (2,000 characters) of output off the request: drift is read
    path.write_text(_user(0, INSTRUCTION) + "\n" + _assistant(1, drifted * 25, 100_000) + "\n")
    first = _fire("UserPromptSubmit", home, path, prompt="go on")
    context = json.loads(first)["hookSpecificOutput"]["additionalContext"]
    assert context.startswith("[RE-ANCHOR -- Context drift detected]") and INSTRUCTION in context
    with path.open("a") as handle:
        handle.write(_assistant(2, drifted, 101_000) + "\n")
    assert _fire("UserPromptSubmit", home, path, prompt="and?") == ""  # still in context: said already
    _fire("SessionStart", home, path, source="compact")  # a new episode
    with path.open("a") as handle:
        handle.write(_assistant(3, drifted, 102_000) + "\n")
    again = _fire("UserPromptSubmit", home, path, prompt="more")
    assert "[RE-ANCHOR" in json.loads(again)["hookSpecificOutput"]["additionalContext"]


def test_session_start_compact_without_precompact_builds_a_checkpoint(tmp_path: Path) -> None:
    home, path = tmp_path / "home", tmp_path / "t.jsonl"
    path.write_text(_user(0, INSTRUCTION) + "\n" + _assistant(1, "Reading src/parse.py now.", 5000) + "\n")
    out = _fire("SessionStart", home, path, source="compact")
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert "[CONTEXT CHECKPOINT -- PREVIOUS PROGRESS]" in context and INSTRUCTION in context
    counters = load_counters(str(home), str(path))
    assert counters is not None and counters.checkpoint_json and Path(counters.checkpoint_json).exists()


def test_resume_is_not_a_compaction(tmp_path: Path) -> None:
    # A plain --continue: the conversation is intact, so nothing is given back (it used to get
    # "Context was compacted ..." and a checkpoint pasted over an intact 199K conversation).
    home, path = tmp_path / "home", tmp_path / "t.jsonl"
    path.write_text(_user(0, INSTRUCTION) + "\n" + _assistant(1, "Reading src/parse.py now.", 5000) + "\n")
    assert _fire("SessionStart", home, path, source="resume", seconds_since_last_response=40) == ""
    counters = load_counters(str(home), str(path))
    assert counters is not None and counters.turns == 1 and counters.checkpoint_json is None
    assert counters.episodes == 0  # notices already given stay given: they are in the conversation


def test_resume_after_the_cache_expired_says_what_it_costs(tmp_path: Path) -> None:
    home, path = tmp_path / "home", tmp_path / "t.jsonl"
    path.write_text(_user(0, INSTRUCTION) + "\n" + _assistant(1, "Reading src/parse.py now.", 5000) + "\n")
    out = _fire(
        "SessionStart",
        home,
        path,
        source="resume",
        seconds_since_last_response=1800,
        context_tokens=150_000,
        prompt_cache_likely_expired=True,
        estimated_cache_write_usd=0.56,
    )
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert "after 30 min" in context and "150,000 tokens" in context and "$0.56" in context
    assert "compacted" not in context and "CHECKPOINT" not in context


def test_subagent_tool_calls_are_not_the_main_sessions(tmp_path: Path) -> None:
    home, path = tmp_path / "home", tmp_path / "t.jsonl"
    path.write_text(_user(0, INSTRUCTION) + "\n")
    for i in range(6):  # six failures inside a sub-agent: no spiral for the main session
        _fire(
            "PostToolUseFailure",
            home,
            path,
            tool_name="Bash",
            tool_input={"command": f"false {i}"},
            tool_use_id=f"toolu_sub_{i}",
            error="exit 1",
            agent_id="a1b2",
            agent_type="general-purpose",
        )
    with path.open("a") as handle:  # the main thread's own call, as Claude Code writes it
        handle.write(_assistant_call(1, "Listing.", 5000, "ls") + "\n" + _result(1, "a.py") + "\n")
    _fire("PostToolUse", home, path, tool_name="Bash", tool_input={"command": "ls"}, tool_use_id="t1")
    counters = load_counters(str(home), str(path))
    assert counters is not None
    assert (tool_counts(counters).calls, tool_counts(counters).failed) == (1, 0)


def test_new_events_are_accepted(tmp_path: Path) -> None:
    home, path = tmp_path / "home", tmp_path / "t.jsonl"
    path.write_text(_user(0, INSTRUCTION) + "\n")
    assert _fire("PostCompact", home, path, trigger="manual", compact_summary="The user asked ...") == ""
    sub = tmp_path / "agent-a1.jsonl"
    stop = {"agent_id": "a1", "agent_type": "x", "agent_transcript_path": str(sub)}
    assert _fire("SubagentStop", home, path, **stop) == ""
    assert _fire("SessionEnd", home, path, reason="prompt_input_exit") == ""


def test_stop_waits_for_the_last_line(tmp_path: Path) -> None:
    # Stop can fire before Claude Code wrote the last assistant line: the hook waits for the line
    # the payload names (``last_assistant_message``) and reads it.
    import threading
    import time

    home, path = tmp_path / "home", tmp_path / "t.jsonl"
    path.write_text(_user(0, INSTRUCTION) + "\n" + _assistant(1, "Reading src/parse.py now.", 5000) + "\n")
    _fire("Stop", home, path)
    last = "All tests pass; the nested-bracket case is fixed."

    def late_write() -> None:
        time.sleep(0.1)
        with path.open("a") as handle:
            handle.write(_assistant(2, last, 6000) + "\n")

    writer = threading.Thread(target=late_write)
    writer.start()
    _fire("Stop", home, path, last_assistant_message=last)
    writer.join()
    counters = load_counters(str(home), str(path))
    assert counters is not None and counters.turns == 2 and counters.fill == 6000


def test_session_start_startup_says_nothing(tmp_path: Path) -> None:
    home, path = tmp_path / "home", tmp_path / "t.jsonl"
    path.write_text(_user(0, INSTRUCTION) + "\n")
    assert _fire("SessionStart", home, path, source="startup") == ""


def test_reanchor_after_compaction_text_order() -> None:
    c = SessionCounters("/t.jsonl")
    c.instruction = INSTRUCTION
    c.checkpoint_text = "[CONTEXT CHECKPOINT -- PREVIOUS PROGRESS]\nOriginal task: x\n[END CHECKPOINT]"
    text = reanchor_after_compaction(c)
    assert (
        text.index("[CONTEXT CHECKPOINT")
        < text.index("ORIGINAL REQUEST (verbatim):")
        < text.index(INSTRUCTION)
    )


def test_restart_advice_comes_with_a_checkpoint(tmp_path: Path) -> None:
    home, path = tmp_path / "home", tmp_path / "t.jsonl"
    path.write_text(
        _user(0, INSTRUCTION)
        + "\n"
        + _assistant(1, "Parsing nested brackets in src/parse.py.", 185_000)
        + "\n"
    )
    out = _fire("UserPromptSubmit", home, path, prompt="continue")
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert context.startswith("[ctxhealth] Context is degraded") and INSTRUCTION in context
    counters = load_counters(str(home), str(path))
    assert counters is not None and counters.checkpoint_json is not None
    assert counters.checkpoint_json in context and Path(counters.checkpoint_json).exists()


def _assistant_call(n: int, text: str, fill: int, command: str) -> str:
    usage = {"input_tokens": 10, "cache_read_input_tokens": fill - 10, "output_tokens": 7}
    content = [
        {"type": "text", "text": text},
        {"type": "tool_use", "id": f"t{n}", "name": "Bash", "input": {"command": command}},
    ]
    message = {"id": f"m{n}", "role": "assistant", "model": "claude-sonnet-4-5-20250929", "content": content}
    return json.dumps(
        {"type": "assistant", "uuid": f"a{n}", "sessionId": "s1", "message": {**message, "usage": usage}}
    )


def _result(n: int, text: str) -> str:
    content = [{"type": "tool_result", "tool_use_id": f"t{n}", "content": text}]
    return json.dumps(
        {"type": "user", "uuid": f"r{n}", "sessionId": "s1", "message": {"role": "user", "content": content}}
    )


def test_hook_decision_comes_from_the_monitor_indicators_included(tmp_path: Path) -> None:
    """Low fill, no tool failure: only the monitor's early-warning indicators (a request for context
    already given, a read of a deleted file) can make this a warning, and raise the status line's zone."""
    from ctxhealth.integrations.claude_code.statusline import render_status

    home, path = tmp_path / "home", tmp_path / "t.jsonl"
    lines = [
        _user(0, INSTRUCTION),
        _assistant_call(1, "Removing the old parser module first.", 5_000, "rm src/old_parse.py"),
        _result(1, ""),
        _assistant_call(
            2, "Could you please provide the original task again?", 6_000, "cat src/old_parse.py"
        ),
        _result(2, "done"),
    ]
    path.write_text("\n".join(lines) + "\n")
    out = _fire("UserPromptSubmit", home, path, prompt="go on")
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert context.startswith("[ctxhealth] Context health warning.")
    assert "early-warning indicators" in context
    counters = load_counters(str(home), str(path))
    assert counters is not None and counters.assessment is not None and counters.monitor is not None
    assert counters.assessment["action"] == "warn" and counters.assessment["base_zone"] == "green"
    assert {"missing_context", "stale_references"} <= set(counters.assessment["fired"])
    status = json.dumps({"session_id": "s1", "transcript_path": str(path)})
    assert render_status(status, home=str(home), color=False).startswith("● yellow")


def test_damaged_monitor_state_starts_a_fresh_monitor(tmp_path: Path) -> None:
    from ctxhealth.integrations.claude_code.monitoring import observe_messages
    from ctxhealth.sources.claude_code import ClaudeCodeTail

    path = tmp_path / "t.jsonl"
    # a whole drift window of output (2,000 characters), so the assessment has a drift reading
    path.write_text(
        _user(0, INSTRUCTION) + "\n" + _assistant(1, "Reading src/parse.py now. " * 80, 5000) + "\n"
    )
    c = SessionCounters(str(path))
    good = {"kind": "ctxhealth.monitor", "version": 1, "model": "claude-sonnet-4-5", "model_fixed": True}
    c.monitor = {**good, "state": {"drift": {"$x": {"_words": 3}}}}
    messages = ClaudeCodeTail(str(path)).feed(path.read_bytes())
    last = observe_messages(c, messages)
    assert last is not None and last.index == 1 and last.fill == 5000
    assert c.monitor is not None and c.monitor["kind"] == "ctxhealth.monitor"
    assert c.assessment is not None and c.assessment["drift"] is not None


def test_secrets_in_the_conversation_stay_out_of_the_saved_monitor(tmp_path: Path) -> None:
    home, path = tmp_path / "home", tmp_path / "t.jsonl"
    secret = "sk-ant-api03-" + "Q" * 90
    path.write_text(
        _user(0, f"{INSTRUCTION}; the key is {secret}")
        + "\n"
        + _assistant(1, f"Using {secret} to call the API.", 5000)
        + "\n"
    )
    _fire("UserPromptSubmit", home, path, prompt="go on")
    counters = load_counters(str(home), str(path))
    assert counters is not None and counters.monitor is not None
    saved = json.dumps(counters.to_dict())
    assert "QQQQQQQQ" not in saved and "[REDACTED:" in json.dumps(counters.monitor)


def test_the_window_the_status_line_states_is_the_monitors_window(tmp_path: Path) -> None:
    """One ModelInfo per session: after the status line stated a 1M window, the hooks' monitor
    computes pressure and zones against it, and the counters' fill is the monitor's."""
    from ctxhealth.integrations.claude_code.tail import resolve_thresholds

    path = tmp_path / "t.jsonl"
    path.write_text(_user(0, INSTRUCTION) + "\n" + _assistant(1, "Reading.", 100_000) + "\n")
    c = SessionCounters(str(path))
    read_tail(c, str(path))
    assert c.thresholds is not None and c.thresholds["window"] == 200_000
    resolve_thresholds(c, window=1_000_000)  # what the status line does with context_window_size
    with path.open("a") as handle:
        handle.write(_assistant(2, "Found it.", 150_000) + "\n")
    read_tail(c, str(path))
    assert c.thresholds["window"] == 1_000_000  # kept by the hook's own refresh
    assert c.assessment is not None and c.fill == c.assessment["fill"] == 150_000
    # against 200K, capacity (150K of 167K usable) would be the pressure; against 1M, quality is,
    # with the full tier's hard limit scaled for the 1M window
    info = ModelRegistry.default().lookup(c.model).with_window(1_000_000, usable=False)
    hard = default_profile().zones(info).hard_limit
    assert hard > 180_000
    assert c.assessment["pressure"] == round(150_000 / hard, 4)
