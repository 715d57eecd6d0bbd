"""How runs are split and laid out for fitting: seeded stratified folds (runs of one group kept
together) and the training rows of runs at several evaluation points with their strata.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence


def group_folds(labels: Sequence[int], groups: Sequence[int] | None, k: int, *, seed: int = 0) -> list[int]:
    """Stratified folds where rows of the same group (run) always share a fold."""
    if groups is None:
        return stratified_folds(labels, k, seed=seed)
    first: dict[int, int] = {}
    for i, g in enumerate(groups):
        first.setdefault(g, i)
    keys = sorted(first)
    per_group = stratified_folds([labels[first[g]] for g in keys], k, seed=seed)
    fold_of = dict(zip(keys, per_group, strict=True))
    return [fold_of[g] for g in groups]


def stratified_folds(labels: Sequence[int], k: int, *, seed: int = 0) -> list[int]:
    """Fold number (0..k-1) for each run, stratified by label, seeded."""
    rng = random.Random(seed)
    fold = [0] * len(labels)
    for cls in (0, 1):
        idx = [i for i, v in enumerate(labels) if v == cls]
        rng.shuffle(idx)
        for pos, i in enumerate(idx):
            fold[i] = pos % k
    return fold


def training_rows(
    rows: Sequence[Mapping[str, float]],
    y: Sequence[int],
    runs: Sequence[int],
    points: Mapping[float, Sequence[Mapping[str, float]]] | None,
) -> tuple[list[Mapping[str, float]], list[int], list[int] | None]:
    """The rows to fit on: each run's end-of-run row, or (``points`` given) its row at every
    evaluation point, so the model learns what a prefix of a run looks like. Returns rows, labels
    and the run of each row (None when one row per run)."""
    if points is None:
        return [rows[i] for i in runs], [y[i] for i in runs], None
    out_rows: list[Mapping[str, float]] = []
    out_y: list[int] = []
    groups: list[int] = []
    for i in runs:
        for prow in points.values():
            out_rows.append(prow[i])
            out_y.append(y[i])
            groups.append(i)
    return out_rows, out_y, groups


def point_strata(groups: Sequence[int] | None) -> list[int] | None:
    """The evaluation point of each row from :func:`training_rows` (its position within its run)."""
    if groups is None:
        return None
    seen: dict[int, int] = {}
    out = []
    for g in groups:
        out.append(seen.get(g, 0))
        seen[g] = out[-1] + 1
    return out
