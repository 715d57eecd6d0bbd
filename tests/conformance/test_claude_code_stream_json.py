"""A print-mode stream-json log (``claude -p --output-format stream-json --verbose``, what scripted and CI
runs keep) reads as the session's transcript does.

Its lines name the session ``session_id`` and carry no tree links; a sub-agent's lines are inline, marked
with the call that started it (``parent_tool_use_id``); a ``result`` line closes the run with Claude
Code's own total cost. Read as a transcript they gave no session id, a "no parent link" warning per line,
and the sub-agent's responses as the main session's turns (6 for the server's 3).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from .agents import agent_or_skip, agent_version
from .claude_harness import ClaudeBox, check_json
from .fake_anthropic import FakeAnthropic

pytestmark = pytest.mark.conformance

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "agents"
SAME = ("session_id", "model", "turns", "window", "tool_calls", "tool_errors", "subagent_tool_calls")


def test_a_stream_json_log_reads_as_its_transcript(tmp_path: Path) -> None:
    with FakeAnthropic() as fake:
        box = ClaudeBox(tmp_path, fake, agent_or_skip("claude"))
        try:
            run = box.print_mode(
                "AGENT: SUB ls /nonexistent x2",
                *("--output-format", "stream-json", "--verbose", "--allowedTools", "Bash,Agent,Task"),
            )
            assert run.returncode == 0, run.stderr[-500:]
            log = tmp_path / "run.jsonl"
            log.write_text(run.stdout, "utf-8")
            stream, transcript = check_json(log), check_json(box.transcript())
            assert {k: stream[k] for k in SAME} == {k: transcript[k] for k in SAME}
            assert stream["turns"] == len(fake.messages("main"))
            assert stream["sidechains"] == 1 and stream["subagent_tool_calls"] == 2
            assert stream["warnings"] == []
            result = [json.loads(line) for line in run.stdout.splitlines() if '"type":"result"' in line]
            assert stream["agent_cost_usd"] == round(result[-1]["total_cost_usd"], 6)
            if os.environ.get("CTXHEALTH_RECORD_FIXTURES") == "1":
                folder = FIXTURES / f"claude-code-{agent_version(box.cli).split()[0]}"
                text = run.stdout.replace(str(box.home.parent), "/tmp/conformance")
                (folder / "stream-json" / "subagent.jsonl").write_text(text.replace(sys.executable, "python"))
        finally:
            box.close()
