"""Where each agent keeps its own sessions on a user's disk: the folders a command reads when it is
given no path.

One table for every agent the readers know (:data:`AGENT_HOMES`): Claude Code's
``~/.claude/projects`` (or ``$CLAUDE_CONFIG_DIR/projects``; the XDG ``~/.config/claude/projects`` as
well), Codex CLI's ``~/.codex/sessions`` (or ``$CODEX_HOME/sessions``), Gemini CLI's
``~/.gemini/tmp``, and what a session file looks like there (:func:`session_files`: the files the
one directory walk, :func:`ctxhealth.sources.discover`, lists under the folder, whose path matches
the agent's pattern). Library code does not read the environment: callers pass it (the CLI passes
``os.environ`` and the home folder).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePath


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
    sessions: str  # a session file's path below the sessions folder (``PurePath.match``, from the right)


AGENT_HOMES: tuple[_Spec, ...] = (
    # a session per project folder; its sub-agents' files are its companions, never sessions
    _Spec("claude-code", "CLAUDE_CONFIG_DIR", "projects", (".claude", ".config/claude"), "*.jsonl"),
    _Spec("codex", "CODEX_HOME", "sessions", (".codex",), "rollout-*.jsonl"),  # sessions/YYYY/MM/DD/
    # tmp/<project>/ also holds logs.json and checkpoints: only the chats are sessions
    _Spec("gemini", None, "tmp", (".gemini",), "*/chats/session-*.json*"),
)
"""Every agent whose sessions a no-argument run looks for, in the order they are read."""

_SESSIONS = {spec.agent: spec.sessions for spec in AGENT_HOMES}


def session_files(agent: str, folder: Path) -> Iterator[Path]:
    """The session files of ``agent`` (a name in :data:`AGENT_HOMES`) under its sessions ``folder``:
    the sources the one directory walk lists there (hidden files and companions left out) whose path
    matches the agent's pattern. Nothing when the folder does not exist."""
    if not folder.is_dir():
        return
    from ctxhealth.sources.reader import discover  # the readers' walk hooks: loaded only to look

    pattern = _SESSIONS[agent]
    for source in discover([folder]):
        if not source.grouped and PurePath(source.path).match(pattern):
            yield Path(source.path)


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


def newest(paths: Iterable[Path]) -> Path | None:
    """The most recently modified of ``paths`` (the first of equals; one that cannot be stat'ed is
    skipped), or None: the session a command follows when it is given none."""
    found: tuple[float, Path] | None = None
    for path in paths:
        try:
            mtime = path.stat().st_mtime
        except OSError:
            continue
        if found is None or mtime > found[0]:
            found = (mtime, path)
    return found[1] if found else None
