"""``ctxhealth watch [SESSION]``: follow a Claude Code session live (the newest one by default)."""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

import click

from ctxhealth.cli.common import guarded
from ctxhealth.errors import InputError
from ctxhealth.integrations.claude_code.watch import (
    SessionWatch,
    check_watchable,
    find_newest_session,
    render_frame,
)
from ctxhealth.redact import redact


def _resolve(session: str | None, projects: Path) -> Path:
    if session is None:
        newest = find_newest_session(projects)
        if newest is None:
            raise InputError(f"no Claude Code transcripts under {projects}", hint="pass a transcript path")
        return newest
    path = Path(session)
    if path.exists() and not path.is_dir():
        return path  # a FIFO or a device too: check_watchable says what it is
    matches = sorted(projects.rglob(f"{session}*.jsonl")) if projects.is_dir() else []
    if not matches:
        raise InputError(
            f"no session {session!r}", hint=f"pass a transcript path or a session id under {projects}"
        )
    return matches[0]


@click.command("watch", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("session", required=False)
@click.option(
    "--claude-dir", type=click.Path(path_type=Path), help="Claude Code's user directory (default ~/.claude)."
)
@click.option(
    "--interval",
    type=click.FloatRange(0.1, 60),
    default=1.0,
    show_default=True,
    help="Seconds between refreshes.",
)
@click.option("--once", is_flag=True, help="Print one frame and exit.")
@click.option("--frames", type=click.IntRange(1), help="Stop after this many frames.")
@click.option(
    "--no-redact", is_flag=True, help="Show transcript text as it is (by default secrets are redacted)."
)
@guarded
def watch(
    session: str | None,
    claude_dir: Path | None,
    interval: float,
    once: bool,
    frames: int | None,
    no_redact: bool,
) -> None:
    """Follow SESSION live (a transcript path or session id; default: the newest): fill, zone, signals."""
    projects = (claude_dir or Path(os.path.expanduser("~")) / ".claude") / "projects"
    path = _resolve(session, projects)
    check_watchable(path)
    view = SessionWatch(path)
    limit = 1 if once else frames
    shown = 0
    clear = sys.stdout.isatty()
    try:
        while limit is None or shown < limit:
            view.poll()
            width = shutil.get_terminal_size((100, 30)).columns
            if clear:
                click.clear()
            frame = render_frame(view, width=width)
            click.echo(frame if no_redact else redact(frame))
            shown += 1
            if limit is None or shown < limit:
                time.sleep(interval)
    except KeyboardInterrupt:
        return
