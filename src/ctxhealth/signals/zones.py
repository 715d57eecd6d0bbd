"""The zone arithmetic of the one pressure scale, on plain numbers, importing nothing.

:class:`Zone` and the two zone functions live here so that anything that only needs "which zone is
this fill in" (the status line, on every refresh) gets the signal layer's own answer without loading
the rest of it. :mod:`ctxhealth.signals.pressure` builds on these and re-exports :class:`Zone`.
"""

from __future__ import annotations

from enum import StrEnum


class Zone(StrEnum):
    """Health zone, from best to worst. Compare with :attr:`level`."""

    GREEN = "green"
    YELLOW = "yellow"
    ORANGE = "orange"
    RED = "red"
    CRITICAL = "critical"

    level: int
    """The zone's position in :data:`ZONES`, set on each member once (an attribute, not a property:
    the policy reads it several times per assessment)."""

    def raised(self, steps: int = 1) -> Zone:
        return ZONES[min(len(ZONES) - 1, self.level + steps)]


ZONES = (Zone.GREEN, Zone.YELLOW, Zone.ORANGE, Zone.RED, Zone.CRITICAL)
for _i, _z in enumerate(ZONES):
    _z.level = _i
del _i, _z


def tier_zone_of(fill: int, sweet_spot: int, compact_zone: int, hard_limit: int) -> Zone:
    """The tier zone of ``fill`` tokens: sweet spot → GREEN, approaching → YELLOW, compact zone →
    ORANGE, at or past the hard limit → RED."""
    if fill >= hard_limit:
        return Zone.RED
    if fill >= compact_zone:
        return Zone.ORANGE
    if fill >= sweet_spot:
        return Zone.YELLOW
    return Zone.GREEN


def window_zone_of(
    fraction: float, yellow: float, orange: float, critical: float, autocompact: float
) -> Zone:
    """The window zone of a fill ``fraction`` of the usable window (auto-compact is strictly above)."""
    if fraction > autocompact:
        return Zone.CRITICAL
    if fraction >= critical:
        return Zone.RED
    if fraction >= orange:
        return Zone.ORANGE
    if fraction >= yellow:
        return Zone.YELLOW
    return Zone.GREEN


def worse(a: Zone, b: Zone) -> Zone:
    return a if a.level >= b.level else b
