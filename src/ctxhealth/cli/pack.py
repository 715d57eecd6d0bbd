"""``ctxhealth pack REPO --task ... --budget N``: print the packed context (or its manifest).

The payload goes to stdout (or ``-o OUT``, written atomically); ``--json`` prints the manifest as one
JSON document instead; ``--explain`` prints the manifest as a table to stderr. A one-line summary
goes to stderr. The index cache lives under the ctxhealth home (``CTXHEALTH_HOME``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from ctxhealth.cli.common import dump_json, guarded, write_output
from ctxhealth.config import load_settings
from ctxhealth.errors import InputError, UsageError

_TYPES = ["code", "debug", "review", "docs", "explore"]


def _read_text(path: str, what: str) -> str:
    from ctxhealth.sources.reader import read_regular_file  # the readers load only for a file to read

    try:
        if path == "-":
            return sys.stdin.read()
        return read_regular_file(path, what).decode("utf-8", "replace")
    except OSError as exc:
        raise InputError(
            f"cannot read the {what}: {exc.strerror or exc}", path=path, hint="check the path"
        ) from exc


def explain_table(manifest: dict[str, Any]) -> str:
    """The manifest as a table: packed files (level, tier, form, tokens, score, terms), best exclusions."""
    rows = [f"{'level':5} {'tier':5} {'form':10} {'tokens':>7} {'score':>6}  rec  imp  sim  size  path"]
    for f in manifest["files"]:
        c = f["components"] or {}

        def term(name: str, c: dict[str, Any] = c) -> str:
            value = c.get(name)
            return " -- " if value is None else f"{value:4.2f}"

        score = "" if f["score"] is None else f"{f['score']:.3f}"
        rows.append(
            f"{f['level']:5} {f['priority'] or '-':5} {f['form']:10} {f['tokens']:>7,} {score:>6} "
            f"{term('recency')} {term('imports')} {term('similarity')} {term('size')}  {f['path']}"
        )
    levels = ", ".join(f"{k} {v:,}" for k, v in manifest["levels"].items())
    rows.append(f"total {manifest['tokens']:,} of {manifest['budget']:,} tokens ({levels})")
    scored = [e for e in manifest["excluded"] if e["score"] is not None][:10]
    if scored:
        rows.append("best excluded:")
        rows += [f"  {e['score']:.3f}  {e['path']}  ({e['reason']})" for e in scored]
    rows += [f"note: {n}" for n in manifest["notes"]]
    return "\n".join(rows)


@click.command("pack")
@click.argument("repo", type=click.Path(file_okay=False, exists=True))
@click.option("--task", "task_text", help="The task, as text.")
@click.option("--task-file", help="Read the task from a file ('-' for stdin).")
@click.option("--type", "task_type", type=click.Choice(_TYPES), default="code", show_default=True)
@click.option("--budget", type=click.IntRange(min=1), help="Hard cap on the payload, in o200k tokens.")
@click.option("--model", help="Derive the budget from this model's window (80% of the usable window).")
@click.option("--active", multiple=True, help="A file being worked on (repeatable).")
@click.option("--errors", "errors_file", help="A file of error output (L4; '-' for stdin).")
@click.option("--history", help="A transcript of the conversation so far (L5 and decay).")
@click.option("--session", "session_id", help="Use the transcript the ledger recorded for this session id.")
@click.option("--rules", multiple=True, help="A rules file (L1; repeatable).")
@click.option("--specs", multiple=True, help="A specs file (L2; repeatable).")
@click.option(
    "--format", "fmt", type=click.Choice(["markdown", "xml"]), default="markdown", show_default=True
)
@click.option("--json", "as_json", is_flag=True, help="Print the manifest (one JSON document) instead.")
@click.option("--explain", is_flag=True, help="Print the manifest as a table to stderr.")
@click.option("-o", "--output", help="Write the payload to this file instead of stdout.")
@guarded
def pack(
    repo: str,
    task_text: str | None,
    task_file: str | None,
    task_type: str,
    budget: int | None,
    model: str | None,
    active: tuple[str, ...],
    errors_file: str | None,
    history: str | None,
    session_id: str | None,
    rules: tuple[str, ...],
    specs: tuple[str, ...],
    fmt: str,
    as_json: bool,
    explain: bool,
    output: str | None,
) -> None:
    """Pack what a task needs from REPO under a hard token budget."""
    import gc

    from ctxhealth.pack import pack as run_pack

    if (task_text is None) == (task_file is None):
        raise UsageError("give exactly one of --task and --task-file", hint="--task 'fix the login redirect'")
    if (budget is None) == (model is None):
        raise UsageError(
            "give exactly one of --budget and --model", hint="--budget 32000 or --model claude-sonnet-4"
        )
    if history is not None and session_id is not None:
        raise UsageError(
            "give at most one of --history and --session", hint="--session looks the transcript up"
        )
    settings = load_settings({}, os.environ, Path.cwd())
    if session_id is not None:
        from ctxhealth.pack.history import transcript_for_session

        history = str(transcript_for_session(settings.home, session_id))
    task = task_text if task_text is not None else _read_text(str(task_file), "task file")
    error_text = _read_text(errors_file, "error output") if errors_file else None
    # A pack builds a record per candidate (tens of thousands of objects, all alive to the end): the
    # collector's passes over them free nothing, so the pack runs with them rarer (then as before).
    thresholds = gc.get_threshold()
    gc.set_threshold(50_000, 20, 20)
    try:
        result = run_pack(
            Path(repo),
            task,
            budget=budget,
            model=model,
            task_type=task_type,
            active=active,
            errors=error_text,
            history=history,
            rules=rules,
            specs=specs,
            output_format=fmt,
            cache_home=settings.home,
            registry=settings.registry() if model is not None else None,  # the catalog only for --model
        )
    finally:
        gc.set_threshold(*thresholds)
    manifest = result.manifest
    if explain:
        click.echo(explain_table(manifest), err=True)
    if as_json:
        click.echo(dump_json(manifest))
    elif output:
        write_output(output, result.text, "payload")
    else:
        click.echo(result.text, nl=False)
    files = sum(1 for f in manifest["files"] if f["level"] == "L3")
    click.echo(
        f"ctxhealth: pack {manifest['tokens']:,} of {manifest['budget']:,} tokens, {files} source files "
        f"of {manifest['candidates']['files']:,} candidates",
        err=True,
    )
