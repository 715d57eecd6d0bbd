"""Validation: AUC with bootstrap intervals of a profile's risk and of the baselines on labelled
runs, the nested cross-validated risk when the model was trained on those runs, and at every
evaluation point the paired difference between the honest risk figure and the best baseline there
(:func:`validate_runs`, :class:`Validation`, :class:`AucFigure`, :class:`Comparison`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ctxhealth.evaluation.calibration import cross_validate_runs, procedure_of
from ctxhealth.evaluation.metrics import bootstrap_auc_ci, bootstrap_auc_difference_ci, roc_auc
from ctxhealth.evaluation.runs import BASELINES, EVAL_POINTS, LabelledRun, fingerprint, run_key
from ctxhealth.risk.model import RiskModel


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
class Comparison:
    """Risk AUC minus the best baseline's AUC at one evaluation point, with a paired bootstrap 95%
    interval; ``beats`` when the whole interval is above zero."""

    baseline: str
    difference: float
    low: float
    high: float

    @property
    def beats(self) -> bool:
        return self.low > 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline,
            "difference": round(self.difference, 4),
            "ci95": [round(self.low, 4), round(self.high, 4)],
            "beats": self.beats,
        }


@dataclass(frozen=True, slots=True)
class Validation:
    """What ``ctxhealth validate`` reports: AUC (95% bootstrap CI) per evaluation point for the
    profile's risk, for each baseline, (when computed) the nested cross-validated risk, and the
    paired comparison of the honest risk figure with the best baseline at each point."""

    runs: int
    failed: int
    risk: Mapping[float, AucFigure]
    baselines: Mapping[str, Mapping[float, AucFigure]]
    cross_validated: Mapping[float, AucFigure] | None
    trained_on_these_runs: float
    features: tuple[str, ...]
    fold_features: tuple[tuple[str, ...], ...] = ()
    versus_best_baseline: Mapping[float, Comparison] | None = None

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
            "risk_minus_best_baseline": None
            if self.versus_best_baseline is None
            else {f"{p:g}": c.to_dict() for p, c in self.versus_best_baseline.items()},
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
    risk_scores = {p: [model.score(r.features[p]) for r in runs] for p in EVAL_POINTS}
    risk = {p: auc_figure(risk_scores[p], y, rounds=rounds, seed=seed) for p in EVAL_POINTS}
    baseline_scores = {
        label: {p: [r.features[p].get(feat, 0.0) for r in runs] for p in EVAL_POINTS}
        for label, feat in BASELINES
    }
    baselines = {
        label: {p: auc_figure(scores[p], y, rounds=rounds, seed=seed) for p in EVAL_POINTS}
        for label, scores in baseline_scores.items()
    }
    do_cv = overlap >= 0.5 if cross_validate_risk is None else cross_validate_risk
    cv_table: dict[float, AucFigure] | None = None
    fold_features: tuple[tuple[str, ...], ...] = ()
    if do_cv:
        cv = cross_validate_runs(runs, folds=folds, seed=seed, procedure=procedure_of(model))
        cv_table = {p: auc_figure(cv.scores[p], y, rounds=rounds, seed=seed) for p in EVAL_POINTS}
        fold_features = cv.fold_features
        risk_scores = {p: list(cv.scores[p]) for p in EVAL_POINTS}
    versus: dict[float, Comparison] = {}
    for p in EVAL_POINTS:
        best = max(baselines, key=lambda label: baselines[label][p].auc)
        honest = (cv_table or risk)[p].auc
        lo, hi = bootstrap_auc_difference_ci(
            risk_scores[p], baseline_scores[best][p], y, rounds=rounds, seed=seed
        )
        versus[p] = Comparison(best, honest - baselines[best][p].auc, lo, hi)
    return Validation(
        runs=len(runs),
        failed=sum(y),
        risk=risk,
        baselines=baselines,
        cross_validated=cv_table,
        trained_on_these_runs=overlap,
        features=model.features,
        fold_features=fold_features,
        versus_best_baseline=versus,
    )
