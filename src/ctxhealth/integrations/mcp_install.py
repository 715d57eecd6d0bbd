"""Registering ``ctxhealth mcp`` with an agent host, in the host's own MCP configuration.

* Claude Code: ``mcpServers.ctxhealth`` in ``~/.claude.json`` (user scope: every project) or in the
  project's ``.mcp.json`` (project scope; Claude Code asks once before it trusts a project server);
* Codex CLI: a ``[mcp_servers.ctxhealth]`` table in ``$CODEX_HOME/config.toml`` (``~/.codex``),
  written as a marked block so the rest of the file stays byte for byte as it was;
* Gemini CLI: ``mcpServers.ctxhealth`` in ``~/.gemini/settings.json`` (user) or
  ``.gemini/settings.json`` (project).

Plans are :class:`~ctxhealth.integrations.hostconfig.FilePlan` s: dry run, diff, backup, atomic
write and uninstall as for the hook installers. The server runs as ``python -m ctxhealth.cli.mcp``
with the interpreter that has ctxhealth (and the ``mcp`` extra) installed.
"""

from __future__ import annotations

import copy
import json
import tomllib
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from ctxhealth.errors import ConfigError
from ctxhealth.integrations.hostconfig import (
    FilePlan,
    dump_json_object,
    parse_json_object,
    plan_install_file,
    plan_uninstall_file,
    same_json,
)

__all__ = [
    "SERVER_NAME",
    "Agent",
    "McpTarget",
    "mcp_target",
    "plan_mcp_install",
    "plan_mcp_uninstall",
    "server_command",
]

SERVER_NAME = "ctxhealth"
TOML_BEGIN = (
    "# >>> ctxhealth mcp server (written by `ctxhealth install mcp`; remove with `ctxhealth uninstall mcp`)"
)
TOML_END = "# <<< ctxhealth mcp server"
STARTUP_TIMEOUT_SECONDS = 20
"""How long a host should wait for the server to start (the SDK's import is most of it)."""


class Agent(StrEnum):
    CLAUDE_CODE = "claude-code"
    CODEX = "codex"
    GEMINI = "gemini"


@dataclass(frozen=True, slots=True)
class McpTarget:
    """Which file holds the host's MCP servers, and in what shape."""

    agent: Agent
    path: Path
    toml: bool = False
    env: tuple[tuple[str, str], ...] = ()
    """Variables the server is started with: a ``CODEX_HOME`` other than ``~/.codex`` (Codex starts its
    MCP servers with few of its own variables, so the server would look for sessions in the default)."""


def server_command(python: str) -> list[str]:
    """The argv that starts the server over stdio."""
    return [python, "-m", "ctxhealth.cli.mcp"]


def mcp_target(
    agent: Agent, *, project: bool, home: Path, cwd: Path, codex_home: Path | None = None
) -> McpTarget:
    """The configuration file of ``agent`` (user scope unless ``project``)."""
    if agent is Agent.CLAUDE_CODE:
        return McpTarget(agent, cwd / ".mcp.json" if project else home / ".claude.json")
    if agent is Agent.GEMINI:
        return McpTarget(agent, (cwd if project else home) / ".gemini" / "settings.json")
    if project:
        return McpTarget(agent, cwd / ".codex" / "config.toml", toml=True)
    folder = codex_home or home / ".codex"
    env = (("CODEX_HOME", str(folder)),) if folder != home / ".codex" else ()
    return McpTarget(agent, folder / "config.toml", toml=True, env=env)


def _json_entry(agent: Agent, python: str) -> dict[str, Any]:
    command, *args = server_command(python)
    if agent is Agent.CLAUDE_CODE:
        # alwaysLoad: the CLI waits for the server before its first request and offers the tools up
        # front instead of deferring them to a tool search (without it a print-mode run starts, and
        # may end, before the server has connected)
        return {"type": "stdio", "command": command, "args": args, "env": {}, "alwaysLoad": True}
    return {"command": command, "args": args, "timeout": 30_000}


def _toml_string(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a valid TOML basic string


def _toml_block(python: str, env: tuple[tuple[str, str], ...]) -> str:
    command, *args = server_command(python)
    lines = [
        TOML_BEGIN,
        f"[mcp_servers.{SERVER_NAME}]",
        f"command = {_toml_string(command)}",
        f"args = [{', '.join(_toml_string(a) for a in args)}]",
        f"startup_timeout_sec = {STARTUP_TIMEOUT_SECONDS}",
    ]
    if env:
        lines.append(f"env = {{ {', '.join(f'{k} = {_toml_string(v)}' for k, v in env)} }}")
    return "\n".join([*lines, TOML_END, ""])


def _strip_toml(text: str) -> str:
    """``text`` without our marked block (and the blank line install put before it)."""
    start = text.find(TOML_BEGIN)
    if start < 0:
        return text
    end = text.find(TOML_END, start)
    end = len(text) if end < 0 else text.find("\n", end) + 1 or len(text)
    head = text[:start]
    if head.endswith("\n\n"):
        head = head[:-1]
    return head + text[end:]


def _check_toml(text: str, path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"not valid TOML ({exc})", hint="fix it (Codex cannot read it either)", path=str(path)
        ) from None


def _render_toml(before: bytes | None, target: McpTarget, python: str) -> bytes:
    path = target.path
    text = (before or b"").decode("utf-8")
    rest = _strip_toml(text)
    servers = _check_toml(rest, path).get("mcp_servers", {})
    if isinstance(servers, dict) and SERVER_NAME in servers:
        raise ConfigError(
            f"[mcp_servers.{SERVER_NAME}] is already defined, not by ctxhealth",
            hint="remove it, or leave it: it already starts a ctxhealth server",
            path=str(path),
        )
    if rest and not rest.endswith("\n"):
        rest += "\n"
    after = rest + ("\n" if rest.strip() else "") + _toml_block(python, target.env)
    _check_toml(after, path)
    return after.encode("utf-8")


def _fix(target: McpTarget) -> str:
    return f"fix {target.path.name} first ({target.agent} cannot read it either)"


def _render_json(before: bytes | None, target: McpTarget, python: str) -> bytes:
    data = parse_json_object(before, target.path, fix=_fix(target))
    original = copy.deepcopy(data)
    servers = data.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise ConfigError('"mcpServers" is not an object', hint=_fix(target), path=str(target.path))
    servers[SERVER_NAME] = _json_entry(target.agent, python)
    if data == original and before is not None:
        return before
    return dump_json_object(data)


def plan_mcp_install(target: McpTarget, *, python: str) -> FilePlan:
    """The host's configuration with the ctxhealth server added (or updated to ``python``)."""
    if target.toml:
        return plan_install_file(target.path, lambda before: _render_toml(before, target, python))
    return plan_install_file(target.path, lambda before: _render_json(before, target, python))


def plan_mcp_uninstall(target: McpTarget) -> FilePlan:
    """The host's configuration without the ctxhealth server."""
    if target.toml:
        return plan_uninstall_file(target.path, lambda raw: _strip_toml(raw.decode("utf-8")).encode("utf-8"))

    def strip(raw: bytes) -> bytes | None:
        data = parse_json_object(raw, target.path, fix=_fix(target))
        servers = data.get("mcpServers")
        if not isinstance(servers, dict) or SERVER_NAME not in servers:
            return raw
        del servers[SERVER_NAME]
        if not servers:
            del data["mcpServers"]
        return dump_json_object(data)

    return plan_uninstall_file(target.path, strip, same=same_json)
