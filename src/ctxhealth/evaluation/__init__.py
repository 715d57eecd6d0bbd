"""Evaluation of the risk score, above the Monitor: labelled runs, fitting, cross-validation,
calibration and validation. The model itself and its scoring live in :mod:`ctxhealth.risk`.

Pure Python, no numerical dependency. The package owns one name space; each module owns one thing,
and each imports only the ones above it:

- :mod:`~ctxhealth.evaluation.metrics` — ROC AUC, stratified AUC, bootstrap intervals;
- :mod:`~ctxhealth.evaluation.folds` — seeded stratified folds and training rows at evaluation points;
- :mod:`~ctxhealth.evaluation.fitting` — the Newton logistic solver and the standardised logistic fit;
- :mod:`~ctxhealth.evaluation.procedures` — :class:`Procedure` and the screened / phased / anchored fits;
- :mod:`~ctxhealth.evaluation.selection` — choosing features and settings by inner cross-validation;
- :mod:`~ctxhealth.evaluation.crossval` — nested cross-validation;
- :mod:`~ctxhealth.evaluation.runs` — labels, run features and collecting labelled runs (drives the Monitor);
- :mod:`~ctxhealth.evaluation.calibration` — :func:`fit_risk`, the procedure the shipped profile uses;
- :mod:`~ctxhealth.evaluation.validation` — :func:`validate_runs` and its AUC figures.

Every name is imported from its module on first access (``_LAZY``: name -> module).
"""

from __future__ import annotations

from ctxhealth.lazy import load_export

# typing costs a noticeable share of start-up; it is needed only by the type checker here.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ctxhealth.evaluation.calibration import CALIBRATION_PROCEDURES as CALIBRATION_PROCEDURES
    from ctxhealth.evaluation.calibration import PROCEDURE as PROCEDURE
    from ctxhealth.evaluation.calibration import SETTINGS as SETTINGS
    from ctxhealth.evaluation.calibration import cross_validate_runs as cross_validate_runs
    from ctxhealth.evaluation.calibration import fit_risk as fit_risk
    from ctxhealth.evaluation.calibration import procedure_of as procedure_of
    from ctxhealth.evaluation.crossval import CVResult as CVResult
    from ctxhealth.evaluation.crossval import cross_validate as cross_validate
    from ctxhealth.evaluation.fitting import fit_model as fit_model
    from ctxhealth.evaluation.fitting import fit_weights as fit_weights
    from ctxhealth.evaluation.folds import group_folds as group_folds
    from ctxhealth.evaluation.folds import point_strata as point_strata
    from ctxhealth.evaluation.folds import stratified_folds as stratified_folds
    from ctxhealth.evaluation.folds import training_rows as training_rows
    from ctxhealth.evaluation.metrics import bootstrap_auc_ci as bootstrap_auc_ci
    from ctxhealth.evaluation.metrics import bootstrap_auc_difference_ci as bootstrap_auc_difference_ci
    from ctxhealth.evaluation.metrics import roc_auc as roc_auc
    from ctxhealth.evaluation.metrics import stratified_auc as stratified_auc
    from ctxhealth.evaluation.procedures import ANCHOR_FEATURE as ANCHOR_FEATURE
    from ctxhealth.evaluation.procedures import ANCHORED_THRESHOLD as ANCHORED_THRESHOLD
    from ctxhealth.evaluation.procedures import DEFAULT_ALPHA_GRID as DEFAULT_ALPHA_GRID
    from ctxhealth.evaluation.procedures import DEFAULT_PHASE_GRID as DEFAULT_PHASE_GRID
    from ctxhealth.evaluation.procedures import DEFAULT_THRESHOLD_GRID as DEFAULT_THRESHOLD_GRID
    from ctxhealth.evaluation.procedures import Procedure as Procedure
    from ctxhealth.evaluation.procedures import fit_anchored as fit_anchored
    from ctxhealth.evaluation.procedures import fit_screened as fit_screened
    from ctxhealth.evaluation.procedures import screen_features as screen_features
    from ctxhealth.evaluation.runs import BASELINES as BASELINES
    from ctxhealth.evaluation.runs import CANDIDATE_FEATURES as CANDIDATE_FEATURES
    from ctxhealth.evaluation.runs import EVAL_POINTS as EVAL_POINTS
    from ctxhealth.evaluation.runs import LOG_FEATURES as LOG_FEATURES
    from ctxhealth.evaluation.runs import LabelledRun as LabelledRun
    from ctxhealth.evaluation.runs import collect_runs as collect_runs
    from ctxhealth.evaluation.runs import fingerprint as fingerprint
    from ctxhealth.evaluation.runs import read_labels as read_labels
    from ctxhealth.evaluation.runs import run_features as run_features
    from ctxhealth.evaluation.runs import run_key as run_key
    from ctxhealth.evaluation.selection import DEFAULT_L2_GRID as DEFAULT_L2_GRID
    from ctxhealth.evaluation.selection import select_alpha as select_alpha
    from ctxhealth.evaluation.selection import select_features as select_features
    from ctxhealth.evaluation.selection import select_screening as select_screening
    from ctxhealth.evaluation.selection import select_threshold as select_threshold
    from ctxhealth.evaluation.validation import AucFigure as AucFigure
    from ctxhealth.evaluation.validation import Comparison as Comparison
    from ctxhealth.evaluation.validation import Validation as Validation
    from ctxhealth.evaluation.validation import auc_figure as auc_figure
    from ctxhealth.evaluation.validation import validate_runs as validate_runs


_LAZY: dict[str, str] = {
    "bootstrap_auc_ci": "metrics",
    "bootstrap_auc_difference_ci": "metrics",
    "roc_auc": "metrics",
    "stratified_auc": "metrics",
    "group_folds": "folds",
    "point_strata": "folds",
    "stratified_folds": "folds",
    "training_rows": "folds",
    "fit_model": "fitting",
    "fit_weights": "fitting",
    "ANCHOR_FEATURE": "procedures",
    "ANCHORED_THRESHOLD": "procedures",
    "DEFAULT_ALPHA_GRID": "procedures",
    "DEFAULT_PHASE_GRID": "procedures",
    "DEFAULT_THRESHOLD_GRID": "procedures",
    "Procedure": "procedures",
    "fit_anchored": "procedures",
    "fit_screened": "procedures",
    "screen_features": "procedures",
    "DEFAULT_L2_GRID": "selection",
    "select_alpha": "selection",
    "select_features": "selection",
    "select_screening": "selection",
    "select_threshold": "selection",
    "CVResult": "crossval",
    "cross_validate": "crossval",
    "BASELINES": "runs",
    "CANDIDATE_FEATURES": "runs",
    "EVAL_POINTS": "runs",
    "LOG_FEATURES": "runs",
    "LabelledRun": "runs",
    "collect_runs": "runs",
    "fingerprint": "runs",
    "read_labels": "runs",
    "run_features": "runs",
    "run_key": "runs",
    "CALIBRATION_PROCEDURES": "calibration",
    "PROCEDURE": "calibration",
    "SETTINGS": "calibration",
    "cross_validate_runs": "calibration",
    "fit_risk": "calibration",
    "procedure_of": "calibration",
    "AucFigure": "validation",
    "Comparison": "validation",
    "Validation": "validation",
    "auc_figure": "validation",
    "validate_runs": "validation",
}

__all__ = sorted(_LAZY)
_EXPORTS = {name: f".{module}" for name, module in _LAZY.items()}


def __getattr__(name: str) -> Any:
    return load_export(globals(), _EXPORTS, __name__, name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
