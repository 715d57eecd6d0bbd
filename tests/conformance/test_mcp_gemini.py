"""The real Gemini CLI calls ``ctxhealth mcp`` (registered by ``ctxhealth install mcp --agent gemini``): the
fake Gemini model answers with a ``functionCall`` of the server's ``context_health`` tool, the CLI runs it,
and the ``functionResponse`` of its next request carries the assessment of that very chat."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from .agents import agent_or_skip, agent_version
from .claude_harness import ctxhealth
from .fake_gemini import FakeGemini
from .truth import assert_matches, check_json, record, truth_of

pytestmark = pytest.mark.conformance

MODEL = "gemini-2.5-pro"
SKILL_LINE = "Keep your own context window healthy on long or multi-step work"
MCP_COMMAND = "mcp:"
"""``STEP shell mcp:<tool>``: the fake answers a call of that MCP tool instead of a shell command."""


def _declared(body: dict[str, Any]) -> list[str]:
    return [
        str(d.get("name"))
        for tool in body.get("tools") or []
        for d in (tool.get("functionDeclarations") or [] if isinstance(tool, dict) else [])
        if isinstance(d, dict)
    ]


class FakeWithMcp(FakeGemini):
    """The script's ``STEP shell mcp:<tool>`` becomes a call of the declared function ending in ``<tool>``."""

    def _stream(self, exchange: Any, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        self._declared = _declared(body)
        super()._stream(exchange, handler, body)
        for part in exchange.answer or []:
            self._to_mcp(part)

    def _to_mcp(self, part: Any) -> None:
        call = part.get("functionCall") if isinstance(part, dict) else None
        command = str((call or {}).get("args", {}).get("command", ""))
        if call and call.get("name") == "run_shell_command" and command.startswith(MCP_COMMAND):
            wanted = command[len(MCP_COMMAND) :]
            names = [n for n in self._declared if n.endswith(wanted)]
            call["name"], call["args"] = (names[0] if names else f"not-declared-{wanted}"), {}

    def send_sse(self, handler: BaseHTTPRequestHandler, events: Iterator[tuple[str | None, Any]]) -> None:
        def rewritten() -> Iterator[tuple[str | None, Any]]:
            for name, event in events:
                for candidate in event.get("candidates") or [] if isinstance(event, dict) else []:
                    for part in candidate.get("content", {}).get("parts") or []:
                        self._to_mcp(part)
                yield name, event

        super().send_sse(handler, rewritten())


@pytest.fixture
def server() -> Iterator[FakeWithMcp]:
    with FakeWithMcp(model=MODEL) as fake:
        yield fake


def test_gemini_calls_context_health_and_reads_the_assessment(tmp_path: Path, server: FakeWithMcp) -> None:
    exe = agent_or_skip("gemini")
    home, work = tmp_path / "home", tmp_path / "work"
    (home / ".gemini").mkdir(parents=True)
    work.mkdir()
    settings = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
    }
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings))
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "GEMINI_API_KEY": "fake-key",
        "GOOGLE_GEMINI_BASE_URL": server.url,
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
        "NO_COLOR": "1",
        "CTXHEALTH_HOME": str(tmp_path / "ctxhealth-home"),
    }
    installed = ctxhealth(
        ["install", "mcp", "--agent", "gemini", "--python", sys.executable, "--apply"], env=env
    )
    assert installed.returncode == 0, installed.stderr
    skill = ctxhealth(["install", "skill", "--agent", "gemini", "--apply"], env=env)
    assert skill.returncode == 0, skill.stderr

    done = subprocess.run(
        [str(exe), "--yolo", "-m", MODEL, "-p", "Healthy?\nSTEP shell mcp:context_health\nSTEP say checked"],
        cwd=work, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]

    turns = server.exchanges("turn")
    assert any(n.endswith("context_health") for n in _declared(turns[0].body)), _declared(turns[0].body)
    # the skill installed beside it passed Gemini CLI's own rules: it is listed to the model
    assert SKILL_LINE in json.dumps(turns[0].body), "the context-health skill is not offered"
    responses = [
        part["functionResponse"]
        for exchange in turns
        for content in exchange.body.get("contents") or []
        for part in content.get("parts") or []
        if isinstance(part, dict) and "functionResponse" in part
    ]
    assert responses, [e.body.get("contents") for e in turns]
    text = json.dumps(responses[-1])
    (chat,) = sorted((home / ".gemini" / "tmp").rglob("session-*.json*"))
    # the server found Gemini CLI's own chat from its working directory, with no arguments
    assert str(chat) in text, text[:2000]
    for label in ("zone", "pressure", "action"):
        assert label in text, text[:2000]

    # what ctxhealth reads from the chat (the MCP call included) is what the server saw
    truth = truth_of(server.log, MODEL, failures=0, logged=("turn",), compaction_fill="last_turn")
    version = agent_version(exe).split()[-1]
    files = {"chat.jsonl": chat, "projects.json": home / ".gemini" / "projects.json"}
    record("gemini", version, "mcp-context-health", files, truth, scratch=tmp_path)
    figures = check_json(chat, "--strict")
    assert_matches(figures, truth)
    assert figures["tool_calls"] == 1 and figures["warnings"] == []
