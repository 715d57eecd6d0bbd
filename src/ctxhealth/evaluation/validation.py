"""Validation: AUC with bootstrap intervals of a profile's risk and of the baselines on labelled
runs, the nested cross-validated risk when the model was trained on those runs, and at every
evaluation point the paired difference between the honest risk figure and the best baseline there
(:func:`validate_runs`, :class:`Validation`, :class:`AucFigure`, :class:`Comparison`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ctxhealth.evaluation.calibration import cross_validate_runs, procedure_of
from ctxhealth.evaluation.metrics import bootstrap_auc_ci, bootstrap_auc_difference_ci, roc_auc
from ctxhealth.evaluation.runs import BASELINES, EVAL_POINTS, LabelledRun, fingerprint
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
    mine = fingerprint([r.name for r in runs])
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


POOLED = "pooled"
"""The name of the all-agents row of :func:`validate_by_agent`."""


@dataclass(frozen=True, slots=True)
class AgentValidation:
    """One agent's figures: ``within`` validates on that agent's runs alone (the given model's
    risk, and the nested cross-validated risk refitted on those runs), ``held_out`` scores them with
    a model fitted on the *other* agents only (leave-one-agent-out: what the shipped kind of model
    does for an agent it never saw). ``held_out`` is None for the pooled row, for a single agent,
    and when the other agents' runs are all of one class."""

    agent: str
    within: Validation
    held_out: Validation | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "within": self.within.to_dict(),
            "leave_one_agent_out": None if self.held_out is None else self.held_out.to_dict(),
        }


def validate_by_agent(
    runs: Sequence[LabelledRun],
    model: RiskModel | Callable[[str], RiskModel],
    *,
    folds: int = 5,
    seed: int = 0,
    rounds: int = 1000,
) -> list[AgentValidation]:
    """:func:`validate_runs` per agent (the runs' ``agent``) and pooled, each with its nested
    cross-validation, and for every agent the leave-one-agent-out figures. ``model`` is one model,
    or a function giving the model for an agent (a profile's ``for_format``; the pooled row gets
    ``POOLED``). An agent whose runs are all of one class cannot be scored and is left out.

    The pooled AUC mixes agents whose failure rates differ: a score that only tells the agents apart
    looks good there. The per-agent and leave-one-agent-out figures are the ones to judge by."""
    from ctxhealth.evaluation.calibration import fit_on

    model_for = model if callable(model) else (lambda _agent: model)
    agents = sorted({r.agent for r in runs})
    procedure = procedure_of(model_for(POOLED))
    out: list[AgentValidation] = []
    for agent in [*agents, POOLED]:
        mine = list(runs) if agent == POOLED else [r for r in runs if r.agent == agent]
        if agent == POOLED and len(agents) < 2:
            continue
        if not _two_classes(mine):
            continue
        k = min(folds, _smaller_class(mine))
        within = validate_runs(
            mine, model_for(agent), folds=k, seed=seed, cross_validate_risk=k >= 2, rounds=rounds
        )
        held_out = None
        others = [r for r in runs if r.agent != agent]
        if agent != POOLED and _two_classes(others):
            fitted = fit_on(others, procedure=procedure, seed=seed)
            held_out = validate_runs(mine, fitted, seed=seed, cross_validate_risk=False, rounds=rounds)
        out.append(AgentValidation(agent, within, held_out))
    return out


def _two_classes(runs: Sequence[LabelledRun]) -> bool:
    return len({r.failed for r in runs}) == 2


def _smaller_class(runs: Sequence[LabelledRun]) -> int:
    failed = sum(r.failed for r in runs)
    return min(failed, len(runs) - failed)
