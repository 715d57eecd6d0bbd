"""``ctxhealth retention PATH [--before-compaction K]``: which facts survive compaction and recovery.

Without ``--before-compaction`` every compaction in the log is audited in turn (or the whole
session, without an agent-summary column, when it has none). ``--json`` prints one document
with a ``schema_version``.
"""

from __future__ import annotations

import click

from ctxhealth.cli.common import SCHEMA_VERSION, echo_json, echo_read_warnings, guarded, transcripts_argument
from ctxhealth.cli.progress import ProgressBar
from ctxhealth.recovery.checkpoint import DEFAULT_BUDGET_TOKENS
from ctxhealth.recovery.parts import before_compaction, compaction_indices
from ctxhealth.recovery.retention import RetentionReport, audit, render_table, report_dict
from ctxhealth.sources import read_session


@click.command("retention")
@transcripts_argument("path")
@click.option(
    "--before-compaction", "before", type=click.IntRange(min=1), help="Audit only the K-th compaction."
)
@click.option(
    "--budget",
    type=click.IntRange(min=1),
    default=DEFAULT_BUDGET_TOKENS,
    show_default=True,
    help="Token budget of our checkpoint.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@guarded
def retention(path: str, before: int | None, budget: int, as_json: bool) -> None:
    """Count the facts an agent needs and how many survive in its own summary and in our strategies."""
    session = read_session(path)
    echo_read_warnings(session)
    count = len(compaction_indices(session.messages))
    ks = [before] if before is not None else list(range(1, count + 1))
    reports: list[RetentionReport] = []
    with ProgressBar("auditing compactions", len(ks)) as bar:
        for k in ks:
            pre, summary = before_compaction(session, k)
            reports.append(audit(pre, summary=summary, compaction=k, checkpoint_tokens=budget))
            bar.advance(label=f"compaction {k}")
    if not ks:
        reports.append(audit(session, checkpoint_tokens=budget))
    if as_json:
        echo_json({"schema_version": SCHEMA_VERSION, "audits": [report_dict(r) for r in reports]})
        return
    for i, r in enumerate(reports):
        if i:
            click.echo()
        where = f"before compaction {r.compaction}" if r.compaction else "whole session (no compaction)"
        click.echo(f"{r.path}: {where}, {len(r.facts)} facts")
        click.echo(render_table(r))
