"""The real Claude Code CLI calls ``ctxhealth mcp`` (registered by ``ctxhealth install mcp``): the fake
model answers with a ``tool_use`` of ``mcp__ctxhealth__context_health`` (no arguments), the CLI runs our
server, and the tool result in its next request carries the assessment of that very session."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .agents import agent_or_skip
from .claude_harness import ClaudeBox, ctxhealth
from .fake_anthropic import (
    JSON,
    FakeAnthropic,
    Reply,
    Text,
    ToolUse,
    block_text,
    default_scenario,
    request_kind,
)
from .mcp_round_trip import SKILL_LINE

pytestmark = pytest.mark.conformance

TOOL = "mcp__ctxhealth__context_health"


def calls_context_health(body: JSON, headers: dict[str, str]) -> Reply:
    """Ask for context_health once (when the CLI offers it), then answer with what it returned."""
    if request_kind(body, headers) != "main":
        return default_scenario(body, headers)
    offered = {t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)}
    results = [r for r in _tool_results(body)]
    if TOOL in offered and not results:
        return Reply([ToolUse(TOOL, {}, id="toolu_ctxhealth_1")])
    if results:
        return Reply([Text("DONE. ctxhealth said: " + block_text(results[-1])[:200])])
    return Reply([Text("DONE without ctxhealth: the tool was not offered")])


def _tool_results(body: JSON) -> list[JSON]:
    found: list[JSON] = []
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, list):
            found += [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
    return found


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic(calls_context_health) as server:
        yield server


@pytest.mark.parametrize("scope", ["user", "project"])
def test_claude_code_calls_context_health_and_reads_the_assessment(
    tmp_path: Path, fake: FakeAnthropic, scope: str
) -> None:
    box = ClaudeBox(tmp_path, fake, agent_or_skip("claude"))
    args = [
        "install",
        "mcp",
        "--agent",
        "claude-code",
        "--scope",
        scope,
        "--python",
        sys.executable,
        "--apply",
    ]
    installed = subprocess.run(
        [sys.executable, "-c", "from ctxhealth.cli.main import main; main()", *args],
        cwd=box.project, env=box.env(), capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr
    skill = subprocess.run(
        [sys.executable, "-c", "from ctxhealth.cli.main import main; main()",
         "install", "skill", "--agent", "claude-code", "--scope", scope, "--apply"],
        cwd=box.project, env=box.env(), capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert skill.returncode == 0, skill.stderr
    config = box.home / ".claude.json" if scope == "user" else box.project / ".mcp.json"
    assert "ctxhealth" in json.loads(config.read_text())["mcpServers"]

    # a newer transcript of the same project: the server must pick the CLI's own session by the id the
    # CLI gives it (CLAUDE_CODE_SESSION_ID), not the newest file of the directory
    decoy = box.projects / re.sub(r"[^A-Za-z0-9]", "-", str(box.project)) / "decoy.jsonl"
    decoy.parent.mkdir(parents=True)
    decoy.write_text(json.dumps({"type": "summary", "summary": "another session", "leafUuid": "x"}) + "\n")
    os.utime(decoy, (time.time() + 86_400, time.time() + 86_400))

    run = box.print_mode("How healthy is your context? Use ctxhealth.")
    main = fake.messages("main")
    offered = {t.get("name") for t in main[0].body.get("tools") or []}
    assert TOOL in offered, sorted(str(n) for n in offered)
    assert len(main) == 2, [e.summary() for e in main]

    # the skill installed beside it passed the CLI's own rules: it is listed to the model
    assert SKILL_LINE in json.dumps(main[0].body), "the context-health skill is not offered"
    (result,) = _tool_results(main[1].body)
    assert result["tool_use_id"] == "toolu_ctxhealth_1"
    assert not result.get("is_error"), result
    text = block_text(result)
    transcript = next(p for p in box.transcripts() if p != decoy)
    # the server found the CLI's own session with no arguments: the heading is its transcript
    assert str(transcript) in text, text
    for label in ("zone", "pressure", "action"):
        assert label in text, text
    # and what it said is the assessment ctxhealth check gives of the session as it stood at that call
    report: dict[str, Any] = json.loads(ctxhealth(["check", "--json", str(transcript)], env=box.env()).stdout)
    assert report["session_id"] == transcript.stem == main[0].session_id
    assert report["zone"] in text
    if text.lstrip().startswith("{"):  # the CLI hands the model the structured result as JSON
        sent = json.loads(text)
        assert sent["session_id"] == report["session_id"] and sent["path"] == report["path"]
        # Claude Code writes its own running cost (``cost-state``) at the end of the run: after the call
        later = {"agent_cost_usd", "cost_not_in_transcript_usd"}
        assert set(sent) - later == set(report) - later
        assert sent["turns"] < report["turns"] == len(main)  # assessed at the call, before the answer
    assert "ctxhealth said:" in run.stdout
