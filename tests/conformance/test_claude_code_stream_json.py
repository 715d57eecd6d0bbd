"""A print-mode stream-json log (``claude -p --output-format stream-json --verbose``, what scripted and CI
runs keep) reads as the session's transcript does.

Its lines name the session ``session_id`` and carry no tree links; a sub-agent's lines are inline, marked
with the call that started it (``parent_tool_use_id``); a ``result`` line closes the run with Claude
Code's own total cost and, per model, the ``contextWindow`` it worked with. Read as a transcript they gave
no session id, a "no parent link" warning per line, and the sub-agent's responses as the main session's
turns (6 for the server's 3). The stated window is the one Claude Code worked with: for a ``[1m]`` session
1,000,000, which its transcript cannot tell (the responses name the plain model).
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

from .agents import agent_or_skip, agent_version
from .claude_harness import ClaudeBox, check_json
from .fake_anthropic import FakeAnthropic

pytestmark = pytest.mark.conformance

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "agents"
SAME = ("session_id", "model", "turns", "tool_calls", "tool_errors", "subagent_tool_calls")
SUBAGENT = "AGENT: SUB ls /nonexistent x2"
RUNS: dict[str, tuple[str, str | None, tuple[str, ...]]] = {
    "subagent": (SUBAGENT, None, ()),
    "subagent-1m": (SUBAGENT, "claude-sonnet-4-6[1m]", ()),
    "partial": ("BASH: ls /nonexistent x2", None, ("--include-partial-messages",)),
}
"""name -> the prompt, the model asked for, more flags. With ``--include-partial-messages`` each
main-thread response's ``message_delta`` event states its output (a sub-agent's responses have no
events): without a sub-agent the cost is then Claude Code's own."""


@pytest.mark.parametrize("name", sorted(RUNS))
def test_a_stream_json_log_reads_as_its_transcript(name: str, tmp_path: Path) -> None:
    prompt, model, more = RUNS[name]
    with FakeAnthropic() as fake:
        box = ClaudeBox(tmp_path, fake, agent_or_skip("claude"))
        try:
            run = box.print_mode(
                prompt,
                *("--output-format", "stream-json", "--verbose", "--allowedTools", "Bash,Agent,Task"),
                *(("--model", model) if model else ()),
                *more,
            )
            assert run.returncode == 0, run.stderr[-500:]
            log = tmp_path / "run.jsonl"
            log.write_text(run.stdout, "utf-8")
            stream, transcript = check_json(log), check_json(box.transcript())
            assert {k: stream[k] for k in SAME} == {k: transcript[k] for k in SAME}
            assert stream["turns"] == len(fake.messages("main"))
            subagent = prompt == SUBAGENT
            assert (stream["sidechains"], stream["subagent_tool_calls"]) == ((1, 2) if subagent else (0, 0))
            assert stream["warnings"] == []
            result = [json.loads(line) for line in run.stdout.splitlines() if '"type":"result"' in line]
            assert stream["agent_cost_usd"] == round(result[-1]["total_cost_usd"], 6)
            worked_with = {u["canonicalModel"]: u["contextWindow"] for u in result[-1]["modelUsage"].values()}
            assert stream["window"] == worked_with[stream["model"]]
            if more:  # each response's output stated: every request's cost is in the log
                assert stream["cost_usd"] == stream["agent_cost_usd"]
            else:  # only each response's first streamed output count: less than Claude Code's
                assert stream["cost_usd"] < stream["agent_cost_usd"]
            if model is not None:  # the transcript names the plain model: its standard window
                assert (stream["window"], transcript["window"]) == (1_000_000, 200_000)
            if os.environ.get("CTXHEALTH_RECORD_FIXTURES") == "1":
                folder = FIXTURES / f"claude-code-{agent_version(box.cli).split()[0]}"
                scratch = str(box.home.parent)
                text = run.stdout.replace(scratch, "/tmp/conformance")
                # a project's folder name: its path with every other character a dash
                text = text.replace(re.sub("[^A-Za-z0-9]", "-", scratch), "-tmp-conformance")
                (folder / "stream-json" / f"{name}.jsonl").write_text(text.replace(sys.executable, "python"))
        finally:
            box.close()
