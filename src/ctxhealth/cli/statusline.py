"""``ctxhealth statusline``: print one status line from the JSON Claude Code pipes in. Always exits 0.

Settings run :func:`main` through ``python -c`` (no click import:
:func:`~ctxhealth.integrations.claude_code.install.statusline_command`); ``--then CMD`` runs the
user's own status-line command on the same input and shows its line first. ``NO_COLOR`` (or
``--no-color``) turns colour off. The line is drawn by the per-turn helper when one runs, else here
(and a helper is started for the next refresh; :mod:`ctxhealth.integrations.claude_code.helper`).
"""

from __future__ import annotations

import os
import sys

from ctxhealth.cli.helper import ask_helper, start_helper
from ctxhealth.cli.hook import home_dir, read_stdin, write

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

THEN_TIMEOUT_SECONDS = 2.0


def _then(command: str, raw: bytes) -> str:
    import subprocess

    try:
        done = subprocess.run(
            command, shell=True, input=raw, capture_output=True, timeout=THEN_TIMEOUT_SECONDS, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    lines = done.stdout.decode("utf-8", errors="replace").strip().splitlines()
    return lines[0] if lines else ""


def run(*, then: str | None = None, color: bool | None = None) -> int:
    raw = read_stdin()
    use_color = color if color is not None else not os.environ.get("NO_COLOR")
    home = home_dir()
    answer = ask_helper(home, "status", "", raw, color=use_color)
    if answer is not None:
        line, err = answer
    else:
        line, err = _render(raw, home, use_color)
        start_helper(home)  # for the next refresh
    if then:
        theirs = _then(then, raw)
        line = f"{theirs} │ {line}" if theirs else line
    write(line, err)
    return 0


def _render(raw: bytes, home: str, use_color: bool) -> tuple[str, str]:
    try:
        from ctxhealth.accounting.catalog import configure_cache_dir
        from ctxhealth.integrations.claude_code.statusline import render_status

        configure_cache_dir(home)  # the model catalog's cached table lives in the home
        return render_status(raw, home=home, color=use_color), ""
    except Exception as exc:  # fail open: a broken status line must not break the session
        return "ctxhealth: n/a", f"ctxhealth: statusline: {type(exc).__name__}: {exc}"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    then: str | None = None
    color: bool | None = None
    i = 0
    while i < len(args):
        if args[i] == "--then" and i + 1 < len(args):
            then = args[i + 1]
            i += 1
        elif args[i].startswith("--then="):
            then = args[i].split("=", 1)[1]
        elif args[i] == "--no-color":
            color = False
        elif args[i] == "--color":
            color = True
        i += 1
    return run(then=then, color=color)


def _command() -> Any:
    import click

    @click.command("statusline", context_settings={"help_option_names": ["-h", "--help"]})
    @click.option(
        "--then", "then", metavar="CMD", help="Also run your own status-line command; show its line first."
    )
    @click.option(
        "--color/--no-color", default=None, help="Force colour on or off (default: on unless NO_COLOR)."
    )
    def statusline(then: str | None, color: bool | None) -> None:
        """Print one status line from Claude Code's JSON: zone, fill, on-task, failure spiral, low
        prompt-cache hits, cost."""
        sys.exit(run(then=then, color=color))

    return statusline


def __getattr__(name: str) -> Any:
    if name == "statusline":
        command = _command()
        globals()["statusline"] = command
        return command
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":
    sys.exit(main())
