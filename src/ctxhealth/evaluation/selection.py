"""Choosing a procedure's settings by inner cross-validation on the training rows only: greedy
feature selection and L2 strength for logistic regression (:func:`select_features`), the screening
threshold and phase-in (:func:`select_screening`, :func:`select_threshold`) and the anchored
``alpha`` (:func:`select_alpha`); and :func:`fit_selected`, the choose-then-fit step of the screened,
phased and anchored procedures that cross-validation runs in every fold and calibration on all runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ctxhealth.evaluation.fitting import fit_model
from ctxhealth.evaluation.folds import group_folds, point_strata
from ctxhealth.evaluation.metrics import stratified_auc
from ctxhealth.evaluation.procedures import (
    ANCHOR_FEATURE,
    ANCHORED_THRESHOLD,
    DEFAULT_ALPHA_GRID,
    DEFAULT_THRESHOLD_GRID,
    Procedure,
    fit_anchored,
    fit_screened,
)
from ctxhealth.risk.model import RiskModel

DEFAULT_L2_GRID: tuple[float, ...] = (1.0, 10.0, 100.0)


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


def fit_selected(
    rows: Sequence[Mapping[str, float]],
    y: Sequence[int],
    candidates: Sequence[str],
    procedure: Procedure,
    *,
    groups: Sequence[int] | None,
    seed: int,
    log_features: frozenset[str] = frozenset(),
    select: bool = True,
    threshold: float = 0.05,
    alpha: float = 1.0,
    phase_in: float = 0.0,
    meta: Mapping[str, Any] | None = None,
    **selection: Any,
) -> tuple[RiskModel, float, float, float]:
    """Fit a ``SCREENED``, ``PHASED`` or ``ANCHORED`` model on ``rows`` (runs pooled over evaluation
    points: ``groups`` says which run each row is), its settings chosen by inner cross-validation
    (seeded with ``seed``; ``selection`` goes to :func:`select_screening` or :func:`select_alpha`)
    when ``select``, else the fixed ``threshold`` / ``phase_in`` / ``alpha``.

    Returns the model and the screening threshold, phase-in and ``alpha`` it was fitted with
    (``ANCHORED`` screens its other features at the fixed ``threshold``; ``SCREENED`` never phases).
    """
    strata = point_strata(groups)
    if procedure is Procedure.ANCHORED:
        if select:
            alpha = select_alpha(
                rows,
                y,
                candidates,
                threshold=threshold,
                log_features=log_features,
                seed=seed,
                groups=groups,
                strata=strata,
                **selection,
            )
        model = fit_anchored(
            rows,
            y,
            candidates,
            alpha=alpha,
            threshold=threshold,
            log_features=log_features,
            strata=strata,
            meta=meta,
        )
        return model, threshold, 0.0, alpha
    if select:
        threshold, phase_in = select_screening(
            rows,
            y,
            candidates,
            log_features=log_features,
            seed=seed,
            groups=groups,
            strata=strata,
            **selection,
        )
    if procedure is Procedure.SCREENED:
        phase_in = 0.0
    model = fit_screened(
        rows,
        y,
        candidates,
        threshold=threshold,
        log_features=log_features,
        strata=strata,
        meta=meta,
        phase_in=phase_in,
    )
    return model, threshold, phase_in, alpha
