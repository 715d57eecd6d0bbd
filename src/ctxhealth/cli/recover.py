"""``ctxhealth recover PATH --strategy ...``: print the recovered context of a session.

``--format anthropic`` prints a Messages request body ``{"system": ..., "messages": [...]}``,
``--format openai`` prints ``{"messages": [...]}`` (both ready to send, so without a
``schema_version`` key); ``--format markdown`` prints the markdown checkpoint. ``--json`` prints
compact JSON (for markdown: a document with the structured checkpoint). A one-line account of
what the strategy removed goes to stderr. ``--before-compaction K`` recovers the session as it
was just before its K-th compaction, to compare with the agent's own summary. Strategies work on
the live context (after the last compaction), and what is printed as ready to send fits the
model's usable window (and ``--budget``): truncate and restart are fitted to it, re-anchor and
clear fail with a usage error rather than print a context that does not fit.
"""

from __future__ import annotations

import dataclasses
import os
from enum import StrEnum
from pathlib import Path

import click
import orjson

from ctxhealth.cli.common import SCHEMA_VERSION, dump_json, echo_read_warnings, guarded, transcripts_argument
from ctxhealth.config import load_settings
from ctxhealth.recovery.budget import total_tokens
from ctxhealth.recovery.checkpoint import DEFAULT_BUDGET_TOKENS, build_checkpoint, render_markdown
from ctxhealth.recovery.parts import before_compaction
from ctxhealth.recovery.report import RecoveryReport, RemovalKind, Strategy
from ctxhealth.recovery.run import run_strategy, usable_window
from ctxhealth.redact import scrub
from ctxhealth.sources import read_session
from ctxhealth.sources.writers import to_anthropic_request, to_openai_request
from ctxhealth.state.checkpoint import redact_session


class OutputFormat(StrEnum):
    ANTHROPIC = "anthropic"
    OPENAI = "openai"
    MARKDOWN = "markdown"


_STRATEGIES = [Strategy.TRUNCATE, Strategy.RESTART, Strategy.REANCHOR, Strategy.CLEAR]


def summary_line(report: RecoveryReport) -> str:
    counts = {k: sum(1 for r in report.removals if r.kind is k) for k in RemovalKind}
    changed = ", ".join(f"{n} {k}" for k, n in counts.items() if n) or "nothing removed"
    notes = "".join(f"; {n}" for n in report.notes)
    return (
        f"ctxhealth: recover {report.strategy}: {report.tokens_before:,} -> {report.tokens_after:,} tokens, "
        f"{report.messages_before} -> {report.messages_after} messages ({changed}){notes}"
    )


@click.command("recover")
@transcripts_argument("path")
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
    echo_read_warnings(session)
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
    window = usable_window(session, load_settings({}, os.environ, Path.cwd()).registry())
    out, report = run_strategy(session, Strategy(strategy), budget_tokens=budget, window_tokens=window)
    body = to_anthropic_request(out) if output is OutputFormat.ANTHROPIC else to_openai_request(out)
    if as_json:
        click.echo(dump_json(body))
    else:
        click.echo(orjson.dumps(body, option=orjson.OPT_INDENT_2).decode())
    click.echo(summary_line(report), err=True)
