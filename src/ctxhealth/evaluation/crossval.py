"""Nested cross-validation (:func:`cross_validate`) and its result (:class:`CVResult`).

Each procedure's settings and features are chosen *inside* each training fold, so the held-out
AUC it reports is honest.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ctxhealth.errors import ConfigError
from ctxhealth.evaluation.fitting import fit_model
from ctxhealth.evaluation.folds import point_strata, stratified_folds, training_rows
from ctxhealth.evaluation.metrics import roc_auc
from ctxhealth.evaluation.procedures import Procedure
from ctxhealth.evaluation.selection import fit_selected, select_features
from ctxhealth.risk.model import RiskModel


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
    _check_folds(folds, len(y))
    points = dict(eval_rows) if eval_rows is not None else {1.0: rows}
    fold = stratified_folds(y, folds, seed=seed)
    scores = {point: [0.0] * len(y) for point in points}
    fits: list[_FoldFit] = []
    for f in range(folds):
        train = [i for i in range(len(y)) if fold[i] != f]
        tr_rows, tr_y, tr_groups = training_rows(rows, y, train, points if pool else None)
        fit = _fit_fold(
            tr_rows,
            tr_y,
            tr_groups,
            candidates,
            procedure,
            seed=seed,
            select=select,
            log_features=log_features,
            l2=l2,
            threshold=threshold,
            alpha=alpha,
            phase_in=phase_in,
            selection=selection,
        )
        _score_held_out(fit.model, points, fold, f, scores)
        fits.append(fit)
    return _result(scores, y, folds, fits)


def _check_folds(folds: int, runs: int) -> None:
    if folds < 2 or folds > runs:
        raise ConfigError(
            f"cannot run {folds}-fold cross-validation on {runs} runs", hint="use 2 <= folds <= runs"
        )


@dataclass(frozen=True, slots=True)
class _FoldFit:
    """The model fitted inside one training fold and the settings chosen for it (``None``: the
    procedure has no such setting)."""

    model: RiskModel
    features: tuple[str, ...]
    l2: float
    threshold: float | None = None
    phase_in: float | None = None
    alpha: float | None = None


def _fit_fold(
    rows: Sequence[Mapping[str, float]],
    y: Sequence[int],
    groups: Sequence[int] | None,
    candidates: Sequence[str],
    procedure: Procedure,
    *,
    seed: int,
    select: bool,
    log_features: frozenset[str],
    l2: float,
    threshold: float,
    alpha: float,
    phase_in: float,
    selection: Mapping[str, Any],
) -> _FoldFit:
    """Choose (when ``select``) and fit one fold's model on its training rows only."""
    if procedure is not Procedure.LOGISTIC:
        model, thr, phase, chosen = fit_selected(
            rows,
            y,
            candidates,
            procedure,
            groups=groups,
            seed=seed + 1,
            log_features=log_features,
            select=select,
            threshold=threshold,
            alpha=alpha,
            phase_in=phase_in,
            **selection,
        )
        if procedure is Procedure.ANCHORED:
            return _FoldFit(model, model.features, model.l2, alpha=chosen)
        return _FoldFit(model, model.features, model.l2, threshold=thr, phase_in=phase)
    if select:
        feats, reg = select_features(
            rows,
            y,
            candidates,
            log_features=log_features,
            seed=seed + 1,
            groups=groups,
            strata=point_strata(groups),
            **selection,
        )
    else:
        feats, reg = tuple(candidates), l2
    return _FoldFit(fit_model(rows, y, feats, log_features=log_features, l2=reg), feats, reg)


def _score_held_out(
    model: RiskModel,
    points: Mapping[float, Sequence[Mapping[str, float]]],
    fold: Sequence[int],
    f: int,
    scores: Mapping[float, list[float]],
) -> None:
    """Score the runs of fold ``f`` (which ``model`` never saw) at every evaluation point."""
    for point, prow in points.items():
        for i, run_fold in enumerate(fold):
            if run_fold == f:
                scores[point][i] = model.score(prow[i])


def _result(
    scores: Mapping[float, list[float]], y: Sequence[int], folds: int, fits: Sequence[_FoldFit]
) -> CVResult:
    return CVResult(
        scores={p: tuple(v) for p, v in scores.items()},
        labels=tuple(y),
        auc={p: roc_auc(v, y) for p, v in scores.items()},
        folds=folds,
        fold_features=tuple(fit.features for fit in fits),
        fold_l2=tuple(fit.l2 for fit in fits),
        fold_thresholds=tuple(fit.threshold for fit in fits if fit.threshold is not None),
        fold_alphas=tuple(fit.alpha for fit in fits if fit.alpha is not None),
        fold_phase_in=tuple(fit.phase_in for fit in fits if fit.phase_in is not None),
    )
