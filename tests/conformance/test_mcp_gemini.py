"""The real Gemini CLI calls ``ctxhealth mcp`` (registered by ``ctxhealth install mcp --agent gemini``): the
fake Gemini model answers with a ``functionCall`` of the server's ``context_health`` tool, the CLI runs it,
and the ``functionResponse`` of its next request carries the assessment of that very chat."""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from .agents import agent_or_skip
from .fake_gemini import FakeGemini
from .mcp_round_trip import assert_assessment_read, install_mcp_and_skill
from .run_gemini import gemini_env, gemini_prompt, write_settings

pytestmark = pytest.mark.conformance

MODEL = "gemini-2.5-pro"
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
    write_settings(tmp_path)
    env = {"CTXHEALTH_HOME": str(tmp_path / "ctxhealth-home")}
    install_mcp_and_skill("gemini", gemini_env(tmp_path, server, env))
    gemini_prompt(
        tmp_path, server, MODEL, "Healthy?\nSTEP shell mcp:context_health\nSTEP say checked", env=env
    )

    turns = server.exchanges("turn")
    assert any(n.endswith("context_health") for n in _declared(turns[0].body)), _declared(turns[0].body)
    responses = [
        part["functionResponse"]
        for exchange in turns
        for content in exchange.body.get("contents") or []
        for part in content.get("parts") or []
        if isinstance(part, dict) and "functionResponse" in part
    ]
    assert responses, [e.body.get("contents") for e in turns]
    home = tmp_path / "home"
    (chat,) = sorted((home / ".gemini" / "tmp").rglob("session-*.json*"))
    assert_assessment_read(
        agent="gemini",
        exe=exe,
        model=MODEL,
        server_log=server.log,
        first_request=turns[0].body,
        tool_output=json.dumps(responses[-1]),
        session=chat,
        files={"chat.jsonl": chat, "projects.json": home / ".gemini" / "projects.json"},
        scratch=tmp_path,
        tool_calls=1,
        logged=("turn",),
        compaction_fill="last_turn",
    )
