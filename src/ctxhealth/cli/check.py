"""``ctxhealth check PATH...``: one verdict per session (fill, compactions, tools, cost, warnings).

Sessions are read, accounted and printed one at a time (streaming), so a directory of
thousands of transcripts never sits in memory. A file a directory walk skips is named on stderr
with the reason (and, with ``--json``, as a ``{"skipped": {path, reason}}`` line). Over more than
one session (or when files were skipped) a summary follows: sessions, unhealthy ones by action, the
worst, total cost, skipped files with their reasons (not with ``--json``, whose stdout stays JSON
Lines). A progress bar shows on stderr when it is a terminal and the work takes a while.
``--series`` adds each session's per-turn series to the JSON. Exit 0 when every session is
healthy, 1 when any is unhealthy, 3 on unreadable input (or warnings with ``--strict``), also when
such a file in a folder was skipped.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from ctxhealth.cli.common import echo_json, guarded, transcripts_argument
from ctxhealth.cli.progress import ProgressBar
from ctxhealth.config import load_settings
from ctxhealth.errors import CtxHealthError, ExitCode
from ctxhealth.model import Format
from ctxhealth.monitor import session_prefix
from ctxhealth.policy.profile import resolve_profile
from ctxhealth.redact import redact_value
from ctxhealth.report.assessed import check_session
from ctxhealth.report.check_report import (
    SCHEMA_VERSION,
    CheckTotals,
    build_check_report,
    render_check_text,
    render_totals_text,
)
from ctxhealth.sources import read_sessions
from ctxhealth.sources.reader import SkippedFile


def count_inputs(paths: tuple[str, ...]) -> int | None:
    """How many files the paths hold (the progress bar's total), or None when unknown."""
    from ctxhealth.sources import discover

    try:
        return len(discover([p for p in paths if p != "-"])) + paths.count("-")
    except (CtxHealthError, OSError):
        return None


@click.command("check")
@transcripts_argument("paths", many=True, homes=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON Lines: one object per session.")
@click.option("--series", is_flag=True, help="With --json: add each session's per-turn series.")
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
@click.option(
    "--no-redact",
    is_flag=True,
    help="Print transcript text (drift detail, evidence) as it is; by default secrets are redacted.",
)
@guarded
def check(
    paths: tuple[str, ...],
    as_json: bool,
    series: bool,
    fmt: str | None,
    strict: bool,
    model: str | None,
    upto: float | None,
    no_redact: bool,
) -> None:
    """Check transcripts: fill against the window, compactions, tool errors, cost.

    PATH is a transcript file, a directory (searched recursively) or - for stdin; with no PATH,
    every installed agent's own sessions (~/.claude/projects, ~/.codex/sessions, ~/.gemini/tmp).
    """
    if series and not as_json:
        raise click.UsageError("--series needs --json (the series is part of the JSON object)")
    settings = load_settings({"model": model}, os.environ, Path.cwd())
    registry = settings.registry()
    profile = resolve_profile(settings.profile, settings.profile_overrides)
    totals = CheckTotals()
    errors: list[tuple[str, str]] = []
    unhealthy = False
    first = True
    bar = ProgressBar(
        "checking", (lambda: count_inputs(paths)) if len(paths) > 1 or Path(paths[0]).is_dir() else None
    )

    def on_skip(skipped: SkippedFile) -> None:
        # the text summary lists every skipped file with its reason; JSON output names them on stderr too
        if as_json:
            click.echo(f"ctxhealth: skipped {skipped.path}: {skipped.reason}", err=True)
            echo_json(
                {
                    "schema_version": SCHEMA_VERSION,
                    "skipped": {"path": skipped.path, "reason": skipped.reason},
                }
            )
        totals.skip(skipped.path, skipped.reason)
        if skipped.error:
            errors.append((skipped.path, skipped.reason))
        bar.advance(label=skipped.path)

    try:
        with bar:
            sessions = read_sessions(
                paths, format=Format(fmt) if fmt else None, strict=strict, on_skip=on_skip
            )
            for session in sessions:
                session = session_prefix(session, upto)
                if series:
                    from ctxhealth.analysis import analyse_session

                    analysis = analyse_session(
                        session, registry=registry, profile=profile, model=settings.model, events=False
                    )
                    fields = {**analysis.final.check_fields(), "series": analysis.series()}
                    report = build_check_report(session, analysis.account, fields)
                else:
                    report = check_session(session, registry=registry, profile=profile, model=settings.model)
                if not no_redact:
                    report = redact_value(report)
                bar.advance(label=session.path)
                if as_json:
                    echo_json(report)
                else:
                    if not first:
                        click.echo()
                    click.echo(render_check_text(report))
                totals.add(report)
                unhealthy = unhealthy or not report["healthy"]
                first = False
        if not as_json and (totals.sessions > 1 or totals.skipped):
            click.echo()
            click.echo(render_totals_text(totals))
    except BrokenPipeError:
        # The reader of our output went away (`| head`): stop quietly, with the verdict on
        # what was printed; point stdout at devnull so the interpreter's final flush is silent.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    code = ExitCode.BAD_INPUT if errors else ExitCode.UNHEALTHY if unhealthy else ExitCode.OK
    sys.exit(int(code))
