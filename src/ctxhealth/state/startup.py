"""The startup branch: what an agent finds when it (re)starts, and what ``ensure`` does about it.

    legacy / foreign state files           → FOREIGN_STATE   (nothing written; archive first)
    no state, no summary                   → initialise (next_action START) → INITIALISED
    summary but no state                   → MISSING_STATE
    state unreadable / invalid             → INVALID_STATE   (archive is the way out)
    required field missing, next_action "" → MISSING_STATE
    next_action DONE / COMPLETE / FINISH   → final write → COMPLETE
    halted by the gate                     → HALT_CONTEXT_LIMIT
    summary missing or not matching state  → trust the state, rewrite the summary → OK
    otherwise                              → OK

:func:`inspect` only looks; :func:`ensure` also writes what the branch calls for.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ctxhealth.errors import StateError
from ctxhealth.state.schema import (
    START_ACTION,
    TaskState,
    decode_document,
    missing_required,
    state_from_dict,
)
from ctxhealth.state.status import Status
from ctxhealth.state.store import StateStore
from ctxhealth.state.summary import summary_matches

__all__ = ["StartupResult", "ensure", "inspect"]


@dataclass(frozen=True, slots=True)
class StartupResult:
    status: Status
    detail: str
    state: TaskState | None = None
    hint: str = ""
    missing: tuple[str, ...] = ()
    summary_conflict: bool = False
    written: tuple[Path, ...] = ()


def _classify(store: StateStore) -> StartupResult:
    """The read-only part of the branch, shared by :func:`inspect` and :func:`ensure`."""
    foreign = store.foreign_files()
    if foreign:
        listing = ", ".join(f"{p.name} ({k.value})" for p, k in foreign)
        return StartupResult(
            Status.FOREIGN_STATE,
            f"legacy or foreign state found: {listing}",
            hint="run `ctxhealth state archive` to move it aside; nothing was written",
        )
    has_state, has_summary = store.has_state(), store.has_summary()
    if not has_state and not has_summary:
        return StartupResult(
            Status.MISSING_STATE,
            "no task state and no summary yet",
            hint="run `ctxhealth state ensure` to initialise",
            missing=("task-state.json",),
        )
    if not has_state:
        return StartupResult(
            Status.MISSING_STATE,
            "a summary exists but the task state is missing",
            hint="recreate the task state from the summary, or `ctxhealth state archive` to start over",
            missing=("task-state.json",),
        )
    try:
        document = decode_document(store.read_state_bytes(), path=str(store.state_path))
        missing = missing_required(document) if isinstance(document, dict) else []
        if missing:
            return StartupResult(
                Status.MISSING_STATE,
                f"task state lacks required field(s): {', '.join(missing)}",
                hint="fill them in (next_action must not be empty), or `ctxhealth state archive`",
                missing=tuple(missing),
            )
        state = state_from_dict(document, path=str(store.state_path))
        control = store.read_control()
    except StateError as exc:
        return StartupResult(Status.INVALID_STATE, exc.render(), hint=exc.hint)
    if state.is_done:
        return StartupResult(Status.COMPLETE, f"task complete (next_action {state.next_action})", state)
    summary = store.read_summary()
    conflict = summary is None or not summary_matches(summary, state)
    if control.halt is not None:
        return StartupResult(
            Status.HALT_CONTEXT_LIMIT,
            f"halted: {control.halt.reason}",
            state,
            hint="checkpoint and summary are written; restart from them, or `ctxhealth state override`",
            summary_conflict=conflict,
        )
    return StartupResult(Status.OK, f"next action: {state.next_action}", state, summary_conflict=conflict)


def inspect(store: StateStore) -> StartupResult:
    """Report the startup status without writing anything."""
    return _classify(store)


def ensure(store: StateStore, *, goal: str = "") -> StartupResult:
    """Run the startup branch and perform its writes (initialise, final write, summary repair)."""
    result = _classify(store)
    if result.status is Status.MISSING_STATE and not store.has_state() and not store.has_summary():
        state = store.write_state(
            TaskState(goal=goal, current_phase="start", next_action=START_ACTION, updated_at=store.now_iso())
        )
        summary = store.write_summary(state)
        return StartupResult(
            Status.INITIALISED,
            f"initialised a new task state (next_action {START_ACTION})",
            state,
            written=(store.state_path, summary, store.latest_summary_path),
        )
    if result.state is None:
        return result
    if result.status is Status.COMPLETE:
        checkpoint = store.write_state_checkpoint(result.state, "final")
        summary = store.write_summary(result.state)
        return StartupResult(
            result.status,
            result.detail,
            result.state,
            written=(checkpoint, summary, store.latest_summary_path),
        )
    if result.summary_conflict:
        aside = store.set_aside_summary()
        summary = store.write_summary(result.state)
        written = (summary, store.latest_summary_path) + ((aside,) if aside else ())
        return StartupResult(
            result.status,
            result.detail + " (summary rewritten from the state)",
            result.state,
            hint=result.hint,
            summary_conflict=True,
            written=written,
        )
    return result
