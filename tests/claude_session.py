"""A Claude Code session written line by line, with the hooks run where Claude Code runs them: the
assistant's tool call is in the transcript when PostToolUse fires, its result is written after the
hook (what the real CLI does)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ctxhealth.integrations.claude_code.hooks import run_hook
from ctxhealth.monitor import Monitor
from ctxhealth.sources import read_session

MODEL = "claude-sonnet-4-5-20250929"


class Session:
    """A Claude Code transcript grown line by line, with the hooks run where Claude Code runs them."""

    def __init__(self, root: Path, request: str = "Fix the parser bug in src/parse.py") -> None:
        self.transcript = root / "t.jsonl"
        self.home = str(root / "home")
        self.n = 0
        self.fill = 20_000
        self.lag = 0  # lines written to the file only after this many more (Claude Code writes in batches)
        self._held: list[str] = []
        self.transcript.write_text("")
        self.user(request)

    def _write(self, kind: str, message: dict[str, Any]) -> None:
        self.n += 1
        line = {
            "type": kind,
            "uuid": f"u{self.n}",
            "parentUuid": f"u{self.n - 1}" if self.n > 1 else None,
            "sessionId": "s1",
            "isSidechain": False,
            "message": message,
        }
        self._held.append(json.dumps(line) + "\n")
        self.flush(keep=self.lag)

    def flush(self, keep: int = 0) -> None:
        """Write the lines held back, all but the last ``keep``."""
        out, self._held = self._held[: len(self._held) - keep], self._held[len(self._held) - keep :]
        if out:
            with self.transcript.open("a") as sink:
                sink.write("".join(out))

    def _assistant(self, content: list[dict[str, Any]]) -> None:
        usage = {"input_tokens": 10, "cache_read_input_tokens": self.fill - 10, "output_tokens": 20}
        self._write(
            "assistant",
            {"id": f"msg_{self.n}", "role": "assistant", "model": MODEL, "content": content, "usage": usage},
        )

    def user(self, text: str) -> None:
        self._write("user", {"role": "user", "content": text})

    def hook(self, event: str, **payload: Any) -> str:
        doc = {
            "hook_event_name": event,
            "session_id": "s1",
            "transcript_path": str(self.transcript),
            **payload,
        }
        result = run_hook(event, json.dumps(doc).encode(), home=self.home)
        assert result.stderr == ""
        return result.stdout

    def call(self, name: str, tool_input: dict[str, Any], output: str, *, failed: bool = False) -> str:
        """One tool call: the call is written, PostToolUse(Failure) runs, then the result is written."""
        tool_id = f"toolu_{self.n}"
        self._assistant([{"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}])
        event = "PostToolUseFailure" if failed else "PostToolUse"
        extra: dict[str, Any] = {"error": output} if failed else {"tool_response": {"stdout": output}}
        said = self.hook(event, tool_name=name, tool_input=tool_input, tool_use_id=tool_id, **extra)
        result = {"type": "tool_result", "tool_use_id": tool_id, "content": output, "is_error": failed}
        self._write("user", {"role": "user", "content": [result]})
        return said

    def reply(self, text: str) -> None:
        self._assistant([{"type": "text", "text": text}])

    def monitor_summary(self) -> dict[str, Any]:
        """What a fresh monitor over the whole transcript says (``check``'s engine)."""
        session = read_session(str(self.transcript))
        last = Monitor(session.model).observe_session(session)
        return {"action": last.action.value, "fired": sorted(n for n, s in last.signals.items() if s.fired)}
