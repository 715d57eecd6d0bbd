"""The one atomic-write helper every ctxhealth module uses to put a file on disk.

``write_atomic`` writes to a temporary file in the target's own directory,
flushes and fsyncs it, renames it over the target with ``os.replace`` and then
fsyncs the directory, so a reader sees either the whole old file or the whole
new one, never a torn mix, even if the writer is killed at any instant. It never
destroys what it writes to: a symbolic link is written through to its target, and
a FIFO or device (``/dev/null``) is written directly instead of being replaced.

Private by default: files are created ``0600`` and the directories this module
creates ``0700``, set explicitly so the umask cannot widen or narrow them
(ctxhealth's files hold excerpts of transcripts). ``remove_stale_temps`` clears
the temporary files a killed writer left behind.

``ExclusiveLock`` is the one lock file every writer that must be alone takes (a fleet store's
run, a session's hook state): ``flock``, ``msvcrt`` on Windows, or an owner file elsewhere.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
from pathlib import Path

__all__ = [
    "LOCK_BACKENDS",
    "PRIVATE_DIR_MODE",
    "PRIVATE_FILE_MODE",
    "ExclusiveLock",
    "create_private_file",
    "fsync_dir",
    "lock_backend",
    "make_private_dirs",
    "read_private_file",
    "remove_stale_temps",
    "write_atomic",
]

PRIVATE_FILE_MODE = 0o600
PRIVATE_DIR_MODE = 0o700


def make_private_dirs(directory: Path | str) -> None:
    """Create ``directory`` and its missing parents, each ``0700`` whatever the umask.

    Directories that already exist are left as they are: they are the user's, or ours already.
    """
    target = Path(directory)
    missing: list[Path] = []
    probe = target
    while not probe.exists():
        missing.append(probe)
        if probe.parent == probe:
            break
        probe = probe.parent
    for path in reversed(missing):
        try:
            os.mkdir(path, PRIVATE_DIR_MODE)
        except FileExistsError:
            continue  # another process made it meanwhile (ctxhealth makes them private too)
        os.chmod(path, PRIVATE_DIR_MODE)
    if not target.is_dir():
        raise NotADirectoryError(f"not a directory: {target}")


def create_private_file(path: Path | str) -> None:
    """Make sure ``path`` exists and is ``0600`` (created empty if missing; an existing file of
    ours with wider permissions, e.g. from an older version, is narrowed)."""
    target = Path(path)
    make_private_dirs(target.parent)
    # Non-blocking: a FIFO put in the file's place must not hang the caller.
    flags = os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(target, flags, PRIVATE_FILE_MODE)
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(target))
        if status.st_mode & 0o777 != PRIVATE_FILE_MODE:
            os.fchmod(fd, PRIVATE_FILE_MODE)
    finally:
        os.close(fd)


def read_private_file(path: Path | str, limit: int) -> bytes:
    """The bytes of one of ctxhealth's own small files (a cache, a state file), at most ``limit``
    of them. Raises ``OSError`` when it is not a regular file: the open never blocks (a FIFO put
    in its place), and a device or a huge file is never read whole."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    if size > limit:
        raise OSError(errno.EFBIG, f"larger than {limit:,} bytes", str(path))
    return b"".join(chunks)


def remove_stale_temps(target: Path | str) -> int:
    """Remove the temporary files of earlier writes of ``target`` (a writer killed between
    creating its temporary file and the rename leaves one behind); return how many.

    Call it only while no other process can be writing ``target`` (e.g. under its lock).
    """
    path = Path(target)
    prefix = f".{path.name}."
    removed = 0
    try:
        names = os.listdir(path.parent)
    except OSError:
        return 0
    for name in names:
        if name.startswith(prefix) and name.endswith(".tmp"):
            with contextlib.suppress(OSError):
                os.unlink(path.parent / name)
                removed += 1
    return removed


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


def _write_special(target: Path, payload: bytes) -> bool:
    """Write ``payload`` straight into ``target`` when it is a FIFO or a character device (a
    rename would replace ``/dev/null`` or the pipe itself with a regular file); True when done.
    False: no such file, or a regular one (the caller writes atomically). A directory, socket or
    block device is refused."""
    try:
        status = os.stat(target)
    except FileNotFoundError:
        return False
    kind = status.st_mode
    if stat.S_ISREG(kind):
        return False
    if stat.S_ISDIR(kind):
        raise IsADirectoryError(errno.EISDIR, "is a directory, not a file", str(target))
    if not (stat.S_ISFIFO(kind) or stat.S_ISCHR(kind)):
        raise OSError(errno.EINVAL, "not a regular file, a FIFO or a character device", str(target))
    # Non-blocking open: a FIFO nobody reads fails at once (ENXIO) instead of hanging.
    fd = os.open(target, os.O_WRONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        os.set_blocking(fd, True)
        view = memoryview(payload)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
    return True


def write_atomic(
    path: Path | str,
    data: bytes | str,
    *,
    mode: int = PRIVATE_FILE_MODE,
    create_parents: bool = True,
    own_file: bool = False,
) -> Path:
    """Replace ``path`` with ``data`` atomically; return the path written.

    ``str`` data is written as UTF-8. Missing parent directories are created
    ``0700`` (with ``create_parents``; without, a missing folder is an error: a
    path the user typed must not grow folders silently); the file gets ``mode``
    (default ``0600``) whatever the umask. The temporary file lives next to the
    target (same filesystem, so the rename is atomic) and is removed if anything
    fails before the rename.

    A symbolic link is written through: its target is replaced, the link stays
    (a dotfiles setup links ``settings.json``). A FIFO or character device
    (``/dev/null``, ``/dev/stdout``) is written directly, never replaced; a
    directory, socket or block device is refused. ``own_file``: the target is one
    of ctxhealth's own files in its own folder (a cache): a FIFO, device or link
    found in its place is junk, replaced by the file.
    """
    target = Path(path)
    if not own_file and os.path.islink(target):
        target = Path(os.path.realpath(target))
    payload = data.encode("utf-8") if isinstance(data, str) else data
    if not own_file and _write_special(target, payload):
        return target
    directory = target.parent
    if create_parents:
        make_private_dirs(directory)
    elif not directory.is_dir():
        raise FileNotFoundError(errno.ENOENT, "no such folder (create it first)", str(directory))
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


LOCK_BACKENDS = ("fcntl", "msvcrt", "owner-file")
"""How :class:`ExclusiveLock` locks, by platform: ``flock`` where ``fcntl`` exists, a byte-range
lock (``msvcrt.locking``) on Windows, else an owner file created atomically (a hard link of a file
naming the owner's process and host), taken over when that process is gone."""


def lock_backend() -> str:
    """The lock this platform gives (the first of :data:`LOCK_BACKENDS` it has)."""
    try:
        import fcntl  # noqa: F401
    except ImportError:
        return "msvcrt" if sys.platform == "win32" else "owner-file"
    return "fcntl"


class ExclusiveLock:
    """An exclusive lock on ``path``, one holder at a time across processes; never waits.

    :meth:`acquire` returns False when another process holds it. The lock goes with its holder:
    :meth:`release`, closing the descriptor, or the process's death (``fcntl`` and ``msvcrt`` by
    the system; an owner file by the next taker, which finds its process gone on this host).
    ``backend`` (one of :data:`LOCK_BACKENDS`) is for tests; by default the platform's.
    """

    def __init__(self, path: Path | str, backend: str | None = None) -> None:
        self.path = Path(path)
        self.backend = backend or lock_backend()
        self.owner: str | None = None
        """Who holds the lock, when :meth:`acquire` failed and the owner file says so."""
        self._fd: int | None = None
        self._mine: bytes | None = None

    def acquire(self) -> bool:
        make_private_dirs(self.path.parent)
        if self.backend == "owner-file":
            return self._acquire_owner_file()
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), PRIVATE_FILE_MODE)
        try:
            if self.backend == "fcntl":
                import fcntl

                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            elif sys.platform == "win32":  # pragma: no cover - Windows only
                import msvcrt

                msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            else:
                raise OSError(errno.ENOLCK, f"no {self.backend} lock on this platform")
        except OSError:
            os.close(fd)
            return False
        self._fd = fd
        return True

    def _acquire_owner_file(self) -> bool:
        import socket

        mine = f"{os.getpid()} {socket.gethostname()} {os.urandom(4).hex()}\n".encode()
        for _ in range(2):  # once more after clearing a stale owner
            fd, tmp = _create_temp(self.path.parent, self.path.name)
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(mine)
                try:
                    os.link(tmp, self.path)  # atomic: fails when an owner file is there
                except FileExistsError:
                    pass
                else:
                    self._mine = mine
                    return True
            finally:
                with contextlib.suppress(OSError):
                    tmp.unlink()
            if not self._clear_stale():
                return False
        return False

    def _clear_stale(self) -> bool:
        """Remove the owner file when its process is gone (on this host); whether it was."""
        import socket

        try:
            held = self.path.read_bytes()
        except FileNotFoundError:
            return True
        except OSError:
            return False
        fields = held.decode("utf-8", "replace").split()
        self.owner = " ".join(fields[:2]) or "unknown"
        if len(fields) >= 2 and fields[0].isdigit() and fields[1] == socket.gethostname():
            if _process_alive(int(fields[0])):
                return False
        elif fields:  # another host's, or not ours to judge
            return False
        # a dead owner, or an empty file (a lock file another backend left): take it over
        with contextlib.suppress(FileNotFoundError):
            if self.path.read_bytes() == held:
                self.path.unlink()
        return True

    def release(self) -> None:
        if self._fd is not None:
            if self.backend == "msvcrt" and sys.platform == "win32":  # pragma: no cover
                import msvcrt

                with contextlib.suppress(OSError):
                    msvcrt.locking(self._fd, msvcrt.LK_UNLCK, 1)
            os.close(self._fd)  # closing the descriptor releases a flock
            self._fd = None
        if self._mine is not None:
            with contextlib.suppress(OSError):
                if self.path.read_bytes() == self._mine:
                    self.path.unlink()
            self._mine = None


def _process_alive(pid: int) -> bool:
    """Whether process ``pid`` runs on this host (POSIX; elsewhere assumed alive)."""
    if sys.platform == "win32":  # pragma: no cover - os.kill(pid, 0) would signal it there
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
