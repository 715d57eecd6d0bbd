"""How well scores separate failed runs: ROC AUC, its stratified mean, a bootstrap interval and
a paired bootstrap interval of the difference between two scores on the same runs.

``roc_auc`` is the Mann-Whitney statistic with ties counted as one half; the bootstraps resample
runs with a seeded generator so every figure is reproducible.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence


def roc_auc(scores: Sequence[float], labels: Sequence[int]) -> float:
    """Area under the ROC curve: P(score of a positive > score of a negative), ties count 1/2.

    Computed from ranks (average ranks for ties) in O(n log n). NaN when one class is absent.
    """
    n = len(scores)
    if n != len(labels):
        raise ValueError("scores and labels differ in length")
    pos = sum(1 for v in labels if v)
    neg = n - pos
    if pos == 0 or neg == 0:
        return float("nan")
    order = sorted(range(n), key=lambda i: scores[i])
    ranks = [0.0] * n
    i = 0
    while i < n:
        j = i
        while j + 1 < n and scores[order[j + 1]] == scores[order[i]]:
            j += 1
        avg = (i + j) / 2.0 + 1.0
        for k in range(i, j + 1):
            ranks[order[k]] = avg
        i = j + 1
    rank_sum = sum(r for r, v in zip(ranks, labels, strict=True) if v)
    return (rank_sum - pos * (pos + 1) / 2.0) / (pos * neg)


def bootstrap_auc_ci(
    scores: Sequence[float], labels: Sequence[int], *, rounds: int = 1000, seed: int = 0, level: float = 0.95
) -> tuple[float, float]:
    """Percentile bootstrap confidence interval of :func:`roc_auc` (runs resampled with replacement)."""
    rng = random.Random(seed)
    n = len(scores)
    values = []
    for _ in range(rounds):
        idx = [rng.randrange(n) for _ in range(n)]
        a = roc_auc([scores[i] for i in idx], [labels[i] for i in idx])
        if not math.isnan(a):
            values.append(a)
    return _percentiles(values, level)


def _percentiles(values: list[float], level: float) -> tuple[float, float]:
    if not values:
        return (float("nan"), float("nan"))
    values.sort()
    lo = values[int((1.0 - level) / 2.0 * (len(values) - 1))]
    hi = values[int((1.0 + level) / 2.0 * (len(values) - 1))]
    return (lo, hi)


def bootstrap_auc_difference_ci(
    first: Sequence[float],
    second: Sequence[float],
    labels: Sequence[int],
    *,
    rounds: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float, float]:
    """Paired percentile bootstrap interval of ``roc_auc(first) - roc_auc(second)``.

    Both scores are computed on the same resampled runs each round, so what they share (the runs
    that are easy or hard for both) cancels: far narrower than comparing two separate intervals.
    """
    if not (len(first) == len(second) == len(labels)):
        raise ValueError("scores and labels differ in length")
    rng = random.Random(seed)
    n = len(labels)
    values = []
    for _ in range(rounds):
        idx = [rng.randrange(n) for _ in range(n)]
        y = [labels[i] for i in idx]
        a = roc_auc([first[i] for i in idx], y)
        if not math.isnan(a):
            values.append(a - roc_auc([second[i] for i in idx], y))
    return _percentiles(values, level)


def stratified_auc(scores: Sequence[float], labels: Sequence[int], strata: Sequence[int] | None) -> float:
    """:func:`roc_auc` within each stratum, averaged (plain AUC when ``strata`` is None)."""
    if strata is None:
        return roc_auc(scores, labels)
    values = []
    for s in sorted(set(strata)):
        idx = [i for i, v in enumerate(strata) if v == s]
        a = roc_auc([scores[i] for i in idx], [labels[i] for i in idx])
        if not math.isnan(a):
            values.append(a)
    return sum(values) / len(values) if values else float("nan")
