"""Calibration: fitting the shipped kind of risk model on labelled runs (:func:`fit_risk`) with
the chosen procedure (:data:`PROCEDURE`) and reporting its nested cross-validation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ctxhealth.errors import ConfigError
from ctxhealth.evaluation.crossval import CVResult, cross_validate
from ctxhealth.evaluation.folds import training_rows
from ctxhealth.evaluation.metrics import roc_auc
from ctxhealth.evaluation.procedures import (
    ANCHORED_THRESHOLD,
    DEFAULT_ALPHA_GRID,
    DEFAULT_PHASE_GRID,
    DEFAULT_THRESHOLD_GRID,
    Procedure,
)
from ctxhealth.evaluation.runs import (
    BASELINES,
    CANDIDATE_FEATURES,
    EVAL_POINTS,
    LOG_FEATURES,
    LabelledRun,
    fingerprint,
    run_key,
)
from ctxhealth.evaluation.selection import fit_selected
from ctxhealth.risk.model import RiskModel

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
    model, _, _, _ = fit_selected(
        rows,
        labels,
        CANDIDATE_FEATURES,
        procedure,
        groups=groups,
        seed=seed + 1,
        log_features=LOG_FEATURES,
        meta=meta,
        **settings,
    )
    return model, cv
