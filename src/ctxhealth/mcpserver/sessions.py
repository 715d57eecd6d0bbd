"""Which transcript an MCP tool call is about: the host's own session, found without asking the agent.

An MCP server learns little about its client: Claude Code starts it with the session's id in
``CLAUDE_CODE_SESSION_ID`` and its working directory; Codex CLI and Gemini CLI start it in the
agent's working directory. :func:`find_transcript` turns that (a :class:`Host`) and the tool's
optional ``path`` / ``session_id`` arguments into one transcript file:

1. ``path``: that file (relative to the agent's directory);
2. ``session_id`` (or the host's own id): ``<id>.jsonl`` under Claude Code's projects, a Codex
   rollout whose name ends with the id, a Gemini CLI chat that names it;
3. the agent's directory: the newest transcript any of the three hosts keeps for it (Claude Code's
   ``projects/<mangled cwd>/``, Codex rollouts whose ``session_meta`` names the directory, Gemini
   CLI's project ``chats/``).

Every look-up is bounded (a fixed number of files, a fixed number of bytes read from each) so a
tool call never walks a whole history. Nothing here reads the environment: the server builds the
:class:`Host` once from its own and passes it in.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from ctxhealth.errors import InputError

__all__ = ["Host", "find_transcript", "host_from_environment", "project_dir_name"]

CODEX_FILES_SCANNED = 200
"""Newest Codex rollouts whose first line is read to match the agent's directory."""

HEAD_BYTES = 64 * 1024
"""Bytes of a rollout read to find its ``session_meta`` line."""

_NOT_NAME = re.compile(r"[^A-Za-z0-9]")


@dataclass(frozen=True, slots=True)
class Host:
    """Where the agent runs and where its hosts keep their transcripts."""

    cwd: Path
    claude_dir: Path
    codex_dir: Path
    gemini_dir: Path
    session_id: str | None = None


def host_from_environment(env: Mapping[str, str], *, cwd: Path, home: Path) -> Host:
    """The host as the server process sees it: ``CLAUDE_CONFIG_DIR``, ``CODEX_HOME``,
    ``GEMINI_CLI_HOME`` (each else its default under ``home``), ``CLAUDE_CODE_SESSION_ID``."""
    gemini_home = Path(env["GEMINI_CLI_HOME"]) if env.get("GEMINI_CLI_HOME") else home
    return Host(
        cwd=cwd,
        claude_dir=Path(env.get("CLAUDE_CONFIG_DIR") or home / ".claude"),
        codex_dir=Path(env.get("CODEX_HOME") or home / ".codex"),
        gemini_dir=gemini_home / ".gemini",
        session_id=env.get("CLAUDE_CODE_SESSION_ID") or None,
    )


def project_dir_name(cwd: Path) -> str:
    """Claude Code's folder name for a project: the path with every non-alphanumeric character as ``-``."""
    return _NOT_NAME.sub("-", str(cwd))


def find_transcript(host: Host, *, path: str | None = None, session_id: str | None = None) -> Path:
    """The transcript a tool call is about (see the module docstring); raises :class:`InputError`
    saying what was looked for and how to name the session instead."""
    if path:
        chosen = Path(path).expanduser()
        chosen = chosen if chosen.is_absolute() else host.cwd / chosen
        if not chosen.is_file():
            raise InputError(
                "no transcript file here",
                hint="pass `path` as a transcript file (absolute, or relative to the agent's directory)",
                path=str(chosen),
            )
        return chosen
    if session_id:
        found = _by_session_id(host, session_id)
        if found is None:
            raise InputError(
                f"no transcript of session {session_id!r} under {host.claude_dir}, {host.codex_dir} "
                f"or {host.gemini_dir}",
                hint="pass `path` (the transcript file) instead",
            )
        return found
    if host.session_id:
        found = _own_session(host, host.session_id)
        if found is not None:
            return found
    candidates = [p for p in _for_directory(host) if p.is_file()]
    if not candidates:
        raise InputError(
            f"no agent session found for {host.cwd}: no Claude Code, Codex or Gemini CLI transcript of "
            "this directory",
            hint="pass `path` (a transcript file) or `session_id`",
        )
    return max(candidates, key=_mtime)


OWN_SESSION_WAIT_SECONDS = 2.0
"""How long a call waits for the host's own session file to appear: the host names its session before it
has written the transcript (a first turn), and the newest transcript of the directory may be another."""


def _own_session(host: Host, session_id: str) -> Path | None:
    """The transcript of the session the host names, waiting briefly for it to be written."""
    deadline = time.monotonic() + OWN_SESSION_WAIT_SECONDS
    while True:
        found = _by_session_id(host, session_id)
        if found is not None or time.monotonic() >= deadline:
            return found
        time.sleep(0.05)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _safe_id(session_id: str) -> str | None:
    """The id when it can name a file (no separators or globbing), else None."""
    return session_id if re.fullmatch(r"[A-Za-z0-9._-]{1,200}", session_id) else None


def _by_session_id(host: Host, session_id: str) -> Path | None:
    sid = _safe_id(session_id)
    if sid is None:
        return None
    projects = host.claude_dir / "projects"
    own = projects / project_dir_name(host.cwd) / f"{sid}.jsonl"
    if own.is_file():
        return own
    if projects.is_dir():
        for project in _dirs(projects):
            candidate = project / f"{sid}.jsonl"
            if candidate.is_file():
                return candidate
    for rollout in _codex_rollouts(host.codex_dir):
        if rollout.stem.endswith(sid):
            return rollout
    for chat in _gemini_chats(host):
        if sid in chat.name or sid[:8] in chat.name:
            return chat
    return None


def _dirs(parent: Path) -> list[Path]:
    try:
        return sorted(p for p in parent.iterdir() if p.is_dir())
    except OSError:
        return []


def _files(parent: Path, pattern: str) -> list[Path]:
    try:
        return sorted(parent.glob(pattern))
    except OSError:
        return []


def _for_directory(host: Host) -> Iterator[Path]:
    yield from _files(host.claude_dir / "projects" / project_dir_name(host.cwd), "*.jsonl")
    for rollout in _codex_rollouts(host.codex_dir):
        if _codex_cwd(rollout) == str(host.cwd):
            yield rollout
    yield from _gemini_chats(host, only_cwd=True)


def _codex_rollouts(codex_dir: Path) -> list[Path]:
    """The newest rollouts (``sessions/YYYY/MM/DD/rollout-*.jsonl``), at most CODEX_FILES_SCANNED."""
    found: list[Path] = []
    for year in reversed(_dirs(codex_dir / "sessions")):
        for month in reversed(_dirs(year)):
            for day in reversed(_dirs(month)):
                found.extend(reversed(_files(day, "rollout-*.jsonl")))
                if len(found) >= CODEX_FILES_SCANNED:
                    return found[:CODEX_FILES_SCANNED]
    return found


def _codex_cwd(rollout: Path) -> str | None:
    """The working directory a rollout's ``session_meta`` line names (first HEAD_BYTES only)."""
    try:
        with rollout.open("rb") as handle:
            head = handle.read(HEAD_BYTES)
    except OSError:
        return None
    for line in head.splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if isinstance(item, dict) and item.get("type") == "session_meta":
            payload = item.get("payload")
            cwd = payload.get("cwd") if isinstance(payload, dict) else None
            return cwd if isinstance(cwd, str) else None
    return None


def _gemini_project_dirs(host: Host) -> list[Path]:
    """Gemini CLI's temp folders of the agent's directory: the short name ``projects.json`` gives it,
    a folder whose ``.project_root`` names it, and the older sha256 of the path."""
    tmp = host.gemini_dir / "tmp"
    found: list[Path] = []
    try:
        registry = json.loads((host.gemini_dir / "projects.json").read_text(encoding="utf-8"))
        slug = registry.get("projects", {}).get(str(host.cwd)) if isinstance(registry, dict) else None
        if isinstance(slug, str) and _safe_id(slug):
            found.append(tmp / slug)
    except (OSError, ValueError, AttributeError):
        pass
    for folder in _dirs(tmp):
        try:
            if (folder / ".project_root").read_text(encoding="utf-8").strip() == str(host.cwd):
                found.append(folder)
        except OSError:
            continue
    found.append(tmp / hashlib.sha256(str(host.cwd).encode()).hexdigest())
    return list(dict.fromkeys(found))


def _gemini_chats(host: Host, *, only_cwd: bool = False) -> list[Path]:
    folders = _gemini_project_dirs(host) if only_cwd else _dirs(host.gemini_dir / "tmp")
    chats: list[Path] = []
    for folder in folders:
        chats.extend(_files(folder / "chats", "session-*.json*"))
    return chats
