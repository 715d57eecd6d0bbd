"""The risk score: a small logistic model over normalised signal features, its fitting and its scoring.

Pure Python, no numerical dependency. The package owns one name space; each module owns one thing,
and each imports only the ones above it:

- :mod:`~ctxhealth.risk.model` — the :class:`RiskModel` value and :func:`sigmoid` (all scoring needs);
- :mod:`~ctxhealth.risk.metrics` — ROC AUC, stratified AUC, bootstrap intervals;
- :mod:`~ctxhealth.risk.folds` — seeded stratified folds and training rows at evaluation points;
- :mod:`~ctxhealth.risk.fitting` — the Newton logistic solver and the standardised logistic fit;
- :mod:`~ctxhealth.risk.procedures` — :class:`Procedure` and the screened / phased / anchored fits;
- :mod:`~ctxhealth.risk.selection` — choosing features and settings by inner cross-validation;
- :mod:`~ctxhealth.risk.crossval` — nested cross-validation;
- :mod:`~ctxhealth.risk.runs` — labels, run features and collecting labelled runs;
- :mod:`~ctxhealth.risk.calibration` — :func:`fit_risk`, the procedure the shipped profile uses;
- :mod:`~ctxhealth.risk.validation` — :func:`validate_runs` and its AUC figures.

The monitor scores every turn and imports this package on start-up, so only the model is imported
here; every other name is imported from its module on first access (``_LAZY``: name -> module).
"""

from __future__ import annotations

from ctxhealth.lazy import load_export
from ctxhealth.risk.model import PHASE_FEATURE as PHASE_FEATURE
from ctxhealth.risk.model import RiskModel as RiskModel
from ctxhealth.risk.model import sigmoid as sigmoid

# typing costs a noticeable share of a hook's start-up; it is needed only by the type checker here.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ctxhealth.risk.calibration import (
        CALIBRATION_PROCEDURES as CALIBRATION_PROCEDURES,
    )
    from ctxhealth.risk.calibration import PROCEDURE as PROCEDURE
    from ctxhealth.risk.calibration import SETTINGS as SETTINGS
    from ctxhealth.risk.calibration import cross_validate_runs as cross_validate_runs
    from ctxhealth.risk.calibration import fit_risk as fit_risk
    from ctxhealth.risk.calibration import procedure_of as procedure_of
    from ctxhealth.risk.crossval import CVResult as CVResult
    from ctxhealth.risk.crossval import cross_validate as cross_validate
    from ctxhealth.risk.fitting import fit_model as fit_model
    from ctxhealth.risk.fitting import fit_weights as fit_weights
    from ctxhealth.risk.folds import group_folds as group_folds
    from ctxhealth.risk.folds import point_strata as point_strata
    from ctxhealth.risk.folds import stratified_folds as stratified_folds
    from ctxhealth.risk.folds import training_rows as training_rows
    from ctxhealth.risk.metrics import bootstrap_auc_ci as bootstrap_auc_ci
    from ctxhealth.risk.metrics import bootstrap_auc_difference_ci as bootstrap_auc_difference_ci
    from ctxhealth.risk.metrics import roc_auc as roc_auc
    from ctxhealth.risk.metrics import stratified_auc as stratified_auc
    from ctxhealth.risk.procedures import ANCHOR_FEATURE as ANCHOR_FEATURE
    from ctxhealth.risk.procedures import ANCHORED_THRESHOLD as ANCHORED_THRESHOLD
    from ctxhealth.risk.procedures import DEFAULT_ALPHA_GRID as DEFAULT_ALPHA_GRID
    from ctxhealth.risk.procedures import DEFAULT_PHASE_GRID as DEFAULT_PHASE_GRID
    from ctxhealth.risk.procedures import DEFAULT_THRESHOLD_GRID as DEFAULT_THRESHOLD_GRID
    from ctxhealth.risk.procedures import Procedure as Procedure
    from ctxhealth.risk.procedures import fit_anchored as fit_anchored
    from ctxhealth.risk.procedures import fit_screened as fit_screened
    from ctxhealth.risk.procedures import screen_features as screen_features
    from ctxhealth.risk.runs import BASELINES as BASELINES
    from ctxhealth.risk.runs import CANDIDATE_FEATURES as CANDIDATE_FEATURES
    from ctxhealth.risk.runs import EVAL_POINTS as EVAL_POINTS
    from ctxhealth.risk.runs import LOG_FEATURES as LOG_FEATURES
    from ctxhealth.risk.runs import LabelledRun as LabelledRun
    from ctxhealth.risk.runs import collect_runs as collect_runs
    from ctxhealth.risk.runs import fingerprint as fingerprint
    from ctxhealth.risk.runs import read_labels as read_labels
    from ctxhealth.risk.runs import run_features as run_features
    from ctxhealth.risk.runs import run_key as run_key
    from ctxhealth.risk.selection import DEFAULT_L2_GRID as DEFAULT_L2_GRID
    from ctxhealth.risk.selection import select_alpha as select_alpha
    from ctxhealth.risk.selection import select_features as select_features
    from ctxhealth.risk.selection import select_screening as select_screening
    from ctxhealth.risk.selection import select_threshold as select_threshold
    from ctxhealth.risk.validation import AucFigure as AucFigure
    from ctxhealth.risk.validation import Comparison as Comparison
    from ctxhealth.risk.validation import Validation as Validation
    from ctxhealth.risk.validation import auc_figure as auc_figure
    from ctxhealth.risk.validation import validate_runs as validate_runs

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

__all__ = sorted({"PHASE_FEATURE", "RiskModel", "sigmoid", *_LAZY})
_EXPORTS = {name: f".{module}" for name, module in _LAZY.items()}


def __getattr__(name: str) -> Any:
    return load_export(globals(), _EXPORTS, __name__, name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
