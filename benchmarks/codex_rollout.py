"""A realistic Codex CLI rollout of any size, for the read benchmark (no real log is copied).

Built from the record shapes of ``tests/fixtures/codex-rollout-0.60.jsonl`` (written from the
format notes): a session header, then one model request after another, each with reasoning, a
shell call or an ``apply_patch`` and its output (1-6 KB, deterministic), and a ``token_count``
whose input grows with everything written so far, with a compaction when it passes 200K tokens.
``counts_first=True`` orders each request as Codex 0.60 does (``turn_context``, the previous count
again, ``agent_reasoning``, the count, then the items); ``False`` as earlier versions do (the
items, the count, the outputs). Every response is reported, so a reader that pairs counts right
never needs to estimate.
"""

from __future__ import annotations

import json
import random
from typing import Any

_WORDS = [
    "parser",
    "config",
    "request",
    "handler",
    "cache",
    "index",
    "retry",
    "stream",
    "buffer",
    "schema",
    "token",
    "window",
    "session",
    "module",
    "import",
    "test",
    "fixture",
    "assert",
    "error",
    "timeout",
    "path",
    "branch",
    "commit",
    "patch",
    "build",
    "lint",
    "deploy",
]
COMPACT_AT = 200_000
"""Tokens of context at which the synthetic session compacts (below the 258,400 window)."""
_RATE_LIMITS = {"primary": {"used_percent": 3.0, "window_minutes": 300, "resets_at": 1764000000}}
_CONTEXT = {
    "cwd": "/home/dev/service",
    "approval_policy": "on-request",
    "sandbox_policy": {"type": "workspace-write", "network_access": False},
    "model": "gpt-5.1-codex-max",
    "effort": "high",
    "summary": "auto",
}


def _text(rng: random.Random, chars: int) -> str:
    words: list[str] = []
    size = 0
    while size < chars:
        word = rng.choice(_WORDS)
        words.append(word + ("\n" if rng.random() < 0.08 else " "))
        size += len(word) + 1
    return "".join(words)


def synthetic_rollout(target_bytes: int, *, counts_first: bool = True, seed: int = 0) -> bytes:
    """A rollout of about ``target_bytes`` bytes (JSON Lines)."""
    rng = random.Random(seed)
    out: list[str] = []
    second = 0
    size = 0

    def add(kind: str, payload: dict[str, Any]) -> None:
        nonlocal second, size
        second += 1
        stamp = f"2025-11-24T{10 + second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}.000Z"
        line = json.dumps({"timestamp": stamp, "type": kind, "payload": payload}, separators=(",", ":"))
        out.append(line)
        size += len(line) + 1

    total = {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0, "reasoning_output_tokens": 0}
    context_chars = 22_000  # system prompt and tool definitions the log never shows

    def count(output_tokens: int) -> dict[str, Any]:
        prompt = context_chars // 4
        last = {
            "input_tokens": prompt,
            "cached_input_tokens": prompt * 9 // 10,
            "output_tokens": output_tokens,
            "reasoning_output_tokens": output_tokens // 2,
            "total_tokens": prompt + output_tokens,
        }
        for key in total:
            total[key] += last[key]
        info = {"total_token_usage": dict(total), "last_token_usage": last, "model_context_window": 258400}
        return {"type": "token_count", "info": info, "rate_limits": _RATE_LIMITS}

    add(
        "session_meta",
        {"id": "019ab3d1-0000-7a80-9e41-0c7d2f18b6a3", "cli_version": "0.60.1", "source": "cli"},
    )
    task = "Make the request handler retry on timeouts and add a test for it."
    add(
        "response_item",
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": task}]},
    )
    add("event_msg", {"type": "user_message", "message": task, "images": []})
    previous: dict[str, Any] | None = None
    n = 0
    while size < target_bytes:
        n += 1
        thought = _text(rng, rng.randint(60, 400))
        patch = n % 7 == 0
        call_id = f"call_{n:06d}"
        if patch:
            body = _text(rng, rng.randint(300, 1500))
            item: dict[str, Any] = {
                "type": "custom_tool_call",
                "status": "completed",
                "call_id": call_id,
                "name": "apply_patch",
                "input": f"*** Begin Patch\n*** Update File: src/mod{n}.py\n@@\n+{body}\n*** End Patch",
            }
            failed = n % 21 == 0
            text = (
                "apply_patch verification failed: Failed to find expected lines in src/mod.py"
                if failed
                else json.dumps({"output": f"Success. Updated the following files:\nM src/mod{n}.py\n"})
            )
            result: dict[str, Any] = {"type": "custom_tool_call_output", "call_id": call_id, "output": text}
        else:
            command = f"rg -n {rng.choice(_WORDS)} src tests"
            item = {
                "type": "function_call",
                "name": "shell_command",
                "arguments": json.dumps({"command": command, "workdir": ".", "timeout_ms": 120000}),
                "call_id": call_id,
            }
            code = 1 if n % 9 == 0 else 0
            text = (
                f"Exit code: {code}\nWall time: 0.3 seconds\nOutput:\n{_text(rng, rng.randint(1000, 6000))}"
            )
            result = {"type": "function_call_output", "call_id": call_id, "output": text}
        reasoning = {
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": thought}],
            "content": None,
        }
        output_tokens = (len(thought) + len(json.dumps(item))) // 4
        if counts_first:
            add("turn_context", dict(_CONTEXT))
            if previous is not None:
                add("event_msg", previous)  # the same count again, as 0.60 writes it
            add("event_msg", {"type": "agent_reasoning", "text": thought})
            previous = count(output_tokens)
            add("event_msg", previous)
            add("response_item", reasoning)
            add("response_item", item)
            add("response_item", result)
        else:
            add("response_item", reasoning)
            add("response_item", item)
            add("event_msg", count(output_tokens))
            add("response_item", result)
        context_chars += len(thought) + len(json.dumps(item)) + len(text)
        if context_chars // 4 > COMPACT_AT:
            summary = "Summary of the work so far: " + _text(rng, 3000)
            add("compacted", {"message": summary})
            context_chars = 22_000 + len(summary)
    final = "Done: the handler retries timeouts twice with backoff; tests/test_retry.py covers it."
    if counts_first:
        add("turn_context", dict(_CONTEXT))
        add("event_msg", {"type": "agent_message", "message": final})
        add("event_msg", count(30))
        add(
            "response_item",
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": final}]},
        )
    else:
        add(
            "response_item",
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": final}]},
        )
        add("event_msg", {"type": "agent_message", "message": final})
        add("event_msg", count(30))
    return ("\n".join(out) + "\n").encode()
