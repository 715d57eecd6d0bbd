"""The risk score: a small logistic model over normalised signal features, its fitting and its scoring.

Pure Python, no numerical dependency. ``fit_logistic`` is L2-regularised logistic regression solved
by Newton's method (a handful of features, a few hundred runs: exact and fast). ``roc_auc`` is the
Mann-Whitney statistic with ties counted as one half; ``bootstrap_auc_ci`` resamples runs with a seeded
generator so every figure is reproducible. ``cross_validate`` chooses the regularisation strength and
the feature set *inside* each training fold (nested), so the held-out AUC it reports is honest.
Four fitting procedures (:class:`Procedure`): greedy-selected logistic regression; screened unit
weights (:func:`fit_screened`), which estimates far fewer numbers; the same with every feature but
peak fill phased in over the first turns (the one the shipped profile uses: it matched screening at
the end of a run and did better in its first half); and fill-anchored (:func:`fit_anchored`), peak
fill plus an inner-CV-chosen weight on the other screened features.

A :class:`RiskModel` maps a feature mapping to a probability of failure in 0..1: each feature is
transformed (``log1p`` for counts), standardised with the training mean / deviation, then weighted.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

from ctxhealth.errors import ConfigError


@dataclass(frozen=True, slots=True)
class RiskModel:
    """Weights of the logistic risk model and the normalisation they expect.

    ``features`` names the inputs in order; ``log_features`` are passed through ``log1p`` first;
    ``mean`` / ``scale`` standardise; ``weights`` and ``bias`` are the fitted coefficients.
    ``phase_in`` > 0 phases the features other than ``anchor`` in over the first ``phase_in`` turns:
    their terms are multiplied by ``min(1, turns / phase_in)`` (rates and totals over a few turns
    are noise); the ``turns`` input is then one of ``features`` (with weight 0).
    """

    features: tuple[str, ...]
    weights: tuple[float, ...]
    bias: float
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    log_features: frozenset[str] = frozenset()
    l2: float = 1.0
    meta: Mapping[str, Any] = field(default_factory=dict)
    phase_in: float = 0.0
    anchor: str = ""

    def __post_init__(self) -> None:
        n = len(self.features)
        if not (len(self.weights) == len(self.mean) == len(self.scale) == n):
            raise ConfigError(
                "risk model has mismatched lengths of features, weights, mean and scale",
                hint="refit the profile with `ctxhealth calibrate`",
            )
        if self.phase_in < 0 or (self.phase_in > 0 and PHASE_FEATURE not in self.features):
            raise ConfigError(
                f"risk model phases features in but does not read `{PHASE_FEATURE}`",
                hint="refit the profile with `ctxhealth calibrate`",
            )

    def _phase(self, values: Mapping[str, float]) -> float:
        if self.phase_in <= 0:
            return 1.0
        turns = values.get(PHASE_FEATURE)
        return 1.0 if turns is None else min(1.0, max(turns, 0.0) / self.phase_in)

    def contributions(self, values: Mapping[str, float]) -> dict[str, float]:
        """Each feature's share of the log-odds (for explaining a score)."""
        out: dict[str, float] = {}
        phase = self._phase(values)
        for name, w, mu, sd in zip(self.features, self.weights, self.mean, self.scale, strict=True):
            raw = values.get(name)
            if raw is None:
                continue
            x = math.log1p(max(raw, 0.0)) if name in self.log_features else raw
            out[name] = (1.0 if name == self.anchor else phase) * w * (x - mu) / sd
        return out

    def linear(self, values: Mapping[str, float]) -> float:
        """The log-odds of failure for one feature mapping (missing features count as the mean)."""
        phase = self._phase(values)
        z = self.bias
        for name, w, mu, sd in zip(self.features, self.weights, self.mean, self.scale, strict=True):
            raw = values.get(name)
            if raw is None or w == 0.0:
                continue
            x = math.log1p(max(raw, 0.0)) if name in self.log_features else raw
            z += (1.0 if name == self.anchor else phase) * w * (x - mu) / sd
        return z

    def score(self, values: Mapping[str, float]) -> float:
        """Probability of failure, 0..1."""
        return sigmoid(self.linear(values))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "features": list(self.features),
            "weights": list(self.weights),
            "bias": self.bias,
            "mean": list(self.mean),
            "scale": list(self.scale),
            "log_features": sorted(self.log_features),
            "l2": self.l2,
            "meta": dict(self.meta),
        }
        if self.phase_in > 0:
            out["phase_in"] = self.phase_in
            out["anchor"] = self.anchor
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RiskModel:
        try:
            return cls(
                features=tuple(str(f) for f in data["features"]),
                weights=tuple(float(w) for w in data["weights"]),
                bias=float(data["bias"]),
                mean=tuple(float(m) for m in data["mean"]),
                scale=tuple(float(s) for s in data["scale"]),
                log_features=frozenset(str(f) for f in data.get("log_features", ())),
                l2=float(data.get("l2", 1.0)),
                meta=dict(data.get("meta", {})),
                phase_in=float(data.get("phase_in", 0.0)),
                anchor=str(data.get("anchor", "")),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(
                f"invalid risk model in profile: {exc}",
                hint="refit the profile with `ctxhealth calibrate` or remove its `risk` entry",
            ) from exc


PHASE_FEATURE = "turns"
"""The input a phased-in model reads the number of turns so far from."""


def sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


# --------------------------------------------------------------------------------------------- fitting


def _solve(a: list[list[float]], b: list[float]) -> list[float]:
    """Solve ``a x = b`` by Gaussian elimination with partial pivoting (a is small and SPD here)."""
    n = len(b)
    m = [[*row, b[i]] for i, row in enumerate(a)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(m[r][col]))
        if abs(m[pivot][col]) < 1e-12:
            m[pivot][col] = 1e-12
        m[col], m[pivot] = m[pivot], m[col]
        p = m[col][col]
        for r in range(col + 1, n):
            f = m[r][col] / p
            if f:
                row_r, row_c = m[r], m[col]
                for c in range(col, n + 1):
                    row_r[c] -= f * row_c[c]
    x = [0.0] * n
    for r in range(n - 1, -1, -1):
        s = m[r][n] - sum(m[r][c] * x[c] for c in range(r + 1, n))
        x[r] = s / m[r][r]
    return x


def fit_weights(
    x: Sequence[Sequence[float]], y: Sequence[int], *, l2: float = 1.0, iterations: int = 50
) -> tuple[list[float], float]:
    """L2-regularised logistic regression by Newton's method; the bias is not penalised.

    ``x`` rows are already standardised. Returns ``(weights, bias)``.
    """
    n = len(x)
    if n == 0 or n != len(y):
        raise ConfigError("cannot fit a risk model on no runs", hint="pass labelled runs")
    d = len(x[0])
    beta = [0.0] * (d + 1)  # last entry is the bias
    rows = [[*row, 1.0] for row in x]
    for _ in range(iterations):
        grad = [0.0] * (d + 1)
        hess = [[0.0] * (d + 1) for _ in range(d + 1)]
        for row, label in zip(rows, y, strict=True):
            p = sigmoid(sum(b * v for b, v in zip(beta, row, strict=True)))
            err = p - label
            w = max(p * (1.0 - p), 1e-9)
            for i in range(d + 1):
                ri = row[i]
                grad[i] += err * ri
                wri = w * ri
                hrow = hess[i]
                for j in range(i, d + 1):
                    hrow[j] += wri * row[j]
        for i in range(d):
            grad[i] += l2 * beta[i]
            hess[i][i] += l2
        for i in range(d + 1):
            for j in range(i):
                hess[i][j] = hess[j][i]
        step = _solve(hess, grad)
        beta = [b - s for b, s in zip(beta, step, strict=True)]
        if max(abs(s) for s in step) < 1e-8:
            break
    return beta[:d], beta[d]


def _transform(
    rows: Sequence[Mapping[str, float]], features: Sequence[str], logs: frozenset[str]
) -> list[list[float]]:
    out = []
    for r in rows:
        out.append([math.log1p(max(r.get(f, 0.0), 0.0)) if f in logs else r.get(f, 0.0) for f in features])
    return out


def fit_model(
    rows: Sequence[Mapping[str, float]],
    y: Sequence[int],
    features: Sequence[str],
    *,
    log_features: frozenset[str] = frozenset(),
    l2: float = 1.0,
    meta: Mapping[str, Any] | None = None,
) -> RiskModel:
    """Fit a :class:`RiskModel` (standardisation + logistic weights) on feature rows and failure labels."""
    raw = _transform(rows, features, log_features)
    d = len(features)
    n = len(raw)
    mean = [sum(r[i] for r in raw) / n for i in range(d)]
    scale = []
    for i in range(d):
        var = sum((r[i] - mean[i]) ** 2 for r in raw) / n
        scale.append(math.sqrt(var) if var > 1e-12 else 1.0)
    std = [[(r[i] - mean[i]) / scale[i] for i in range(d)] for r in raw]
    weights, bias = fit_weights(std, y, l2=l2)
    return RiskModel(
        features=tuple(features),
        weights=tuple(weights),
        bias=bias,
        mean=tuple(mean),
        scale=tuple(scale),
        log_features=frozenset(f for f in log_features if f in features),
        l2=l2,
        meta=dict(meta or {}),
    )


# ------------------------------------------------------------------------------------------ evaluation


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
    import random  # only fitting and validation need it; the monitor imports this module

    rng = random.Random(seed)
    n = len(scores)
    values = []
    for _ in range(rounds):
        idx = [rng.randrange(n) for _ in range(n)]
        a = roc_auc([scores[i] for i in idx], [labels[i] for i in idx])
        if not math.isnan(a):
            values.append(a)
    if not values:
        return (float("nan"), float("nan"))
    values.sort()
    lo = values[int((1.0 - level) / 2.0 * (len(values) - 1))]
    hi = values[int((1.0 + level) / 2.0 * (len(values) - 1))]
    return (lo, hi)


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
    import random  # only fitting and validation need it; the monitor imports this module

    rng = random.Random(seed)
    fold = [0] * len(labels)
    for cls in (0, 1):
        idx = [i for i, v in enumerate(labels) if v == cls]
        rng.shuffle(idx)
        for pos, i in enumerate(idx):
            fold[i] = pos % k
    return fold


# ----------------------------------------------------------------------------- selection and nested CV

DEFAULT_L2_GRID: tuple[float, ...] = (1.0, 10.0, 100.0)


@dataclass(frozen=True, slots=True)
class CVResult:
    """Held-out scores of a (nested) cross-validation: every run scored by a model that never saw it.

    ``scores`` / ``auc`` are keyed by the evaluation point (e.g. 0.25 for the first quarter of the
    turns, 1.0 for the whole run); ``fold_features`` lists the features chosen inside each training
    fold (they may differ from fold to fold).
    """

    scores: Mapping[float, tuple[float, ...]]
    labels: tuple[int, ...]
    auc: Mapping[float, float]
    folds: int
    fold_features: tuple[tuple[str, ...], ...]
    fold_l2: tuple[float, ...]
    fold_thresholds: tuple[float, ...] = ()
    fold_alphas: tuple[float, ...] = ()
    fold_phase_in: tuple[float, ...] = ()


def _cv_scores(
    rows: Sequence[Mapping[str, float]],
    y: Sequence[int],
    features: Sequence[str],
    log_features: frozenset[str],
    l2: float,
    fold: Sequence[int],
    k: int,
) -> list[float]:
    scores = [0.0] * len(y)
    for f in range(k):
        train = [i for i in range(len(y)) if fold[i] != f]
        model = fit_model(
            [rows[i] for i in train], [y[i] for i in train], features, log_features=log_features, l2=l2
        )
        for i in range(len(y)):
            if fold[i] == f:
                scores[i] = model.linear(rows[i])
    return scores


def select_features(
    rows: Sequence[Mapping[str, float]],
    y: Sequence[int],
    candidates: Sequence[str],
    *,
    log_features: frozenset[str] = frozenset(),
    l2_grid: Sequence[float] = DEFAULT_L2_GRID,
    inner_folds: int = 5,
    max_features: int = 4,
    min_gain: float = 0.005,
    seed: int = 0,
    groups: Sequence[int] | None = None,
    strata: Sequence[int] | None = None,
    inner_repeats: int = 1,
    required: Sequence[str] = (),
) -> tuple[tuple[str, ...], float]:
    """Greedy forward selection by inner cross-validated AUC, then the L2 strength; uses only ``rows``.

    ``groups`` names the run each row comes from when a run gives several rows (prefixes of one run):
    inner folds then keep a run's rows together. ``strata`` names each row's evaluation point: the
    criterion is then the mean of the AUCs within each point, because a pooled AUC would reward
    features that only tell an early prefix from a finished run. ``inner_repeats`` averages the
    criterion over that many differently seeded fold splits (steadier choices on small data).
    ``required`` features are always in the model (prior knowledge, e.g. the fill); selection adds
    to them. Returns ``(features, l2)``; deterministic per ``seed``.
    """
    splits = [group_folds(y, groups, inner_folds, seed=seed + 1000 * r) for r in range(max(1, inner_repeats))]
    mid = sorted(l2_grid)[len(l2_grid) // 2]

    def criterion(feats: Sequence[str], l2: float) -> float:
        total = 0.0
        for fold in splits:
            scores = _cv_scores(rows, y, feats, log_features, l2, fold, inner_folds)
            total += stratified_auc(scores, y, strata)
        return total / len(splits)

    chosen: list[str] = [f for f in required if f in candidates]
    best = criterion(chosen, mid) if chosen else 0.5
    while len(chosen) < max_features:
        trial: list[tuple[float, str]] = []
        for name in candidates:
            if name in chosen:
                continue
            trial.append((criterion([*chosen, name], mid), name))
        if not trial:
            break
        auc, name = max(trial, key=lambda t: (t[0], -candidates.index(t[1])))
        if auc < best + min_gain:
            break
        chosen.append(name)
        best = auc
    if not chosen:
        chosen = [candidates[0]]
    by_l2 = [(criterion(chosen, l2), -l2) for l2 in l2_grid]
    l2 = -max(by_l2)[1]
    return tuple(chosen), l2


# ------------------------------------------------------------------------- the screened unit-weight model


class Procedure(Enum):
    """How a risk model is fitted from labelled runs (each run inside every training fold of CV).

    ``LOGISTIC``: greedy forward selection of features by inner cross-validated AUC, then L2 logistic
    regression. ``SCREENED``: every candidate whose own AUC (on the training runs) is at least
    ``threshold`` away from 0.5 enters with unit weight and its sign, on the standardised scale; the
    threshold is chosen by inner cross-validation; one slope and bias then turn the sum into a
    probability. Unit weights estimate far fewer numbers than free weights, which is what a few
    hundred runs can support. ``ANCHORED``: the anchor feature (peak fill) at unit weight plus
    ``alpha`` times the standardised signed equal-weight sum of the other screened features, ``alpha``
    chosen from a small grid by inner cross-validation (0 is the anchor alone); then slope and bias.
    ``PHASED``: ``SCREENED`` with every feature but peak fill phased in over the first ``phase_in``
    turns (:class:`RiskModel`), ``phase_in`` chosen with the threshold by inner cross-validation
    (0 is ``SCREENED``). The monitor does not know how long a run will be; it knows how many turns
    it has seen, and a per-turn rate over a few turns is mostly noise.
    """

    LOGISTIC = "logistic"
    SCREENED = "screened"
    ANCHORED = "anchored"
    PHASED = "phased"


DEFAULT_THRESHOLD_GRID: tuple[float, ...] = (0.03, 0.05, 0.08)

DEFAULT_ALPHA_GRID: tuple[float, ...] = (0.0, 0.25, 0.5, 1.0, 2.0)
"""How much the :attr:`Procedure.ANCHORED` model may lean on the other features, relative to the anchor."""

ANCHOR_FEATURE = "peak_fill"
"""The feature :attr:`Procedure.ANCHORED` always keeps at unit weight (the best single feature)."""

DEFAULT_PHASE_GRID: tuple[float, ...] = (0.0, 20.0, 30.0)
"""Turns over which :attr:`Procedure.PHASED` may phase the non-anchor features in (0: at once)."""

ANCHORED_THRESHOLD = 0.03
"""The screening threshold :attr:`Procedure.ANCHORED` applies to the features besides the anchor."""


def screen_features(
    rows: Sequence[Mapping[str, float]],
    y: Sequence[int],
    candidates: Sequence[str],
    threshold: float,
    strata: Sequence[int] | None = None,
    *,
    fallback: bool = True,
) -> list[tuple[str, int]]:
    """Candidates whose (stratified) AUC on ``rows`` is at least ``threshold`` from 0.5, with the sign
    of their relation to failure; the single strongest candidate when none clears the threshold
    (none when not ``fallback``)."""
    scored = []
    for name in candidates:
        auc = stratified_auc([r.get(name, 0.0) for r in rows], y, strata)
        if not math.isnan(auc):
            scored.append((abs(auc - 0.5), name, 1 if auc >= 0.5 else -1))
    kept = [(name, sign) for gap, name, sign in scored if gap >= threshold]
    if fallback and not kept and scored:
        _, name, sign = max(scored, key=lambda t: (t[0], -candidates.index(t[1])))
        kept = [(name, sign)]
    return kept


def fit_screened(
    rows: Sequence[Mapping[str, float]],
    y: Sequence[int],
    candidates: Sequence[str],
    *,
    threshold: float,
    log_features: frozenset[str] = frozenset(),
    strata: Sequence[int] | None = None,
    meta: Mapping[str, Any] | None = None,
    phase_in: float = 0.0,
    anchor: str = ANCHOR_FEATURE,
) -> RiskModel:
    """Fit the :attr:`Procedure.SCREENED` model: screened features, unit signed weights on the
    standardised scale, then a calibrating slope and bias fitted by logistic regression.
    ``phase_in`` > 0 fits the :attr:`Procedure.PHASED` variant: every feature but ``anchor`` is
    phased in over the first ``phase_in`` turns (see :class:`RiskModel`) before slope and bias."""
    kept = screen_features(rows, y, candidates, threshold, strata)
    if not kept:
        raise ConfigError("no candidate feature to fit the risk model on", hint="pass candidate features")
    names = [n for n, _ in kept]
    d = len(names)
    signs: list[float] = [float(sign) for _, sign in kept]
    if phase_in > 0 and PHASE_FEATURE not in names:
        names.append(PHASE_FEATURE)
        signs.append(0.0)
    raw = _transform(rows, names, log_features)
    n = len(raw)
    mean = [sum(r[i] for r in raw) / n for i in range(len(names))]
    scale = []
    for i in range(len(names)):
        var = sum((r[i] - mean[i]) ** 2 for r in raw) / n
        scale.append(math.sqrt(var) if var > 1e-12 else 1.0)
    unit = RiskModel(
        features=tuple(names),
        weights=tuple(sg / d for sg in signs),
        bias=0.0,
        mean=tuple(mean),
        scale=tuple(scale),
        log_features=frozenset(f for f in log_features if f in names),
        phase_in=phase_in,
        anchor=anchor if phase_in > 0 else "",
    )
    (slope,), bias = fit_weights([[unit.linear(r)] for r in rows], y, l2=1.0)
    procedure = Procedure.PHASED if phase_in > 0 else Procedure.SCREENED
    settings: dict[str, Any] = {"procedure": procedure.value, "threshold": threshold}
    if phase_in > 0:
        settings["phase_in"] = phase_in
    return replace(
        unit,
        weights=tuple(w * slope for w in unit.weights),
        bias=bias,
        l2=1.0,
        meta={**settings, **dict(meta or {})},
    )


def _inner_criterion(
    rows: Sequence[Mapping[str, float]],
    y: Sequence[int],
    fit: Callable[[Sequence[Mapping[str, float]], Sequence[int], Sequence[int] | None], RiskModel],
    splits: Sequence[Sequence[int]],
    inner_folds: int,
    strata: Sequence[int] | None,
) -> float:
    """Mean over ``splits`` of the (stratified) AUC of held-out log-odds, each inner fold scored by
    ``fit(train rows, train labels, train strata)``."""
    total = 0.0
    for fold in splits:
        scores = [0.0] * len(y)
        for f in range(inner_folds):
            train = [i for i in range(len(y)) if fold[i] != f]
            model = fit(
                [rows[i] for i in train],
                [y[i] for i in train],
                None if strata is None else [strata[i] for i in train],
            )
            for i in range(len(y)):
                if fold[i] == f:
                    scores[i] = model.linear(rows[i])
        total += stratified_auc(scores, y, strata)
    return total / len(splits)


def select_screening(
    rows: Sequence[Mapping[str, float]],
    y: Sequence[int],
    candidates: Sequence[str],
    *,
    log_features: frozenset[str] = frozenset(),
    grid: Sequence[float] = DEFAULT_THRESHOLD_GRID,
    phase_grid: Sequence[float] = (0.0,),
    inner_folds: int = 5,
    inner_repeats: int = 1,
    seed: int = 0,
    groups: Sequence[int] | None = None,
    strata: Sequence[int] | None = None,
) -> tuple[float, float]:
    """The screening threshold and phase-in turns with the best inner cross-validated (stratified)
    AUC; uses only ``rows``. Ties go to the larger threshold (the smaller model), then to the
    shorter phase-in. Returns ``(threshold, phase_in)``."""
    splits = [group_folds(y, groups, inner_folds, seed=seed + 1000 * r) for r in range(max(1, inner_repeats))]
    best: tuple[float, float, float] | None = None
    for phase_in in phase_grid:
        for threshold in grid:

            def fit(
                r: Sequence[Mapping[str, float]],
                t: Sequence[int],
                st: Sequence[int] | None,
                thr: float = threshold,
                ph: float = phase_in,
            ) -> RiskModel:
                return fit_screened(
                    r, t, candidates, threshold=thr, log_features=log_features, strata=st, phase_in=ph
                )

            key = (_inner_criterion(rows, y, fit, splits, inner_folds, strata), threshold, -phase_in)
            if best is None or key >= best:
                best = key
    if best is None:
        return grid[0], phase_grid[0]
    return best[1], -best[2]


def select_threshold(
    rows: Sequence[Mapping[str, float]],
    y: Sequence[int],
    candidates: Sequence[str],
    *,
    log_features: frozenset[str] = frozenset(),
    grid: Sequence[float] = DEFAULT_THRESHOLD_GRID,
    inner_folds: int = 5,
    inner_repeats: int = 1,
    seed: int = 0,
    groups: Sequence[int] | None = None,
    strata: Sequence[int] | None = None,
) -> float:
    """The screening threshold with the best inner cross-validated (stratified) AUC; uses only ``rows``.
    Ties go to the larger threshold (the smaller model)."""
    threshold, _ = select_screening(
        rows,
        y,
        candidates,
        log_features=log_features,
        grid=grid,
        inner_folds=inner_folds,
        inner_repeats=inner_repeats,
        seed=seed,
        groups=groups,
        strata=strata,
    )
    return threshold


def fit_anchored(
    rows: Sequence[Mapping[str, float]],
    y: Sequence[int],
    candidates: Sequence[str],
    *,
    alpha: float,
    anchor: str = ANCHOR_FEATURE,
    threshold: float = ANCHORED_THRESHOLD,
    log_features: frozenset[str] = frozenset(),
    strata: Sequence[int] | None = None,
    meta: Mapping[str, Any] | None = None,
) -> RiskModel:
    """Fit the :attr:`Procedure.ANCHORED` model: ``z(anchor) + alpha * z(sum of the other screened
    features with their signs)``, then a calibrating slope and bias. With ``alpha == 0`` (or no other
    feature clearing ``threshold``) it ranks runs exactly as the anchor alone."""
    others = [c for c in candidates if c != anchor]
    kept: list[tuple[str, int]] = []
    if alpha > 0 and others:
        kept = screen_features(rows, y, others, threshold, strata, fallback=False)
    names = [anchor, *(n for n, _ in kept)]
    raw = _transform(rows, names, log_features)
    n, d = len(raw), len(names)
    mean = [sum(r[i] for r in raw) / n for i in range(d)]
    scale = []
    for i in range(d):
        var = sum((r[i] - mean[i]) ** 2 for r in raw) / n
        scale.append(math.sqrt(var) if var > 1e-12 else 1.0)
    unit = [1.0]
    if kept:
        k = len(kept)
        other = [
            sum(sg * (r[i + 1] - mean[i + 1]) / scale[i + 1] for i, (_, sg) in enumerate(kept)) / k
            for r in raw
        ]
        mu = sum(other) / n
        sd = math.sqrt(sum((v - mu) ** 2 for v in other) / n) or 1.0
        unit += [alpha * sg / (k * sd) for _, sg in kept]
    composite = [[sum(w * (r[i] - mean[i]) / scale[i] for i, w in enumerate(unit))] for r in raw]
    (slope,), bias = fit_weights(composite, y, l2=1.0)
    return RiskModel(
        features=tuple(names),
        weights=tuple(w * slope for w in unit),
        bias=bias,
        mean=tuple(mean),
        scale=tuple(scale),
        log_features=frozenset(f for f in log_features if f in names),
        l2=1.0,
        meta={
            "procedure": Procedure.ANCHORED.value,
            "anchor": anchor,
            "alpha": alpha,
            "threshold": threshold,
            **dict(meta or {}),
        },
    )


def select_alpha(
    rows: Sequence[Mapping[str, float]],
    y: Sequence[int],
    candidates: Sequence[str],
    *,
    anchor: str = ANCHOR_FEATURE,
    threshold: float = ANCHORED_THRESHOLD,
    log_features: frozenset[str] = frozenset(),
    grid: Sequence[float] = DEFAULT_ALPHA_GRID,
    inner_folds: int = 5,
    inner_repeats: int = 1,
    seed: int = 0,
    groups: Sequence[int] | None = None,
    strata: Sequence[int] | None = None,
) -> float:
    """The ``alpha`` of :func:`fit_anchored` with the best inner cross-validated (stratified) AUC;
    uses only ``rows``. Ties go to the smaller ``alpha`` (closer to the anchor alone)."""
    splits = [group_folds(y, groups, inner_folds, seed=seed + 1000 * r) for r in range(max(1, inner_repeats))]
    best: tuple[float, float] | None = None
    for alpha in sorted(grid):

        def fit(
            r: Sequence[Mapping[str, float]], t: Sequence[int], st: Sequence[int] | None, a: float = alpha
        ) -> RiskModel:
            return fit_anchored(
                r,
                t,
                candidates,
                alpha=a,
                anchor=anchor,
                threshold=threshold,
                log_features=log_features,
                strata=st,
            )

        auc = _inner_criterion(rows, y, fit, splits, inner_folds, strata)
        if best is None or auc > best[0]:
            best = (auc, alpha)
    return min(grid) if best is None else best[1]


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


def cross_validate(
    rows: Sequence[Mapping[str, float]],
    y: Sequence[int],
    candidates: Sequence[str],
    *,
    eval_rows: Mapping[float, Sequence[Mapping[str, float]]] | None = None,
    log_features: frozenset[str] = frozenset(),
    folds: int = 5,
    seed: int = 0,
    select: bool = True,
    l2: float = 3.0,
    pool: bool = False,
    procedure: Procedure = Procedure.LOGISTIC,
    threshold: float = 0.05,
    alpha: float = 1.0,
    phase_in: float = 0.0,
    **selection: Any,
) -> CVResult:
    """Nested k-fold CV: inside each training fold choose features and L2 (when ``select``), fit on
    ``rows``, then score the held-out runs, at every evaluation point of ``eval_rows`` (default: the
    training rows themselves, under key 1.0). The AUC of the pooled held-out scores is the honest figure.

    ``procedure`` picks the fitting; ``selection`` goes to its inner choice (:func:`select_features`,
    :func:`select_threshold` or :func:`select_alpha`). ``threshold`` is the screening threshold
    (the fixed one of ``SCREENED`` when not ``select``; the one for the non-anchor features of
    ``ANCHORED``), ``alpha`` the fixed ``ANCHORED`` weight and ``phase_in`` the fixed ``PHASED``
    turns when not ``select``.
    """
    if folds < 2 or folds > len(y):
        raise ConfigError(
            f"cannot run {folds}-fold cross-validation on {len(y)} runs", hint="use 2 <= folds <= runs"
        )
    points = dict(eval_rows) if eval_rows is not None else {1.0: rows}
    fold = stratified_folds(y, folds, seed=seed)
    scores = {point: [0.0] * len(y) for point in points}
    chosen_all: list[tuple[str, ...]] = []
    l2_all: list[float] = []
    thresholds: list[float] = []
    alphas: list[float] = []
    phases: list[float] = []
    for f in range(folds):
        train = [i for i in range(len(y)) if fold[i] != f]
        tr_rows, tr_y, tr_groups = training_rows(rows, y, train, points if pool else None)
        if procedure in (Procedure.SCREENED, Procedure.PHASED):
            strata = point_strata(tr_groups)
            thr, phase = threshold, phase_in
            if select:
                thr, phase = select_screening(
                    tr_rows,
                    tr_y,
                    candidates,
                    log_features=log_features,
                    seed=seed + 1,
                    groups=tr_groups,
                    strata=strata,
                    **selection,
                )
            if procedure is Procedure.SCREENED:
                phase = 0.0
            model = fit_screened(
                tr_rows,
                tr_y,
                candidates,
                threshold=thr,
                log_features=log_features,
                strata=strata,
                phase_in=phase,
            )
            feats, reg = model.features, model.l2
            thresholds.append(thr)
            phases.append(phase)
        elif procedure is Procedure.ANCHORED:
            strata = point_strata(tr_groups)
            chosen = (
                select_alpha(
                    tr_rows,
                    tr_y,
                    candidates,
                    threshold=threshold,
                    log_features=log_features,
                    seed=seed + 1,
                    groups=tr_groups,
                    strata=strata,
                    **selection,
                )
                if select
                else alpha
            )
            model = fit_anchored(
                tr_rows,
                tr_y,
                candidates,
                alpha=chosen,
                threshold=threshold,
                log_features=log_features,
                strata=strata,
            )
            feats, reg = model.features, model.l2
            alphas.append(chosen)
        elif select:
            feats, reg = select_features(
                tr_rows,
                tr_y,
                candidates,
                log_features=log_features,
                seed=seed + 1,
                groups=tr_groups,
                strata=point_strata(tr_groups),
                **selection,
            )
        else:
            feats, reg = tuple(candidates), l2
        if procedure is Procedure.LOGISTIC:
            model = fit_model(tr_rows, tr_y, feats, log_features=log_features, l2=reg)
        for point, prow in points.items():
            for i in range(len(y)):
                if fold[i] == f:
                    scores[point][i] = model.score(prow[i])
        chosen_all.append(feats)
        l2_all.append(reg)
    return CVResult(
        scores={p: tuple(v) for p, v in scores.items()},
        labels=tuple(y),
        auc={p: roc_auc(v, y) for p, v in scores.items()},
        folds=folds,
        fold_features=tuple(chosen_all),
        fold_l2=tuple(l2_all),
        fold_thresholds=tuple(thresholds),
        fold_alphas=tuple(alphas),
        fold_phase_in=tuple(phases),
    )


# ------------------------------------------------------------------ labelled runs, calibration, validation

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

PROCEDURE = Procedure.PHASED
"""How the shipped profile and ``ctxhealth calibrate`` fit the risk model. In the nested
cross-validation on the development runs it matched ``SCREENED`` at the end of a run and beat it in
the first half; ``ANCHORED`` and greedy-selected logistic regression did worse at the end."""

SETTINGS: dict[Procedure, dict[str, Any]] = {
    Procedure.PHASED: {"grid": DEFAULT_THRESHOLD_GRID, "phase_grid": DEFAULT_PHASE_GRID},
    Procedure.SCREENED: {"grid": DEFAULT_THRESHOLD_GRID},
    Procedure.ANCHORED: {"grid": DEFAULT_ALPHA_GRID, "threshold": ANCHORED_THRESHOLD},
}
"""Each calibration procedure's fixed settings: the grid its inner cross-validation chooses from
(screening thresholds and phase-in turns, or anchored ``alpha`` values) and, for ``ANCHORED``, the
screening threshold."""

CALIBRATION_PROCEDURES: tuple[Procedure, ...] = tuple(SETTINGS)
"""The procedures ``ctxhealth calibrate`` can fit."""


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
    import csv

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
) -> list[LabelledRun]:
    """Read every session under ``paths`` that has a label and compute its features."""
    from ctxhealth.sources import read_sessions

    runs: list[LabelledRun] = []
    for session in read_sessions(list(paths)):
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
    import hashlib

    return sorted(hashlib.sha256(k.encode()).hexdigest()[:10] for k in keys)


def _check_procedure(procedure: Procedure) -> dict[str, Any]:
    if procedure not in SETTINGS:
        raise ConfigError(
            f"cannot calibrate with the {procedure.value} procedure",
            hint="use one of: " + ", ".join(p.value for p in CALIBRATION_PROCEDURES),
        )
    return SETTINGS[procedure]


def cross_validate_runs(
    runs: Sequence[LabelledRun], *, folds: int = 5, seed: int = 0, procedure: Procedure = PROCEDURE
) -> CVResult:
    """Nested cross-validation of ``procedure`` on labelled runs, scored at every evaluation point
    (trained on every run's rows at all points; its settings chosen inside each fold)."""
    settings = _check_procedure(procedure)
    points = {p: [r.features[p] for r in runs] for p in EVAL_POINTS}
    return cross_validate(
        points[1.0],
        [r.failed for r in runs],
        CANDIDATE_FEATURES,
        eval_rows=points,
        log_features=LOG_FEATURES,
        folds=folds,
        seed=seed,
        pool=True,
        procedure=procedure,
        **settings,
    )


def procedure_of(model: RiskModel) -> Procedure:
    """The calibration procedure a model was fitted with (its meta), else the shipped one."""
    try:
        found = Procedure(model.meta.get("procedure", PROCEDURE.value))
    except ValueError:
        return PROCEDURE
    return found if found in SETTINGS else PROCEDURE


def fit_risk(
    runs: Sequence[LabelledRun],
    *,
    folds: int = 5,
    seed: int = 0,
    cv_seeds: Sequence[int] = (),
    procedure: Procedure = PROCEDURE,
) -> tuple[RiskModel, CVResult]:
    """Fit the risk model on all runs with ``procedure`` and report its nested CV (fold seed
    ``seed``; ``cv_seeds`` adds more fold seeds to the recorded figures)."""
    settings = _check_procedure(procedure)
    points = {p: [r.features[p] for r in runs] for p in EVAL_POINTS}
    y = [r.failed for r in runs]
    cv = cross_validate_runs(runs, folds=folds, seed=seed, procedure=procedure)
    rows, labels, groups = training_rows(points[1.0], y, range(len(y)), points)
    strata = point_strata(groups)
    meta: dict[str, Any] = {
        "procedure": procedure.value,
        "runs": len(runs),
        "failed": sum(y),
        "folds": folds,
        "seed": seed,
        "cv_auc": {str(p): round(a, 4) for p, a in cv.auc.items()},
        "fold_features": [list(f) for f in cv.fold_features],
        "training_runs": fingerprint([run_key(r.path) for r in runs]),
        "target": "failure (1 - resolved)",
    }
    if procedure is Procedure.ANCHORED:
        meta["fold_alphas"] = list(cv.fold_alphas)
    else:
        meta["fold_thresholds"] = list(cv.fold_thresholds)
    if procedure is Procedure.PHASED:
        meta["fold_phase_in"] = list(cv.fold_phase_in)
    if cv_seeds:
        seeds = sorted({seed, *cv_seeds})
        per_seed = {
            s: (cv if s == seed else cross_validate_runs(runs, folds=folds, seed=s, procedure=procedure))
            for s in seeds
        }
        meta["cv_auc_by_seed"] = {
            str(s): {str(p): round(a, 4) for p, a in c.auc.items()} for s, c in per_seed.items()
        }
        meta["baseline_auc"] = {
            label: {
                str(p): round(roc_auc([r.features[p].get(feat, 0.0) for r in runs], y), 4) for p in points
            }
            for label, feat in BASELINES
        }
    if procedure is Procedure.ANCHORED:
        alpha = select_alpha(
            rows,
            labels,
            CANDIDATE_FEATURES,
            log_features=LOG_FEATURES,
            seed=seed + 1,
            groups=groups,
            strata=strata,
            **settings,
        )
        model = fit_anchored(
            rows,
            labels,
            CANDIDATE_FEATURES,
            alpha=alpha,
            threshold=settings["threshold"],
            log_features=LOG_FEATURES,
            strata=strata,
            meta=meta,
        )
        return model, cv
    threshold, phase_in = select_screening(
        rows,
        labels,
        CANDIDATE_FEATURES,
        log_features=LOG_FEATURES,
        seed=seed + 1,
        groups=groups,
        strata=strata,
        **settings,
    )
    model = fit_screened(
        rows,
        labels,
        CANDIDATE_FEATURES,
        threshold=threshold,
        log_features=LOG_FEATURES,
        strata=strata,
        meta=meta,
        phase_in=phase_in if procedure is Procedure.PHASED else 0.0,
    )
    return model, cv


@dataclass(frozen=True, slots=True)
class AucFigure:
    """An ROC AUC with its bootstrap 95% confidence interval."""

    auc: float
    low: float
    high: float

    def to_dict(self) -> dict[str, Any]:
        return {"auc": round(self.auc, 4), "ci95": [round(self.low, 4), round(self.high, 4)]}


def auc_figure(
    scores: Sequence[float], labels: Sequence[int], *, rounds: int = 1000, seed: int = 0
) -> AucFigure:
    lo, hi = bootstrap_auc_ci(scores, labels, rounds=rounds, seed=seed)
    return AucFigure(roc_auc(scores, labels), lo, hi)


@dataclass(frozen=True, slots=True)
class Validation:
    """What ``ctxhealth validate`` reports: AUC (95% bootstrap CI) per evaluation point for the
    profile's risk, for each baseline, and (when computed) the nested cross-validated risk."""

    runs: int
    failed: int
    risk: Mapping[float, AucFigure]
    baselines: Mapping[str, Mapping[float, AucFigure]]
    cross_validated: Mapping[float, AucFigure] | None
    trained_on_these_runs: float
    features: tuple[str, ...]
    fold_features: tuple[tuple[str, ...], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        def table(m: Mapping[float, AucFigure]) -> dict[str, Any]:
            return {f"{p:g}": f.to_dict() for p, f in m.items()}

        return {
            "runs": self.runs,
            "failed": self.failed,
            "target": "failure (1 - resolved)",
            "risk_features": list(self.features),
            "trained_on_these_runs": round(self.trained_on_these_runs, 4),
            "risk": table(self.risk),
            "cross_validated_risk": None if self.cross_validated is None else table(self.cross_validated),
            "cv_fold_features": [list(f) for f in self.fold_features],
            "baselines": {name: table(m) for name, m in self.baselines.items()},
        }


def validate_runs(
    runs: Sequence[LabelledRun],
    model: RiskModel,
    *,
    folds: int = 5,
    seed: int = 0,
    cross_validate_risk: bool | None = None,
    rounds: int = 1000,
) -> Validation:
    """Score ``runs`` with ``model`` and the baselines at every evaluation point.

    When the model was fitted on (mostly) these runs its own AUC is optimistic: the nested
    cross-validated AUC is then computed as the honest figure (``cross_validate_risk=None`` decides
    by the stored training fingerprint; True/False force it).
    """
    y = [r.failed for r in runs]
    trained = set(model.meta.get("training_runs", ()))
    mine = fingerprint([run_key(r.path) for r in runs])
    overlap = sum(1 for h in mine if h in trained) / len(mine) if mine else 0.0
    risk = {
        p: auc_figure([model.score(r.features[p]) for r in runs], y, rounds=rounds, seed=seed)
        for p in EVAL_POINTS
    }
    baselines = {
        label: {
            p: auc_figure([r.features[p].get(feat, 0.0) for r in runs], y, rounds=rounds, seed=seed)
            for p in EVAL_POINTS
        }
        for label, feat in BASELINES
    }
    do_cv = overlap >= 0.5 if cross_validate_risk is None else cross_validate_risk
    cv_table: dict[float, AucFigure] | None = None
    fold_features: tuple[tuple[str, ...], ...] = ()
    if do_cv:
        cv = cross_validate_runs(runs, folds=folds, seed=seed, procedure=procedure_of(model))
        cv_table = {p: auc_figure(cv.scores[p], y, rounds=rounds, seed=seed) for p in EVAL_POINTS}
        fold_features = cv.fold_features
    return Validation(
        runs=len(runs),
        failed=sum(y),
        risk=risk,
        baselines=baselines,
        cross_validated=cv_table,
        trained_on_these_runs=overlap,
        features=model.features,
        fold_features=fold_features,
    )
