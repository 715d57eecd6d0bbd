"""The state a Claude Code session's hooks keep between processes, and where it is kept.

Each hook and status-line call is a new process, so what it learned from the transcript is kept as a
:class:`SessionCounters`: how far the transcript was read (byte offset, line), the original request,
the session's monitor (its snapshot ``monitor``, see :mod:`.monitoring`, and its last assessment
``assessment``, which carries the monitor's fill, zone, decision and tool counts), the tool call and
result ids the monitor observed (``observed``: a hook payload that states one again is not counted
twice), compactions, and which notices were already given (``notices``: kind -> the episode, turn
and fill it was given at). Everything a screen shows about the session's health is the monitor's:
nothing here counts tool calls, failures or repeats of its own.

It is stored twice on purpose. The ledger's tail row (``Ledger.set_tail``) is the durable record; a
small JSON file per transcript under ``<home>/claude-code/tails/`` is the fast copy the status line and
the hooks read on every turn, because opening the ledger costs several times Python's own start-up.
The file is written atomically; the ledger is brought up to date whenever a hook does something that
matters (a checkpoint, a notice, a compaction, the end of a session), see :mod:`.hooks`.

Bounded: observed ids and pending ledger events are capped and the monitor's snapshot is bounded by
its windows (another agent's state holds a second one, the monitor at the last settled message, and
for a Codex rollout the reader's few values at its last cut), so the state stays within tens of
kilobytes however long the session runs.
"""

from __future__ import annotations

import json
import os
import zlib

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ctxhealth.atomic import ExclusiveLock

__all__ = [
    "STATE_VERSION",
    "SessionCounters",
    "SessionLock",
    "file_identity",
    "load_counters",
    "save_counters",
    "tail_cache_path",
    "unchanged",
]

STATE_VERSION = 3
MAX_PENDING_EVENTS = 200
INSTRUCTION_CHARS = 4_000
TAIL_CACHE_LIMIT = 16 << 20
"""The largest tail cache a hook reads (its bounded counters take a few KB; more is damage)."""


class SessionCounters:
    """Mutable per-session counters (one process loads, updates and saves them).

    The annotations below are the stored fields, declared once: each one's default follows from its
    type (``_FIELDS``: 0, "", False, an empty dict or list, None for an optional), and ``to_dict`` /
    ``from_dict`` round-trip them through JSON. Unknown keys in stored data are ignored and missing
    ones take their defaults, so an older or newer state never breaks a hook.
    """

    path: str
    offset: int
    line: int
    size: int
    session_id: str | None
    model: str | None
    instruction: str
    fill: int
    fill_source: str
    peak: int
    prompt_seen: int
    """The largest prompt a response reported (the monitor's): it may prove the window larger."""
    turns: int
    last_response_id: str | None
    last_response_usage: list[int]
    """The usage counted for the latest response (``Usage`` field by field; empty while none of its
    parts reported one): a later part of it counts only what it adds (:meth:`Usage.merged`)."""
    output_tokens: int
    observed: list[str]
    stated: list[list[Any]]
    """Tool calls hook payloads stated whose results the transcript did not hold yet, oldest first:
    ``[id, tool name, input, response text, failed]``, redacted (:func:`.hooks._assess_call`)."""
    episodes: int
    drift: float | None
    compactions: int
    notices: dict[str, list[Any]]
    pending_events: list[list[Any]]
    checkpoint_json: str | None
    checkpoint_text: str | None
    checkpoint_pending: bool
    checkpoint_compactions: int
    hooks_seen: bool
    cost_usd: float | None
    thresholds: dict[str, Any] | None
    last_final: list[Any] | None
    monitor: dict[str, Any] | None
    assessment: dict[str, Any] | None
    reader: dict[str, Any] | None
    """Another agent's transcript as last read (:func:`.tail.read_whole`): the file's identity, a
    Codex reader's state at its last cut, and the counters and the monitor's snapshot at the last
    settled message (a Codex rollout's cut, else the last response)."""

    # Not stored: whether this process holds the session's lock (only then may it save the state),
    # and how many of ``pending_events`` were loaded (queued by earlier processes).
    lock_held: bool
    events_loaded: int

    def __init__(self, path: str = "") -> None:
        # (``_FIELDS`` is built from the annotations just after the class)
        for name, default in _FIELDS.items():
            setattr(self, name, default.copy() if isinstance(default, dict | list) else default)
        self.path = path
        self.lock_held = True
        self.events_loaded = 0

    def reset(self) -> None:
        """Forget what was read (the transcript was rewritten); keep notices and unflushed events."""
        keep = (self.notices, self.pending_events, self.hooks_seen, self.lock_held, self.events_loaded)
        self.__init__(self.path)  # type: ignore[misc]
        self.notices, self.pending_events, self.hooks_seen, self.lock_held, self.events_loaded = keep

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"version": STATE_VERSION}
        for name in _FIELDS:
            out[name] = getattr(self, name)
        return out

    @classmethod
    def from_dict(cls, data: object, path: str = "") -> SessionCounters:
        counters = cls(path)
        if not isinstance(data, dict):
            return counters
        for name, default in _FIELDS.items():
            value = data.get(name, default)
            if default is None or isinstance(value, type(default)):
                setattr(counters, name, value)
        if isinstance(data.get("offset"), bool):
            counters.offset = 0
        counters.path = path or counters.path
        return counters

    # -- counting ------------------------------------------------------------------------------

    @property
    def episode(self) -> int:
        """Notices are given once per episode; a compaction (or a resumed session) starts a new one."""
        return self.episodes

    def noticed(self, kind: str) -> bool:
        """Whether notice ``kind`` was already given in this episode."""
        given = self.notices.get(kind)
        return isinstance(given, list) and given[:1] == [self.episode]

    def given_at(self, kind: str) -> tuple[int, int] | None:
        """(turn, fill) when notice ``kind`` was given in this episode, None when it was not."""
        given = self.notices.get(kind)
        if not isinstance(given, list) or len(given) < 3 or given[0] != self.episode:
            return None
        return int(given[1]), int(given[2])

    def mark_noticed(self, kind: str) -> None:
        self.notices[kind] = [self.episode, self.turns, self.fill]

    def queue_event(self, event: str, summary: str) -> None:
        """Remember a hook event for the ledger (flushed with the next ledger write)."""
        self.pending_events.append([event, self.session_id, summary[:200]])
        del self.pending_events[:-MAX_PENDING_EVENTS]


def file_identity(st: os.stat_result) -> list[int]:
    """What says a transcript is the same file, not written since: device, inode, mtime (ns)."""
    return [st.st_dev, st.st_ino, st.st_mtime_ns]


def unchanged(counters: SessionCounters, st: os.stat_result) -> bool:
    """Whether the transcript has nothing the counters have not read: its size is where they
    stopped, and (for another agent's transcript, whose reader state says which file it read) it is
    the same file, not written since."""
    if st.st_size != counters.offset or counters.thresholds is None:
        return False
    reader = counters.reader
    if not isinstance(reader, dict):
        return True
    file = reader.get("file")
    return isinstance(file, list) and [*file, reader.get("mtime")] == file_identity(st)


_TRANSIENT = frozenset({"lock_held", "events_loaded"})


def _default(annotation: str) -> Any:
    if "None" in annotation:
        return None
    return (
        {"int": 0, "str": "", "bool": False}.get(annotation)
        if "[" not in annotation
        else ({} if annotation.startswith("dict") else [])
    )


_FIELDS: dict[str, Any] = {
    name: _default(str(annotation))
    for name, annotation in SessionCounters.__annotations__.items()
    if name not in _TRANSIENT
}
"""Stored field -> default (dicts and lists are copied per instance)."""


def _digest64(data: bytes) -> str:
    # Two 32-bit checksums make a 64-bit key: plenty for a few hundred keys, and zlib loads in
    # microseconds where hashlib pulls in OpenSSL (this runs in every hook process).
    return f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}"


def tail_cache_path(home: str, transcript: str) -> str:
    """Where the fast copy of the counters of ``transcript`` lives under ``home``.

    The name keeps the transcript's own (session id) name plus a digest of its full path; the file
    records the path too and a mismatch is treated as a miss.
    """
    path = os.path.abspath(transcript)
    from ctxhealth.labels import session_label

    stem = session_label(os.path.basename(path), 60)
    return os.path.join(
        home, "claude-code", "tails", f"{stem}-{_digest64(path.encode('utf-8', errors='replace'))}.json"
    )


def load_counters(home: str, transcript: str) -> SessionCounters | None:
    """The cached counters of ``transcript``, or None when absent or unreadable (then start over)."""
    from ctxhealth.atomic import read_private_file

    try:
        # never blocks on a FIFO put in the cache's place, never reads a device or a huge file
        data = json.loads(read_private_file(tail_cache_path(home, transcript), TAIL_CACHE_LIMIT))
    except (OSError, ValueError):
        return None
    path = os.path.abspath(transcript)
    if not isinstance(data, dict) or data.get("version") != STATE_VERSION or data.get("path") != path:
        return None
    return SessionCounters.from_dict(data, path)


def save_counters(home: str, counters: SessionCounters) -> None:
    """Write the fast copy atomically, redacted (:func:`ctxhealth.redact.scrub`) and owner-only.

    Call it holding the session's :class:`SessionLock`: temporary files of earlier writers of this
    cache (killed between creating one and the rename) are removed first.
    """
    from ctxhealth.atomic import remove_stale_temps, write_atomic
    from ctxhealth.redact import scrub

    target = tail_cache_path(home, counters.path)
    data = json.dumps(counters.to_dict(), ensure_ascii=False, separators=(",", ":"))
    remove_stale_temps(target)
    write_atomic(target, scrub(data), own_file=True)


class SessionLock:
    """An advisory lock per transcript, held by every writer of the session's state while it loads,
    updates and saves the counters (hooks and the status line alike).

    Claude Code may run hooks for parallel tool calls at the same time; without the lock two of them
    could each save their own update and one would be lost. Waiting is bounded (``timeout`` seconds);
    ``acquired`` says whether the lock was got: a writer that did not get it must not save the
    counters (it would overwrite what the holder saves). The lock is
    :class:`~ctxhealth.atomic.ExclusiveLock` (``flock``; ``msvcrt`` on Windows; an owner file
    where neither exists, taken over when its process died).
    """

    def __init__(self, home: str, transcript: str, timeout: float = 2.0) -> None:
        self.path = tail_cache_path(home, transcript)[: -len(".json")] + ".lock"
        self.timeout = timeout
        self.acquired = False
        self._lock: ExclusiveLock | None = None

    def __enter__(self) -> SessionLock:
        import time

        from ctxhealth.atomic import ExclusiveLock

        lock = ExclusiveLock(self.path)
        deadline = time.monotonic() + self.timeout
        pause = 0.002
        while True:
            try:
                if lock.acquire():
                    self._lock = lock
                    self.acquired = True
                    return self
            except OSError:
                return self  # an unwritable home fails later, where the error says why
            if time.monotonic() >= deadline:
                return self
            time.sleep(pause)
            pause = min(pause * 1.5, 0.05)

    def __exit__(self, *exc: object) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None
