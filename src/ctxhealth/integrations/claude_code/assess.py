"""A health reading from a session's cached counters, cheap enough for every status-line refresh.

:func:`read_counters` needs nothing but the counters (and optionally the fill and window the status
line payload reports): the model's window and the profile's thresholds (``Profile.zones(info)``)
were resolved by the slow path (:func:`.tail.resolve_thresholds`) and cached in
``counters.thresholds`` (resolved here when they are not cached yet, or not for the window the host
states: there is no built-in fallback window). The zone of a fill is the monitor's pressure scale
on those zones (:mod:`ctxhealth.signals.zones`, which imports nothing), raised one step when the
session's monitor saw enough early-warning indicators to raise its own.

Everything else is the session monitor's, as its last assessment stored it (:mod:`.monitoring`):
its tool counts (:func:`tool_counts`), whether its decision says the calls are failing
(:func:`failure_reason`: the policy's failure-spiral rule, or its streak), repeated calls (the
``repeated_calls`` signal), and :func:`verdict`, the decision the hooks act on.
"""

from __future__ import annotations

from ctxhealth.failures import streak_reason
from ctxhealth.integrations.claude_code.tailstate import SessionCounters
from ctxhealth.policy import defaults
from ctxhealth.signals.cache_rate import cache_hit_rate
from ctxhealth.signals.zones import Zone, tier_zone_of, window_zone_of, worse

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


__all__ = [
    "Reading",
    "ToolCounts",
    "Verdict",
    "failure_reason",
    "low_cache_hit_rate",
    "read_counters",
    "tool_counts",
    "verdict",
]


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
        th = _thresholds(counters, window)
        self.fill: int = counters.fill if fill is None else fill
        self.window: int = th["window"]
        self.usable: int = max(1, th["usable"])
        self.percent: float = 100.0 * self.fill / self.usable
        # the Monitor's pressure scale (``PressureTracker.reading``) on the zones of Profile.zones(info)
        quality = self.fill / th["hard_limit"]
        capacity = self.fill / self.usable
        self.pressure: float = quality if quality >= capacity else capacity
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
        self.spiral_reason: str = failure_reason(counters.assessment, _thresholds(counters)) or ""
        self.spiral: bool = bool(self.spiral_reason)
        self.doom_loop: bool = isinstance(last, dict) and "repeated_calls" in (last.get("fired") or ())


class ToolCounts:
    """The session monitor's tool counts, as its last assessment stored them (:mod:`.monitoring`):
    results, failed (:func:`ctxhealth.failures.is_failure`), failures in a row now and at most,
    identical calls repeated within the monitor's window."""

    __slots__ = ("calls", "failed", "max_streak", "repeats", "streak")

    def __init__(self, last: object) -> None:
        data = last if isinstance(last, dict) else {}

        def count(key: str) -> int:
            value = data.get(key)
            return value if isinstance(value, int) and not isinstance(value, bool) else 0

        self.calls = count("tool_calls")
        self.failed = count("tool_errors")
        self.streak = count("streak")
        self.max_streak = count("max_streak")
        self.repeats = count("repeats")


def tool_counts(counters: SessionCounters) -> ToolCounts:
    """The monitor's tool counts for the session (all zero before it assessed anything)."""
    return ToolCounts(counters.assessment)


def failure_reason(last: object, th: dict[str, Any]) -> str | None:
    """Why the monitor's last decision says the tool calls are failing, in the policy's words, or
    None: its decision was the failure-spiral reset (``decide``'s rule), or the failures in a row
    reached the policy's streak (``ctxhealth.failures.streak_reason``, which ``decide`` warns with),
    whatever else the decision put first (the compact zone, say)."""
    if not isinstance(last, dict):
        return None
    reasons = last.get("reasons")
    if last.get("rule") == "failure_spiral" and isinstance(reasons, list) and reasons:
        return str(reasons[0])
    streak = ToolCounts(last).streak
    return streak_reason(streak, int(th.get("consecutive_failures", defaults.CONSECUTIVE_FAILURES)))


def _thresholds(counters: SessionCounters, window: int | None = None) -> dict[str, Any]:
    """The session's cached window and profile thresholds (``Profile.zones(info)``, resolved by the
    slow path :func:`.tail.resolve_thresholds`: the registry and the profile) when none are cached
    yet, or when the host states another ``window`` than the cached one (a 1M variant): the zones
    of that window are the profile's for it, never the cached ones stretched."""
    cached = counters.thresholds
    if cached is not None and (not window or window == cached.get("window")):
        return cached
    from ctxhealth.integrations.claude_code.tail import resolve_thresholds

    return resolve_thresholds(counters, window=window or None)


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
    th = _thresholds(counters)
    rate = cache_hit_rate(read, prompt, th["cache_min_prompt"])
    return rate if rate is not None and rate < th["cache_hit_min"] else None
