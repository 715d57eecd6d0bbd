"""``ctxhealth fleet PATH... --out FILE.duckdb|DIR.parquet``: every session into queryable tables."""

from __future__ import annotations

import os
from pathlib import Path

import click

from ctxhealth.cli.common import echo_json, guarded, transcripts_argument
from ctxhealth.cli.progress import ProgressBar
from ctxhealth.config import load_settings
from ctxhealth.fleet import ENGINES, JobOptions, run_fleet
from ctxhealth.model import Format
from ctxhealth.policy.profile import resolve_profile


@click.command("fleet")
@transcripts_argument("paths", many=True, homes=True)
@click.option("--out", required=True, help="FILE.duckdb, or DIR.parquet for a folder of Parquet files.")
@click.option("--engine", type=click.Choice(ENGINES), default="local", show_default=True)
@click.option("--scheduler", help="Address of a running Dask scheduler (with --engine dask).")
@click.option("-j", "--jobs", type=click.IntRange(1), help="Worker processes (default: one per CPU).")
@click.option("--full", is_flag=True, help="Re-read every file, not only new and changed ones.")
@click.option(
    "--format", "fmt", type=click.Choice([f.value for f in Format]), help="Read inputs as this format."
)
@click.option("--model", help="Account every session as this model id.")
@click.option("--json", "as_json", is_flag=True, help="Print the run's summary as one JSON object.")
@click.option(
    "--accounting",
    is_flag=True,
    help="The accounting level: usage, cost, cache, tools and compactions only (no per-turn "
    "assessment: turns and decisions stay empty, the sessions' health columns NULL).",
)
@guarded
def fleet(
    paths: tuple[str, ...],
    out: str,
    engine: str,
    scheduler: str | None,
    jobs: int | None,
    full: bool,
    fmt: str | None,
    model: str | None,
    as_json: bool,
    accounting: bool,
) -> None:
    """Analyse every new or changed transcript under PATHs into DuckDB / Parquet tables
    (sessions, turns, decisions, tool_calls, cache_breaks, responses, costs, files); see docs/fleet.md.

    With no PATH, every installed agent's own sessions (~/.claude/projects, ~/.codex/sessions, ...).
    """
    settings = load_settings({"model": model}, os.environ, Path.cwd())
    options = JobOptions(
        registry=settings.registry(),
        profile=resolve_profile(settings.profile, settings.profile_overrides),
        model=settings.model,
        format=Format(fmt) if fmt else None,
        health=not accounting,
    )
    with ProgressBar("fleet", None) as bar:
        result = run_fleet(
            paths,
            out,
            options,
            engine=engine,
            jobs=jobs,
            scheduler=scheduler,
            full=full,
            progress=lambda done, total, done_bytes, total_bytes: bar.update(done, total),
        )
    if as_json:
        echo_json(result.to_dict())
        return
    mb = result.bytes_read / 1e6
    rate = f", {mb / result.seconds:,.1f} MB/s" if result.seconds > 0 and mb else ""
    click.echo(
        f"{result.out}: {result.analysed:,} file(s) read ({mb:,.1f} MB in {result.seconds:,.1f} s{rate}), "
        f"{result.unchanged:,} unchanged, {result.sessions:,} session(s) written, "
        f"{len(result.skipped):,} skipped"
    )
    click.echo("  rows: " + ", ".join(f"{name} {n:,}" for name, n in result.counts.items()))
    bad = ", ".join(f"{a} {n:,}" for a, n in result.unhealthy.items())
    unpriced = f" ({result.unpriced:,} without prices or usage)" if result.unpriced else ""
    priced = result.counts.get("sessions", 0) > result.unpriced
    cost = f"${result.cost_usd:,.2f}" if priced else "unknown"
    click.echo(
        f"  in the store: {result.counts.get('sessions', 0):,} sessions, "
        f"{sum(result.unhealthy.values()):,} unhealthy{f' ({bad})' if bad else ''}, "
        f"cost {cost}{unpriced}"
    )
    for path, reason in result.skipped:
        click.echo(f"  skipped {path}: {reason}")
