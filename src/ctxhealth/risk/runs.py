"""Labelled runs: the evaluation points and feature names, reading a labels CSV, a session's
features at each evaluation point, collecting the labelled runs under some paths, and the
fingerprints that recognise a model's training runs.
"""

from __future__ import annotations

import csv
import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ctxhealth.errors import ConfigError

EVAL_POINTS: tuple[float, ...] = (0.25, 0.5, 0.75, 1.0)
"""Where a run is scored: after the first 25 / 50 / 75 % of its turns and at its end."""

CANDIDATE_FEATURES: tuple[str, ...] = (
    "peak_fill",
    "hedges",
    "output_tokens",
    "assistant_chars",
    "reasoning_tokens",
    "edits",
)
"""Features the calibration may choose from (all computed by ``Monitor.features``): the peak
fill, hedge words per turn, output tokens so far, assistant text per turn, hidden reasoning tokens
so far, and file edits so far. Six at most: a few hundred runs support no more. Every other
``Monitor.features`` name can be passed to :func:`cross_validate` too; on the development runs
(tool failures, repetition, drift, indicators) they did not separate failed runs."""

LOG_FEATURES = frozenset(
    {
        "peak_fill",
        "fill",
        "turns",
        "output_tokens",
        "output_per_turn",
        "assistant_chars",
        "max_consecutive_failures",
        "edits",
        "files_edited",
        "reasoning_tokens",
        "hedges",
    }
)
"""Counts and sizes: their logarithm is what relates linearly to risk."""

BASELINES: tuple[tuple[str, str], ...] = (
    ("peak fill", "peak_fill"),
    ("number of turns", "turns"),
    ("tool error rate", "failure_rate"),
)
"""Single-feature baselines every validation reports next to the risk score (label, feature)."""


@dataclass(frozen=True, slots=True)
class LabelledRun:
    """One labelled run: where it came from, whether it failed, its features at each evaluation point."""

    path: str
    failed: int
    features: Mapping[float, Mapping[str, float]]


def run_key(path: str) -> str:
    """The name a run is matched and fingerprinted by: the file name without directories."""
    return path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]


def read_labels(path: str) -> dict[str, int]:
    """``file,resolved`` CSV → ``{file name: failed}`` (failed = 1 - resolved). Also accepts ``failed``."""
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            fields = set(reader.fieldnames or ())
            if "file" not in fields or not ({"resolved", "failed"} & fields):
                raise ConfigError(
                    f"labels file {path} needs a 'file' column and a 'resolved' (or 'failed') column",
                    hint="write a CSV header: file,resolved",
                )
            out: dict[str, int] = {}
            for line, row in enumerate(reader, start=2):
                try:
                    if "resolved" in row and row["resolved"] not in (None, ""):
                        failed = 1 - int(row["resolved"])
                    else:
                        failed = int(row["failed"])
                except ValueError as exc:
                    raise ConfigError(
                        f"{path}:{line}: label must be 0 or 1", hint="use 1 for resolved runs, 0 otherwise"
                    ) from exc
                if failed not in (0, 1):
                    raise ConfigError(f"{path}:{line}: label must be 0 or 1", hint="use 0 or 1")
                out[run_key(row["file"])] = failed
            return out
    except OSError as exc:
        raise ConfigError(f"cannot read labels {path}: {exc}", hint="check the --labels path") from exc


def run_features(
    session: Any, points: Sequence[float] = EVAL_POINTS, profile: Any = None
) -> dict[float, dict[str, float]]:
    """Features of one session after the first ``p`` of its turns, for each ``p``, in one pass."""
    # the monitor imports this package (for the model): import it only when features are computed
    from ctxhealth.monitor import Monitor, cut_index
    from ctxhealth.signals.profile import Profile

    base = profile if profile is not None else Profile()
    monitor = Monitor(session.model, replace(base, risk=None), track_hedges=True)
    cuts = {p: cut_index(session, p) for p in points}
    out: dict[float, dict[str, float]] = {}
    pending = sorted(points, key=lambda p: cuts[p])
    for n, _ in enumerate(monitor.iter_session(session), start=1):
        while pending and cuts[pending[0]] <= n:
            out[pending.pop(0)] = monitor.features()
    for p in pending:
        out[p] = monitor.features()
    return out


def collect_runs(
    paths: Sequence[str],
    labels: Mapping[str, int],
    *,
    points: Sequence[float] = EVAL_POINTS,
    profile: Any = None,
    on_session: Callable[[str], None] | None = None,
) -> list[LabelledRun]:
    """Read every session under ``paths`` that has a label and compute its features;
    ``on_session(path)`` hears of each session read (progress)."""
    from ctxhealth.sources import read_sessions

    runs: list[LabelledRun] = []
    for session in read_sessions(list(paths)):
        if on_session is not None:
            on_session(session.path)
        key = run_key(session.path)
        if key not in labels:
            continue
        runs.append(LabelledRun(session.path, labels[key], run_features(session, points, profile)))
    runs.sort(key=lambda r: run_key(r.path))
    if not runs:
        raise ConfigError(
            "no transcript matched a label",
            hint="the labels' 'file' column must name the transcript files (their file names are matched)",
        )
    if len({r.failed for r in runs}) < 2:
        raise ConfigError(
            "the labelled runs are all of one class", hint="label both resolved and failed runs"
        )
    return runs


def fingerprint(keys: Sequence[str]) -> list[str]:
    """Short stable hashes of run names, stored with a fitted model to recognise its training data."""
    return sorted(hashlib.sha256(k.encode()).hexdigest()[:10] for k in keys)
