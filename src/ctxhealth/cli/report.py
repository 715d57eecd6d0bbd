"""``ctxhealth report PATH... -o report.html`` (or ``--from FILE.duckdb``): the self-contained HTML report."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from ctxhealth.cli.check import count_inputs
from ctxhealth.cli.common import agent_home_paths, guarded, write_output
from ctxhealth.cli.progress import ProgressBar
from ctxhealth.config import load_settings
from ctxhealth.model import Format
from ctxhealth.policy.profile import resolve_profile
from ctxhealth.report.html import report_sessions, report_tables
from ctxhealth.report.html.build import MAX_TIMELINES
from ctxhealth.report.html.shown import redacting
from ctxhealth.sources import read_sessions
from ctxhealth.sources.reader import SkippedFile


@click.command("report")
@click.argument("paths", nargs=-1)
@click.option(
    "-o",
    "--output",
    default="ctxhealth-report.html",
    show_default=True,
    help="HTML file to write ('-': stdout).",
)
@click.option(
    "--no-redact",
    is_flag=True,
    help="Show transcript text as it is (by default secrets are redacted: a report is a file people share).",
)
@click.option(
    "--from",
    "source",
    type=click.Path(exists=True),
    help="Render the overview from fleet tables (FILE.duckdb or DIR.parquet) instead of transcripts.",
)
@click.option(
    "--format", "fmt", type=click.Choice([f.value for f in Format]), help="Read inputs as this format."
)
@click.option("--model", help="Account every session as this model id.")
@click.option("--title", default="ctxhealth report", show_default=True)
@click.option(
    "--timelines",
    type=click.IntRange(0),
    default=MAX_TIMELINES,
    show_default=True,
    help="Sessions that get a timeline (the most unhealthy first; from tables, without message text).",
)
@guarded
def report(
    paths: tuple[str, ...],
    output: str,
    source: str | None,
    fmt: str | None,
    model: str | None,
    title: str,
    timelines: int,
    no_redact: bool,
) -> None:
    """Write one HTML file (no network, works from file://): an overview of many sessions, then per
    session the fill against the window with zones, compactions, tool failures, drift, indicators
    and the policy's decisions marked, and its signals with their evidence. With neither PATHs
    nor --from, every installed agent's own sessions (~/.claude/projects, ~/.codex/sessions, ...).
    """
    if paths and source:
        raise click.UsageError("give transcript PATHs or --from FILE.duckdb, not both")
    if not paths and not source:
        paths = agent_home_paths()
    settings = load_settings({"model": model}, os.environ, Path.cwd())
    profile = resolve_profile(settings.profile, settings.profile_overrides)
    with redacting(not no_redact):
        html = _render(paths, source, fmt, title, timelines, settings, profile)
    where = write_output(output, html, "report")
    click.echo(f"wrote {where} ({len(html.encode()) / 1024:,.0f} KB)", err=True)


def _render(
    paths: tuple[str, ...],
    source: str | None,
    fmt: str | None,
    title: str,
    timelines: int,
    settings: Any,
    profile: Any,
) -> str:
    if source:
        return report_tables(source, title=title, max_timelines=timelines, profile=profile)
    skipped: list[SkippedFile] = []
    with ProgressBar("reporting", count_inputs(paths)) as bar:

        def on_skip(s: SkippedFile) -> None:
            skipped.append(s)
            bar.advance(label=s.path)

        html = report_sessions(
            read_sessions(paths, format=Format(fmt) if fmt else None, on_skip=on_skip),
            registry=settings.registry(),
            profile=profile,
            model=settings.model,
            title=title,
            max_timelines=timelines,
            on_session=lambda a: bar.advance(label=a.session.path),
        )
    for s in skipped:
        click.echo(f"skipped {s.path}: {s.reason}", err=True)
    return html
