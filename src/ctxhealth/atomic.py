"""The one atomic-write helper every ctxhealth module uses to put a file on disk.

``write_atomic`` writes to a temporary file in the target's own directory,
flushes and fsyncs it, renames it over the target with ``os.replace`` and then
fsyncs the directory, so a reader sees either the whole old file or the whole
new one, never a torn mix, even if the writer is killed at any instant.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

__all__ = ["fsync_dir", "write_atomic"]


def fsync_dir(directory: Path) -> None:
    """Flush a directory entry to disk so a rename inside it survives a crash.

    Some platforms (Windows) cannot open a directory; there the rename is
    already durable enough and we skip quietly.
    """
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def _create_temp(directory: Path, name: str) -> tuple[int, Path]:
    """Create and open a new, private temporary file beside the target.

    Plain ``os.open(O_EXCL)`` instead of ``tempfile``: hooks write state on every agent
    turn, and ``tempfile`` (with ``shutil`` and ``random``) is a noticeable share of
    their start-up time.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        tmp = directory / f".{name}.{os.urandom(6).hex()}.tmp"
        try:
            return os.open(tmp, flags, 0o600), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"could not create a temporary file in {directory}")


def write_atomic(path: Path | str, data: bytes | str, *, mode: int = 0o644) -> Path:
    """Replace ``path`` with ``data`` atomically; return the resolved path.

    ``str`` data is written as UTF-8. Parent directories are created. The
    temporary file lives next to the target (same filesystem, so the rename is
    atomic) and is removed if anything fails before the rename.
    """
    target = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    directory = target.parent
    directory.mkdir(parents=True, exist_ok=True)
    fd, tmp = _create_temp(directory, target.name)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    fsync_dir(directory)
    return target
