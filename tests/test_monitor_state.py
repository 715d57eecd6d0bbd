"""The Monitor's saved state is explicit (one struct per detector, :mod:`ctxhealth.signals.state`),
and states saved by the reflective format before it (version 3: the hooks' tail caches and ledgers,
the proxy's sessions) still load and assess exactly as the monitor that saved them would have.

``fixtures/monitor/main_v3_snapshot.json`` was written by ``tests/monitor_state_session.py`` run on
the code before the explicit format: a snapshot taken mid-session (after a recorded restart, so the
cooldown is running) and a digest of every reading that code gave for the rest of the session.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from ctxhealth.accounting.registry import ModelRegistry
from ctxhealth.accounting.types import ModelInfo
from ctxhealth.errors import StateError
from ctxhealth.monitor import LEGACY_SNAPSHOT_VERSION, SNAPSHOT_VERSION, Monitor
from ctxhealth.signals.state import MonitorState
from monitor_state_session import CUT, digest, session

FIXTURE = Path(__file__).parent / "fixtures" / "monitor" / "main_v3_snapshot.json"


def _fixture() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(FIXTURE.read_text())
    return data


def _rest(m: Monitor) -> list[dict[str, Any]]:
    out = []
    for message in session()[CUT:]:
        a = m.observe(message)
        out.append({"assessment": a.to_dict(), "features": m.features()})
    return out


def _as_recorded() -> ModelInfo:
    """The fixture's model as it was read when the fixture was written: its session goes past 200K on
    ``claude-sonnet-4`` (made-up fills), which now proves the 1M variant (``ModelInfo.with_prompt_seen``);
    given as that 200K window, the old state must resume exactly as it did."""
    return (
        ModelRegistry.default().lookup("claude-sonnet-4").with_window(200_000, usable=False, origin="fixture")
    )


def test_a_state_saved_by_the_old_format_resumes_exactly_as_before() -> None:
    saved = _fixture()
    assert saved["snapshot"]["version"] == LEGACY_SNAPSHOT_VERSION
    m = Monitor.restore(saved["snapshot"], info=_as_recorded())
    assert m.counters.cooldown == 3 and m.counters.restarts == 1  # the saved recovery is back
    readings = _rest(m)
    assert readings[-1] == saved["last"]
    assert digest(readings) == saved["after_sha256"]


def test_an_old_state_saved_again_in_the_new_format_resumes_the_same() -> None:
    saved = _fixture()
    again = json.loads(
        json.dumps(Monitor.restore(saved["snapshot"], info=_as_recorded()).snapshot(), allow_nan=False)
    )
    assert again["version"] == SNAPSHOT_VERSION
    assert digest(_rest(Monitor.restore(again, info=_as_recorded()))) == saved["after_sha256"]


def test_the_saved_state_is_the_struct_fields_and_nothing_else() -> None:
    m = Monitor(track_hedges=True)
    for message in session()[:CUT]:
        m.observe(message)
    m.some_new_attribute = "not state"  # type: ignore[attr-defined]
    m.drift.another_cache = {"x": 1}  # type: ignore[attr-defined]
    data = m.snapshot()
    assert set(data["state"]) == set(MonitorState.__struct_fields__)
    assert "not state" not in json.dumps(data) and "another_cache" not in json.dumps(data)
    # and it is a complete state: resumed, the monitor goes on exactly as the uninterrupted one
    resumed = Monitor.restore(json.loads(json.dumps(data, allow_nan=False)))
    assert _rest(resumed) == _rest(m)


def test_a_snapshot_between_update_and_assess_keeps_what_assess_needs() -> None:
    msgs = session()
    one, two = Monitor(), Monitor()
    for message in msgs:
        one.update(message)
        two.update(message)
        two = Monitor.restore(json.loads(json.dumps(two.snapshot())))
        assert one.assess().to_dict() == two.assess().to_dict()


@pytest.mark.parametrize(
    "damage",
    [
        lambda s: s["drift"].update(similarity="high"),
        lambda s: s["failures"].pop("window"),
        lambda s: s["repetition"].update(unknown_field=1),
        lambda s: s["pending_calls"].append(["id", {"key": 1}, 3]),
        lambda s: s.update(turn=None),
    ],
)
def test_a_damaged_state_is_refused(damage: Any) -> None:
    m = Monitor()
    for message in session()[:12]:
        m.observe(message)
    data = m.snapshot()
    damaged = copy.deepcopy(data)
    damage(damaged["state"])
    with pytest.raises(StateError):
        Monitor.restore(damaged)


def test_a_damaged_old_state_is_refused() -> None:
    saved = _fixture()["snapshot"]
    for name, value in (("drift", {"$x": {"_runs": {"$zz": 1}}}), ("turn", "3"), ("no_such", 1)):
        damaged = copy.deepcopy(saved)
        damaged["state"][name] = value
        with pytest.raises(StateError):
            Monitor.restore(damaged)
