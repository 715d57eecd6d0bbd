"""What every MCP end-to-end test asserts once the real CLI has called ``ctxhealth mcp``'s
``context_health`` tool: the skill installed beside the server reached the model, the tool's output
names the agent's own session (found from its working directory, with no arguments) with its zone,
pressure and action, and ``check`` reads from that session exactly what the fake server saw."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .agents import agent_version
from .claude_harness import ctxhealth
from .truth import assert_matches, check_json, record, truth_of

SKILL_LINE = "Keep your own context window healthy on long or multi-step work"
"""A line of the context-health skill: in the first request when the host lists the skill to the model."""


def install_mcp_and_skill(agent: str, env: Mapping[str, str]) -> None:
    """``ctxhealth install mcp`` (this interpreter runs the server) and ``install skill`` for ``agent``."""
    for args in (
        ["install", "mcp", "--agent", agent, "--python", sys.executable, "--apply"],
        ["install", "skill", "--agent", agent, "--apply"],
    ):
        done = ctxhealth(args, env=dict(env))
        assert done.returncode == 0, done.stderr


def assert_assessment_read(
    *,
    agent: str,
    exe: Path,
    model: str,
    server_log: Any,
    first_request: Mapping[str, Any],
    tool_output: str,
    session: Path,
    files: dict[str, Path],
    scratch: Path,
    tool_calls: int,
    **truth_options: Any,
) -> dict[str, Any]:
    """The shared assertions (see the module docstring); returns ``check --json --strict`` of ``session``."""
    # the skill installed beside the server passed the host's own rules: it is listed to the model
    assert SKILL_LINE in json.dumps(first_request), "the context-health skill is not offered"
    # the server found the agent's own session from its working directory, with no arguments
    assert str(session) in tool_output, tool_output[:2000]
    for label in ("zone", "pressure", "action"):
        assert label in tool_output, tool_output[:2000]
    # what ctxhealth reads from the session (the MCP call included) is what the server saw
    truth = truth_of(server_log, model, failures=0, **truth_options)
    record(agent, agent_version(exe).split()[-1], "mcp-context-health", files, truth, scratch=scratch)
    figures = check_json(session, "--strict")
    assert_matches(figures, truth)
    assert figures["tool_calls"] == tool_calls and figures["warnings"] == []
    assert figures["zone"] in tool_output
    return figures
