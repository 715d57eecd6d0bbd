"""The risk model value: :class:`RiskModel` (weights, normalisation, phase-in) and :func:`sigmoid`.

A :class:`RiskModel` maps a feature mapping to a probability of failure in 0..1: each feature is
transformed (``log1p`` for counts), standardised with the training mean / deviation, then weighted.
This is all the monitor needs to score a turn; fitting lives in the sibling modules.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
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
    _terms: tuple[tuple[int, float, float, float, bool, bool], ...] = field(
        init=False, repr=False, compare=False, default=()
    )
    _turns_at: int | None = field(init=False, repr=False, compare=False, default=None)

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
        # (position, weight, mean, scale, log?, anchor?) of every weighted feature, in order
        terms = tuple(
            (i, w, mu, sd, name in self.log_features, name == self.anchor)
            for i, (name, w, mu, sd) in enumerate(
                zip(self.features, self.weights, self.mean, self.scale, strict=True)
            )
            if w != 0.0
        )
        object.__setattr__(self, "_terms", terms)
        turns_at = self.features.index(PHASE_FEATURE) if PHASE_FEATURE in self.features else None
        object.__setattr__(self, "_turns_at", turns_at)

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
        return self.linear_values([values.get(name) for name in self.features])

    def linear_values(self, values: Sequence[float | None]) -> float:
        """:meth:`linear` for values given in the order of :attr:`features` (None: missing).

        The monitor scores every turn this way, with its feature functions bound once.
        """
        t = self._turns_at
        turns = values[t] if t is not None else None
        phase = 1.0 if self.phase_in <= 0 or turns is None else min(1.0, max(turns, 0.0) / self.phase_in)
        z = self.bias
        log1p = math.log1p
        for i, w, mu, sd, log, anchor in self._terms:
            raw = values[i]
            if raw is None:
                continue
            # ``max(raw, 0.0)`` written out (the same value, -0.0 and NaN included: ``max`` keeps
            # its first argument unless the second is larger), without a builtin call per term
            x = log1p(0.0 if raw < 0.0 else raw) if log else raw
            z += (1.0 if anchor else phase) * w * (x - mu) / sd
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


FILL_FALLBACK = "fill"
"""The name of :func:`fill_fallback`'s score (``check --json``'s ``risk_model`` for it)."""
_FILL = "peak_fill"


def fill_fallback(model: RiskModel | None = None) -> RiskModel:
    """The risk score for an agent no model was calibrated on: peak fill alone.

    It ranks sessions exactly as peak fill does, so it is never worse than fill at telling failed
    runs from good ones (a model fitted on other agents can be: the SWE-bench model ranked tau-bench
    runs at 0.35, below chance). On the scale of ``model``'s peak-fill term when it has one (the same
    probability at an average fill), else a plain logistic of log peak fill around 50K tokens.
    """
    if model is not None and _FILL in model.features:
        i = model.features.index(_FILL)
        weight = model.weights[i] if model.weights[i] > 0 else 1.0
        mean, scale = model.mean[i], model.scale[i]
        log = _FILL in model.log_features
        bias = model.bias
    else:
        weight, mean, scale, log, bias = 1.0, math.log1p(50_000), 1.0, True, 0.0
    return RiskModel(
        features=(_FILL,),
        weights=(weight,),
        bias=bias,
        mean=(mean,),
        scale=(scale,),
        log_features=frozenset({_FILL}) if log else frozenset(),
        meta={"fallback": "peak fill: no risk model was calibrated for this agent"},
    )
