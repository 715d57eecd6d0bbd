"""``ctxhealth recover PATH --strategy ...``: print the recovered context of a session.

``--format anthropic`` prints a Messages request body ``{"system": ..., "messages": [...]}``,
``--format openai`` prints ``{"messages": [...]}`` (both ready to send, so without a
``schema_version`` key); ``--format markdown`` prints the markdown checkpoint. ``--json`` prints
compact JSON (for markdown: a document with the structured checkpoint). A one-line account of
what the strategy removed goes to stderr. ``--before-compaction K`` recovers the session as it
was just before its K-th compaction, to compare with the agent's own summary.
"""

from __future__ import annotations

import dataclasses
from enum import StrEnum

import click
import orjson

from ctxhealth.cli.common import SCHEMA_VERSION, dump_json, guarded
from ctxhealth.errors import UsageError
from ctxhealth.model import Session
from ctxhealth.recovery.budget import total_tokens
from ctxhealth.recovery.checkpoint import DEFAULT_BUDGET_TOKENS, build_checkpoint, render_markdown
from ctxhealth.recovery.clear import clear_tool_results
from ctxhealth.recovery.parts import before_compaction
from ctxhealth.recovery.reanchor import reanchor
from ctxhealth.recovery.report import RecoveryReport, RemovalKind, Strategy
from ctxhealth.recovery.restart import restart
from ctxhealth.recovery.truncate import truncate
from ctxhealth.redact import scrub
from ctxhealth.sources import read_session
from ctxhealth.sources.writers import to_anthropic_request, to_openai_request
from ctxhealth.state.checkpoint import redact_session


class OutputFormat(StrEnum):
    ANTHROPIC = "anthropic"
    OPENAI = "openai"
    MARKDOWN = "markdown"


_STRATEGIES = [Strategy.TRUNCATE, Strategy.RESTART, Strategy.REANCHOR, Strategy.CLEAR]


def run_strategy(session: Session, strategy: Strategy, budget: int | None) -> tuple[Session, RecoveryReport]:
    """Apply one strategy; a budget the result cannot meet is a usage error with a hint."""
    if strategy is Strategy.TRUNCATE:
        return truncate(session, budget_tokens=budget)
    if strategy is Strategy.RESTART:
        return restart(session, budget_tokens=budget)
    out, report = reanchor(session) if strategy is Strategy.REANCHOR else clear_tool_results(session)
    if budget is not None and report.tokens_after > budget:
        raise UsageError(
            f"{strategy} keeps {report.tokens_after:,} tokens, over the budget of {budget:,}",
            hint="use --strategy truncate or restart to fit a budget",
        )
    return out, report


def summary_line(report: RecoveryReport) -> str:
    counts = {k: sum(1 for r in report.removals if r.kind is k) for k in RemovalKind}
    changed = ", ".join(f"{n} {k}" for k, n in counts.items() if n) or "nothing removed"
    return (
        f"ctxhealth: recover {report.strategy}: {report.tokens_before:,} -> {report.tokens_after:,} tokens, "
        f"{report.messages_before} -> {report.messages_after} messages ({changed})"
    )


@click.command("recover")
@click.argument("path")
@click.option(
    "--strategy",
    type=click.Choice([s.value for s in _STRATEGIES]),
    required=True,
    help="truncate: head + checkpoint + last 2 pairs; restart: instruction + checkpoint; "
    "reanchor: add the re-anchor message; clear: clear old tool results.",
)
@click.option(
    "--before-compaction",
    "before",
    type=click.IntRange(min=1),
    help="Use the session up to its K-th compaction.",
)
@click.option(
    "--budget", type=click.IntRange(min=1), help="Hard token budget for the output (o200k_base tokens)."
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice([f.value for f in OutputFormat]),
    default=OutputFormat.ANTHROPIC.value,
    show_default=True,
    help="Output: a provider request body, or the markdown checkpoint.",
)
@click.option("--json", "as_json", is_flag=True, help="Compact JSON on one line.")
@guarded
def recover(
    path: str, strategy: str, before: int | None, budget: int | None, fmt: str, as_json: bool
) -> None:
    """Recover the context of the session in PATH with one strategy and print it."""
    session = read_session(path)
    if before is not None:
        session, _ = before_compaction(session, before)
    output = OutputFormat(fmt)
    if output is OutputFormat.MARKDOWN:
        # Redacted like `ctxhealth checkpoint`: the session before building, the output after.
        cp = build_checkpoint(redact_session(session), budget_tokens=budget or DEFAULT_BUDGET_TOKENS)
        text = scrub(render_markdown(cp))
        if as_json:
            doc = {
                "schema_version": SCHEMA_VERSION,
                "format": "markdown",
                "markdown": text,
                "tokens": cp.tokens,
                "budget_tokens": cp.budget_tokens,
                "checkpoint": dataclasses.asdict(cp),
            }
            click.echo(dump_json(scrub(doc)))
        else:
            click.echo(text, nl=False)
        click.echo(
            f"ctxhealth: checkpoint of {total_tokens(session.messages):,} tokens of context: "
            f"{cp.tokens} tokens",
            err=True,
        )
        return
    out, report = run_strategy(session, Strategy(strategy), budget)
    body = to_anthropic_request(out) if output is OutputFormat.ANTHROPIC else to_openai_request(out)
    if as_json:
        click.echo(dump_json(body))
    else:
        click.echo(orjson.dumps(body, option=orjson.OPT_INDENT_2).decode())
    click.echo(summary_line(report), err=True)
