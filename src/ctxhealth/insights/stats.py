"""The statistics of ``ctxhealth insights``: Wilson intervals, slip rate by fill band, the
change-point (only where intervals separate) and the snowball (next-step slip rate given the slips
so far). Pure functions of counts; no dependency beyond the standard library.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

Z95 = 1.959963984540054
"""The two-sided 95% normal quantile."""

PCT_EDGES: tuple[float, ...] = (0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100)
"""Fill bands as % of the usable window; a last open band holds fills above it (estimated fills,
a window the registry does not know)."""

TOKEN_EDGES: tuple[int, ...] = (0, 2_500, 5_000, 10_000, 20_000, 40_000, 80_000, 120_000, 180_000)
"""Fill bands in absolute tokens: the spec's zone edges (full tier 80K / 120K / 180K; compact tier
20K / 30K / 50K; local tier 8K / 16K / 32K) rounded onto one doubling scale, finer at the low end
where short agents (tau-bench's customer service) spend their whole sessions; a last open band
above 180K."""

MIN_BAND_STEPS = 30
"""The fewest steps on either side of a change-point (fewer give intervals too wide to separate)."""


def wilson(successes: int, trials: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of ``successes / trials`` (``(0, 1)`` when there are no trials)."""
    if trials <= 0:
        return 0.0, 1.0
    p = successes / trials
    denom = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denom
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True, slots=True)
class Rate:
    steps: int
    slips: int

    @property
    def rate(self) -> float | None:
        return self.slips / self.steps if self.steps else None

    def to_dict(self) -> dict[str, Any]:
        low, high = wilson(self.slips, self.steps)
        rate = self.rate
        return {
            "steps": self.steps,
            "slips": self.slips,
            "rate": None if rate is None else round(rate, 4),
            "ci_low": round(low, 4) if self.steps else None,
            "ci_high": round(high, 4) if self.steps else None,
        }


def band_index(value: float, edges: Sequence[float]) -> int:
    """The band ``value`` falls in: ``i`` for ``edges[i] <= value < edges[i+1]``; the last, open band
    is ``len(edges) - 1``."""
    for i in range(1, len(edges)):
        if value < edges[i]:
            return i - 1
    return len(edges) - 1


def bands(points: Iterable[tuple[float, bool]], edges: Sequence[float], unit: str) -> list[dict[str, Any]]:
    """Steps and slips per band of ``edges`` (every band listed, in order: they add up to all steps)."""
    steps = [0] * len(edges)
    slips = [0] * len(edges)
    for value, slipped in points:
        b = band_index(value, edges)
        steps[b] += 1
        slips[b] += slipped
    out = []
    for i, low in enumerate(edges):
        high = edges[i + 1] if i + 1 < len(edges) else None
        out.append({f"from_{unit}": low, f"to_{unit}": high, **Rate(steps[i], slips[i]).to_dict()})
    return out


def change_point(
    points: Sequence[tuple[float, bool]], edges: Sequence[float], unit: str, min_steps: int = MIN_BAND_STEPS
) -> dict[str, Any] | None:
    """Where slips start rising: of the band edges at which the slip rate of the steps at or above
    it is higher than below it with the two Wilson 95% intervals apart (the lower bound above
    exceeds the upper bound below), each side holding at least ``min_steps`` steps, the one where
    they are furthest apart (a rise at 60% also separates the sides at 10%, less clearly); None when
    no edge separates them."""
    total_slips = sum(1 for _, s in points if s)
    best: tuple[float, dict[str, Any]] | None = None
    for edge in edges[1:]:
        below = Rate(sum(1 for v, _ in points if v < edge), sum(1 for v, s in points if v < edge and s))
        above = Rate(len(points) - below.steps, total_slips - below.slips)
        if below.steps < min_steps or above.steps < min_steps:
            continue
        gap = wilson(above.slips, above.steps)[0] - wilson(below.slips, below.steps)[1]
        if gap > 0 and (best is None or gap > best[0]):
            best = (gap, {f"at_{unit}": edge, "below": below.to_dict(), "above": above.to_dict()})
    return None if best is None else best[1]


SNOWBALL_CAP = 3
"""Slips so far are counted 0, 1, 2 and "3 or more"."""


def snowball(sessions: Iterable[Sequence[bool]]) -> dict[str, Any]:
    """Next-step slip rate given how many of the session's earlier steps slipped (0, 1, 2, 3+), and
    given whether the step just before slipped."""
    by_count = [[0, 0] for _ in range(SNOWBALL_CAP + 1)]
    after = {True: [0, 0], False: [0, 0]}
    for slipped in sessions:
        so_far = 0
        for i, s in enumerate(slipped):
            cell = by_count[min(so_far, SNOWBALL_CAP)]
            cell[0] += 1
            cell[1] += s
            if i > 0:
                prev = after[slipped[i - 1]]
                prev[0] += 1
                prev[1] += s
            so_far += s
    return {
        "by_slips_so_far": [
            {"slips_so_far": f"{n}+" if n == SNOWBALL_CAP else str(n), **Rate(*cell).to_dict()}
            for n, cell in enumerate(by_count)
        ],
        "after_slip": Rate(*after[True]).to_dict(),
        "after_clean_step": Rate(*after[False]).to_dict(),
    }
