"""The transcript file as the hooks and the status line may touch it: checked before it is read, and
read only in bounded windows.

Claude Code names the transcript in every payload, and a hook must never wait on what it finds there:
a FIFO, a socket or a device (``/dev/zero``, ``/dev/urandom``) is refused from its ``stat`` alone, and
the file is opened non-blocking and checked again on the open descriptor (it may have been swapped in
between). A regular file is read in windows: the new bytes after a cached offset, at most
``tail_bytes`` of them, and the ``head_bytes`` that hold the original request. However large (a 1 GB
sparse file) or odd (one line of 50 MB, no newline at all) the file, a call reads a bounded amount.
"""

from __future__ import annotations

import os
import stat

from ctxhealth.errors import InputError

__all__ = [
    "CONFIG_KEYS",
    "HookLimits",
    "TranscriptWindow",
    "file_kind",
    "open_transcript",
    "read_window",
    "transcript_problem",
]


# ``[hooks]`` keys of the configuration -> (HookLimits attribute, unit: bytes, or 1 for seconds).
CONFIG_KEYS: dict[str, tuple[str, int]] = {
    "checkpoint_seconds": ("checkpoint_seconds", 1),
    "checkpoint_tail_mb": ("tail_bytes", 1024 * 1024),
    "checkpoint_head_kb": ("head_bytes", 1024),
    "fallback_tail_mb": ("fallback_tail_bytes", 1024 * 1024),
    "lock_seconds": ("lock_seconds", 1),
}


class HookLimits:
    """How much a hook may read and how long it may spend building a checkpoint.

    ``tail_bytes``: the most bytes read from the end of a transcript in one call (a first read of a
    large file, or one that grew by more than this since the last call, skips to its last
    ``tail_bytes``); ``head_bytes``: the start of the file, kept for the original request;
    ``checkpoint_seconds``: the PreCompact / SessionStart budget for a checkpoint (Claude Code
    stops a hook after 60 s by default); ``fallback_tail_bytes``: the tail of the smaller checkpoint
    written first when the transcript is larger than that, so a checkpoint exists whatever happens
    to the bigger one; ``lock_seconds``: how long a hook waits for the session's lock.
    """

    __slots__ = ("checkpoint_seconds", "fallback_tail_bytes", "head_bytes", "lock_seconds", "tail_bytes")

    def __init__(
        self,
        *,
        tail_bytes: int = 64 * 1024 * 1024,
        head_bytes: int = 256 * 1024,
        checkpoint_seconds: float = 20.0,
        fallback_tail_bytes: int = 2 * 1024 * 1024,
        lock_seconds: float = 15.0,
    ) -> None:
        self.tail_bytes = tail_bytes
        self.head_bytes = head_bytes
        self.checkpoint_seconds = checkpoint_seconds
        self.fallback_tail_bytes = fallback_tail_bytes
        self.lock_seconds = lock_seconds

    @classmethod
    def from_config(cls, table: dict[str, object]) -> HookLimits:
        """Limits from the configuration's ``[hooks]`` table (``checkpoint_seconds = 20``,
        ``checkpoint_tail_mb = 64``, ``checkpoint_head_kb = 256``, ``fallback_tail_mb = 2``,
        ``lock_seconds = 15``); missing keys keep their defaults. Raises :class:`ConfigError`
        naming the key for an unknown key or a value that is not a positive number."""
        from ctxhealth.errors import ConfigError

        limits = cls()
        for key, value in table.items():
            if key not in CONFIG_KEYS:
                known = ", ".join(f"hooks.{k}" for k in CONFIG_KEYS)
                raise ConfigError(f"unknown key hooks.{key}", hint=f"known: {known}")
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise ConfigError(f"hooks.{key} must be a positive number (got {value!r})", hint="e.g. 20")
            attribute, unit = CONFIG_KEYS[key]
            setattr(limits, attribute, value if unit == 1 else int(value * unit))
        return limits


def file_kind(mode: int) -> str:
    """What a ``st_mode`` is, in words (``"a FIFO"``, ``"a directory"``, ...)."""
    if stat.S_ISREG(mode):
        return "a regular file"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    return "not a regular file"


def transcript_problem(path: str) -> str | None:
    """Why ``path`` cannot be read as a transcript (``"missing"``, ``"a FIFO (named pipe)"``, ...),
    or None for a regular file. Never opens the file."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "missing"
    except OSError as exc:
        return f"not readable ({exc.strerror or exc})"
    return None if stat.S_ISREG(mode) else file_kind(mode)


def open_transcript(path: str) -> int:
    """A read-only descriptor of the regular file ``path``; raises :class:`InputError` for anything
    else (checked before and after opening; the open never blocks)."""
    problem = transcript_problem(path)
    if problem is not None:
        raise InputError(
            f"{problem}, not a transcript file" if problem != "missing" else "transcript not found",
            hint="Claude Code names its JSONL transcript here; nothing else is read",
            path=path,
        )
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise InputError(
            f"{file_kind(mode)}, not a transcript file",
            hint="Claude Code names its JSONL transcript here; nothing else is read",
            path=path,
        )
    return fd


def _pread(fd: int, size: int, offset: int) -> bytes:
    chunks: list[bytes] = []
    while size > 0:
        chunk = os.pread(fd, min(size, 8 * 1024 * 1024), offset)
        if not chunk:
            break
        chunks.append(chunk)
        size -= len(chunk)
        offset += len(chunk)
    return b"".join(chunks)


class TranscriptWindow:
    """The bytes a bounded read took: ``head`` (whole lines from the start, or b"" when the tail
    already covers it), ``tail`` (whole lines from ``tail_start``), the file ``size``, and how many
    bytes in between were ``skipped``."""

    __slots__ = ("head", "size", "skipped", "tail", "tail_start")

    def __init__(self, head: bytes, tail: bytes, tail_start: int, size: int, skipped: int) -> None:
        self.head = head
        self.tail = tail
        self.tail_start = tail_start
        self.size = size
        self.skipped = skipped

    @property
    def data(self) -> bytes:
        """Head and tail as one JSONL text (a line break between them)."""
        if not self.head:
            return self.tail
        return self.head + (b"" if self.head.endswith(b"\n") else b"\n") + self.tail


def read_window(path: str, *, tail_bytes: int, head_bytes: int, start: int = 0) -> TranscriptWindow:
    """Read ``path`` from ``start`` in a bounded way: everything when that is at most ``tail_bytes``,
    else its first ``head_bytes`` (cut at the last line break) and its last ``tail_bytes`` (from the
    first line start in them). Raises :class:`InputError` when it is not a regular file."""
    fd = open_transcript(path)
    try:
        size = os.fstat(fd).st_size
        if size - start <= tail_bytes:
            return TranscriptWindow(b"", _pread(fd, size - start, start), start, size, 0)
        head = _pread(fd, head_bytes, start)
        cut = head.rfind(b"\n")
        head = head[: cut + 1] if cut >= 0 else b""
        tail_from = size - tail_bytes
        tail = _pread(fd, tail_bytes, tail_from)
        first = tail.find(b"\n")
        # No line start in the window: a single huge line, nothing whole to read.
        tail, tail_start = (tail[first + 1 :], tail_from + first + 1) if first >= 0 else (b"", size)
        skipped = tail_start - start - len(head)
        return TranscriptWindow(head, tail, tail_start, size, skipped)
    finally:
        os.close(fd)
