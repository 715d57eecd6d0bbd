"""The fitting procedures (:class:`Procedure`) and the fits of the screened, phased and anchored
models with their default grids.

Screened unit weights (:func:`fit_screened`) estimate far fewer numbers than free logistic weights;
the phased variant fades every feature but peak fill in over the first turns (the one the shipped
profile uses: it matched screening at the end of a run and did better in its first half); the
fill-anchored model (:func:`fit_anchored`) is peak fill plus a chosen weight on the other screened
features. Choosing their settings by inner cross-validation lives in :mod:`ctxhealth.evaluation.selection`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from enum import Enum
from typing import Any

from ctxhealth.errors import ConfigError
from ctxhealth.evaluation.fitting import _transform, fit_weights
from ctxhealth.evaluation.metrics import stratified_auc
from ctxhealth.risk.model import PHASE_FEATURE, RiskModel


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
