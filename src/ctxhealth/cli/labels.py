"""The label options ``calibrate`` and ``validate`` share: ``--labels CSV`` and ``--report JSON``;
without either, the outcome a log records itself (tau-bench ``reward``, OpenHands reports)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from ctxhealth.evaluation import read_labels, read_swebench_report

F = TypeVar("F", bound=Callable[..., Any])


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
