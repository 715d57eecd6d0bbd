"""``ctxhealth check PATH...``: one verdict per session (fill, compactions, tools, cost, warnings).

Sessions are read, accounted and printed one at a time (streaming), so a directory of
thousands of transcripts never sits in memory. A file a directory walk skips is named on stderr
with the reason (and, with ``--json``, as a ``{"skipped": {path, reason}}`` line). Exit 0 when
every session is healthy, 1 when any is unhealthy, 3 on unreadable input (or warnings with
``--strict``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from ctxhealth.accounting.fill import account_session
from ctxhealth.cli.common import echo_json, guarded, transcripts_argument
from ctxhealth.config import load_settings
from ctxhealth.errors import ExitCode
from ctxhealth.model import Format
from ctxhealth.monitor import Monitor, session_prefix
from ctxhealth.policy.profile import resolve_profile
from ctxhealth.report.check_report import SCHEMA_VERSION, build_check_report, render_check_text
from ctxhealth.sources import read_sessions


@click.command("check")
@transcripts_argument("paths", many=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON Lines: one object per session.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice([f.value for f in Format]),
    help="Read every input as this format instead of detecting it from content.",
)
@click.option("--strict", is_flag=True, help="Treat any reader warning as an error (exit 3).")
@click.option("--model", help="Account every session as this model id (window, tier, prices).")
@click.option(
    "--upto",
    type=click.FloatRange(0.0, 1.0, min_open=True),
    help="Assess only the first FRACTION of each session's turns (e.g. 0.5).",
)
@guarded
def check(
    paths: tuple[str, ...],
    as_json: bool,
    fmt: str | None,
    strict: bool,
    model: str | None,
    upto: float | None,
) -> None:
    """Check transcripts: fill against the window, compactions, tool errors, cost.

    PATH is a transcript file, a directory (searched recursively) or - for stdin.
    """
    settings = load_settings({"model": model}, os.environ, Path.cwd())
    registry = settings.registry()
    profile = resolve_profile(settings.profile, settings.profile_overrides)
    unhealthy = False
    first = True

    def skipped(path: str, reason: str) -> None:
        click.echo(f"ctxhealth: skipped {path}: {reason}", err=True)
        if as_json:
            echo_json({"schema_version": SCHEMA_VERSION, "skipped": {"path": path, "reason": reason}})

    try:
        for session in read_sessions(
            paths, format=Format(fmt) if fmt else None, strict=strict, on_skip=skipped
        ):
            session = session_prefix(session, upto)
            account = account_session(session, registry=registry, model=settings.model)
            monitor = Monitor(profile=profile, registry=registry, info=account.model)
            assessment = monitor.observe_session(session, account=account).check_fields()
            report = build_check_report(session, account, assessment)
            if as_json:
                echo_json(report)
            else:
                if not first:
                    click.echo()
                click.echo(render_check_text(report))
            unhealthy = unhealthy or not report["healthy"]
            first = False
    except BrokenPipeError:
        # The reader of our output went away (`| head`): stop quietly, with the verdict on
        # what was printed; point stdout at devnull so the interpreter's final flush is silent.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    sys.exit(int(ExitCode.UNHEALTHY if unhealthy else ExitCode.OK))
