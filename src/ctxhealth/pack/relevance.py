"""Relevance: the spec's weighted sum of edit recency, import distance, task similarity and size.

``relevance = 0.35 recency + 0.30 imports + 0.25 similarity + 0.10 size``, each term in 0..1. A term
that does not exist for this request — no git history and no active file (recency), no active file
(imports) — is left out and the weights of the remaining terms are re-normalised to sum to 1, so
the scale (and the 0.4 threshold) keeps its meaning; :attr:`Weights.renormalised` says so. Decay
across turns multiplies the result (0.5 for a packed file unreferenced for 3 turns, 1.3 for a
referenced one) and is capped at 1.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

WEIGHTS: dict[str, float] = {"recency": 0.35, "imports": 0.30, "similarity": 0.25, "size": 0.10}
THRESHOLD = 0.4
SIZE_PIVOT_TOKENS = 20_000
"""The size term is ``1 / (1 + tokens / SIZE_PIVOT_TOKENS)``, tokens estimated as bytes / 4: 1 for an
empty file, 0.5 at 20K tokens. A gentle slope: large files are still packed as signatures, so size
should not rule them out (the pivot was chosen on half of the django benchmark tasks and checked
on the other half)."""
IMPORT_PROXIMITY = {0: 1.0, 1: 1.0, 2: 0.5, 3: 0.25}
"""Import term by hops from the nearest active file (an active file and its direct imports score 1)."""


@dataclass(frozen=True, slots=True)
class Weights:
    """The weights in force for one request: the terms present, re-normalised when some are missing."""

    values: dict[str, float]
    missing: tuple[str, ...]

    @property
    def renormalised(self) -> bool:
        return bool(self.missing)

    def combine(self, components: Mapping[str, float | None]) -> float:
        return sum(w * float(components.get(name) or 0.0) for name, w in self.values.items())


def weights_for(*, has_recency: bool, has_imports: bool, base: Mapping[str, float] = WEIGHTS) -> Weights:
    """The weights to use given which terms exist for this request."""
    present = {
        name: w
        for name, w in base.items()
        if not (name == "recency" and not has_recency) and not (name == "imports" and not has_imports)
    }
    total = sum(present.values())
    missing = tuple(name for name in base if name not in present)
    return Weights({name: w / total for name, w in present.items()}, missing)


def size_term(tokens: int) -> float:
    return 1.0 / (1.0 + tokens / SIZE_PIVOT_TOKENS)


def import_term(distance: int | None) -> float:
    return 0.0 if distance is None else IMPORT_PROXIMITY.get(distance, 0.0)


@dataclass(frozen=True, slots=True)
class Scored:
    """One candidate's relevance: the terms, the decay factor applied, and the final score."""

    path: str
    components: dict[str, float | None]
    decay: float
    score: float


def score_file(
    path: str, components: dict[str, float | None], weights: Weights, decay: float = 1.0
) -> Scored:
    """The relevance of one file from its terms (None marks an absent term)."""
    raw = weights.combine(components)
    return Scored(path, components, decay, round(min(1.0, raw * decay), 6))
