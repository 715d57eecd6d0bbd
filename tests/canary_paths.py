"""Drive every path by which ctxhealth writes or prints, with a transcript, payloads and state updates
that carry the whole canary set (:mod:`canaries`), then find which canaries ended up where.

Shared by the canary test (which asserts that none did) and the benchmark that prints the
format x location table of the docs (hooks under load).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from canaries import canaries
from conftest import invoke
from ctxhealth.integrations.claude_code.hooks import run_hook
from ctxhealth.integrations.claude_code.statusline import render_status

# Where a written byte can be: the outputs captured here, then the files under the home / state root.
OUTPUTS = (
    "hook output",
    "status line",
    "recover markdown",
    "recover markdown --json",
    "cli output",
    "check --json",
    "report",
)


def _line(kind: str, n: int, message: dict[str, Any], **extra: Any) -> str:
    base = {"type": kind, "uuid": f"u{n}", "parentUuid": f"u{n - 1}" if n else None, "sessionId": "canary"}
    return json.dumps({**base, "message": message, **extra})


def canary_transcript(path: Path) -> Path:
    """A Claude Code transcript with every canary in every kind of block, and the same failing command
    three times (the failure detector's "same mistake" signature keeps the error line)."""
    texts = [text for text, _ in canaries().values()]
    everything = "\n".join(texts)
    lines = [_line("user", 0, {"role": "user", "content": "Deploy the service. Notes:\n" + everything})]
    n = 1
    for i, text in enumerate(texts):
        usage = {"input_tokens": 100 + i, "cache_read_input_tokens": 5000 + 10 * i, "output_tokens": 20}
        content = [
            {"type": "thinking", "thinking": f"I should not repeat {text}"},
            {"type": "text", "text": f"Running with {text}"},
            {"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {"command": text, "env": text}},
        ]
        message = {"id": f"m{i}", "role": "assistant", "model": "claude-sonnet-4-5-20250929"}
        lines.append(_line("assistant", n, {**message, "content": content, "usage": usage}))
        n += 1
        result = {
            "type": "tool_result",
            "tool_use_id": f"t{i}",
            "content": f"Error 401: {text}",
            "is_error": True,
        }
        lines.append(_line("user", n, {"role": "user", "content": [result]}))
        n += 1
    for j in range(3):  # the same mistake three times
        i = len(texts) + j
        content = [{"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {"command": "deploy"}}]
        message = {
            "id": f"m{i}",
            "role": "assistant",
            "model": "claude-sonnet-4-5-20250929",
            "content": content,
        }
        lines.append(_line("assistant", n, message))
        n += 1
        result = {"type": "tool_result", "tool_use_id": f"t{i}", "content": everything, "is_error": True}
        lines.append(_line("user", n, {"role": "user", "content": [result]}))
        n += 1
    summary = {
        "role": "user",
        "content": "This session is being continued from a previous conversation.\n" + everything,
    }
    lines.append(_line("user", n, summary, isCompactSummary=True))
    path.write_text("\n".join(lines) + "\n")
    return path


def _hook(event: str, home: Path, transcript: Path, **extra: Any) -> str:
    body = {"hook_event_name": event, "session_id": "canary", "transcript_path": str(transcript), **extra}
    result = run_hook(event, json.dumps(body).encode(), home=str(home))
    return result.stdout + "\n" + result.stderr


def drive_every_writer(tmp: Path, home: Path) -> tuple[Path, dict[str, str]]:
    """Run every writing path; return the state root and the text each output channel printed."""
    transcript = canary_transcript(tmp / "canary-session.jsonl")
    root = tmp / "state-root"
    everything = "\n".join(text for text, _ in canaries().values())
    printed: dict[str, list[str]] = {name: [] for name in OUTPUTS}
    hooks = printed["hook output"]
    # The hooks, in the order Claude Code runs them, plus an error that gets logged.
    hooks.append(_hook("SessionStart", home, transcript, source="startup"))
    hooks.append(_hook("UserPromptSubmit", home, transcript, prompt=everything))
    for i, (text, _) in enumerate(canaries().values()):
        response = {"stderr": text, "exit_code": 1}
        extra = {"tool_name": "Bash", "tool_input": {"command": text}, "tool_response": response}
        hooks.append(_hook("PostToolUse", home, transcript, tool_use_id=f"p{i}", **extra))
        hooks.append(_hook("PostToolUseFailure", home, transcript, tool_use_id=f"f{i}", error=text, **extra))
    hooks.append(_hook("PreCompact", home, transcript, trigger="auto", custom_instructions=everything))
    hooks.append(_hook("SessionStart", home, transcript, source="compact"))
    hooks.append(_hook("UserPromptSubmit", home, transcript, prompt="continue"))
    hooks.append(_hook("Stop", home, transcript))
    hooks.append(_hook("SessionEnd", home, transcript, reason="exit"))
    bad = run_hook("NoSuchEvent " + everything.replace("\n", " "), b"{}", home=str(home))
    hooks.append(bad.stdout + bad.stderr)
    status = {
        "session_id": "canary",
        "transcript_path": str(transcript),
        "model": {"id": "claude-sonnet-4-5"},
    }
    printed["status line"].append(render_status(json.dumps(status), home=str(home), color=False))
    # The CLI: transcript checkpoint, recover, and the state commands (task state, gate, summary,
    # control, memory, snapshot), with the ledger under the home.
    env = {"CTXHEALTH_HOME": str(home)}
    update = tmp / "update.json"
    update.write_text(json.dumps(_state_update(everything)))
    commands: list[tuple[str, list[str]]] = [
        ("cli output", ["checkpoint", "--root", str(root), str(transcript)]),
        ("recover markdown", ["recover", str(transcript), "--format", "markdown"]),
        ("recover markdown --json", ["recover", str(transcript), "--format", "markdown", "--json"]),
        ("cli output", ["state", "ensure", "--root", str(root), "--goal", everything]),
        (
            "cli output",
            ["state", "checkpoint", "--root", str(root), "--update", str(update), "--action-changed-state"],
        ),
        (
            "cli output",
            ["state", "checkpoint", "--root", str(root), "--pressure", "0.95", "--session-id", "canary"],
        ),
        ("cli output", ["state", "override", "--root", str(root), "--reason", everything]),
        ("cli output", ["state", "remember", "--root", str(root), "decisions", everything]),
        ("cli output", ["state", "snapshot", "--root", str(root), str(transcript)]),
        ("cli output", ["state", "bundle", "--root", str(root), "--full"]),
    ]
    report = tmp / "report.html"
    commands += [
        ("check --json", ["check", str(transcript), "--json"]),
        ("report", ["report", str(transcript), "-o", str(report)]),
    ]
    for channel, args in commands:
        done = invoke(args, env=env)
        printed[channel].append(done.output)
    printed["report"].append(report.read_text())
    _drive_the_proxy(home, everything)
    return root, {name: "\n".join(texts) for name, texts in printed.items()}


def _drive_the_proxy(home: Path, everything: str) -> None:
    """The proxy's guard with its ledger store under the home: every canary in a request's
    messages (its drift words and signatures are saved) and a canary as the session id."""
    from ctxhealth.integrations.guard import Guard, LedgerStore, Mode
    from ctxhealth.integrations.wire import ApiStyle

    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 100,
        "system": "You deploy services.",
        "messages": [
            {"role": "user", "content": "Deploy it. Notes:\n" + everything},
            {"role": "assistant", "content": "Using " + everything},
            {"role": "user", "content": "again " + everything},
        ],
    }
    store = LedgerStore(home)
    guard = Guard(Mode.ADVISE, store=store)
    session_id = canaries()["bare anthropic"][1]
    for headers in ({}, {"x-ctxhealth-session": session_id}):
        guard.plan(ApiStyle.ANTHROPIC_MESSAGES, json.dumps(body).encode(), headers)
    guard.flush()
    store.close()


def _state_update(text: str) -> dict[str, Any]:
    return {
        "goal": text,
        "current_phase": text,
        "next_action": text,
        "last_action": {"summary": text, "outcome": "failure"},
        "constraints": [text],
        "invariants": [text],
        "decisions": [{"decision": text, "why": text}],
        "completed_steps": [text],
        "failed_attempts": [{"attempt": text, "reason": text}],
        "blockers": [text],
        "artifacts": [{"path": "deploy.sh", "role": text}],
        "important_outputs": [text],
    }


def needles(secret: str) -> list[bytes]:
    """What to search for: the secret, or each of its lines (a stored copy may escape line breaks)."""
    parts = [p for p in secret.split() if len(p) >= 8] or [secret]
    return [p.encode() for p in parts]


def files_under(*bases: Path) -> Iterator[Path]:
    for base in bases:
        for dirpath, _, names in os.walk(base):
            for name in names:
                yield Path(dirpath) / name


def location(path: Path, home: Path, root: Path) -> str:
    """A stable name for where a file is: ledger, tail cache, checkpoints, task state, ..."""
    name = path.name
    if name.startswith("ledger.db"):
        return "ledger (SQLite + WAL)"
    parts = path.parts
    if "tails" in parts:
        return "hooks' tail cache"
    if "checkpoints" in parts:
        kind = "state checkpoints" if name.startswith(("state-", "final-")) else "checkpoints"
        return ("hook " if home in path.parents and "sessions" in parts else "") + kind
    if "snapshots" in parts:
        return "snapshots"
    if "summaries" in parts:
        return "summaries"
    if "memory" in parts:
        return "memory files"
    if name == "task-state.json":
        return "task state"
    if name == "control.json":
        return "control.json"
    return "other: " + name


def find_canaries(home: Path, root: Path, printed: dict[str, str]) -> dict[str, dict[str, int]]:
    """canary name -> location -> number of files / outputs holding it (only non-zero entries)."""
    found: dict[str, dict[str, int]] = {name: {} for name in canaries()}
    blobs: list[tuple[str, bytes]] = [(channel, text.encode()) for channel, text in printed.items()]
    blobs += [(location(p, home, root), p.read_bytes()) for p in files_under(home, root) if p.is_file()]
    # the drift word list is stored lower-cased: the search ignores case
    blobs = [(where, blob.lower()) for where, blob in blobs]
    for name, (_, secret) in canaries().items():
        for where, blob in blobs:
            if any(needle.lower() in blob for needle in needles(secret)):
                found[name][where] = found[name].get(where, 0) + 1
    return {name: places for name, places in found.items()}


def locations_written(home: Path, root: Path) -> list[str]:
    return sorted({location(p, home, root) for p in files_under(home, root) if p.is_file()})
