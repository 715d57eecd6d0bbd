"""The label options ``calibrate`` and ``validate`` share: ``--labels CSV`` and ``--report JSON``;
without either, the outcome a log records itself (tau-bench ``reward``, OpenHands reports)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from ctxhealth.errors import ConfigError
from ctxhealth.evaluation import LabelledRun, collect_runs, read_labels, read_swebench_report

F = TypeVar("F", bound=Callable[..., Any])

LABELS_WHERE = (
    "Labelled runs do not ship with ctxhealth: label your own with a CSV `file,resolved` (or "
    "`instance,resolved`), one row per transcript (1 = the run reached its goal, e.g. its tests passed or "
    "its change was accepted; 0 = it did not), with both outcomes present. Benchmark runs come labelled "
    "too: pass a SWE-bench report with --report, and tau-bench and OpenHands output.jsonl logs carry "
    "their own outcome; a few hundred runs are needed for a stable fit."
)


UNLABELLED_SHOWN = 3
"""Sessions named in the note about sessions left out for want of a label."""


def label_options(command: F) -> F:
    """Add ``--labels`` and ``--report`` to a command."""
    command = click.option(
        "--report",
        "report_path",
        help="A SWE-bench evaluation report (JSON) naming resolved and unresolved instances.",
    )(command)
    return click.option(
        "--labels",
        "labels_paths",
        multiple=True,
        help="CSV with columns file,resolved (or instance,resolved); 1 = success; repeatable. Without "
        "--labels or --report, runs are labelled by the outcome their log records (tau-bench, "
        "OpenHands output.jsonl).",
    )(command)


def load_labels(labels_paths: tuple[str, ...], report_path: str | None) -> dict[str, int] | None:
    """The labels from ``--report`` and every ``--labels`` CSV (a CSV row wins over the report), or
    None when neither was given."""
    if not labels_paths and report_path is None:
        return None
    labels: dict[str, int] = {}
    if report_path is not None:
        labels.update(read_swebench_report(report_path))
    for path in labels_paths:
        labels.update(read_labels(path))
    return labels


def labelled_runs(
    paths: tuple[str, ...],
    labels_paths: tuple[str, ...],
    report_path: str | None,
    profile: Any,
    on_session: Callable[[str], None] | None = None,
) -> list[LabelledRun]:
    """The labelled runs under ``paths``; when no run has a label and none were given, the error
    says where labelled runs come from."""
    labels = load_labels(labels_paths, report_path)
    unlabelled: list[str] = []
    try:
        runs = collect_runs(
            paths, labels, profile=profile, on_session=on_session, on_unlabelled=unlabelled.append
        )
    except ConfigError as exc:
        if labels is None and "matched a label" in exc.message:
            raise ConfigError(
                "no run has a label and no --labels or --report was given", hint=LABELS_WHERE
            ) from exc
        raise
    if unlabelled:
        count = len(unlabelled)
        shown = ", ".join(unlabelled[:UNLABELLED_SHOWN]) + (" ..." if count > UNLABELLED_SHOWN else "")
        click.echo(
            f"ctxhealth: {count:,} session{'s' if count != 1 else ''} without a label left out: {shown}",
            err=True,
        )
    return runs
