"""The startup branch, the pressure gate, override, bundle, archive and memory files."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxhealth.errors import ConfigError, StateError
from ctxhealth.model import Format, Message, Role, Session, TextBlock, ToolCall
from ctxhealth.state.bundle import working_bundle
from ctxhealth.state.gate import GateRequest, GateZone, Thresholds, override, run_gate, zone_for
from ctxhealth.state.ledger import Ledger
from ctxhealth.state.memory import (
    MemoryKind,
    append_memory,
    read_memory,
    snapshot_from_session,
    write_snapshot,
)
from ctxhealth.state.schema import Artifact, LastAction, Outcome, TaskState
from ctxhealth.state.startup import ensure, inspect
from ctxhealth.state.status import Status
from ctxhealth.state.store import StateStore
from ctxhealth.state.summary import render_summary, summary_matches


def ticking_clock() -> Callable[[], datetime]:
    counter = itertools.count()
    start = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
    return lambda: start + timedelta(seconds=next(counter))


@pytest.fixture
def store(tmp_path: Path) -> StateStore:
    return StateStore(tmp_path / "root", clock=ticking_clock())


def _write(store: StateStore, **fields: str) -> TaskState:
    return store.write_state(replace(TaskState(goal="g", current_phase="p", next_action="n"), **fields))


# -- startup branch ----------------------------------------------------------------------


def test_nothing_then_initialise(store: StateStore) -> None:
    assert inspect(store).status is Status.MISSING_STATE
    assert not store.root.exists()  # inspect never writes
    result = ensure(store, goal="port the parser")
    assert result.status is Status.INITIALISED
    assert result.state is not None and result.state.next_action == "START"
    assert store.read_state() == result.state
    assert (store.summaries_dir / "latest-summary.md").is_file()
    assert ensure(store).status is Status.OK


def test_summary_without_state_is_missing_state(store: StateStore) -> None:
    store.summaries_dir.mkdir(parents=True)
    store.latest_summary_path.write_text("# old summary")
    result = ensure(store)
    assert result.status is Status.MISSING_STATE
    assert not store.state_path.exists()  # no write


@pytest.mark.parametrize("drop", ["goal", "current_phase", "next_action", "empty-next"])
def test_required_field_missing_is_missing_state(store: StateStore, drop: str) -> None:
    _write(store)
    doc = orjson.loads(store.state_path.read_bytes())
    if drop == "empty-next":
        doc["next_action"] = "  "
    else:
        del doc[drop]
    store.state_path.write_bytes(orjson.dumps(doc))
    result = ensure(store)
    assert result.status is Status.MISSING_STATE
    assert (drop if drop != "empty-next" else "next_action") in result.missing


def test_done_is_complete_with_final_write(store: StateStore) -> None:
    _write(store, next_action="DONE")
    result = ensure(store)
    assert result.status is Status.COMPLETE
    assert any(p.name.startswith("final-") for p in result.written)
    assert list(store.checkpoints_dir.glob("final-*.json"))


def test_conflicting_summary_is_rewritten_from_state(store: StateStore) -> None:
    state = _write(store)
    store.summaries_dir.mkdir(parents=True, exist_ok=True)
    store.latest_summary_path.write_text("# hand edited: next action is something else")
    assert inspect(store).summary_conflict
    result = ensure(store)
    assert result.status is Status.OK and result.summary_conflict
    assert store.latest_summary_path.read_text() == render_summary(state)
    assert list(store.summaries_dir.glob("conflict-*.md"))  # the conflicting one is kept
    assert not inspect(store).summary_conflict


def test_corrupt_state_is_invalid_with_archive_hint(store: StateStore) -> None:
    _write(store)
    store.state_path.write_bytes(store.state_path.read_bytes()[:25])
    result = ensure(store)
    assert result.status is Status.INVALID_STATE
    assert "archive" in result.hint


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("task-state.json", b'{"goal": "x", "next_action": "y"}'),
        ("task-state.json", b'{"schema": "ctxhealth/task-state", "schema_version": 99, "goal": "x"}'),
        ("task-state.json", b'{"name": "someone else"}'),
        ("task_state.json", b"{}"),
        ("state.json", b"{}"),
    ],
)
def test_legacy_or_foreign_state_needs_archive(store: StateStore, name: str, content: bytes) -> None:
    store.root.mkdir(parents=True)
    (store.root / name).write_bytes(content)
    before = sorted(p.name for p in store.root.rglob("*"))
    assert ensure(store).status is Status.FOREIGN_STATE
    with pytest.raises(StateError, match="legacy or foreign"):
        store.write_state(TaskState("g", "p", "n"))
    assert sorted(p.name for p in store.root.rglob("*")) == before  # nothing written
    moved = store.archive()
    assert moved.moved and (store.root / name).exists() is False
    assert (moved.destination / name).read_bytes() == content
    assert ensure(store).status is Status.INITIALISED


# -- the gate ----------------------------------------------------------------------------


def test_zones_and_threshold_validation() -> None:
    t = Thresholds()
    assert [zone_for(p, t) for p in (None, 0.1, 0.55, 0.7, 0.85, 1.2)] == [
        GateZone.UNKNOWN,
        GateZone.NORMAL,
        GateZone.WARNING,
        GateZone.COMPRESS,
        GateZone.CRITICAL,
        GateZone.CRITICAL,
    ]
    assert zone_for(0.6, Thresholds(0.3, 0.5, 0.6)) is GateZone.CRITICAL
    with pytest.raises(ConfigError):
        Thresholds(0.7, 0.6, 0.9)
    with pytest.raises(ConfigError):
        GateRequest(pressure=float("nan"))


def test_low_pressure_continues_without_writes(store: StateStore) -> None:
    ensure(store)
    result = run_gate(store, GateRequest(pressure=0.2, turn=2))
    assert result.status is Status.OK and result.zone is GateZone.NORMAL
    assert result.checkpoint is None and result.summary is None


def test_critical_halts_writes_and_refuses_until_override(store: StateStore, tmp_path: Path) -> None:
    ensure(store)
    with Ledger.open(tmp_path / "home") as ledger:
        halted = run_gate(store, GateRequest(pressure=0.9, turn=5, session_id="s"), ledger=ledger)
        assert halted.status is Status.HALT_CONTEXT_LIMIT and halted.halted
        assert halted.checkpoint is not None and halted.checkpoint.is_file()
        assert halted.summary is not None and halted.summary.is_file()
        assert [d.action for d in ledger.decisions("s")] == ["gate:halt"]
        assert ledger.counts()["checkpoints"] == 1
    # refuses, even at low pressure, and says so at startup too
    assert run_gate(store, GateRequest(pressure=0.1, turn=6)).status is Status.HALT_CONTEXT_LIMIT
    assert inspect(store).status is Status.HALT_CONTEXT_LIMIT
    override(store, reason="person approved", allow=1)
    assert inspect(store).status is Status.OK
    passed = run_gate(store, GateRequest(pressure=0.95, turn=7))
    assert passed.status is Status.OK and passed.override_used
    assert run_gate(store, GateRequest(pressure=0.95, turn=8)).status is Status.HALT_CONTEXT_LIMIT
    assert store.read_control().overrides[-1]["reason"] == "person approved"


def test_missing_pressure_after_first_turn_halts(store: StateStore) -> None:
    ensure(store)
    assert run_gate(store, GateRequest(pressure=None, turn=1)).status is Status.OK
    result = run_gate(store, GateRequest(pressure=None, turn=2))
    assert result.status is Status.HALT_CONTEXT_LIMIT
    assert any("no pressure" in r for r in result.reasons)


def test_turn_counter_is_used_when_turn_not_given(store: StateStore) -> None:
    ensure(store)
    assert run_gate(store, GateRequest()).status is Status.OK  # first call = first turn
    assert run_gate(store, GateRequest()).status is Status.HALT_CONTEXT_LIMIT


def test_flags(store: StateStore) -> None:
    ensure(store)
    changed = run_gate(store, GateRequest(pressure=0.1, turn=2, action_changed_state=True))
    assert changed.checkpoint is not None and changed.summary is not None
    phase = run_gate(store, GateRequest(pressure=0.1, turn=3, phase_or_goal_changed=True))
    assert phase.checkpoint is None and phase.summary is not None
    conflict = run_gate(store, GateRequest(pressure=0.1, turn=4, summary_conflict=True))
    assert conflict.checkpoint is None and conflict.summary is not None
    compress = run_gate(store, GateRequest(pressure=0.75, turn=5))
    assert compress.status is Status.OK and compress.checkpoint is not None


def test_update_changes_state_and_detects_phase_change(store: StateStore) -> None:
    ensure(store)
    result = run_gate(
        store, GateRequest(pressure=0.1, turn=2, update={"current_phase": "test", "next_action": "x"})
    )
    assert result.state is not None and result.state.current_phase == "test"
    assert "phase or goal changed" in result.reasons
    assert store.read_state() == result.state
    final = run_gate(store, GateRequest(pressure=0.1, turn=3, update={"next_action": "FINISH"}))
    assert final.status is Status.COMPLETE


def test_gate_on_missing_or_invalid_state(store: StateStore) -> None:
    assert run_gate(store, GateRequest(pressure=0.1)).status is Status.MISSING_STATE
    ensure(store)
    store.state_path.write_text("{")
    assert run_gate(store, GateRequest(pressure=0.1)).status is Status.INVALID_STATE


def test_state_written_is_redacted(store: StateStore) -> None:
    key = "AKIA" + "Q3EXAMPLE7Z2WX4Y"
    ensure(store)
    run_gate(store, GateRequest(pressure=0.1, turn=2, update={"important_outputs": [f"aws id {key}"]}))
    for path in store.root.rglob("*"):
        if path.is_file():
            assert key.encode() not in path.read_bytes(), path


# -- bundle, memory, snapshot ------------------------------------------------------------


def test_bundle_holds_only_what_is_needed() -> None:
    state = TaskState(
        goal="g",
        current_phase="p",
        next_action="n",
        last_action=LastAction("ran tests", Outcome.FAILURE),
        completed_steps=("wrote parser",),
        constraints=("no new deps",),
        invariants=("api stable",),
        blockers=("ci",),
        artifacts=(Artifact("a.py", "main"), Artifact("old.py", "obsolete")),
    )
    bundle = working_bundle(state).to_dict()
    assert set(bundle) == {
        "goal",
        "current_phase",
        "next_action",
        "last_successful_action",
        "constraints",
        "artifacts",
    }
    assert bundle["last_successful_action"] == "wrote parser"
    assert bundle["artifacts"] == [{"path": "a.py", "role": "main"}]
    full = working_bundle(state, full=True).to_dict()
    assert full["invariants"] == ["api stable"] and full["blockers"] == ["ci"]


def test_memory_files_append_and_read(store: StateStore) -> None:
    append_memory(store, MemoryKind.LEARNINGS, "tests need the venv")
    append_memory(store, MemoryKind.LEARNINGS, "password=" + "hunter2x")
    assert read_memory(store, MemoryKind.LEARNINGS) == ["tests need the venv", "password=[REDACTED:secret]"]
    assert read_memory(store, MemoryKind.ISSUES) == []
    with pytest.raises(StateError):
        append_memory(store, MemoryKind.DECISIONS, "   ")


def test_pre_compaction_snapshot(store: StateStore) -> None:
    def assistant(*calls: ToolCall) -> Message:
        return Message(Role.ASSISTANT, calls)

    session = Session(
        path="t.json",
        format=Format.OPENAI_CHAT,
        session_id="s1",
        messages=(
            Message(Role.USER, (TextBlock("Port the parser to rust"),)),
            assistant(ToolCall("1", "Read", {"file_path": "src/a.py"})),
            assistant(ToolCall("2", "Edit", {"file_path": "src/a.py", "old_string": "a", "new_string": "b"})),
            Message(Role.USER, (TextBlock("No, keep the python version too"),)),
            assistant(ToolCall("3", "Write", {"file_path": "src/b.rs", "content": "x"})),
            Message(Role.USER, (TextBlock("looks good"),)),
        ),
    )
    snap = snapshot_from_session(session)
    assert snap.original_intent == "Port the parser to rust"
    assert snap.active_files == ("src/b.rs", "src/a.py")
    assert (snap.edit_count, snap.correction_count) == (2, 1)
    path = write_snapshot(store, snap)
    assert orjson.loads(path.read_bytes())["edit_count"] == 2
    assert (store.snapshots_dir / "latest-pre-compaction.json").read_bytes() == path.read_bytes()


def test_thresholds_from_a_policy_profile() -> None:
    from ctxhealth.policy.profile import Profile

    assert Thresholds.from_profile(Profile()) == Thresholds()
    custom = Profile(pressure_warning=0.5, pressure_compress=0.6, pressure_critical=0.7)
    assert zone_for(0.72, Thresholds.from_profile(custom)) is GateZone.CRITICAL


_op = st.one_of(
    st.tuples(
        st.just("gate"),
        st.one_of(st.none(), st.floats(min_value=0.0, max_value=1.2, allow_nan=False)),
        st.booleans(),
        st.booleans(),
        st.sampled_from([None, "work", "DONE"]),
    ),
    st.tuples(st.just("override"), st.integers(1, 3)),
)


@settings(max_examples=25, deadline=None)
@given(ops=st.lists(_op, min_size=1, max_size=12))
def test_gate_invariants(tmp_path_factory: pytest.TempPathFactory, ops: list[tuple[object, ...]]) -> None:
    store = StateStore(tmp_path_factory.mktemp("gate") / "root", clock=ticking_clock())
    ensure(store)
    halted, allowance, current = False, 0, "START"
    for op in ops:
        if op[0] == "override":
            allowance = int(op[1])  # type: ignore[call-overload]
            override(store, allow=allowance)
            halted = False
            continue
        _, pressure, changed, phase, next_action = op
        update = None if next_action is None else {"next_action": next_action}
        request = GateRequest(
            pressure=pressure,  # type: ignore[arg-type]
            action_changed_state=bool(changed),
            phase_or_goal_changed=bool(phase),
            update=update,
        )
        result = run_gate(store, request)
        if halted:
            assert result.status is Status.HALT_CONTEXT_LIMIT  # refused until an override
            continue
        current = str(next_action) if next_action is not None else current
        if current == "DONE":
            assert result.status is Status.COMPLETE
        else:
            missing = pressure is None and result.turn is not None and result.turn > 1
            critical = missing or (pressure is not None and float(pressure) >= 0.85)  # type: ignore[arg-type]
            if critical and allowance == 0:
                assert result.status is Status.HALT_CONTEXT_LIMIT
                assert result.checkpoint is not None and result.summary is not None
                halted = True
            else:
                assert result.status is Status.OK
                if critical:
                    assert result.override_used
                    allowance -= 1
        state = store.read_state()  # always loadable
        assert state is not None
        if result.summary is not None:
            assert summary_matches(store.read_summary() or "", state)
        assert inspect(store).status in (Status.OK, Status.HALT_CONTEXT_LIMIT, Status.COMPLETE)


def test_ledger_failure_does_not_undo_the_halt(store: StateStore, tmp_path: Path) -> None:
    ensure(store)
    ledger = Ledger.open(tmp_path / "home")
    ledger.close()  # every write now fails
    result = run_gate(store, GateRequest(pressure=0.9, turn=2), ledger=ledger)
    assert result.status is Status.HALT_CONTEXT_LIMIT and result.ledger_error
    assert inspect(store).status is Status.HALT_CONTEXT_LIMIT
