"""The per-turn helper: one long-lived process per ctxhealth home that answers the status line and
the per-turn hooks, so a turn does not pay for importing the reader, the monitor and the ledger.

Every status-line refresh and hook is a new Python process; importing what a turn needs (the
transcript reader, the monitor and its detectors, the policy, the ledger) costs several times
Python's own start-up. The helper has them imported once. It is started on demand: a command that
finds no helper does its work itself (exactly as without a helper) and then starts one in the
background (``python -m ctxhealth.cli.helper HOME``, its own session, no service manager); the
next commands ask it over a Unix socket, ``<home>/claude-code/helper.sock``, in a directory only
the owner can open. The helper runs the same functions the commands would run
(:func:`~ctxhealth.integrations.claude_code.hooks.run_hook`,
:func:`~ctxhealth.integrations.claude_code.statusline.render_status`), under the same session
lock, so what it writes is what the command would have written.

Fail open: :func:`ask` returns None whenever no helper answered and nothing was done (no socket,
a refused or timed-out connection, a helper of another installation or Python, a helper whose
code changed on disk since it started, a socket path too long for the system): the command then
does the work itself. Only a helper that took a request and failed while answering leaves the
command with an error line (and, like any hook, exit 0).

The helper exits by itself: after ``idle_seconds`` without a request, when its socket is removed
or replaced, and when a module it loaded changed on disk (an upgrade). One helper per home: a
lock file (``helper.lock``) is held for its whole life, so a second one started at the same time
exits at once. The client side (:func:`ask`) imports only ``os`` and ``_socket``.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "HOOK_EVENTS",
    "IDLE_SECONDS",
    "PROTOCOL",
    "ask",
    "helper_paths",
    "serve",
    "worth_starting",
]

PROTOCOL = "ctxhealth-helper-1"
IDLE_SECONDS = 900.0
"""A helper with no request for this long exits (the next command starts a new one)."""
CONNECT_SECONDS = 0.2
ANSWER_SECONDS = 10.0
"""How long a command waits for the helper's answer once it was taken (the hooks' own bound)."""
MAX_SOCKET_PATH = 100  # sun_path is 104-108 bytes depending on the system
HOOK_EVENTS = frozenset({"UserPromptSubmit", "PostToolUse", "PostToolUseFailure", "Stop", "SessionEnd"})
"""The per-turn hooks the helper answers. PreCompact and SessionStart write checkpoints with limits
read from the user's configuration, and run a few times per session: they stay in the command."""

_OK = b"ok"
_HEADER_DIGITS = 8


def helper_paths(home: str) -> tuple[str, str, str]:
    """(socket, lock file, pid file) of the helper of ``home``."""
    base = os.path.join(home, "claude-code")
    return (
        os.path.join(base, "helper.sock"),
        os.path.join(base, "helper.lock"),
        os.path.join(base, "helper.pid"),
    )


def _identity() -> str:
    """Which installation and Python a process runs: a helper answers only its own kind."""
    import sys

    import ctxhealth

    return f"{os.path.dirname(os.path.abspath(ctxhealth.__file__))}|{sys.version}"


def ask(
    home: str, kind: str, name: str, payload: bytes, *, color: bool = False, timeout: float = ANSWER_SECONDS
) -> tuple[str, str] | None:
    """Have the helper of ``home`` run ``kind`` (``"hook"`` for hook ``name``, ``"status"`` for the
    status line) on ``payload``; return its (stdout, stderr), or None when no helper took the
    request (then nothing was done: do the work here)."""
    import _socket

    global _reached
    _reached = False
    path = os.path.join(home, "claude-code", "helper.sock")
    family = getattr(_socket, "AF_UNIX", None)
    if family is None or len(os.fsencode(path)) > MAX_SOCKET_PATH:
        return None
    fields = (PROTOCOL, _identity(), home, kind, name, "1" if color else "0")
    header = "\0".join(fields).encode("utf-8", errors="surrogateescape")
    sock = _socket.socket(family, _socket.SOCK_STREAM)
    chunks: list[bytes] = []
    sent = False
    try:
        sock.settimeout(CONNECT_SECONDS)
        sock.connect(path)
        _reached = True
        sock.settimeout(timeout)
        sock.sendall(b"%08d" % len(header) + header + payload)
        sock.shutdown(_socket.SHUT_WR)
        sent = True
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    except OSError as exc:
        if not sent:
            return None  # no helper, or it took nothing: nothing was done
        return "", f"ctxhealth: helper gave no answer: {type(exc).__name__}: {exc}"
    finally:
        sock.close()
    answer = b"".join(chunks)
    if not answer.startswith(_OK + b"\0"):
        return None  # declined (another installation, changed code, shutting down): nothing was done
    stdout, _, stderr = answer[len(_OK) + 1 :].partition(b"\0")
    return stdout.decode("utf-8", errors="replace"), stderr.decode("utf-8", errors="replace")


def worth_starting(home: str) -> bool:
    """Whether starting a helper for ``home`` can help: the system has Unix sockets and ``fcntl``,
    the socket path fits, and the last :func:`ask` reached no live helper (one that declined, of
    another installation or with changed code, still holds the home until it exits)."""
    import _socket

    if getattr(_socket, "AF_UNIX", None) is None or _reached:
        return False
    try:
        import fcntl  # noqa: F401
    except ImportError:
        return False
    return len(os.fsencode(helper_paths(home)[0])) <= MAX_SOCKET_PATH


_reached = False
"""Whether the last :func:`ask` of this process connected to a helper."""


# -- the helper ------------------------------------------------------------------------------------


def _answer_hook(home: str, name: str, payload: bytes, send: Callable[[str, str], None]) -> None:
    """Run the hook; the command gets its output as soon as it is known (before the session's
    counters are written to disk, which the hook still does under the session's lock)."""
    from ctxhealth.integrations.claude_code.hooks import run_hook

    sent: list[bool] = []

    def early(stdout: str) -> None:
        send(stdout, "")
        sent.append(True)

    result = run_hook(name, payload, home=home, answer=early)
    if not sent:
        send(result.stdout, result.stderr)


def _answer_status(home: str, payload: bytes, color: bool, send: Callable[[str, str], None]) -> None:
    """Draw the line; the command gets it as soon as it is known (before the counters are saved)."""
    sent: list[bool] = []

    def early(line: str) -> None:
        send(line, "")
        sent.append(True)

    try:
        from ctxhealth.integrations.claude_code.statusline import render_status

        render_status(payload, home=home, color=color, answer=early)
    except Exception as exc:  # fail open, as the status-line command does
        if not sent:
            send("ctxhealth: n/a", f"ctxhealth: statusline: {type(exc).__name__}: {exc}")


def _preload() -> None:
    """Import what a turn needs, so the first request does not pay for it."""
    import ctxhealth.integrations.claude_code.assess
    import ctxhealth.integrations.claude_code.hooks
    import ctxhealth.integrations.claude_code.statusline
    import ctxhealth.integrations.claude_code.tail
    import ctxhealth.policy.decision
    import ctxhealth.state.ledger  # noqa: F401


def _loaded_files() -> dict[str, int]:
    """Modification times of every ctxhealth module loaded (to notice an upgrade on disk)."""
    import sys

    out: dict[str, int] = {}
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if name.startswith("ctxhealth") and isinstance(path, str):
            try:
                out[path] = os.stat(path).st_mtime_ns
            except OSError:
                out[path] = -1
    return out


def _changed(files: dict[str, int]) -> bool:
    for path, mtime in files.items():
        try:
            if os.stat(path).st_mtime_ns != mtime:
                return True
        except OSError:
            return True
    return False


def _read_request(conn: object) -> tuple[list[str], bytes] | None:
    import socket

    assert isinstance(conn, socket.socket)
    data = bytearray()
    while chunk := conn.recv(65536):
        data += chunk
        if len(data) > 9 * 1024 * 1024:
            return None
    if len(data) < _HEADER_DIGITS or not data[:_HEADER_DIGITS].isdigit():
        return None
    size = int(data[:_HEADER_DIGITS])
    header = bytes(data[_HEADER_DIGITS : _HEADER_DIGITS + size]).decode("utf-8", errors="surrogateescape")
    return header.split("\0"), bytes(data[_HEADER_DIGITS + size :])


def serve(home: str, *, idle_seconds: float = IDLE_SECONDS, tick: float = 1.0) -> int:
    """Run the helper of ``home`` until it has been idle for ``idle_seconds``, its socket is gone
    or replaced, or its code changed on disk; return 0 (also when another helper already runs)."""
    import socket
    import threading
    import time

    from ctxhealth.atomic import make_private_dirs, write_atomic

    sock_path, lock_path, pid_path = helper_paths(home)
    if len(os.fsencode(sock_path)) > MAX_SOCKET_PATH:
        return 0
    make_private_dirs(os.path.dirname(sock_path))
    lock_fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        import fcntl

        fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except (ImportError, OSError):
        os.close(lock_fd)
        return 0  # no fcntl (no helper on this system), or another helper holds the home
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        _preload()
        identity = _identity()
        files = _loaded_files()
        if os.path.lexists(sock_path):
            os.unlink(sock_path)  # a dead helper's (the lock says no live one owns it)
        mask = os.umask(0o177)  # the socket is owner-only from the moment it exists
        try:
            server.bind(sock_path)
        finally:
            os.umask(mask)
        os.chmod(sock_path, 0o600)
        server.listen(64)
        server.settimeout(tick)
        inode = os.stat(sock_path).st_ino
        write_atomic(pid_path, f"{os.getpid()}\n")
        last = time.monotonic()
        workers: list[threading.Thread] = []
        while True:
            try:
                conn, _ = server.accept()
            except TimeoutError:
                if time.monotonic() - last > idle_seconds or not _still_ours(sock_path, inode):
                    break
                if _changed(files):
                    break
                continue
            last = time.monotonic()
            if _changed(files):
                conn.close()  # declined: the command does the work with the new code
                break
            worker = threading.Thread(target=_serve_one, args=(conn, home, identity), daemon=False)
            worker.start()
            workers = [w for w in workers if w.is_alive()] + [worker]
        for worker in workers:
            worker.join()
    finally:
        server.close()
        if _still_ours(sock_path, locals().get("inode")):
            os.unlink(sock_path)
        try:
            if os.path.exists(pid_path):
                os.unlink(pid_path)
        except OSError:
            pass
        os.close(lock_fd)  # releases the lock
    return 0


def _still_ours(path: str, inode: object) -> bool:
    try:
        return inode is not None and os.stat(path).st_ino == inode
    except OSError:
        return False


def _serve_one(conn: object, home: str, identity: str) -> None:
    import socket

    assert isinstance(conn, socket.socket)
    with conn:
        try:
            conn.settimeout(ANSWER_SECONDS)
            request = _read_request(conn)
            if request is None:
                return
            fields, payload = request
            if len(fields) != 6 or fields[0] != PROTOCOL or fields[1] != identity or fields[2] != home:
                return  # declined: another installation, Python or home; the command does the work
            kind, name, color = fields[3], fields[4], fields[5] == "1"

            def send(stdout: str, stderr: str) -> None:
                try:
                    conn.sendall(_OK + b"\0" + stdout.encode() + b"\0" + stderr.encode())
                    conn.shutdown(socket.SHUT_RDWR)  # the command has its answer: it need not wait
                except OSError:
                    pass  # the command is gone (killed): the work is done all the same

            if kind == "hook" and name in HOOK_EVENTS:
                _answer_hook(home, name, payload, send)
            elif kind == "status":
                _answer_status(home, payload, color, send)
        except Exception:  # the command reports a broken answer; the helper keeps serving
            return
