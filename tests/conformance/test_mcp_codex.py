"""The real Codex CLI calls ``ctxhealth mcp`` (registered by ``ctxhealth install mcp --agent codex``): the
fake OpenAI model answers with a function call of the server's ``context_health`` tool, Codex runs it, and the
``function_call_output`` of its next request carries the assessment of that very rollout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .agents import agent_or_skip, agent_version
from .claude_harness import ctxhealth
from .fake_openai import FakeOpenAI
from .truth import assert_matches, check_json, record, truth_of

pytestmark = pytest.mark.conformance

MODEL = "gpt-4.1"
"""A model without Codex's tool search: Codex offers it the MCP tools up front. (For a model that supports it,
such as gpt-5.5, Codex defers MCP tools behind ``tool_search``, whose calls this fake does not make.)"""
NAMESPACE = "mcp__ctxhealth"
SKILL_LINE = "Keep your own context window healthy on long or multi-step work"
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
    codex_home, work = tmp_path / "codex", tmp_path / "work"
    codex_home.mkdir()
    work.mkdir()
    (codex_home / "config.toml").write_text(
        "\n".join(
            [
                f'model = "{MODEL}"',
                'model_provider = "fake"',
                "[model_providers.fake]",
                'name = "Fake"',
                f'base_url = "{server.url}/v1"',
                'env_key = "FAKE_OPENAI_KEY"',
                'wire_api = "responses"',
                "supports_websockets = false",
                "",
            ]
        )
    )
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path / "home"),
        "CODEX_HOME": str(codex_home),
        "OPENAI_API_KEY": "sk-fake",
        "FAKE_OPENAI_KEY": "sk-fake",
        "NO_COLOR": "1",
        "CTXHEALTH_HOME": str(tmp_path / "ctxhealth-home"),
    }
    installed = ctxhealth(
        ["install", "mcp", "--agent", "codex", "--python", sys.executable, "--apply"], env=env
    )
    assert installed.returncode == 0, installed.stderr
    skill = ctxhealth(["install", "skill", "--agent", "codex", "--apply"], env=env)
    assert skill.returncode == 0, skill.stderr

    done = subprocess.run(
        [
            str(exe), "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
            # the first step gives the server time to connect: Codex adds its tools once it has
            "How healthy?\nSTEP shell sleep 6\nSTEP shell mcp:context_health\nSTEP say checked",
        ],
        cwd=work, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]

    turns = server.exchanges("turn")
    offered = _tool_names(turns[-1].body.get("tools") or [])
    assert (NAMESPACE, "context_health") in offered, offered
    # the skill installed beside it passed Codex's own rules: it is listed to the model
    assert SKILL_LINE in json.dumps(turns[0].body), "the context-health skill is not offered"
    outputs = [
        item
        for exchange in turns
        for item in exchange.body.get("input") or []
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]
    assert outputs, [e.body.get("input") for e in turns]
    text = json.dumps(outputs[-1].get("output"))
    (rollout,) = sorted((codex_home / "sessions").rglob("rollout-*.jsonl"))
    # the server found Codex's own rollout from its working directory, with no arguments
    assert str(rollout) in text, text[:2000]
    for label in ("zone", "pressure", "action"):
        assert label in text, text[:2000]
    report = json.loads(ctxhealth(["check", "--json", str(rollout)], env=env).stdout)
    assert report["format"] == "codex" and report["zone"] in text

    # what ctxhealth reads from the rollout (the MCP call included) is what the server saw
    truth = truth_of(server.log, MODEL, failures=0)
    version = agent_version(exe).split()[-1]
    record("codex", version, "mcp-context-health", {"rollout.jsonl": rollout}, truth, scratch=tmp_path)
    figures = check_json(rollout, "--strict")
    assert_matches(figures, truth)
    assert figures["tool_calls"] == 2 and figures["warnings"] == []
