"""A health reading from a session's cached counters, cheap enough for every status-line refresh.

:func:`read_counters` needs nothing but the counters (and optionally the fill and window the status
line payload reports): the model's window and the profile's thresholds were resolved by the slow path
(:func:`.tail.resolve_thresholds`) and cached in ``counters.thresholds``. The zone arithmetic mirrors
:func:`ctxhealth.signals.pressure.tier_zone` / ``window_zone`` exactly (a test checks them against
each other over a grid) so the status line never imports the signal layer.

:func:`decide_for_counters` is the slow path used by the hooks: it asks the real policy
(:func:`ctxhealth.policy.decide`) what to do.
"""

from __future__ import annotations

from enum import StrEnum

from ctxhealth.integrations.claude_code.tailstate import RECENT_OUTCOMES, SessionCounters

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


__all__ = ["Reading", "Verdict", "ZoneName", "decide_for_counters", "read_counters"]

# Used only when the slow path has never run for this transcript (nothing cached yet): the spec's
# full-tier defaults and Claude Code's 200K window less its auto-compact buffer.
_FALLBACK: dict[str, Any] = {
    "window": 200_000,
    "usable": 187_000,
    "tier": "full",
    "sweet_spot": 80_000,
    "compact_zone": 120_000,
    "hard_limit": 180_000,
    "window_yellow": 0.65,
    "window_orange": 0.80,
    "window_critical": 0.90,
    "window_autocompact": 0.93,
    "pressure_warning": 0.55,
    "pressure_compress": 0.70,
    "pressure_critical": 0.85,
    "drift_threshold": 0.15,
    "failure_rate": 0.40,
    "failure_min_calls": 4,
    "consecutive_failures": 3,
}


class ZoneName(StrEnum):
    """The zones of :class:`ctxhealth.signals.pressure.Zone`, by value (kept import-free here)."""

    GREEN = "green"
    YELLOW = "yellow"
    ORANGE = "orange"
    RED = "red"
    CRITICAL = "critical"


_ORDER = (ZoneName.GREEN, ZoneName.YELLOW, ZoneName.ORANGE, ZoneName.RED, ZoneName.CRITICAL)


def tier_zone_name(fill: int, th: dict[str, Any]) -> ZoneName:
    if fill >= th["hard_limit"]:
        return ZoneName.RED
    if fill >= th["compact_zone"]:
        return ZoneName.ORANGE
    if fill >= th["sweet_spot"]:
        return ZoneName.YELLOW
    return ZoneName.GREEN


def window_zone_name(fraction: float, th: dict[str, Any]) -> ZoneName:
    if fraction > th["window_autocompact"]:
        return ZoneName.CRITICAL
    if fraction >= th["window_critical"]:
        return ZoneName.RED
    if fraction >= th["window_orange"]:
        return ZoneName.ORANGE
    if fraction >= th["window_yellow"]:
        return ZoneName.YELLOW
    return ZoneName.GREEN


class Reading:
    """Zone, pressure, fill against the usable window, drift, failure spiral and doom loop."""

    __slots__ = (
        "doom_loop",
        "drift",
        "drifting",
        "fill",
        "percent",
        "pressure",
        "spiral",
        "spiral_reason",
        "usable",
        "window",
        "zone",
    )

    def __init__(self, counters: SessionCounters, fill: int | None, window: int | None) -> None:
        th = dict(counters.thresholds or _FALLBACK)
        if window and window != th["window"]:
            # The host reports another window (e.g. a 1M variant): keep the same reserve below it.
            th["usable"] = max(1, window - (th["window"] - th["usable"]))
            th["window"] = window
        self.fill: int = counters.fill if fill is None else fill
        self.window: int = th["window"]
        self.usable: int = max(1, th["usable"])
        self.percent: float = 100.0 * self.fill / self.usable
        quality = self.fill / th["hard_limit"]
        capacity = self.fill / self.usable
        self.pressure: float = max(quality, capacity)
        tz, wz = tier_zone_name(self.fill, th), window_zone_name(capacity, th)
        self.zone: ZoneName = tz if _ORDER.index(tz) >= _ORDER.index(wz) else wz
        self.drift: float | None = counters.drift
        self.drifting: bool = (
            self.drift is not None and self.fill >= th["sweet_spot"] and self.drift < th["drift_threshold"]
        )
        self.spiral, self.spiral_reason = _spiral(counters, th)
        self.doom_loop: bool = counters.doom_loops > 0 and bool(counters.last_doom_signature)


def _spiral(counters: SessionCounters, th: dict[str, Any]) -> tuple[bool, str]:
    recent = counters.recent_outcomes[-RECENT_OUTCOMES:]
    calls = len(recent)
    failures = recent.count("x")
    if counters.consecutive_failures >= th["consecutive_failures"]:
        return True, f"{counters.consecutive_failures} tool failures in a row"
    if calls >= th["failure_min_calls"] and failures / calls > th["failure_rate"]:
        return True, f"{failures} of the last {calls} tool calls failed"
    return False, ""


def read_counters(
    counters: SessionCounters, *, fill: int | None = None, window: int | None = None
) -> Reading:
    """The reading now; ``fill`` / ``window`` override the counters' (the host's numbers are fresher)."""
    return Reading(counters, fill, window)


class Verdict:
    """The policy's action (its value, e.g. ``"warn"``) and reasons, cacheable in the counters."""

    __slots__ = ("action", "reasons")

    def __init__(self, action: str, reasons: tuple[str, ...]) -> None:
        self.action = action
        self.reasons = reasons


def _fingerprint(counters: SessionCounters, reading: Reading) -> list[Any]:
    return [
        counters.offset,
        counters.tool_calls,
        counters.tool_errors,
        counters.episodes,
        reading.fill,
        reading.window,
        counters.thresholds.get("model") if counters.thresholds else None,
    ]


def decide_for_counters(counters: SessionCounters, reading: Reading) -> Verdict:
    """What the policy says for this session now; the policy is imported only when the counters moved
    since the last decision (it is deterministic, so an unchanged session gets the cached verdict)."""
    key = _fingerprint(counters, reading)
    cached = counters.last_verdict
    if isinstance(cached, list) and len(cached) == 3 and cached[0] == key:
        return Verdict(str(cached[1]), tuple(str(r) for r in cached[2]))
    from ctxhealth.policy import Counters, Snapshot, decide
    from ctxhealth.signals.pressure import Zone
    from ctxhealth.signals.profile import default_profile

    recent = counters.recent_outcomes[-RECENT_OUTCOMES:]
    th = counters.thresholds or _FALLBACK
    snapshot = Snapshot(
        zone=Zone(reading.zone.value),
        pressure=reading.pressure,
        fill=reading.fill,
        utilisation=reading.fill / reading.usable,
        failure_rate=recent.count("x") / len(recent) if recent else 0.0,
        recent_calls=len(recent),
        drift=1.0 if reading.drift is None else reading.drift,
        above_sweet_spot=reading.fill >= th["sweet_spot"],
        consecutive_failures=counters.consecutive_failures,
    )
    # Claude Code compacts by itself: its compactions stand for truncations; it manages turns, so the
    # turn-count reset (steps) is left to it.
    decision = decide(snapshot, Counters(truncations=counters.compactions), default_profile())
    verdict = Verdict(decision.action.value, decision.reasons)
    counters.last_verdict = [key, verdict.action, list(verdict.reasons)]
    return verdict
