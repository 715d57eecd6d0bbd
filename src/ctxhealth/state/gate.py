"""The pressure gate run before each major action, and the explicit override that lifts a halt.

The host reports context pressure on the spec's 0..1 scale. The gate maps it to a
zone (warning 0.55, compress 0.70, critical 0.85 by default) and decides what to
write and whether the agent may go on:

* critical pressure, or no pressure reported after the first turn: write a state
  checkpoint and a fresh summary, record a halt, answer ``HALT_CONTEXT_LIMIT`` and
  keep answering it until :func:`override` is called;
* compress zone, ``action_changed_state`` or a state update: checkpoint + summary;
* ``phase_or_goal_changed`` or ``summary_conflict`` (or a summary that no longer
  matches the state): a fresh summary;
* next_action DONE / COMPLETE / FINISH: final write, ``COMPLETE``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

from ctxhealth.errors import ConfigError, LedgerError
from ctxhealth.policy import Profile, defaults
from ctxhealth.state.ledger import Ledger
from ctxhealth.state.schema import TaskState, merge_update
from ctxhealth.state.startup import inspect
from ctxhealth.state.status import Status
from ctxhealth.state.store import Control, HaltRecord, StateStore
from ctxhealth.state.summary import summary_matches

__all__ = ["GateRequest", "GateResult", "GateZone", "Thresholds", "override", "run_gate", "zone_for"]


class GateZone(StrEnum):
    """Where a pressure reading falls among the gates (not the signals layer's health ``Zone``)."""

    NORMAL = "normal"
    WARNING = "warning"
    COMPRESS = "compress"
    CRITICAL = "critical"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Thresholds:
    """Pressure gates on the 0..1 scale; each is inclusive (pressure >= gate)."""

    warning: float = defaults.PRESSURE_WARNING
    compress: float = defaults.PRESSURE_COMPRESS
    critical: float = defaults.PRESSURE_CRITICAL

    def __post_init__(self) -> None:
        if not 0.0 < self.warning < self.compress < self.critical <= 1.0:
            raise ConfigError(
                f"pressure thresholds must satisfy 0 < warning < compress < critical <= 1 "
                f"(got {self.warning}, {self.compress}, {self.critical})",
                hint="pass values such as --warning 0.55 --compress 0.70 --critical 0.85",
            )

    @classmethod
    def from_profile(cls, profile: Profile) -> Thresholds:
        """The gates of a policy profile (``pressure_warning`` / ``_compress`` / ``_critical``)."""
        return cls(profile.pressure_warning, profile.pressure_compress, profile.pressure_critical)


def zone_for(pressure: float | None, thresholds: Thresholds) -> GateZone:
    if pressure is None:
        return GateZone.UNKNOWN
    if pressure >= thresholds.critical:
        return GateZone.CRITICAL
    if pressure >= thresholds.compress:
        return GateZone.COMPRESS
    if pressure >= thresholds.warning:
        return GateZone.WARNING
    return GateZone.NORMAL


@dataclass(frozen=True, slots=True)
class GateRequest:
    """One gate call. ``turn`` is 1-based; when None the store's own counter is used."""

    pressure: float | None = None
    turn: int | None = None
    action_changed_state: bool = False
    phase_or_goal_changed: bool = False
    summary_conflict: bool = False
    update: dict[str, Any] | None = None
    session_id: str | None = None

    def __post_init__(self) -> None:
        if self.pressure is not None and not self.pressure >= 0.0:  # also rejects NaN
            raise ConfigError(
                f"pressure must be a non-negative fraction (got {self.pressure})",
                hint="pass the host's context pressure as a fraction, e.g. 0.62",
            )


@dataclass(frozen=True, slots=True)
class GateResult:
    status: Status
    zone: GateZone
    detail: str
    pressure: float | None = None
    turn: int | None = None
    state: TaskState | None = None
    checkpoint: Path | None = None
    summary: Path | None = None
    halted: bool = False
    override_used: bool = False
    reasons: tuple[str, ...] = ()
    hint: str = ""
    ledger_error: str = ""  # set when the ledger could not record this call


def _check_numbers(request: GateRequest) -> None:
    if request.turn is not None and request.turn < 1:
        raise ConfigError(f"turn must be 1 or more (got {request.turn})", hint="turns are counted from 1")


def run_gate(
    store: StateStore,
    request: GateRequest,
    thresholds: Thresholds | None = None,
    *,
    ledger: Ledger | None = None,
) -> GateResult:
    """Run the gate once: maybe update the state, write checkpoint / summary, halt or let through."""
    _check_numbers(request)
    thresholds = thresholds or Thresholds()
    zone = zone_for(request.pressure, thresholds)
    start = inspect(store)
    if start.status not in (Status.OK, Status.COMPLETE) or start.state is None:
        if start.status is Status.HALT_CONTEXT_LIMIT:
            return GateResult(
                start.status,
                zone,
                start.detail + " (refusing until `ctxhealth state override`)",
                request.pressure,
                request.turn,
                start.state,
                halted=True,
                hint=start.hint,
            )
        return GateResult(start.status, zone, start.detail, request.pressure, request.turn, hint=start.hint)

    control = store.read_control()
    turn = request.turn if request.turn is not None else control.gate_calls + 1
    control = replace(control, gate_calls=control.gate_calls + 1)
    state = start.state
    reasons: list[str] = []
    phase_or_goal_changed = request.phase_or_goal_changed
    if request.update is not None:
        updated = merge_update(state, request.update, path=str(store.state_path)).touched(store.now_iso())
        if (updated.goal, updated.current_phase) != (state.goal, state.current_phase):
            phase_or_goal_changed = True
        state = store.write_state(updated)
        reasons.append("state updated")

    if state.is_done:
        final = store.write_state_checkpoint(state, "final")
        final_summary = store.write_summary(state)
        store.write_control(control)
        noted = _record(
            ledger, request, turn, zone, "complete", "next_action ends the task", final, final_summary
        )
        return GateResult(
            Status.COMPLETE,
            zone,
            f"task complete (next_action {state.next_action})",
            request.pressure,
            turn,
            state,
            final,
            final_summary,
            reasons=(*reasons, "final write"),
            ledger_error=noted,
        )

    missing_pressure = request.pressure is None and turn > 1
    must_halt = zone is GateZone.CRITICAL or missing_pressure
    if zone is GateZone.CRITICAL:
        reasons.append(f"pressure {request.pressure:.2f} >= critical {thresholds.critical:.2f}")
    if missing_pressure:
        reasons.append(f"no pressure reported at turn {turn}")
    if zone is GateZone.COMPRESS:
        reasons.append(f"pressure {request.pressure:.2f} >= compress {thresholds.compress:.2f}")
    if request.action_changed_state:
        reasons.append("action changed state")
    want_checkpoint = (
        must_halt or zone is GateZone.COMPRESS or request.action_changed_state or request.update is not None
    )
    stale_summary = not summary_matches(store.read_summary() or "", state)
    if phase_or_goal_changed:
        reasons.append("phase or goal changed")
    if request.summary_conflict:
        reasons.append("summary conflict reported")
    want_summary = want_checkpoint or phase_or_goal_changed or request.summary_conflict or stale_summary

    checkpoint = store.write_state_checkpoint(state) if want_checkpoint else None
    summary = store.write_summary(state) if want_summary else None

    if must_halt and control.override_remaining > 0:
        control = replace(control, override_remaining=control.override_remaining - 1)
        store.write_control(control)
        detail = "critical: continuing under an explicit override"
        noted = _record(ledger, request, turn, zone, "override", "; ".join(reasons), checkpoint, summary)
        return GateResult(
            Status.OK,
            zone,
            detail,
            request.pressure,
            turn,
            state,
            checkpoint,
            summary,
            override_used=True,
            reasons=tuple(reasons),
            ledger_error=noted,
        )
    if must_halt:
        reason = "; ".join(r for r in reasons if "pressure" in r) or "context limit"
        halt = HaltRecord(reason=reason, at=store.now_iso(), pressure=request.pressure, turn=turn)
        store.write_control(replace(control, halt=halt))
        noted = _record(ledger, request, turn, zone, "halt", reason, checkpoint, summary)
        return GateResult(
            Status.HALT_CONTEXT_LIMIT,
            zone,
            f"halted: {reason}",
            request.pressure,
            turn,
            state,
            checkpoint,
            summary,
            halted=True,
            reasons=tuple(reasons),
            hint="restart from the checkpoint and summary, or `ctxhealth state override` to go on",
            ledger_error=noted,
        )
    store.write_control(control)
    noted = _record(ledger, request, turn, zone, "continue", "; ".join(reasons), checkpoint, summary)
    return GateResult(
        Status.OK,
        zone,
        f"continue ({zone.value})",
        request.pressure,
        turn,
        state,
        checkpoint,
        summary,
        reasons=tuple(reasons),
        ledger_error=noted,
    )


def _record(
    ledger: Ledger | None,
    request: GateRequest,
    turn: int,
    zone: GateZone,
    action: str,
    reason: str,
    checkpoint: Path | None,
    summary: Path | None,
) -> str:
    """Record the gate call; a ledger failure is reported, never allowed to undo the gate's answer."""
    if ledger is None:
        return ""
    try:
        ledger.record_assessment(request.session_id, turn, pressure=request.pressure, zone=zone.value)
        ledger.record_decision(request.session_id, turn, f"gate:{action}", reason)
        if checkpoint is not None:
            ledger.record_checkpoint(request.session_id, checkpoint, summary)
    except LedgerError as exc:
        return exc.render()
    return ""


def override(store: StateStore, *, reason: str = "", allow: int = 1) -> Control:
    """Lift a halt explicitly and let the next ``allow`` critical gate calls through."""
    if allow < 1:
        raise ConfigError(f"allow must be 1 or more (got {allow})", hint="pass --allow 1 or more")
    store.check_writable()
    return store.clear_halt(reason=reason or "explicit override", allow=allow)
