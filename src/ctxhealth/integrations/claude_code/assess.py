"""A health reading from a session's cached counters, cheap enough for every status-line refresh.

:func:`read_counters` needs nothing but the counters (and optionally the fill and window the status
line payload reports): the model's window and the profile's thresholds were resolved by the slow path
(:func:`.tail.resolve_thresholds`) and cached in ``counters.thresholds``. The zones come from the
signal layer's own arithmetic (:mod:`ctxhealth.signals.zones`, which imports nothing), raised one
step when the session's monitor saw enough early-warning indicators to raise it.

:func:`verdict` is what the hooks act on: the decision of the session's
:class:`~ctxhealth.monitor.Monitor` for its latest message, kept in the counters by :mod:`.monitoring`.
"""

from __future__ import annotations

from ctxhealth.integrations.claude_code.tailstate import RECENT_OUTCOMES, SessionCounters
from ctxhealth.policy import defaults
from ctxhealth.signals.cache_rate import cache_hit_rate
from ctxhealth.signals.zones import Zone, tier_zone_of, window_zone_of, worse

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


__all__ = ["Reading", "Verdict", "low_cache_hit_rate", "read_counters", "verdict"]

# Used only when the slow path has never run for this transcript (nothing cached yet): the spec's
# full-tier zones and Claude Code's 200K window less 20K reserved output and its 13K auto-compact buffer.
_FALLBACK: dict[str, Any] = {
    "window": 200_000,
    "usable": 167_000,
    "tier": "full",
    "sweet_spot": defaults.FULL_TIER[0],
    "compact_zone": defaults.FULL_TIER[1],
    "hard_limit": defaults.FULL_TIER[2],
    "window_yellow": defaults.WINDOW_YELLOW,
    "window_orange": defaults.WINDOW_ORANGE,
    "window_critical": defaults.WINDOW_CRITICAL,
    "window_autocompact": defaults.WINDOW_AUTOCOMPACT,
    "pressure_warning": defaults.PRESSURE_WARNING,
    "pressure_compress": defaults.PRESSURE_COMPRESS,
    "pressure_critical": defaults.PRESSURE_CRITICAL,
    "drift_threshold": defaults.DRIFT_THRESHOLD,
    "failure_rate": defaults.FAILURE_RATE,
    "failure_min_calls": defaults.FAILURE_MIN_CALLS,
    "consecutive_failures": defaults.CONSECUTIVE_FAILURES,
    "cache_hit_min": defaults.CACHE_HIT_MIN,
    "cache_min_prompt": defaults.CACHE_MIN_PROMPT,
}


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
        zone = worse(
            tier_zone_of(self.fill, th["sweet_spot"], th["compact_zone"], th["hard_limit"]),
            window_zone_of(
                capacity,
                th["window_yellow"],
                th["window_orange"],
                th["window_critical"],
                th["window_autocompact"],
            ),
        )
        last = counters.assessment
        if isinstance(last, dict) and last.get("zone") != last.get("base_zone"):
            zone = zone.raised()  # early-warning indicators raised the monitor's zone
        self.zone: Zone = zone
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
    """The monitor's decision for the latest message: the action (its value, e.g. ``"warn"``), the
    rule of the decision tree that matched, and the reasons."""

    __slots__ = ("action", "reasons", "rule")

    def __init__(self, action: str, reasons: tuple[str, ...], rule: str = "") -> None:
        self.action = action
        self.reasons = reasons
        self.rule = rule


def verdict(counters: SessionCounters) -> Verdict:
    """The session monitor's last decision (``continue`` until it has assessed a message)."""
    last = counters.assessment
    if not isinstance(last, dict) or not isinstance(last.get("action"), str):
        return Verdict("continue", ("nothing assessed yet",), "healthy")
    reasons = last.get("reasons")
    return Verdict(
        last["action"],
        tuple(str(r) for r in reasons) if isinstance(reasons, list) else (),
        str(last.get("rule", "")),
    )


def low_cache_hit_rate(counters: SessionCounters, read: int | None, prompt: int | None) -> float | None:
    """The latest response's prompt-cache hit rate (``read`` / ``prompt`` tokens) when it is under the
    profile's ``cache_hit_min`` on a prompt long enough to be cached, else None (nothing to show)."""
    if read is None or prompt is None:
        return None
    th = counters.thresholds or _FALLBACK
    rate = cache_hit_rate(read, prompt, th.get("cache_min_prompt", _FALLBACK["cache_min_prompt"]))
    return rate if rate is not None and rate < th.get("cache_hit_min", _FALLBACK["cache_hit_min"]) else None
