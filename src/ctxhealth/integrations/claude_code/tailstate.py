"""The counters a Claude Code session's hooks keep between processes, and where they are kept.

Each hook and status-line call is a new process, so what it learned from the transcript is kept as a
:class:`SessionCounters`: how far the transcript was read (byte offset, line), the original request,
the latest fill, tool-call and failure counters, recent call signatures (doom loops), compactions,
which notices were already given in this episode, and the session's monitor: its snapshot
(``monitor``, see :mod:`.monitoring`) and its last assessment (``assessment``).

It is stored twice on purpose. The ledger's tail row (``Ledger.set_tail``) is the durable record; a
small JSON file per transcript under ``<home>/claude-code/tails/`` is the fast copy the status line and
the hooks read on every turn, because opening the ledger costs several times Python's own start-up.
The file is written atomically; the ledger is brought up to date whenever a hook does something that
matters (a checkpoint, a notice, a compaction, the end of a session), see :mod:`.hooks`.

Doom loops: the same call (name + input) finishing ``DOOM_LOOP_REPEATS`` times. Re-running a call
after editing what it reads or runs is iteration, not a loop: :func:`call_files` reads which files a
call reads or runs and which it edits (a cheap form of :mod:`ctxhealth.signals.calls`, which is too
costly to import on a hook's fast path), and :meth:`SessionCounters.note_call` forgets the count of
every call that depends on an edited file (matched by file name; a check that names no file, such
as ``pytest`` or ``make test``, depends on every edit).

Bounded: call signatures, seen tool ids and pending ledger events are capped and the monitor's
snapshot is bounded by its windows, so the state stays within tens of kilobytes however long the
session runs.
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
    "DOOM_LOOP_REPEATS",
    "STATE_VERSION",
    "SessionCounters",
    "SessionLock",
    "call_files",
    "call_signature",
    "load_counters",
    "save_counters",
    "tail_cache_path",
]

STATE_VERSION = 2
MAX_SIGNATURES = 256
MAX_SEEN_IDS = 512
MAX_PENDING_EVENTS = 200
DOOM_LOOP_REPEATS = 3
RECENT_OUTCOMES = 20
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
    turns: int
    last_response_id: str | None
    output_tokens: int
    tool_calls: int
    tool_errors: int
    consecutive_failures: int
    max_consecutive_failures: int
    failures_by_tool: dict[str, int]
    signatures: dict[str, int]
    dependents: dict[str, list[str]]
    pending_calls: dict[str, list[str]]
    seen_ids: list[str]
    recent_outcomes: str
    episodes: int
    doom_loops: int
    last_doom_signature: str
    drift: float | None
    compactions: int
    notices: dict[str, int]
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
        return self.notices.get(kind) == self.episode

    def mark_noticed(self, kind: str) -> None:
        self.notices[kind] = self.episode

    def record_tool(self, tool_id: str | None, name: str, signature: str, failed: bool) -> bool:
        """Count one finished tool call (once per id); return False if it was already counted."""
        if tool_id:
            if tool_id in self.seen_ids:
                return False
            self.seen_ids.append(tool_id)
            del self.seen_ids[:-MAX_SEEN_IDS]
        self.tool_calls += 1
        self.recent_outcomes = (self.recent_outcomes + ("x" if failed else "."))[-RECENT_OUTCOMES:]
        if failed:
            self.tool_errors += 1
            self.consecutive_failures += 1
            self.max_consecutive_failures = max(self.max_consecutive_failures, self.consecutive_failures)
            self.failures_by_tool[name] = self.failures_by_tool.get(name, 0) + 1
        else:
            self.consecutive_failures = 0
        count = self.signatures.pop(signature, 0) + 1
        self.signatures[signature] = count  # re-inserted: most recent last, oldest evicted first
        while len(self.signatures) > MAX_SIGNATURES:
            del self.signatures[next(iter(self.signatures))]
        if count == DOOM_LOOP_REPEATS and name != "?":
            self.doom_loops += 1
            self.last_doom_signature = signature
        return True

    def note_call(self, signature: str, reads: list[str], edits: list[str]) -> None:
        """A call was made: an edit forgets the counts of calls that read or run the edited files
        (they are new work when run again); the call's own reads are remembered for later edits.
        A URL is no file (and may carry credentials): it is not remembered."""
        reads = [p for p in reads if "://" not in p]
        edits = [p for p in edits if "://" not in p]
        if ANY_EDIT in edits:  # files unknown (``git apply``, ``patch``): every dependent is new work
            edits = list(self.dependents)
        for path in edits:
            for target in (_file_name(path), ANY_EDIT):
                for sig in self.dependents.pop(target, []):
                    self.signatures.pop(sig, None)
        for path in reads:
            target = path if path == ANY_EDIT else _file_name(path)
            sigs = self.dependents.pop(target, [])
            if signature not in sigs:
                sigs = [*sigs, signature][-MAX_SIGNATURES:]
            self.dependents[target] = sigs  # re-inserted: most recent last, oldest evicted first
        while len(self.dependents) > MAX_SIGNATURES:
            del self.dependents[next(iter(self.dependents))]

    def queue_event(self, event: str, summary: str) -> None:
        """Remember a hook event for the ledger (flushed with the next ledger write)."""
        self.pending_events.append([event, self.session_id, summary[:200]])
        del self.pending_events[:-MAX_PENDING_EVENTS]


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


def call_signature(name: str, tool_input: object) -> str:
    """A short, stable key for a tool call (name + canonical JSON of its input)."""
    try:
        canonical = json.dumps(tool_input, sort_keys=True, separators=(",", ":"), default=str)
    except (TypeError, ValueError):
        canonical = repr(tool_input)
    return f"{name}:{_digest64(canonical.encode('utf-8', errors='replace'))}"


ANY_EDIT = "*"
_EDIT_TOOLS = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit"})
_READ_TOOLS = frozenset({"Read", "NotebookRead"})
_SHELL_TOOLS = frozenset({"Bash", "bash", "shell"})
_RUNNERS = frozenset(
    {"python", "python3", "node", "bash", "sh", "zsh", "ruby", "perl", "pytest", "deno", "bun"}
)
_CHECKS = (
    "pytest",
    "make",
    "npm test",
    "npm run",
    "yarn test",
    "cargo ",
    "go test",
    "go build",
    "tox",
    "jest",
)


def _file_name(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def _shell_files(command: str) -> tuple[list[str], list[str]]:
    head = command.split("\n", 1)[0] if "<<" in command else command[:600]
    reads: list[str] = []
    edits: list[str] = []
    for segment in head.replace("&&", ";").replace("||", ";").replace("|", ";").split(";"):
        words = segment.split()
        if not words:
            continue
        verb = _file_name(words[0])
        args = [w.strip("'\"") for w in words[1:] if not w.startswith("-")]
        if "/" in words[0] and "." in verb:
            reads.append(words[0])  # ./build.sh
        elif verb in _RUNNERS or verb.startswith("python"):
            reads += [a for a in args if "." in a][:1]
        elif verb in ("cat", "head", "tail", "nl", "less"):
            reads += [a for a in args if "." in a and ">" not in a]
        elif verb == "sed" and any(w.startswith("-i") for w in words[1:]):
            edits += [a for a in args[1:] if "." in a]
        elif verb == "tee":
            edits += args
        elif verb == "patch" or (verb == "git" and args[:1] == ["apply"]):
            edits.append(ANY_EDIT)
        for i, word in enumerate(words):
            if word in (">", ">>") and i + 1 < len(words):
                edits.append(words[i + 1])
            elif word.startswith(">") and len(word) > 2 and not word.startswith(">&"):
                edits.append(word.lstrip(">"))
    edits = [e for e in edits if not e.startswith("/dev/")]
    if not reads and any(check in head for check in _CHECKS):
        reads.append(ANY_EDIT)
    return reads, edits


def call_files(name: str, tool_input: object) -> tuple[list[str], list[str]]:
    """(files a call reads or runs, files it edits) for the doom-loop count (see the module
    docstring); ``ANY_EDIT`` among the reads for a check that names no file."""
    if not isinstance(tool_input, dict):
        return [], []
    path = tool_input.get("file_path") or tool_input.get("notebook_path") or tool_input.get("path")
    if name in _EDIT_TOOLS:
        return [], [path] if isinstance(path, str) else []
    if name in _READ_TOOLS:
        return ([path] if isinstance(path, str) else []), []
    command = tool_input.get("command")
    if name in _SHELL_TOOLS and isinstance(command, str):
        return _shell_files(command)
    return [], []


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
