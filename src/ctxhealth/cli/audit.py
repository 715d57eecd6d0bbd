"""``ctxhealth audit PATH...``: prompt-cache health, cost, waste and CI checks, with exit codes.

Exit 0 when every selected check passes, 1 when one fails (``--fail-on warn``: or warns), 3 on bad
input. ``--json`` prints JSON Lines: one document per session, the totals with the verdicts last.
"""

from __future__ import annotations

import os
import sys
from datetime import datetime
from pathlib import Path

import click

from ctxhealth.audit.findings import Check, Severity
from ctxhealth.audit.run import AuditOptions, run_audit
from ctxhealth.cli.common import echo_json, guarded, transcripts_argument
from ctxhealth.config import load_settings
from ctxhealth.errors import ExitCode, UsageError
from ctxhealth.model import parse_timestamp
from ctxhealth.policy.profile import resolve_profile
from ctxhealth.report.audit_text import render_session, render_totals

_CHECKS = [c.value for c in Check]


def _since(value: str | None) -> datetime | None:
    if value is None:
        return None
    parsed = parse_timestamp(value)
    if parsed is None:
        raise UsageError(f"--since {value!r} is not a date", hint="use YYYY-MM-DD or an ISO timestamp")
    return parsed


@click.command("audit")
@transcripts_argument("paths", many=True, homes=True)
@click.option(
    "--check",
    "checks",
    multiple=True,
    type=click.Choice([*_CHECKS, "all"]),
    help="Run only these checks (repeatable; default all).",
)
@click.option("--since", help="Only responses at or after this date (YYYY-MM-DD, UTC) or ISO time.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON Lines: one per session, totals last.")
@click.option(
    "--fail-on",
    type=click.Choice(["warn", "fail"]),
    default="fail",
    show_default=True,
    help="Exit 1 on failures only, or on warnings too.",
)
@click.option("--model", help="Price every response as this model id.")
@guarded
def audit(
    paths: tuple[str, ...],
    checks: tuple[str, ...],
    since: str | None,
    as_json: bool,
    fail_on: str,
    model: str | None,
) -> None:
    """Audit transcripts, pack manifests and instruction files: cache, cost, waste, usage, scores.

    PATH is a transcript, a folder (transcripts, pack manifests and instruction files under it),
    a pack manifest (`ctxhealth pack --json`) or - for stdin; with no PATH, every installed
    agent's own sessions (~/.claude/projects, ~/.codex/sessions, ~/.gemini/tmp).
    """
    settings = load_settings({"model": model}, os.environ, Path.cwd())
    selected = frozenset(Check) if not checks or "all" in checks else frozenset(Check(c) for c in checks)
    options = AuditOptions(
        checks=selected,
        since=_since(since),
        model=settings.model,
        fail_on=Severity(fail_on),
        profile=resolve_profile(settings.profile, settings.profile_overrides),
    )
    failed = False
    for doc in run_audit(paths, options, registry=settings.registry()):
        if as_json:
            echo_json(doc)
        elif doc["kind"] == "session":
            click.echo(render_session(doc) + "\n")
        else:
            click.echo(render_totals(doc))
        failed = doc.get("failed", failed)
    sys.exit(int(ExitCode.UNHEALTHY if failed else ExitCode.OK))
