"""Inputs shared by the hostile-input tests and their harness (``benchmarks/hostile_inputs.py``):
a small Claude Code transcript whose turns are known, written by us."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

TURNS = 15


def claude_transcript(turns: int = TURNS, session: str = "s") -> list[dict[str, Any]]:
    """``turns`` user → assistant (tool call) → tool result exchanges, linked by ``parentUuid``,
    each assistant line with its usage."""
    lines: list[dict[str, Any]] = []
    parent: str | None = None
    n = 0
    for t in range(turns):
        result = [{"type": "tool_result", "tool_use_id": f"c{t - 1}", "content": "ok"}]
        call = [{"type": "tool_use", "id": f"c{t}", "name": "Bash", "input": {"command": f"make test{t}"}}]
        for role, content in (("user", "fix the parser" if t == 0 else result), ("assistant", call)):
            message: dict[str, Any] = {"role": role, "content": content}
            if role == "assistant":
                message |= {
                    "id": f"m{t}",
                    "model": "claude-sonnet-4-5-20250929",
                    "usage": {"input_tokens": 1000 + t, "output_tokens": 10},
                }
            lines.append(
                {
                    "type": role,
                    "uuid": f"u{n}",
                    "parentUuid": parent,
                    "sessionId": session,
                    "timestamp": f"2026-01-01T00:{n // 60:02d}:{n % 60:02d}Z",
                    "message": message,
                }
            )
            parent = f"u{n}"
            n += 1
    return lines


def write_jsonl(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path
