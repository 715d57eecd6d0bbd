"""End to end: replay a real Claude Code session line by line while firing the hooks Claude Code fires.

The session (f67ab274-..., two auto-compactions) is written line by line into a temporary transcript.
Before each compaction summary line PreCompact fires, after it SessionStart (source compact); after each
tool-result line PostToolUse (or PostToolUseFailure) fires once per result; before each typed user
prompt UserPromptSubmit fires; Stop fires at the end. Counts are checked against an independent count
made here from the raw JSON lines.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec.structs
import pytest

from ctxhealth.integrations.claude_code.assess import tool_counts
from ctxhealth.integrations.claude_code.hooks import run_hook
from ctxhealth.integrations.claude_code.monitoring import claude_code_profile, summarise
from ctxhealth.integrations.claude_code.statusline import render_status
from ctxhealth.integrations.claude_code.tailstate import load_counters
from ctxhealth.labels import session_folder
from ctxhealth.model import Format, TextBlock
from ctxhealth.monitor import Monitor
from ctxhealth.policy import Action
from ctxhealth.redact import redact
from ctxhealth.sources.claude_code import ClaudeCodeTail
from ctxhealth.state.ledger import Ledger

SESSION = "f67ab274-e83b-41ac-ac85-77488d6b5c28"  # two auto-compactions
SIDECHAIN_SESSION = "0a725fb5-6378-432a-9e84-9f3f49d4043d"  # one compaction, sub-agent lines


def _session_file(data: Path, session: str) -> Path:
    found = list(data.rglob(f"{session}.jsonl"))
    if not found:
        pytest.skip(f"{session}.jsonl not in the corpus")
    return found[0]


def _content(obj: dict[str, Any]) -> Any:
    message = obj.get("message")
    return message.get("content") if isinstance(message, dict) else None


class _Replay:
    def __init__(self, home: Path, transcript: Path, session: str) -> None:
        self.session = session
        self.home = home
        self.transcript = transcript
        self.outputs: list[tuple[str, int, str]] = []  # (event, compactions so far, stdout)
        self.fired: list[str] = []
        self.compactions = 0

    def fire(self, event: str, **fields: Any) -> str:
        payload = {
            "session_id": self.session,
            "transcript_path": str(self.transcript),
            "cwd": str(self.transcript.parent),
            "hook_event_name": event,
            **fields,
        }
        result = run_hook(event, json.dumps(payload).encode(), home=str(self.home))
        assert result.stderr == "", f"{event}: {result.stderr}"
        self.fired.append(event)
        self.outputs.append((event, self.compactions, result.stdout))
        return result.stdout


@pytest.mark.parametrize(
    ("session", "compactions", "results", "flagged", "failures"),
    # failures: `check`'s count of the main thread (the one definition: the flag, else error text);
    # flagged: the results with the error flag (the payloads of this replay state only the flag)
    [(SESSION, 2, 260, 48, 54), (SIDECHAIN_SESSION, 1, 194, 17, 17)],
)
def test_replay_real_session_with_hooks(
    claude_code_data: Path,
    tmp_path: Path,
    session: str,
    compactions: int,
    results: int,
    flagged: int,
    failures: int,
) -> None:
    source = _session_file(claude_code_data, session)
    home = tmp_path / "home"
    transcript = tmp_path / "projects" / f"{session}.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_bytes(b"")
    replay = _Replay(home, transcript, session)

    # Independent bookkeeping, from the raw lines only.
    calls: dict[str, tuple[str, Any]] = {}
    result_ids: set[str] = set()
    errors = 0
    response_ids: set[str] = set()
    last_fill = peak = 0
    first_prompt = None
    checkpoints_before: list[int] = []

    with source.open("rb") as lines, transcript.open("ab") as sink:
        for raw in lines:
            obj = json.loads(raw)
            content = _content(obj)
            main = not obj.get("isSidechain")
            is_summary = bool(obj.get("isCompactSummary"))
            is_prompt = main and obj.get("type") == "user" and isinstance(content, str) and not is_summary
            if is_prompt and not obj.get("isMeta"):
                first_prompt = first_prompt or content
                replay.fire("UserPromptSubmit", prompt=content)
            if is_summary:
                replay.fire("PreCompact", trigger="auto", custom_instructions="")
                with Ledger.open(home) as ledger:
                    checkpoints_before.append(len(ledger.checkpoints(session)))
                cp_dir = (
                    home
                    / "claude-code"
                    / "sessions"
                    / session_folder("id:" + session, session)
                    / "checkpoints"
                )
                assert (cp_dir / "latest-checkpoint.json").exists(), "checkpoint must exist before compaction"
            sink.write(raw)
            sink.flush()
            if is_summary:
                replay.compactions += 1
                out = replay.fire("SessionStart", source="compact")
                context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
                assert first_prompt is not None and first_prompt.strip() in context
                assert "[CONTEXT CHECKPOINT -- PREVIOUS PROGRESS]" in context
            if not main:
                continue
            if obj.get("type") == "assistant":
                message = obj["message"]
                for block in content or []:
                    if isinstance(block, dict) and block.get("type") == "tool_use":
                        calls[block["id"]] = (block["name"], block.get("input"))
                usage = message.get("usage") or {}
                if message.get("id") not in response_ids:
                    response_ids.add(message.get("id"))
                    fill = sum(
                        int(usage.get(k) or 0)
                        for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
                    )
                    if fill:
                        last_fill, peak = fill, max(peak, fill)
            if obj.get("type") == "user" and isinstance(content, list):
                for block in content:
                    if not (isinstance(block, dict) and block.get("type") == "tool_result"):
                        continue
                    tool_id = block["tool_use_id"]
                    name, tool_input = calls.get(tool_id, ("?", None))
                    failed = bool(block.get("is_error"))
                    if tool_id not in result_ids:
                        result_ids.add(tool_id)
                        errors += failed
                    replay.fire(
                        "PostToolUseFailure" if failed else "PostToolUse",
                        tool_name=name,
                        tool_input=tool_input,
                        tool_use_id=tool_id,
                        **({"error": "tool failed"} if failed else {"tool_response": {"ok": True}}),
                    )
    replay.fire("Stop", stop_hook_active=False)

    # every PreCompact wrote one more checkpoint (a restart decision near the usable window, 167K of
    # 200K, writes its own too)
    assert len(checkpoints_before) == compactions
    assert all(b > a for a, b in zip([0, *checkpoints_before], checkpoints_before, strict=False))
    counters = load_counters(str(home), str(transcript))
    assert counters is not None
    assert counters.offset == transcript.stat().st_size  # the whole file was read, a tail at a time
    assert counters.compactions == compactions
    assert tool_counts(counters).calls == len(result_ids) == results  # the monitor's counts
    assert errors == flagged
    # the monitor's count, from the transcript's results (a payload's judgement is never kept)
    assert tool_counts(counters).failed == failures
    assert counters.turns == len(response_ids)
    assert counters.fill == last_fill and counters.peak == peak
    assert first_prompt is not None and counters.instruction == first_prompt[:4000]

    # The monitor carried from hook to hook (snapshot, restore, observe the new tail) ends where one
    # uninterrupted monitor over the whole transcript ends.
    tail = ClaudeCodeTail(str(transcript))
    messages = tail.feed(transcript.read_bytes())
    monitor = Monitor(None, claude_code_profile(), source_format=Format.CLAUDE_CODE)  # as the hooks make it
    last = None
    for message in messages:
        if message.compaction is not None:
            monitor.record_recovery(Action.TRUNCATE)
        blocks = tuple(TextBlock(redact(b.text)) if isinstance(b, TextBlock) else b for b in message.blocks)
        last = monitor.observe(msgspec.structs.replace(message, blocks=blocks))
    assert last is not None and counters.assessment == summarise(last, monitor)
    assert counters.assessment["index"] == len(messages) - 1

    with Ledger.open(home) as ledger:
        events = ledger.hook_events(session, limit=10_000)
        assert len(events) == len(replay.fired)
        final = [a for a in ledger.assessments(session) if a.details.get("final")]
        assert final and final[-1].tokens == last_fill
        tail = ledger.get_tail(transcript)
        assert tail is not None and tail.offset == transcript.stat().st_size

    # Notices are given at most once per kind per episode (an episode ends at a compaction).
    seen: set[tuple[int, str]] = set()
    for event, episode, out in replay.outputs:
        if not out or event in ("SessionStart", "PreCompact"):
            continue
        context = json.loads(out).get("hookSpecificOutput", {}).get("additionalContext", "")
        head = context.splitlines()[0] if context else ""
        if head.startswith("[ctxhealth] Doom loop"):
            continue  # one per repeated call, keyed by the call
        key = (episode, head)
        assert key not in seen, f"notice repeated in one episode: {key}"
        seen.add(key)

    status = {
        "session_id": session,
        "transcript_path": str(transcript),
        "model": {"id": "claude-opus-4-20250514"},
    }
    line = render_status(json.dumps(status), home=str(home), color=False)
    assert f"fail {failures}/{len(result_ids)}" in line or "spiral" in line
