"""One hook engine for Claude Code, Codex CLI and Gemini CLI: installing into each agent's own hook
file, event names and output as each agent has them, a checkpoint before compaction given back after.

Payloads are shaped as the CLIs send them (Codex: ``codex-rs/hooks/schema/generated/*.input.schema.json``;
Gemini: ``docs/hooks/reference.md`` and ``packages/core/src/hooks/types.ts``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from ctxhealth.integrations.claude_code.agents import Agent, adapt_output, engine_event
from ctxhealth.integrations.claude_code.assess import tool_counts
from ctxhealth.integrations.claude_code.doctor import CheckStatus, agent_checks
from ctxhealth.integrations.claude_code.hooks import run_hook
from ctxhealth.integrations.claude_code.install import (
    TARGETS,
    apply_plan,
    find_installation,
    plan_install,
    plan_uninstall,
)
from ctxhealth.integrations.claude_code.payloads import HookEvent, hook_output
from ctxhealth.integrations.claude_code.tailstate import load_counters
from ctxhealth.monitor import Monitor

FIXTURES = Path(__file__).parent / "fixtures"
PY = "/usr/bin/python3"


def _codex(event: str, transcript: Path, **fields: object) -> dict[str, object]:
    return {
        "session_id": "0199f3c2-7a41-7d10-b2e5-93c0d8a61f27",
        "transcript_path": str(transcript),
        "cwd": "/home/dev/weather-cli",
        "hook_event_name": event,
        "model": "gpt-5-codex",
        "turn_id": "t1",
        **fields,
    }


def _gemini(event: str, transcript: Path, **fields: object) -> dict[str, object]:
    return {
        "session_id": "5d1c3f0e",
        "transcript_path": str(transcript),
        "cwd": "/home/dev/proj",
        "hook_event_name": event,
        "timestamp": "2026-11-30T10:00:00.000Z",
        **fields,
    }


def _run(agent: Agent, event: str, payload: dict[str, object], home: Path) -> str:
    result = run_hook(event, json.dumps(payload).encode(), home=str(home), agent=agent)
    assert result.stderr == "", result.stderr
    return result.stdout


# -- installing -------------------------------------------------------------------------------


def test_install_codex_writes_hooks_json_idempotently_and_uninstall_restores(tmp_path: Path) -> None:
    codex = tmp_path / ".codex"
    codex.mkdir()
    mine = {
        "hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./log.sh"}]}]}
    }
    original = json.dumps(mine).encode()
    (codex / "hooks.json").write_bytes(original)
    plan = plan_install(codex, python=PY, agent=Agent.CODEX)
    assert plan.changed and "--agent codex PostToolUse" in plan.diff()
    apply_plan(plan)
    data = json.loads((codex / "hooks.json").read_text())
    assert data["hooks"]["PostToolUse"][0]["hooks"][0]["command"] == "./log.sh"  # the user's own stays
    events, _ = find_installation(codex, Agent.CODEX)
    assert set(events) == {e for e, _, _ in TARGETS[Agent.CODEX].events}
    start = next(g for g in data["hooks"]["SessionStart"] if "ctxhealth" in json.dumps(g))
    assert start["matcher"] == "compact|resume" and start["hooks"][0]["timeout"] == 30  # seconds
    assert not plan_install(codex, python=PY, agent=Agent.CODEX).changed  # idempotent
    apply_plan(plan_uninstall(codex, Agent.CODEX))
    assert (codex / "hooks.json").read_bytes() == original


def test_install_gemini_keeps_the_users_hooks_and_settings(tmp_path: Path) -> None:
    gemini = tmp_path / ".gemini"
    gemini.mkdir()
    mine = {
        "theme": "GitHub",
        "hooks": {
            "AfterTool": [{"matcher": "write_file", "hooks": [{"type": "command", "command": "./x.sh"}]}]
        },
    }
    (gemini / "settings.json").write_text(json.dumps(mine))
    apply_plan(plan_install(gemini, python=PY, agent=Agent.GEMINI))
    data = json.loads((gemini / "settings.json").read_text())
    assert data["theme"] == "GitHub" and data["hooks"]["AfterTool"][0]["matcher"] == "write_file"
    ours = data["hooks"]["BeforeAgent"][0]["hooks"][0]
    assert ours["command"].endswith("--agent gemini BeforeAgent") and ours["timeout"] == 30_000  # ms
    assert ours["name"] == "ctxhealth-BeforeAgent" and "statusLine" not in data
    assert next(c.status for c in agent_checks(Agent.GEMINI, gemini)) is CheckStatus.OK
    # the user edits the file afterwards: uninstall takes out only ours
    data["theme"] = "Dracula"
    (gemini / "settings.json").write_text(json.dumps(data))
    apply_plan(plan_uninstall(gemini, Agent.GEMINI))
    left = json.loads((gemini / "settings.json").read_text())
    assert left == {**mine, "theme": "Dracula"}


def test_install_writes_through_a_symlinked_settings_file(tmp_path: Path) -> None:
    dotfiles, gemini = tmp_path / "dotfiles", tmp_path / ".gemini"
    dotfiles.mkdir()
    gemini.mkdir()
    (dotfiles / "gemini-settings.json").write_text('{"theme": "x"}')
    (gemini / "settings.json").symlink_to(dotfiles / "gemini-settings.json")
    apply_plan(plan_install(gemini, python=PY, agent=Agent.GEMINI))
    assert (gemini / "settings.json").is_symlink()  # the link stays a link
    assert "ctxhealth" in (dotfiles / "gemini-settings.json").read_text()
    apply_plan(plan_uninstall(gemini, Agent.GEMINI))
    assert (gemini / "settings.json").is_symlink()
    assert json.loads((dotfiles / "gemini-settings.json").read_text()) == {"theme": "x"}


def test_doctor_says_when_codex_hooks_are_switched_off(tmp_path: Path) -> None:
    codex = tmp_path / ".codex"
    codex.mkdir()
    apply_plan(plan_install(codex, python=PY, agent=Agent.CODEX))
    (codex / "config.toml").write_text("[features]\ncodex_hooks = false\n")
    checks = {c.name: c for c in agent_checks(Agent.CODEX, codex)}
    assert checks["codex hooks"].status is CheckStatus.OK
    assert checks["codex hooks enabled"].status is CheckStatus.WARN


# -- adapters ---------------------------------------------------------------------------------


def test_event_names_and_outputs_per_agent() -> None:
    assert engine_event(Agent.GEMINI, "BeforeAgent") is HookEvent.USER_PROMPT_SUBMIT
    assert engine_event(Agent.GEMINI, "PreCompress") is HookEvent.PRE_COMPACT
    assert engine_event(Agent.GEMINI, "BeforeModel") is None  # not answered
    assert engine_event(Agent.CODEX, "PostCompact") is HookEvent.POST_COMPACT
    out = hook_output(HookEvent.USER_PROMPT_SUBMIT, context="be brief", user_message="hi")
    gemini = json.loads(
        adapt_output(Agent.GEMINI, out, event=HookEvent.USER_PROMPT_SUBMIT, asked="BeforeAgent")
    )
    assert gemini == {
        "hookSpecificOutput": {"hookEventName": "BeforeAgent", "additionalContext": "be brief"},
        "systemMessage": "hi",
    }
    assert adapt_output(Agent.CLAUDE_CODE, out, event=HookEvent.USER_PROMPT_SUBMIT) == out
    # PreCompact output has no additionalContext in Codex's schema (additionalProperties: false)
    pre = hook_output(HookEvent.PRE_COMPACT, user_message="saved")
    assert json.loads(adapt_output(Agent.CODEX, pre, event=HookEvent.PRE_COMPACT)) == {
        "systemMessage": "saved"
    }


# -- the engine on each agent's payloads ------------------------------------------------------


def test_codex_hooks_read_the_rollout_and_checkpoint_before_compaction(tmp_path: Path) -> None:
    home, rollout = tmp_path / "home", tmp_path / "rollout.jsonl"
    shutil.copy(FIXTURES / "codex-rollout.jsonl", rollout)
    _run(Agent.CODEX, "UserPromptSubmit", _codex("UserPromptSubmit", rollout, prompt="go on"), home)
    counters = load_counters(str(home), str(rollout))
    assert counters is not None and counters.turns > 0 and counters.fill > 0  # read by the Codex reader
    assert "KeyError" in counters.instruction or "forecast" in counters.instruction
    pre = _run(Agent.CODEX, "PreCompact", _codex("PreCompact", rollout, trigger="auto"), home)
    assert "checkpoint saved" in json.loads(pre)["systemMessage"]
    out = _run(Agent.CODEX, "SessionStart", _codex("SessionStart", rollout, source="compact"), home)
    given = json.loads(out)["hookSpecificOutput"]
    assert given["hookEventName"] == "SessionStart" and "[CONTEXT CHECKPOINT" in given["additionalContext"]
    assert _run(Agent.CODEX, "SessionStart", _codex("SessionStart", rollout, source="resume"), home) == ""


def _monitor_of(counters: object) -> Monitor:
    from ctxhealth.integrations.claude_code.monitoring import _monitor, claude_code_profile

    return _monitor(counters, claude_code_profile(None), None)  # type: ignore[arg-type]


def test_codex_hooks_use_the_window_the_rollout_states_as_check_does(tmp_path: Path) -> None:
    """The rollout states ``model_context_window`` (272K for gpt-5-codex, already the share the prompt
    may fill): the hooks' thresholds and monitor take it, as ``check`` does, on a whole read and on a
    read resumed from a cut; they took the registry's window of the model."""
    from ctxhealth.accounting.fill import session_model_info
    from ctxhealth.sources import read_session

    home, rollout = tmp_path / "home", tmp_path / "rollout.jsonl"
    shutil.copy(FIXTURES / "codex-rollout.jsonl", rollout)
    expected = session_model_info(read_session(rollout))
    assert expected.window == 272_000 and expected.usable_window == 272_000
    _run(Agent.CODEX, "UserPromptSubmit", _codex("UserPromptSubmit", rollout, prompt="go on"), home)
    for _ in range(2):  # the whole read, then one resumed from its cut after a new call
        counters = load_counters(str(home), str(rollout))
        assert counters is not None and counters.thresholds is not None
        assert (counters.thresholds["window"], counters.thresholds["usable"]) == (272_000, 272_000)
        assert counters.thresholds["log_window"] == 272_000
        assert counters.assessment is not None
        monitor = Monitor.restore(counters.monitor or {})
        assert monitor.info.window == 400_000  # a snapshot keeps the model's id, not the window
        # the hooks' monitor is given the stated window again: its zones are check's
        assert _monitor_of(counters).info.window == 272_000
        _codex_call(rollout, 0)
        _run(Agent.CODEX, "Stop", _codex("Stop", rollout, stop_hook_active=False), home)


def _codex_call(rollout: Path, i: int) -> None:
    """A failed shell call as Codex writes it to the rollout (the outcome only there: Codex's
    PostToolUse payload carries ``tool_response: ""`` for a command that exited 1)."""
    stamp = "2025-10-22T14:06:00.000Z"
    call = {"type": "function_call", "name": "shell", "arguments": json.dumps({"command": ["false"]})}
    output = {"type": "function_call_output", "output": "Process exited with code 1\nOutput:\n"}
    with rollout.open("a") as sink:
        for item in ({**call, "call_id": f"call_{i}"}, {**output, "call_id": f"call_{i}"}):
            sink.write(json.dumps({"timestamp": stamp, "type": "response_item", "payload": item}) + "\n")


def test_codex_post_tool_use_counts_failures_from_the_rollout(tmp_path: Path) -> None:
    home, rollout = tmp_path / "home", tmp_path / "rollout.jsonl"
    shutil.copy(FIXTURES / "codex-rollout.jsonl", rollout)
    outs = []
    for i in range(6):
        _codex_call(rollout, i)
        payload = _codex(
            "PostToolUse",
            rollout,
            tool_name="Bash",
            tool_input={"command": "false"},
            tool_response="",
            tool_use_id=f"call_{i}",
            permission_mode="default",
        )
        outs.append(_run(Agent.CODEX, "PostToolUse", payload, home))
    given = [json.loads(o)["hookSpecificOutput"]["additionalContext"] for o in outs if o]
    assert any("Failure spiral" in g for g in given) and any("Doom loop" in g for g in given)
    assert sum("Failure spiral" in g for g in given) == 1  # once per episode
    from ctxhealth.failures import is_failure
    from ctxhealth.sources import read_session

    before = sum(
        is_failure(r) for m in read_session(FIXTURES / "codex-rollout.jsonl").messages for r in m.tool_results
    )
    counters = load_counters(str(home), str(rollout))
    assert counters is not None and tool_counts(counters).failed == before + 6


def test_gemini_gives_the_checkpoint_back_only_after_a_real_compression(tmp_path: Path) -> None:
    # Gemini CLI fires PreCompress on every compression attempt (most compress nothing) and starts
    # no session after compressing: the checkpoint written at PreCompress comes back with the next
    # prompt only when the chat file shows a compression since. The file is one the real Gemini CLI
    # 0.61 wrote (a run that compressed, at its line 27).
    home, chat = tmp_path / "home", tmp_path / "session-2026-12-01T21-02-48d098fb.jsonl"
    lines = (
        (FIXTURES / "agents" / "gemini-0.61.0" / "compression-resume" / "chat.jsonl")
        .read_text()
        .splitlines(True)
    )
    chat.write_text("".join(lines[:20]))
    assert _run(Agent.GEMINI, "PreCompress", _gemini("PreCompress", chat, trigger="auto"), home)
    chat.write_text("".join(lines[:24]))
    nothing = _run(Agent.GEMINI, "BeforeAgent", _gemini("BeforeAgent", chat, prompt="go on"), home)
    assert "CONTEXT CHECKPOINT" not in nothing  # an attempt that compressed nothing
    assert _run(Agent.GEMINI, "PreCompress", _gemini("PreCompress", chat, trigger="auto"), home)
    chat.write_text("".join(lines))  # the compression, then the resumed run
    out = _run(Agent.GEMINI, "BeforeAgent", _gemini("BeforeAgent", chat, prompt="continue"), home)
    given = json.loads(out)["hookSpecificOutput"]
    assert given["hookEventName"] == "BeforeAgent" and "[CONTEXT CHECKPOINT" in given["additionalContext"]
    again = _run(Agent.GEMINI, "BeforeAgent", _gemini("BeforeAgent", chat, prompt="and then?"), home)
    assert "CONTEXT CHECKPOINT" not in again  # given back once


def test_gemini_hooks_count_what_the_chat_file_says(tmp_path: Path) -> None:
    # A chat file the real Gemini CLI 0.61 wrote (our fake server's run): AfterTool counts the calls
    # from it, as check does (a shell command that exited 1 has status "success": its output says so).
    home, chat = tmp_path / "home", tmp_path / "session-2026-12-01T21-00-48d098fb.jsonl"
    shutil.copy(FIXTURES / "agents" / "gemini-0.61.0" / "tools" / "chat.jsonl", chat)
    response = {"llmContent": "Exit Code: 1", "returnDisplay": "", "error": None}
    after = _gemini("AfterTool", chat, tool_name="run_shell_command", tool_input={"command": "false"})
    _run(Agent.GEMINI, "AfterTool", {**after, "tool_response": response}, home)
    counters = load_counters(str(home), str(chat))
    from ctxhealth.failures import is_failure
    from ctxhealth.sources import read_session

    session = read_session(chat)
    results = [r for m in session.messages for r in m.tool_results]
    assert counters is not None and tool_counts(counters).calls == len(results) > 0
    assert tool_counts(counters).failed == sum(is_failure(r) for r in results) > 0


def test_hooks_fail_open_on_a_transcript_no_reader_knows(tmp_path: Path) -> None:
    home, chat = tmp_path / "home", tmp_path / "notes.jsonl"
    chat.write_text("this is not a transcript\n")
    assert _run(Agent.GEMINI, "BeforeAgent", _gemini("BeforeAgent", chat, prompt="next"), home) == ""
    after = _gemini("AfterTool", chat, tool_name="run_shell_command", tool_input={"command": "ls"})
    assert _run(Agent.GEMINI, "AfterTool", {**after, "tool_response": {"llmContent": "a.txt"}}, home) == ""
