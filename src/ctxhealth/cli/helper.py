"""``python -m ctxhealth.cli.helper HOME``: run the per-turn helper of a ctxhealth home (started on
demand by the status line and the hooks, see :mod:`ctxhealth.integrations.claude_code.helper`).

Also the two steps the commands share: :func:`helper_enabled` (``CTXHEALTH_HELPER=off`` turns the
helper off: every command then does its own work) and :func:`start_helper` (start one in the
background, detached, never raising).
"""

from __future__ import annotations

import os
import sys

_OFF = frozenset({"0", "off", "no", "false"})


def helper_enabled() -> bool:
    """Whether the commands use the helper (on unless ``CTXHEALTH_HELPER`` says off)."""
    return os.environ.get("CTXHEALTH_HELPER", "").strip().lower() not in _OFF


def ask_helper(home: str, kind: str, name: str, raw: bytes, *, color: bool = False) -> tuple[str, str] | None:
    """The helper's (stdout, stderr) for this command, or None: no helper took it (it is off, absent,
    declined, or anything went wrong before it took the request), so the command does the work."""
    if not helper_enabled():
        return None
    try:
        from ctxhealth.integrations.claude_code.helper import ask

        return ask(home, kind, name, raw, color=color)
    except Exception:  # fail open: the command does its own work
        return None


def start_helper(home: str) -> None:
    """Start the helper of ``home`` in its own session, detached from this process, when that can
    help (:func:`~ctxhealth.integrations.claude_code.helper.worth_starting`); any failure is ignored
    (the commands work without it)."""
    if not helper_enabled():
        return
    try:
        import subprocess

        from ctxhealth.integrations.claude_code.helper import worth_starting

        if not worth_starting(home):
            return

        subprocess.Popen(
            [sys.executable, "-m", "ctxhealth.cli.helper", home],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
            cwd=os.path.dirname(os.path.abspath(home)) if os.path.isdir(home) else None,
        )
    except Exception:  # fail open: no helper, the next command does its own work again
        return


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        sys.stderr.write("usage: python -m ctxhealth.cli.helper HOME\n")
        return 2
    import signal

    from ctxhealth.integrations.claude_code.helper import serve

    # stopped with a signal: leave through serve's clean-up (socket and pid file removed, work done)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    from ctxhealth.accounting.catalog import configure_cache_dir

    configure_cache_dir(os.path.abspath(args[0]))
    return serve(os.path.abspath(args[0]))


if __name__ == "__main__":
    sys.exit(main())
