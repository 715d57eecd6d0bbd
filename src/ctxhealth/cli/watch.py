"""``ctxhealth watch [SESSION]``: follow a session live (the latest of any agent by default)."""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

import click

from ctxhealth.cli.common import guarded
from ctxhealth.errors import InputError
from ctxhealth.integrations.watch import AgentDirs, find_latest_session, open_watch, render
from ctxhealth.redact import redact


def _resolve(session: str | None, dirs: AgentDirs) -> Path:
    where = ", ".join(str(p) for p in dirs.roots())
    if session is None:
        newest = find_latest_session(dirs)
        if newest is None:
            raise InputError(f"no agent sessions under {where}", hint="pass a transcript path")
        return newest
    path = Path(session)
    if path.exists():
        return path  # a file, a folder (OpenHands), or a FIFO / device: open_watch says what it is
    matches = sorted(p for p in dirs.candidates() if session in p.name)
    if not matches:
        raise InputError(
            f"no session {session!r}", hint=f"pass a transcript path or a session id under {where}"
        )
    return matches[0]


@click.command("watch", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("session", required=False)
@click.option(
    "--claude-dir", type=click.Path(path_type=Path), help="Claude Code's user directory (default ~/.claude)."
)
@click.option(
    "--codex-home",
    type=click.Path(path_type=Path),
    help="Codex CLI's home (default $CODEX_HOME, else ~/.codex).",
)
@click.option(
    "--gemini-dir", type=click.Path(path_type=Path), help="Gemini CLI's user directory (default ~/.gemini)."
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
    codex_home: Path | None,
    gemini_dir: Path | None,
    interval: float,
    once: bool,
    frames: int | None,
    no_redact: bool,
) -> None:
    """Follow SESSION live: fill, zone, signals, events.

    SESSION is a transcript path (Claude Code, Codex CLI, Gemini CLI, a JSONL an agent appends to), an
    OpenHands folder, or a session id; default: the latest session of any agent on this machine.
    """
    home = Path(os.path.expanduser("~"))
    found = AgentDirs.under(home, os.environ)
    dirs = AgentDirs(
        claude_projects=(claude_dir / "projects") if claude_dir else found.claude_projects,
        codex_sessions=(codex_home / "sessions") if codex_home else found.codex_sessions,
        gemini_tmp=(gemini_dir / "tmp") if gemini_dir else found.gemini_tmp,
    )
    if claude_dir and not (codex_home or gemini_dir):
        # an explicit Claude Code directory: the default session is one of its own
        dirs = AgentDirs(dirs.claude_projects, dirs.claude_projects / "-", dirs.claude_projects / "-")
    path = _resolve(session, dirs)
    view = open_watch(path)
    limit = 1 if once else frames
    shown = 0
    clear = sys.stdout.isatty()
    try:
        while limit is None or shown < limit:
            view.poll()
            width = shutil.get_terminal_size((100, 30)).columns
            if clear:
                click.clear()
            frame = render(view, width=width)
            click.echo(frame if no_redact else redact(frame))
            shown += 1
            if limit is None or shown < limit:
                time.sleep(interval)
    except KeyboardInterrupt:
        return
