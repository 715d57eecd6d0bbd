"""A health reading from a session's cached counters, cheap enough for every status-line refresh.

:func:`read_counters` needs nothing but the counters (and optionally the fill and window the status
line payload reports): the model's window and the profile's thresholds were resolved by the slow path
(:func:`.tail.resolve_thresholds`) and cached in ``counters.thresholds`` (resolved here when they are
not cached yet: there is no built-in fallback window). The failure spiral is the policy's rule
(:func:`ctxhealth.failures.spiral_reason`, which :func:`ctxhealth.policy.decide` uses too).
The zones come from the signal layer's own arithmetic (:mod:`ctxhealth.signals.zones`, which
imports nothing), raised one step when the session's monitor saw enough early-warning indicators to raise it.

:func:`verdict` is what the hooks act on: the decision of the session's
:class:`~ctxhealth.monitor.Monitor` for its latest message, kept in the counters by :mod:`.monitoring`.
"""

from __future__ import annotations

from ctxhealth.failures import spiral_reason, streak_reason
from ctxhealth.integrations.claude_code.tailstate import RECENT_OUTCOMES, SessionCounters
from ctxhealth.policy import defaults
from ctxhealth.signals.cache_rate import cache_hit_rate
from ctxhealth.signals.zones import Zone, tier_zone_of, window_zone_of, worse

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


__all__ = ["Reading", "Verdict", "low_cache_hit_rate", "read_counters", "spiral", "verdict"]


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
        self.spiral, self.spiral_reason = spiral(counters)
        self.doom_loop: bool = counters.doom_loops > 0 and bool(counters.last_doom_signature)


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


def spiral(counters: SessionCounters) -> tuple[bool, str]:
    """(whether the recent calls are a failure spiral or a streak, the policy's reason) — the rule
    needs only the profile's failure thresholds: the cached ones, else the profile's defaults
    (:mod:`ctxhealth.policy.defaults`; no model or window is involved, so none is guessed)."""
    cached = counters.thresholds
    th: dict[str, Any] = (
        cached
        if cached is not None
        else {
            "failure_min_calls": defaults.FAILURE_MIN_CALLS,
            "failure_rate": defaults.FAILURE_RATE,
            "consecutive_failures": defaults.CONSECUTIVE_FAILURES,
        }
    )
    recent = counters.recent_outcomes[-RECENT_OUTCOMES:]
    calls = len(recent)
    # the policy's two rules on the counts, in its words: a streak first (it is what the agent sees)
    reason = streak_reason(counters.consecutive_failures, th["consecutive_failures"]) or spiral_reason(
        calls,
        recent.count("x") / calls if calls else 0.0,
        min_calls=th["failure_min_calls"],
        rate=th["failure_rate"],
    )
    return reason is not None, reason or ""


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
