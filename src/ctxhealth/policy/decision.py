"""The decision: one total, deterministic function from a signal snapshot and the session's
recovery counters to an :class:`Action` with its reasons.

The decision tree, evaluated in order, first match wins (the spec's tree, with the pressure gate
and the reset triggers placed where they do not shadow it):

 1. cooldown active (a restart happened < ``cooldown`` turns ago)      → CONTINUE
 2. failure rate > ``failure_rate`` with >= ``failure_min_calls`` calls → RESTART
 3. at or past the hard limit (zone RED or worse)                       → RESTART
 4. compact zone (ORANGE) and >= ``truncations_before_restart`` truncations → RESTART
 5. pressure >= ``pressure_critical`` (utilisation reset trigger)       → HALT (checkpoint, wait for an
    explicit override; RESTART instead when ``halt_on_critical`` is false)
 6. compact zone (ORANGE)                                               → TRUNCATE
 7. above the sweet spot and drift similarity < ``drift_threshold``      → REANCHOR
 8. the same mistake ``same_mistake`` times                              → CLEAR_TOOL_RESULTS (purge error
    output, re-include the specs)
 9. more than ``max_turns`` turns since the last reset                  → COMPRESS_HISTORY
10. prompt-cache hit rate < ``cache_hit_min`` for ``cache_miss_turns`` responses in a row → WARN
    (restructure the prefix: keep the system prompt and tools stable, append instead of editing)
11. pressure >= ``pressure_warning``, 2+ early-warning indicators, a failure streak, or risk >=
    ``risk_warning``                                                      → WARN
12. otherwise                                                           → CONTINUE

Circuit breaker: once ``max_restarts`` restarts have happened, every RESTART becomes TRUNCATE and the
reasons tell the user so. :func:`record` says how the counters change when a recovery is carried out
(restart: restarts + 1, cooldown, step counter reset).
"""

from __future__ import annotations

from enum import StrEnum

import msgspec
from msgspec.structs import replace

from ctxhealth.failures import spiral_reason, streak_reason

# The zone arithmetic imports nothing (signals.pressure and signals.state pull in the event builder,
# the call parser and the transcript model), and the profile is only read here: importing the
# decision costs a hook a few milliseconds. (The monitor saves Counters in its snapshot through
# signals.state's explicit CountersState.)
from ctxhealth.signals.zones import Zone

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ctxhealth.policy.profile import Profile


class Action(StrEnum):
    """What to do now, from mildest to most drastic (HALT stops and waits for a person)."""

    CONTINUE = "continue"
    WARN = "warn"
    REANCHOR = "reanchor"
    CLEAR_TOOL_RESULTS = "clear_tool_results"
    COMPRESS_HISTORY = "compress_history"
    TRUNCATE = "truncate"
    RESTART = "restart"
    HALT = "halt"


class Rule(StrEnum):
    """Which branch of the decision tree matched."""

    COOLDOWN = "cooldown"
    FAILURE_SPIRAL = "failure_spiral"
    HARD_LIMIT = "hard_limit"
    REPEATED_TRUNCATION = "repeated_truncation"
    CRITICAL_PRESSURE = "critical_pressure"
    COMPACT_ZONE = "compact_zone"
    DRIFT = "drift"
    SAME_MISTAKE = "same_mistake"
    TOO_MANY_TURNS = "too_many_turns"
    CACHE_MISSES = "cache_misses"
    WARNING = "warning"
    HEALTHY = "healthy"


class Snapshot(msgspec.Struct, frozen=True):
    """The signal readings the decision needs (a monitor builds one per turn).

    ``zone`` already includes the early-warning raise; ``utilisation`` is fill / usable window;
    ``failure_rate`` is over ``recent_calls`` recent tool results; ``drift`` is the similarity
    (1.0 on topic) and ``above_sweet_spot`` says whether drift counts; ``indicators`` is the number
    of early-warning indicators firing; ``cache_hit_rate`` is the latest response's share of its
    prompt read from the prompt cache and ``low_cache_turns`` how many responses in a row were under
    the profile's threshold.
    """

    zone: Zone = Zone.GREEN
    pressure: float = 0.0
    fill: int = 0
    utilisation: float = 0.0
    failure_rate: float = 0.0
    recent_calls: int = 0
    drift: float = 1.0
    above_sweet_spot: bool = False
    same_mistake: int = 0
    consecutive_failures: int = 0
    indicators: int = 0
    risk: float | None = None
    cache_hit_rate: float = 1.0
    low_cache_turns: int = 0


def snapshot_of(
    zone: Zone,
    pressure: float,
    fill: int,
    utilisation: float,
    failure_rate: float,
    recent_calls: int,
    drift: float,
    above_sweet_spot: bool,
    same_mistake: int,
    consecutive_failures: int,
    indicators: int,
    risk: float | None,
    cache_hit_rate: float = 1.0,
    low_cache_turns: int = 0,
) -> Snapshot:
    """``Snapshot(...)`` from its fields in order (kept for callers that build it positionally)."""
    return Snapshot(
        zone=zone,
        pressure=pressure,
        fill=fill,
        utilisation=utilisation,
        failure_rate=failure_rate,
        recent_calls=recent_calls,
        drift=drift,
        above_sweet_spot=above_sweet_spot,
        same_mistake=same_mistake,
        consecutive_failures=consecutive_failures,
        indicators=indicators,
        risk=risk,
        cache_hit_rate=cache_hit_rate,
        low_cache_turns=low_cache_turns,
    )


class Counters(msgspec.Struct, frozen=True):
    """Per-session recovery state: restarts and truncations done, cooldown turns left, turns since
    the last reset (restart, truncation or history compression)."""

    restarts: int = 0
    truncations: int = 0
    cooldown: int = 0
    steps: int = 0


class Decision(msgspec.Struct, frozen=True):
    action: Action
    reasons: tuple[str, ...]
    rule: Rule


def _restart(reason: str, rule: Rule, counters: Counters, profile: Profile) -> Decision:
    if counters.restarts >= profile.max_restarts:
        return Decision(
            Action.TRUNCATE,
            (
                reason,
                f"circuit breaker: {counters.restarts} restarts already (max {profile.max_restarts}); "
                "truncating instead — the user should look at this session",
            ),
            rule,
        )
    return Decision(Action.RESTART, (reason,), rule)


def decide(snapshot: Snapshot, counters: Counters, profile: Profile) -> Decision:
    """The action for this turn and why. Total (any input gives a decision) and deterministic.

    The tree's branches in the order of the module docstring, in four steps; the first branch that
    matches decides.
    """
    s, c, p = snapshot, counters, profile
    if c.cooldown > 0:  # 1
        return Decision(
            Action.CONTINUE, (f"cooldown after a restart: {c.cooldown} turns left",), Rule.COOLDOWN
        )
    return (
        _reset_triggers(s, c, p)  # 2-5
        or _interventions(s, c, p)  # 6-9
        or _warnings(s, p)  # 10-11
        or _HEALTHY  # 12
    )


_HEALTHY = Decision(Action.CONTINUE, ("healthy",), Rule.HEALTHY)


def _reset_triggers(s: Snapshot, c: Counters, p: Profile) -> Decision | None:
    """Branches 2-5: a failure spiral, the hard limit, the compact zone after repeated truncations and
    critical pressure reset the context (restart, or halt at critical pressure)."""
    spiral = spiral_reason(s.recent_calls, s.failure_rate, min_calls=p.failure_min_calls, rate=p.failure_rate)
    if spiral is not None:
        return _restart(
            spiral,
            Rule.FAILURE_SPIRAL,
            c,
            p,
        )
    if s.zone.level >= Zone.RED.level:
        return _restart(
            f"hard limit: zone {s.zone.value} at {s.fill} tokens (pressure {s.pressure:.2f})",
            Rule.HARD_LIMIT,
            c,
            p,
        )
    if s.zone is Zone.ORANGE and c.truncations >= p.truncations_before_restart:
        return _restart(
            f"compact zone again after {c.truncations} truncations (>= {p.truncations_before_restart})",
            Rule.REPEATED_TRUNCATION,
            c,
            p,
        )
    if s.pressure >= p.pressure_critical:
        reason = (
            f"critical pressure {s.pressure:.2f} >= {p.pressure_critical} "
            f"(utilisation {s.utilisation:.0%}): checkpoint and reset"
        )
        if p.halt_on_critical:
            return Decision(
                Action.HALT, (reason, "halt and wait for an explicit override"), Rule.CRITICAL_PRESSURE
            )
        return _restart(reason, Rule.CRITICAL_PRESSURE, c, p)
    return None


def _interventions(s: Snapshot, c: Counters, p: Profile) -> Decision | None:
    """Branches 6-9: change the context without a reset (truncate, re-anchor, clear tool results,
    compress history)."""
    if s.zone is Zone.ORANGE:
        return Decision(
            Action.TRUNCATE,
            (f"compact zone at {s.fill} tokens (pressure {s.pressure:.2f})",),
            Rule.COMPACT_ZONE,
        )
    if s.above_sweet_spot and s.drift < p.drift_threshold:
        return Decision(
            Action.REANCHOR,
            (f"task drift: on-task {s.drift:.2f} < {p.drift_threshold} above the sweet spot",),
            Rule.DRIFT,
        )
    if s.same_mistake >= p.same_mistake:
        return Decision(
            Action.CLEAR_TOOL_RESULTS,
            (
                f"the same mistake {s.same_mistake} times (>= {p.same_mistake}): "
                "purge error output, re-include specs",
            ),
            Rule.SAME_MISTAKE,
        )
    if c.steps > p.max_turns:
        return Decision(
            Action.COMPRESS_HISTORY,
            (f"{c.steps} turns since the last reset (> {p.max_turns}): compress history",),
            Rule.TOO_MANY_TURNS,
        )
    return None


def _warnings(s: Snapshot, p: Profile) -> Decision | None:
    """Branches 10-11: tell someone, change nothing (prompt-cache misses; pressure, indicators, a
    failure streak or risk over their warning levels)."""
    if s.low_cache_turns >= p.cache_miss_turns:
        return Decision(
            Action.WARN,
            (
                f"prompt cache: {s.cache_hit_rate:.0%} hit rate, under {p.cache_hit_min:.0%} for "
                f"{s.low_cache_turns} responses in a row (>= {p.cache_miss_turns}): restructure the "
                "prefix — keep the system prompt and tools byte-stable, append to history instead of "
                "editing it",
            ),
            Rule.CACHE_MISSES,
        )
    warnings: list[str] = []
    if s.pressure >= p.pressure_warning:
        warnings.append(f"pressure {s.pressure:.2f} >= {p.pressure_warning}")
    if s.indicators >= p.indicators_to_raise_zone:
        warnings.append(f"{s.indicators} early-warning indicators")
    streak = streak_reason(s.consecutive_failures, p.consecutive_failures)
    if streak is not None:
        warnings.append(streak)
    if s.risk is not None and s.risk >= p.risk_warning:
        warnings.append(f"risk {s.risk:.2f} >= {p.risk_warning}")
    return Decision(Action.WARN, tuple(warnings), Rule.WARNING) if warnings else None


def record(counters: Counters, action: Action, profile: Profile) -> Counters:
    """The counters after ``action`` was carried out (restart: cooldown, restarts + 1, steps reset)."""
    if action is Action.RESTART:
        return Counters(counters.restarts + 1, counters.truncations, profile.cooldown, 0)
    if action is Action.TRUNCATE:
        return replace(counters, truncations=counters.truncations + 1, steps=0)
    if action is Action.COMPRESS_HISTORY:
        return replace(counters, steps=0)
    return counters


def tick(counters: Counters) -> Counters:
    """The counters after one more assistant turn (cooldown runs down, the step counter runs up)."""
    return Counters(
        counters.restarts, counters.truncations, max(0, counters.cooldown - 1), counters.steps + 1
    )
