"""The decision tree: every branch in order, the circuit breaker, cooldown; total and deterministic."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from msgspec.structs import replace

from ctxhealth.policy import Action, Counters, Rule, Snapshot, decide, record, tick
from ctxhealth.policy.profile import Profile
from ctxhealth.signals.pressure import Zone

P = Profile()
SPIRAL = Snapshot(failure_rate=0.5, recent_calls=4)


def test_healthy_is_continue() -> None:
    d = decide(Snapshot(), Counters(), P)
    assert (d.action, d.rule) == (Action.CONTINUE, Rule.HEALTHY)


def test_cooldown_wins_over_everything() -> None:
    worst = Snapshot(zone=Zone.CRITICAL, pressure=1.2, failure_rate=1.0, recent_calls=10, same_mistake=9)
    d = decide(worst, Counters(cooldown=2), P)
    assert (d.action, d.rule) == (Action.CONTINUE, Rule.COOLDOWN)
    assert "2 turns left" in d.reasons[0]


def test_failure_spiral_restarts_only_above_rate_and_min_calls() -> None:
    assert decide(SPIRAL, Counters(), P).action is Action.RESTART
    assert decide(replace(SPIRAL, failure_rate=0.4), Counters(), P).rule is not Rule.FAILURE_SPIRAL
    assert decide(replace(SPIRAL, recent_calls=3), Counters(), P).rule is not Rule.FAILURE_SPIRAL


@pytest.mark.parametrize("zone", [Zone.RED, Zone.CRITICAL])
def test_hard_limit_restarts(zone: Zone) -> None:
    d = decide(Snapshot(zone=zone, pressure=0.5, fill=190_000), Counters(), P)
    assert (d.action, d.rule) == (Action.RESTART, Rule.HARD_LIMIT)


def test_compact_zone_after_two_truncations_restarts() -> None:
    s = Snapshot(zone=Zone.ORANGE, pressure=0.7)
    assert decide(s, Counters(truncations=2), P).rule is Rule.REPEATED_TRUNCATION
    assert decide(s, Counters(truncations=2), P).action is Action.RESTART
    assert decide(s, Counters(truncations=1), P).rule is Rule.COMPACT_ZONE


def test_critical_pressure_halts_or_restarts_by_profile() -> None:
    s = Snapshot(zone=Zone.YELLOW, pressure=0.86, utilisation=0.86)
    d = decide(s, Counters(), P)
    assert (d.action, d.rule) == (Action.HALT, Rule.CRITICAL_PRESSURE)
    assert decide(s, Counters(), replace(P, halt_on_critical=False)).action is Action.RESTART
    assert decide(replace(s, pressure=0.84), Counters(), P).rule is not Rule.CRITICAL_PRESSURE


def test_compact_zone_truncates() -> None:
    d = decide(Snapshot(zone=Zone.ORANGE, pressure=0.7), Counters(), P)
    assert (d.action, d.rule) == (Action.TRUNCATE, Rule.COMPACT_ZONE)


def test_drift_reanchors_only_above_sweet_spot() -> None:
    s = Snapshot(zone=Zone.YELLOW, drift=0.1, above_sweet_spot=True, pressure=0.5)
    assert decide(s, Counters(), P).action is Action.REANCHOR
    assert decide(replace(s, above_sweet_spot=False), Counters(), P).action is not Action.REANCHOR
    assert decide(replace(s, drift=0.15), Counters(), P).action is not Action.REANCHOR


def test_same_mistake_clears_tool_results() -> None:
    d = decide(Snapshot(same_mistake=3), Counters(), P)
    assert (d.action, d.rule) == (Action.CLEAR_TOOL_RESULTS, Rule.SAME_MISTAKE)
    assert decide(Snapshot(same_mistake=2), Counters(), P).action is Action.CONTINUE


def test_more_than_max_turns_compresses_history() -> None:
    assert decide(Snapshot(), Counters(steps=31), P).action is Action.COMPRESS_HISTORY
    assert decide(Snapshot(), Counters(steps=30), P).action is Action.CONTINUE


def test_low_cache_hits_for_enough_responses_warn_to_restructure_the_prefix() -> None:
    d = decide(Snapshot(cache_hit_rate=0.1, low_cache_turns=5), Counters(), P)
    assert (d.action, d.rule) == (Action.WARN, Rule.CACHE_MISSES)
    assert "restructure the prefix" in d.reasons[0] and "10%" in d.reasons[0]
    assert decide(Snapshot(cache_hit_rate=0.1, low_cache_turns=4), Counters(), P).rule is Rule.HEALTHY


def test_cache_misses_come_after_history_compression_and_before_plain_warnings() -> None:
    low = Snapshot(cache_hit_rate=0.0, low_cache_turns=9, pressure=0.6)
    assert decide(low, Counters(steps=31), P).rule is Rule.TOO_MANY_TURNS
    assert decide(low, Counters(), P).rule is Rule.CACHE_MISSES
    assert decide(replace(low, low_cache_turns=0), Counters(), P).rule is Rule.WARNING


@pytest.mark.parametrize(
    "snapshot, words",
    [
        (Snapshot(pressure=0.55), "pressure"),
        (Snapshot(indicators=2), "indicators"),
        (Snapshot(consecutive_failures=3), "consecutive"),
        (Snapshot(risk=0.9), "risk"),
    ],
)
def test_warnings(snapshot: Snapshot, words: str) -> None:
    d = decide(snapshot, Counters(), P)
    assert d.action is Action.WARN
    assert words in " ".join(d.reasons)


def test_order_failure_spiral_before_hard_limit() -> None:
    d = decide(replace(SPIRAL, zone=Zone.RED), Counters(), P)
    assert d.rule is Rule.FAILURE_SPIRAL


def test_circuit_breaker_turns_restart_into_truncate_and_warns() -> None:
    for snapshot in (SPIRAL, Snapshot(zone=Zone.RED), Snapshot(zone=Zone.ORANGE)):
        d = decide(snapshot, Counters(restarts=3, truncations=2), P)
        assert d.action is Action.TRUNCATE
        assert "circuit breaker" in d.reasons[-1]
    assert decide(SPIRAL, Counters(restarts=2), P).action is Action.RESTART


def test_record_restart_starts_cooldown_and_resets_steps() -> None:
    c = record(Counters(restarts=1, truncations=1, steps=40), Action.RESTART, P)
    assert c == Counters(restarts=2, truncations=1, cooldown=3, steps=0)
    c = record(Counters(steps=40), Action.TRUNCATE, P)
    assert (c.truncations, c.steps) == (1, 0)
    assert record(Counters(steps=40), Action.COMPRESS_HISTORY, P).steps == 0
    assert record(Counters(steps=40), Action.WARN, P) == Counters(steps=40)


def test_cooldown_lasts_three_turns() -> None:
    c = record(Counters(), Action.RESTART, P)
    actions = []
    for _ in range(5):
        actions.append(decide(SPIRAL, c, P).action)
        c = tick(c)
    assert actions == [Action.CONTINUE] * 3 + [Action.RESTART] * 2


def test_thresholds_come_from_the_profile() -> None:
    strict = P.with_overrides({"failure_rate": 0.2, "max_turns": 5, "cooldown": 1})
    assert decide(Snapshot(failure_rate=0.3, recent_calls=4), Counters(), strict).action is Action.RESTART
    assert decide(Snapshot(), Counters(steps=6), strict).action is Action.COMPRESS_HISTORY
    assert record(Counters(), Action.RESTART, strict).cooldown == 1


snapshots = st.builds(
    Snapshot,
    zone=st.sampled_from(list(Zone)),
    pressure=st.floats(min_value=0, max_value=3, allow_nan=False),
    fill=st.integers(min_value=0, max_value=2_000_000),
    utilisation=st.floats(min_value=0, max_value=3, allow_nan=False),
    failure_rate=st.floats(min_value=0, max_value=1),
    recent_calls=st.integers(min_value=0, max_value=100),
    drift=st.floats(min_value=0, max_value=1),
    above_sweet_spot=st.booleans(),
    same_mistake=st.integers(min_value=0, max_value=10),
    consecutive_failures=st.integers(min_value=0, max_value=10),
    indicators=st.integers(min_value=0, max_value=5),
    risk=st.one_of(st.none(), st.floats(min_value=0, max_value=1)),
    cache_hit_rate=st.floats(min_value=0, max_value=1),
    low_cache_turns=st.integers(min_value=0, max_value=20),
)
counters = st.builds(
    Counters,
    restarts=st.integers(min_value=0, max_value=6),
    truncations=st.integers(min_value=0, max_value=6),
    cooldown=st.integers(min_value=0, max_value=4),
    steps=st.integers(min_value=0, max_value=60),
)


@given(snapshots, counters)
def test_decide_is_total_and_deterministic(s: Snapshot, c: Counters) -> None:
    a = decide(s, c, P)
    b = decide(s, c, P)
    assert a == b
    assert isinstance(a.action, Action) and a.reasons
    if c.restarts >= P.max_restarts:
        assert a.action is not Action.RESTART
    if c.cooldown > 0:
        assert a.action is Action.CONTINUE


def test_a_zones_level_is_its_position_from_best_to_worst() -> None:
    """:attr:`Zone.level` (an attribute set once on each member) is the member's position in
    :data:`ZONES`, the declared order, and what :func:`worse` and :meth:`Zone.raised` read."""
    from ctxhealth.signals.zones import ZONES, Zone, worse

    assert tuple(Zone) == ZONES
    for i, zone in enumerate(Zone):
        assert zone.level == i
        assert Zone(zone.value).level == i
        for other in Zone:
            assert worse(zone, other) is (zone if i >= list(Zone).index(other) else other)
    assert Zone.GREEN.raised() is Zone.YELLOW and Zone.CRITICAL.raised() is Zone.CRITICAL
