"""Fill, pressure and zones on the one pressure scale (DESIGN.md "One pressure scale").

quality pressure = fill / the tier's hard limit; capacity pressure = fill / usable window;
pressure = the larger. The zone is the worse of the tier zone (absolute tokens) and the window
zone (percent of the usable window); :func:`raise_zone` moves it one step up when two or more
early-warning indicators fire.

Tier zones map onto :class:`Zone` as sweet spot → GREEN, approaching → YELLOW, compact zone →
ORANGE, hard limit → RED. Window zones: green → GREEN, yellow → YELLOW, orange → ORANGE,
critical → RED, auto-compact → CRITICAL.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ctxhealth.accounting.types import ModelInfo
from ctxhealth.signals.base import CachedDetector, Signal
from ctxhealth.signals.events import Event
from ctxhealth.signals.thresholds import SignalThresholds, TierLimits
from ctxhealth.signals.zones import ZONES, Zone, tier_zone_of, window_zone_of, worse

if TYPE_CHECKING:
    from ctxhealth.signals.state import PressureState

__all__ = ["ZONES", "PressureTracker", "Zone", "tier_zone", "window_zone", "worse"]


def tier_zone(fill: int, th: TierLimits) -> Zone:
    return tier_zone_of(fill, th.sweet_spot, th.compact_zone, th.hard_limit)


def window_zone(fraction: float, profile: SignalThresholds) -> Zone:
    p = profile
    return window_zone_of(fraction, p.window_yellow, p.window_orange, p.window_critical, p.window_autocompact)


class PressureTracker(CachedDetector):
    """Fill → quality / capacity pressure and zones; remembers the peak and where the zone began."""

    def __init__(self, info: ModelInfo, profile: SignalThresholds) -> None:
        self.info = info
        self.profile = profile
        self.thresholds = profile.zones(info)
        self.usable = max(1, info.usable_window)
        self.fill = 0
        self.peak = 0
        self.first_fill = 0
        self.quality = 0.0
        self.capacity = 0.0
        self.tier_zone = Zone.GREEN
        self.window_zone = Zone.GREEN
        self.zone = Zone.GREEN
        self.zone_since = 0
        self._peak_index = 0
        # the readings are a function of the fill and the model's figures: recomputed only when
        # either changed (a fill repeats on every message between two responses)
        self._stale = True

    @property
    def pressure(self) -> float:
        return self.quality if self.quality >= self.capacity else self.capacity

    def reading(self, fill: int) -> tuple[Zone, float]:
        """The zone and pressure a context of ``fill`` tokens would have (nothing is changed)."""
        th = self.thresholds
        capacity = fill / self.usable
        zone = worse(tier_zone(fill, th), window_zone(capacity, self.profile))
        quality = fill / th.hard_limit
        return zone, quality if quality >= capacity else capacity

    def serialize(self) -> PressureState:
        """The saved state (the model's figures come from the monitor's model, not from it)."""
        from ctxhealth.signals.state import PressureState

        return PressureState(
            fill=self.fill,
            peak=self.peak,
            first_fill=self.first_fill,
            quality=self.quality,
            capacity=self.capacity,
            tier_zone=self.tier_zone.value,
            window_zone=self.window_zone.value,
            zone=self.zone.value,
            zone_since=self.zone_since,
            peak_index=self._peak_index,
        )

    def restore(self, state: PressureState) -> None:
        self.fill = state.fill
        self.peak = state.peak
        self.first_fill = state.first_fill
        self.quality = state.quality
        self.capacity = state.capacity
        self.tier_zone = Zone(state.tier_zone)
        self.window_zone = Zone(state.window_zone)
        self.zone = Zone(state.zone)
        self.zone_since = state.zone_since
        self._peak_index = state.peak_index
        self._snap = None
        self._stale = True

    def set_model(self, info: ModelInfo) -> None:
        self.info = info
        self.thresholds = self.profile.zones(info)
        self.usable = max(1, info.usable_window)
        self._stale = True
        self.changed()

    def update(self, event: Event) -> None:
        fill = event.fill
        if fill == self.fill and not self._stale:
            return
        self._stale = False
        self.fill = fill
        if not self.first_fill and fill:
            self.first_fill = fill
        if fill > self.peak:
            self.peak = fill
            self._peak_index = event.index
        th = self.thresholds
        self.quality = fill / th.hard_limit
        self.capacity = fill / self.usable
        self.tier_zone = tier_zone(fill, th)
        self.window_zone = window_zone(self.capacity, self.profile)
        zone = self.tier_zone if self.tier_zone.level >= self.window_zone.level else self.window_zone
        if zone is not self.zone:
            self.zone = zone
            self.zone_since = event.index
        self._snap = None

    def _take(self) -> tuple[Any, ...]:
        return (
            self.fill,
            self.quality,
            self.capacity,
            self.tier_zone,
            self.window_zone,
            self.zone_since,
            self.peak,
            self._peak_index,
            self.thresholds,
            self.usable,
            self.info.tier,
        )

    def render(self, snap: tuple[Any, ...]) -> tuple[Signal, ...]:
        fill, quality, capacity, tz, wz, since, peak, peak_index, th, usable, tier = snap
        p = self.profile
        pressure = max(quality, capacity)
        return (
            Signal(
                "pressure",
                pressure,
                pressure >= p.pressure_warning,
                (since,),
                f"max(quality {quality:.2f} = {fill}/{th.hard_limit}, capacity {capacity:.2f} = "
                f"{fill}/{usable}); gates {p.pressure_warning}/{p.pressure_compress}/{p.pressure_critical}",
            ),
            Signal(
                "tier_zone",
                float(tz.level),
                tz is not Zone.GREEN,
                (since,),
                f"{tz.value}: {tier.value} tier {th.sweet_spot}/{th.compact_zone}/{th.hard_limit} tokens",
            ),
            Signal(
                "window_zone",
                float(wz.level),
                wz is not Zone.GREEN,
                (since,),
                f"{wz.value}: {capacity:.0%} of usable {usable} (yellow {p.window_yellow:.0%}, "
                f"orange {p.window_orange:.0%}, critical {p.window_critical:.0%}, "
                f"auto-compact > {p.window_autocompact:.0%})",
            ),
            Signal("peak_fill", float(peak), False, (peak_index,), "largest fill so far"),
        )
