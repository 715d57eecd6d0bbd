"""Claude Code transcripts and pack manifests written for the audit tests.

The transcripts have the shape real Claude Code versions write: every line in one parent chain
(``uuid`` / ``parentUuid``), ``requestId`` on assistant lines, each response split over two lines
(a text block, then a tool_use block) that share ``message.id`` and repeat the usage with a
streamed ``output_tokens`` of 1 on the first line, tool results on ``user`` lines, newer versions'
``usage.cache_creation`` split into 5-minute and 1-hour writes when asked for, and compactions as
a ``compact_boundary`` system line followed by an ``isCompactSummary`` user line.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any


class ClaudeLog:
    """A Claude Code session built line by line; ``write`` puts it on disk as JSONL."""

    def __init__(
        self,
        session_id: str = "s-1",
        *,
        model: str = "claude-sonnet-4-20250514",
        start: datetime | None = None,
    ) -> None:
        self.session_id = session_id
        self.model = model
        self.now = start or datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
        self.lines: list[dict[str, Any]] = []
        self.parent: str | None = None
        self.responses = 0

    def _line(self, kind: str, **fields: Any) -> dict[str, Any]:
        uuid = f"u-{self.session_id}-{len(self.lines)}"
        line = {
            "type": kind,
            "uuid": uuid,
            "parentUuid": self.parent,
            "sessionId": self.session_id,
            "timestamp": self.now.isoformat().replace("+00:00", "Z"),
            "isSidechain": False,
            "userType": "external",
            "cwd": "/repo",
            "version": "1.0.98",
            **fields,
        }
        self.lines.append(line)
        self.parent = uuid
        return line

    def wait(self, seconds: float) -> ClaudeLog:
        self.now += timedelta(seconds=seconds)
        return self

    def user(self, text: str) -> ClaudeLog:
        self.wait(5)._line("user", message={"role": "user", "content": text})
        return self

    def response(
        self,
        *,
        read: int,
        write: int,
        input_tokens: int = 4,
        output: int = 120,
        write_1h: int = 0,
        model: str | None = None,
        result: str = "ok",
    ) -> ClaudeLog:
        """One model response (two lines sharing its id) and the tool result that follows it."""
        self.responses += 1
        rid = f"msg_{self.session_id}_{self.responses:03d}"
        usage: dict[str, Any] = {
            "input_tokens": input_tokens,
            "cache_creation_input_tokens": write,
            "cache_read_input_tokens": read,
            "output_tokens": 1,
            "service_tier": "standard",
        }
        if write_1h:
            usage["cache_creation"] = {
                "ephemeral_5m_input_tokens": write - write_1h,
                "ephemeral_1h_input_tokens": write_1h,
            }
        message = {"id": rid, "type": "message", "role": "assistant", "model": model or self.model}
        call_id = f"toolu_{self.session_id}_{self.responses:03d}"
        self.wait(4)._line(
            "assistant",
            requestId=f"req_{rid}",
            message={**message, "content": [{"type": "text", "text": "Let me look."}], "usage": usage},
        )
        final = {**usage, "output_tokens": output}
        tool_use = {"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": "ls"}}
        self.wait(1)._line(
            "assistant", requestId=f"req_{rid}", message={**message, "content": [tool_use], "usage": final}
        )
        self.wait(2)._line(
            "user",
            message={
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": call_id, "content": result}],
            },
            toolUseResult={"stdout": result, "stderr": ""},
        )
        return self

    def compact(self, pre_tokens: int) -> ClaudeLog:
        self.wait(30)._line(
            "system",
            subtype="compact_boundary",
            content="Conversation compacted",
            compactMetadata={"trigger": "auto", "preTokens": pre_tokens},
        )
        self._line(
            "user",
            isCompactSummary=True,
            message={
                "role": "user",
                "content": "This session is being continued from a previous conversation that ran out of "
                "context. The conversation is summarized below.",
            },
        )
        return self

    def write(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(line) + "\n" for line in self.lines))
        return path


def manifest(
    *,
    input_digest: str = "in-1",
    files: list[tuple[str, str, float]] | None = None,
    l1: str = "rules",
    l2: str = "specs",
    errors_given: bool = False,
    levels: dict[str, int] | None = None,
    tokens: int = 6_000,
    budget: int = 8_000,
    window: int | None = 200_000,
    threshold: float = 0.4,
) -> dict[str, Any]:
    """A pack manifest of the shape ``ctxhealth pack --json`` writes."""
    files = files if files is not None else [("src/a.py", "L3", 0.9), ("src/b.py", "L3", 0.6)]

    def digest(text: str) -> str:
        return hashlib.sha256(text.encode()).hexdigest()

    return {
        "kind": "ctxhealth/pack-manifest",
        "schema_version": 1,
        "budget": budget,
        "tokens": tokens,
        "window": window,
        "threshold": threshold,
        "levels": levels if levels is not None else {"L1": 500, "L2": 1500, "L3": 4000, "L4": 0, "L5": 0},
        "level_digests": {"L1": digest(l1), "L2": digest(l2), "L3": digest("source")},
        "input_digest": input_digest,
        "errors_given": errors_given,
        "files": [
            {
                "path": path,
                "level": level,
                "priority": "A",
                "form": "full",
                "tokens": 1000,
                "score": score,
                "components": {"recency": 0.5, "imports": 0.5, "similarity": 0.5, "size": 0.5},
                "reason": "in the diff",
            }
            for path, level, score in files
        ],
        "excluded": [],
    }


def write_json(path: Path, doc: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1))
    return path
