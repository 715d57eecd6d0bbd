"""``ctxhealth insights [PATH...]``: does the agent slip more as its context fills, where the context
goes, what to change; with no PATH, every installed agent's own sessions. ``--json`` prints one
document (schema in docs/insights.md)."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import click

from ctxhealth.cli.common import echo_json, guarded, transcripts_argument
from ctxhealth.cli.progress import ProgressBar
from ctxhealth.config import load_settings
from ctxhealth.insights.build import InsightsBuilder, InsightsFilter
from ctxhealth.model import Format
from ctxhealth.report.insights_text import render_insights
from ctxhealth.sources import read_sessions
from ctxhealth.sources.reader import SkippedFile


@click.command("insights")
@transcripts_argument("paths", many=True, homes=True)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.option(
    "--days", type=click.FloatRange(0, min_open=True), help="Only sessions that ended in the last N days."
)
@click.option("--project", help="Only sessions whose project (folder) name contains this.")
@click.option(
    "--agent", type=click.Choice([f.value for f in Format]), help="Only this agent's (format's) sessions."
)
@click.option("--model", "model_filter", help="Only sessions whose model id contains this.")
@guarded
def insights(
    paths: tuple[str, ...],
    as_json: bool,
    days: float | None,
    project: str | None,
    agent: str | None,
    model_filter: str | None,
) -> None:
    """Slip rate by context fill (with 95% intervals), snowballing, where the context goes and what
    to change, measured on your own sessions.

    PATH is a transcript file or a folder; with no PATH, every installed agent's own sessions
    (~/.claude/projects, ~/.codex/sessions, ~/.gemini/tmp).
    """
    settings = load_settings({}, os.environ, Path.cwd())
    chosen = InsightsFilter(days, project, agent, model_filter, datetime.now(UTC))
    builder = InsightsBuilder(
        registry=settings.registry(), filter=chosen, roots=[Path(p) for p in paths if Path(p).is_dir()]
    )
    skipped: list[SkippedFile] = []
    with ProgressBar("insights", None) as bar:
        for session in read_sessions(paths, on_skip=skipped.append):
            builder.add(session)
            bar.advance(label=session.path)
    for s in skipped:
        click.echo(f"ctxhealth: skipped {s.path}: {s.reason}", err=True)
    doc = builder.document()
    if as_json:
        echo_json(doc)
    else:
        click.echo(render_insights(doc))
