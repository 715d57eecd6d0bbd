"""``ctxhealth watch`` for every format that grows on disk, and which session it follows by default.

A Claude Code transcript is followed incrementally by :class:`ctxhealth.integrations.claude_code.watch
.SessionWatch` (it reads only the appended bytes, as the hooks do). Every other format ctxhealth reads —
Codex rollouts, Gemini CLI chats, OpenHands folders, a JSONL a home-made agent appends to — is followed
by :class:`LogWatch`: when the file (or folder) changed since the last poll it is read again with its
reader, accounted (:func:`ctxhealth.accounting.fill.account_session`: the same fill, compactions and
tool counts as ``check``) and observed whole by a new :class:`ctxhealth.monitor.Monitor` (the same
assessment: a reader may settle a message only once later lines arrive, so a monitor that had seen
it before would have seen another message). Re-reading costs the file's size per change; nothing is
read while it does not change.

:func:`find_latest_session` is the default session: the most recently written session of any agent
whose data directory exists (Claude Code ``~/.claude/projects``, Codex ``$CODEX_HOME/sessions`` or
``~/.codex/sessions``, Gemini CLI ``~/.gemini/tmp/*/chats``). :func:`open_watch` picks the watcher for
a path; :func:`render` draws either as one frame.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ctxhealth.errors import CtxHealthError, InputError
from ctxhealth.model import Format, Message, Session
from ctxhealth.monitor import Assessment, Monitor

if TYPE_CHECKING:
    from ctxhealth.integrations.claude_code.watch import SessionWatch

__all__ = ["AgentDirs", "LogWatch", "check_followable", "find_latest_session", "open_watch", "render"]

DETECT_BYTES = 64 * 1024
MAX_EVENTS = 10
MAX_POINTS = 400
FOLLOWS = (
    "`ctxhealth watch` follows any transcript ctxhealth reads that grows on disk (Claude Code, Codex CLI, "
    "Gemini CLI, OpenHands, a JSONL an agent appends to)"
)


@dataclass(frozen=True, slots=True)
class AgentDirs:
    """Where each agent keeps its sessions (the CLI fills these from the home directory and the
    environment; a directory that does not exist is skipped)."""

    claude_projects: Path
    codex_sessions: Path
    gemini_tmp: Path

    @classmethod
    def under(cls, home: Path, env: Mapping[str, str] | None = None) -> AgentDirs:
        """Each agent's folder under ``home`` as :func:`ctxhealth.sources.homes.agent_homes` names them
        (``CLAUDE_CONFIG_DIR`` and ``CODEX_HOME`` in ``env`` honoured); of several places an agent may
        use, the first that exists."""
        from ctxhealth.sources.homes import agent_homes

        places: dict[str, Path] = {}
        for entry in agent_homes(env or {}, home):
            if entry.agent not in places or (not places[entry.agent].is_dir() and entry.path.is_dir()):
                places[entry.agent] = entry.path
        return cls(
            claude_projects=places["claude-code"],
            codex_sessions=places["codex"],
            gemini_tmp=places["gemini"],
        )

    def candidates(self) -> Iterable[Path]:
        """Every session file of every agent, as :func:`ctxhealth.sources.homes.session_files` names
        them (the one walk: hidden files and Claude Code's sub-agent files are no sessions)."""
        from ctxhealth.sources.homes import session_files

        yield from session_files("claude-code", self.claude_projects)
        yield from session_files("codex", self.codex_sessions)
        yield from session_files("gemini", self.gemini_tmp)

    def roots(self) -> list[Path]:
        return [self.claude_projects, self.codex_sessions, self.gemini_tmp]


def find_latest_session(dirs: AgentDirs) -> Path | None:
    """The most recently modified session file of any agent in ``dirs``, or None."""
    from ctxhealth.sources.homes import newest

    return newest(dirs.candidates())


def check_followable(path: Path) -> Format | None:
    """The format of ``path`` (None: empty so far, or its first line still being written: a session
    that just started), or
    :class:`InputError` saying what it is when ``watch`` cannot follow it (gzip, a FIFO or device,
    bytes no reader recognises)."""
    from ctxhealth.integrations.claude_code.transcript import open_transcript
    from ctxhealth.sources.reader import detect_format

    if path.is_dir():
        return None
    fd = open_transcript(str(path))
    try:
        head = os.pread(fd, DETECT_BYTES, 0)
    finally:
        os.close(fd)
    if not head.strip():
        return None
    if head.startswith(b"\x1f\x8b"):
        raise InputError(
            "a gzip-compressed file, which does not grow as an agent writes",
            hint=f"{FOLLOWS}; for this one use `ctxhealth check {path}`",
            path=str(path),
        )
    found = detect_format(head, str(path))
    if found is None and b"\n" not in head and len(head) < DETECT_BYTES and head.lstrip()[:1] in (b"{", b"["):
        return None  # a writer half-way through the first line: judged once it is written
    if found is None:
        raise InputError(
            "unrecognised content (no format ctxhealth reads)",
            hint=f"{FOLLOWS}; see `ctxhealth check --help` for the formats",
            path=str(path),
        )
    return found


class LogWatch:
    """The live state of a transcript in any format, re-read when it changes."""

    def __init__(self, path: Path) -> None:
        self.transcript = path
        self.session: Session | None = None
        self.fills: deque[int] = deque(maxlen=MAX_POINTS)
        self.events: deque[str] = deque(maxlen=MAX_EVENTS)
        self.monitor = Monitor()
        self.assessment: Assessment | None = None
        self.seen = 0
        self.turns = self.compactions = self.tool_calls = self.tool_errors = 0
        self.fill = self.peak = self.usable = 0
        self.model: str | None = None
        self._stamp: tuple[int, int, int] | None = None
        self._keys: set[tuple[object, ...]] = set()

    def _changed(self) -> bool:
        try:
            if self.transcript.is_dir():
                stats = [p.stat() for p in self.transcript.rglob("*") if p.is_file()]
                stamp = (
                    len(stats),
                    sum(s.st_size for s in stats),
                    max((s.st_mtime_ns for s in stats), default=0),
                )
            else:
                st = self.transcript.stat()
                stamp = (1, st.st_size, st.st_mtime_ns)
        except OSError:
            return False
        if stamp == self._stamp:
            return False
        self._stamp = stamp
        return True

    def poll(self) -> int:
        """Read the transcript again if it changed; return the number of new messages."""
        from ctxhealth.accounting.fill import account_session
        from ctxhealth.sources.reader import read_sessions

        if not self._changed():
            return 0
        try:
            sessions = list(read_sessions([self.transcript]))
        except CtxHealthError:
            return 0  # half-written: the next change is read again
        if not sessions:
            return 0
        session = sessions[-1]
        keys = [_key(m) for m in session.messages]
        if self._keys and not self._keys & set(keys):  # rewritten from the start: follow it anew
            self._keys = set()
        account = account_session(session)
        # the session's one ModelInfo, with the window its log states (a Codex rollout's), as check's;
        # every message observed in the form this read gives it: a reader may settle an earlier line's
        # message only once later lines arrive (a Codex response gets its usage from the record after
        # it, a Gemini response is written again with its tool calls), so what a monitor saw of it
        # before is no part of the session
        self.monitor = Monitor(info=account.model)
        if session.messages:
            self.assessment = self.monitor.observe_session(session, account=account)
        # a message not seen before (by where it was written and what it holds), for the count and
        # the events
        new = [m for m, k in zip(session.messages, keys, strict=True) if k not in self._keys]
        self._keys.update(keys)
        self._note(new)
        self.seen = len(session.messages)
        self.session = session
        self.model = session.model or account.model.id
        self.turns, self.compactions = len(account.turns), len(account.compactions)
        self.tool_calls, self.tool_errors = account.tool_calls, account.tool_errors
        self.fill, self.peak, self.usable = account.current, account.peak, account.usable_window
        self.fills.clear()
        self.fills.extend(t.tokens for t in account.turns)
        return len(new)

    def _note(self, messages: list[Message]) -> None:
        for m in messages:
            if m.compaction is not None:
                pre = f" from {m.compaction.pre_tokens:,} tokens" if m.compaction.pre_tokens else ""
                kind = " (summary encrypted)" if m.compaction.encrypted else ""
                self.events.append(f"compaction{pre}{kind}")
            for r in m.tool_results:
                if r.is_error:
                    self.events.append(f"tool failed: {' '.join(r.text.split())[:70]}")


def _key(m: Message) -> tuple[object, ...]:
    ids = tuple(b.id for b in m.tool_calls) + tuple(r.tool_call_id for r in m.tool_results)
    return (m.line, m.role, m.compaction is not None, ids, m.text[:80])


def open_watch(path: Path) -> SessionWatch | LogWatch:
    """The watcher for ``path``: incremental for a Claude Code transcript, :class:`LogWatch` otherwise."""
    found = check_followable(path)
    if found is Format.CLAUDE_CODE or (found is None and not path.is_dir() and _claude_home(path)):
        from ctxhealth.integrations.claude_code.watch import SessionWatch

        return SessionWatch(path)
    return LogWatch(path)


def _claude_home(path: Path) -> bool:
    return "projects" in path.parts and ".claude" in path.parts


def render(watch: SessionWatch | LogWatch, *, width: int = 80) -> str:
    """One frame of either watcher."""
    from ctxhealth.integrations.claude_code.watch import _assessment_lines, _sparkline, render_frame

    if not isinstance(watch, LogWatch):
        return render_frame(watch, width=width)
    w = watch
    fmt = w.session.format.value if w.session is not None else "(nothing yet)"
    percent = 100 * w.fill / w.usable if w.usable else 0.0
    lines = [
        f"ctxhealth watch — {w.transcript.name} ({fmt})",
        f"model {w.model or '?'} · turns {w.turns} · compactions {w.compactions} · messages {w.seen}",
        "",
        f"fill {w.fill:,} / {w.usable:,} usable ({percent:.0f}%)  peak {w.peak:,}",
        f"fill │{_sparkline(list(w.fills), max(10, width - 8), w.usable)}│",
        "",
        f"tool calls {w.tool_calls} ({w.tool_errors} failed)",
        "",
        *_assessment_lines(w.assessment),
        "",
        "recent events:",
        *(f"  {e}" for e in list(w.events)[-MAX_EVENTS:]),
    ]
    return "\n".join(line[:width] if len(line) > width else line for line in lines)
