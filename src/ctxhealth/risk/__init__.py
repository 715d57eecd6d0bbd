"""The risk score: a small logistic model over normalised signal features, and its scoring.

Pure Python, no numerical dependency. :mod:`~ctxhealth.risk.model` holds the :class:`RiskModel`
value and :func:`sigmoid` — all the Monitor needs to score a turn. Fitting, cross-validation,
calibration and validation drive the Monitor over labelled runs, so they sit above it, in
:mod:`ctxhealth.evaluation`.
"""

from __future__ import annotations

from ctxhealth.risk.model import PHASE_FEATURE as PHASE_FEATURE
from ctxhealth.risk.model import RiskModel as RiskModel
from ctxhealth.risk.model import sigmoid as sigmoid

__all__ = ["PHASE_FEATURE", "RiskModel", "sigmoid"]
