"""The real Codex CLI calls ``ctxhealth mcp`` (registered by ``ctxhealth install mcp --agent codex``): the
fake OpenAI model answers with a function call of the server's ``context_health`` tool, Codex runs it, and the
``function_call_output`` of its next request carries the assessment of that very rollout."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .agents import agent_or_skip
from .fake_openai import FakeOpenAI
from .mcp_round_trip import assert_assessment_read, install_mcp_and_skill
from .run_codex import codex_env, codex_exec, rollout_of, write_config

pytestmark = pytest.mark.conformance

MODEL = "gpt-4.1"
"""A model without Codex's tool search: Codex offers it the MCP tools up front. (For a model that supports it,
such as gpt-5.5, Codex defers MCP tools behind ``tool_search``, whose calls this fake does not make.)"""
NAMESPACE = "mcp__ctxhealth"
MCP_STEP = "mcp:"
"""``STEP shell mcp:<tool>`` in a script: call that tool of the ctxhealth MCP server instead of a command."""


def _tool_names(tools: list[Any], namespace: str = "") -> list[tuple[str, str]]:
    """(namespace, name) of every function the request offers; Codex offers an MCP server's tools as a
    ``namespace`` (``mcp__<server>``) holding them."""
    names: list[tuple[str, str]] = []
    for tool in tools:
        if not isinstance(tool, dict):
            continue
        if tool.get("type") == "namespace":
            names += _tool_names(tool.get("tools") or [], str(tool.get("name", "")))
        else:
            names.append((namespace, str(tool.get("name", ""))))
    return names


class FakeWithMcp(FakeOpenAI):
    def _step(self, step: tuple[str, str], body: dict[str, Any]) -> dict[str, Any]:
        verb, rest = step
        if verb != "shell" or not rest.startswith(MCP_STEP):
            return super()._step(step, body)
        wanted = rest[len(MCP_STEP) :]
        offered = (NAMESPACE, wanted) in _tool_names(body.get("tools") or [])
        call = {
            "type": "function_call",
            "id": self.next_id("fc"),
            "call_id": self.next_id("call"),
            "name": wanted if offered else f"not-offered:{wanted}",
            "arguments": "{}",
            "status": "completed",
        }
        if offered:
            call["namespace"] = NAMESPACE
        return call


@pytest.fixture
def server() -> Iterator[FakeWithMcp]:
    with FakeWithMcp(model=MODEL) as fake:
        yield fake


def test_codex_calls_context_health_and_reads_the_assessment(tmp_path: Path, server: FakeWithMcp) -> None:
    exe = agent_or_skip("codex")
    write_config(tmp_path, server, model=MODEL)
    env = {"CTXHEALTH_HOME": str(tmp_path / "ctxhealth-home")}
    install_mcp_and_skill("codex", codex_env(tmp_path, env))
    # the first step gives the server time to connect: Codex adds its tools once it has
    codex_exec(
        tmp_path, "How healthy?\nSTEP shell sleep 6\nSTEP shell mcp:context_health\nSTEP say checked", env=env
    )

    turns = server.exchanges("turn")
    offered = _tool_names(turns[-1].body.get("tools") or [])
    assert (NAMESPACE, "context_health") in offered, offered
    outputs = [
        item
        for exchange in turns
        for item in exchange.body.get("input") or []
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]
    assert outputs, [e.body.get("input") for e in turns]
    rollout = rollout_of(tmp_path)
    figures = assert_assessment_read(
        agent="codex",
        exe=exe,
        model=MODEL,
        server_log=server.log,
        first_request=turns[0].body,
        tool_output=json.dumps(outputs[-1].get("output")),
        session=rollout,
        files={"rollout.jsonl": rollout},
        scratch=tmp_path,
        tool_calls=2,
    )
    assert figures["format"] == "codex"
