"""Labelled runs: the evaluation points and feature names, labels (a CSV, a SWE-bench report, or
the outcome a log records itself), a session's features at each evaluation point, collecting the
labelled runs under some paths, and the fingerprints that recognise a model's training runs.
"""

from __future__ import annotations

import csv
import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from msgspec.structs import replace

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
    """One labelled run: where it came from, whether it failed, its features at each evaluation point.

    ``name`` identifies the run (its file name, or ``file#session`` when one file holds several
    runs); ``group`` is the task it attempted (repeated trials of one task share it, and always sit
    on the same side of a cross-validation split); ``agent`` is the log's format (one per agent).
    """

    path: str
    failed: int
    features: Mapping[float, Mapping[str, float]]
    name: str = ""
    group: str = ""
    agent: str = ""

    def __post_init__(self) -> None:
        if not self.name:
            object.__setattr__(self, "name", run_key(self.path))
        if not self.group:
            object.__setattr__(self, "group", self.name)


def run_key(path: str) -> str:
    """The name a run is matched and fingerprinted by: the file name without directories."""
    return path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]


_KEY_COLUMNS = ("file", "instance", "instance_id", "session", "session_id")
_SUFFIXES = (".gz", ".jsonl", ".json", ".traj")


def read_labels(path: str) -> dict[str, int]:
    """Labels CSV → ``{run name: failed}`` (failed = 1 - resolved; a ``failed`` column also works).

    The run is named by a ``file`` column (the transcript's file name) or by an ``instance`` /
    ``instance_id`` / ``session`` / ``session_id`` column (matched with the session's id or task id).
    """
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            fields = set(reader.fieldnames or ())
            key_column = next((c for c in _KEY_COLUMNS if c in fields), None)
            if key_column is None or not ({"resolved", "failed"} & fields):
                raise ConfigError(
                    f"labels file {path} needs a 'file' (or 'instance') column and a 'resolved' "
                    "(or 'failed') column",
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
                out[run_key(row[key_column])] = failed
            return out
    except OSError as exc:
        raise ConfigError(f"cannot read labels {path}: {exc}", hint="check the --labels path") from exc


def read_swebench_report(path: str) -> dict[str, int]:
    """A SWE-bench evaluation report → ``{instance id: failed}``.

    Accepted shapes: the harness's summary (``resolved_ids`` with ``unresolved_ids`` /
    ``error_ids`` / ``empty_patch_ids``, or the older ``resolved`` with ``generated`` / ``applied``
    lists), and the per-instance map ``{instance_id: {"resolved": bool, ...}}``.
    """
    import json

    try:
        with open(path, encoding="utf-8") as handle:
            doc = json.load(handle)
    except OSError as exc:
        raise ConfigError(f"cannot read report {path}: {exc}", hint="check the --report path") from exc
    except ValueError as exc:
        raise ConfigError(f"report {path} is not JSON: {exc}", hint="pass a SWE-bench report JSON") from exc
    if not isinstance(doc, dict):
        raise ConfigError(f"report {path} is not a JSON object", hint="pass a SWE-bench report JSON")
    out: dict[str, int] = {}
    resolved_key = "resolved_ids" if "resolved_ids" in doc else "resolved"
    resolved = doc.get(resolved_key)
    if isinstance(resolved, list):
        others = ("unresolved_ids", "error_ids", "empty_patch_ids", "generated", "applied", "completed_ids")
        for key in others:
            for item in doc.get(key) or ():
                out[str(item)] = 1
        for item in resolved:
            out[str(item)] = 0
    else:
        for instance, entry in doc.items():
            flag = entry.get("resolved") if isinstance(entry, dict) else None
            if isinstance(flag, bool):
                out[str(instance)] = 0 if flag else 1
    if not out:
        raise ConfigError(
            f"report {path} names no resolved or unresolved instance",
            hint="pass the harness's report (resolved_ids / unresolved_ids) or a per-instance report map",
        )
    return out


def run_name(session: Any) -> str:
    """The name of a session's run: its file name, or ``file#session`` when the file holds several."""
    from ctxhealth.sources.reader import MANY_PER_FILE, SESSION_SEPARATOR

    key = run_key(session.path)
    sid = session.session_id
    if session.format in MANY_PER_FILE and sid and sid != key:
        return f"{key}{SESSION_SEPARATOR}{sid}"
    return key


def label_of(session: Any, labels: Mapping[str, int] | None) -> int | None:
    """Whether the session's run failed (1) or not (0), None when nothing says.

    ``labels`` (from a CSV or a report) are matched by run name, file name (with or without its
    suffixes), session id and task id, in that order; else the outcome the log itself records
    (tau-bench ``reward``, OpenHands ``report.resolved``: 1.0 is a success).
    """
    if labels:
        key = run_key(session.path)
        stem = key
        for suffix in _SUFFIXES:
            stem = stem.removesuffix(suffix)
        for candidate in (run_name(session), key, stem, session.session_id, session.task_id):
            if candidate is not None and candidate in labels:
                return labels[candidate]
    if session.outcome is not None:
        return 0 if session.outcome >= 1.0 else 1
    return None


def run_features(
    session: Any, points: Sequence[float] = EVAL_POINTS, profile: Any = None
) -> dict[float, dict[str, float]]:
    """Features of one session after the first ``p`` of its turns, for each ``p``, in one pass."""
    # the monitor imports this package (for the model): import it only when features are computed
    from ctxhealth.monitor import Monitor, cut_index
    from ctxhealth.policy.profile import Profile

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
    labels: Mapping[str, int] | None = None,
    *,
    points: Sequence[float] = EVAL_POINTS,
    profile: Any = None,
    on_session: Callable[[str], None] | None = None,
    on_unlabelled: Callable[[str], None] | None = None,
) -> list[LabelledRun]:
    """Read every session under ``paths`` that has a label (``labels`` or the log's own outcome,
    see :func:`label_of`) and compute its features; ``on_session(path)`` hears of each session
    read (progress), ``on_unlabelled(name)`` of each one left out for want of a label."""
    from ctxhealth.sources import read_sessions

    runs: list[LabelledRun] = []
    for session in read_sessions(list(paths)):
        if on_session is not None:
            on_session(session.path)
        failed = label_of(session, labels)
        if failed is None:
            if on_unlabelled is not None:
                on_unlabelled(run_name(session))
            continue
        name = run_name(session)
        runs.append(
            LabelledRun(
                session.path,
                failed,
                run_features(session, points, profile),
                name=name,
                group=f"{session.format.value}:{session.task_id}" if session.task_id else name,
                agent=session.format.value,
            )
        )
    runs.sort(key=lambda r: r.name)
    if not runs:
        raise ConfigError(
            "no transcript matched a label",
            hint="give --labels CSV (file,resolved) or --report (a SWE-bench report); tau-bench and "
            "OpenHands output.jsonl logs carry their own outcome",
        )
    if len({r.failed for r in runs}) < 2:
        raise ConfigError(
            "the labelled runs are all of one class", hint="label both resolved and failed runs"
        )
    return runs


def fingerprint(keys: Sequence[str]) -> list[str]:
    """Short stable hashes of run names, stored with a fitted model to recognise its training data."""
    return sorted(hashlib.sha256(k.encode()).hexdigest()[:10] for k in keys)
