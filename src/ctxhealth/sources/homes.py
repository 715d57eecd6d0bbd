"""Where each agent keeps its own sessions on a user's disk: the folders a command reads when it is
given no path.

One table for every agent the readers know (:data:`AGENT_HOMES`): Claude Code's
``~/.claude/projects`` (or ``$CLAUDE_CONFIG_DIR/projects``; the XDG ``~/.config/claude/projects`` as
well), Codex CLI's ``~/.codex/sessions`` (or ``$CODEX_HOME/sessions``), Gemini CLI's
``~/.gemini/tmp``. Library code does not read the environment: callers pass it (the CLI passes
``os.environ`` and the home folder).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class AgentHome:
    """One agent's data folder: ``agent`` (its name), ``path``, and ``origin``: the environment
    variable it came from, or ``"default"``."""

    agent: str
    path: Path
    origin: str


@dataclass(frozen=True, slots=True)
class _Spec:
    agent: str
    env: str | None  # a variable naming the agent's config folder, which replaces the defaults
    under: str  # the sessions folder inside the config folder
    defaults: tuple[str, ...]  # config folders relative to the home folder, when env is unset


AGENT_HOMES: tuple[_Spec, ...] = (
    _Spec("claude-code", "CLAUDE_CONFIG_DIR", "projects", (".claude", ".config/claude")),
    _Spec("codex", "CODEX_HOME", "sessions", (".codex",)),
    _Spec("gemini", None, "tmp", (".gemini",)),
)
"""Every agent whose sessions a no-argument run looks for, in the order they are read."""


def agent_homes(env: Mapping[str, str], home: Path) -> list[AgentHome]:
    """Every place an agent may keep its sessions (existing or not), in :data:`AGENT_HOMES` order."""
    found: list[AgentHome] = []
    for spec in AGENT_HOMES:
        configured = env.get(spec.env, "").strip() if spec.env else ""
        if configured:
            found.append(AgentHome(spec.agent, Path(configured).expanduser() / spec.under, spec.env or ""))
            continue
        found.extend(AgentHome(spec.agent, home / d / spec.under, "default") for d in spec.defaults)
    return found


def installed_homes(env: Mapping[str, str], home: Path) -> list[AgentHome]:
    """The agent folders of :func:`agent_homes` that exist (each real folder once)."""
    seen: set[Path] = set()
    out: list[AgentHome] = []
    for entry in agent_homes(env, home):
        try:
            real = entry.path.resolve()
        except OSError:
            continue
        if entry.path.is_dir() and real not in seen:
            seen.add(real)
            out.append(entry)
    return out
