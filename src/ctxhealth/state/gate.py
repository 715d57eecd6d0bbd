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

from ctxhealth.config import Settings
from ctxhealth.errors import ConfigError, LedgerError
from ctxhealth.policy import Profile, defaults
from ctxhealth.state.ledger import Ledger
from ctxhealth.state.schema import TaskState, merge_update
from ctxhealth.state.startup import StartupResult, inspect
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

    @classmethod
    def configured(cls, settings: Settings) -> Thresholds:
        """The gates of the profile ``settings`` configure (file and ``[profile]`` overrides)."""
        from ctxhealth.policy.profile import resolve_profile

        return cls.from_profile(resolve_profile(settings.profile, settings.profile_overrides))


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
        return _refused(start, zone, request)
    control = store.read_control()
    turn = request.turn if request.turn is not None else control.gate_calls + 1
    control = replace(control, gate_calls=control.gate_calls + 1)
    state, phase_or_goal_changed, reasons = _apply_update(store, start.state, request)
    call = _Call(store, ledger, request, turn, zone)
    if state.is_done:
        return _complete(call, state, control, reasons)
    plan = _plan(call, state, thresholds, phase_or_goal_changed, reasons)
    checkpoint = store.write_state_checkpoint(state) if plan.checkpoint else None
    summary = store.write_summary(state) if plan.summary else None
    if plan.halt and control.override_remaining > 0:
        return _continue_under_override(call, state, control, plan, checkpoint, summary)
    if plan.halt:
        return _halt(call, state, control, plan, checkpoint, summary)
    store.write_control(control)
    noted = _record(call, "continue", "; ".join(plan.reasons), checkpoint, summary)
    return GateResult(
        Status.OK,
        zone,
        f"continue ({zone.value})",
        request.pressure,
        turn,
        state,
        checkpoint,
        summary,
        reasons=plan.reasons,
        ledger_error=noted,
    )


@dataclass(frozen=True, slots=True)
class _Call:
    """What every step of one gate call needs: where to write, what was asked, and its turn and zone."""

    store: StateStore
    ledger: Ledger | None
    request: GateRequest
    turn: int
    zone: GateZone


@dataclass(frozen=True, slots=True)
class _Plan:
    """What the gate will do: halt, write a checkpoint, write a summary, and why."""

    halt: bool
    checkpoint: bool
    summary: bool
    reasons: tuple[str, ...]


def _refused(start: StartupResult, zone: GateZone, request: GateRequest) -> GateResult:
    """The answer when the state is missing, foreign, or halted: nothing is written."""
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


def _apply_update(
    store: StateStore, state: TaskState, request: GateRequest
) -> tuple[TaskState, bool, list[str]]:
    """The state after the request's update (if any), whether its phase or goal changed, and why."""
    reasons: list[str] = []
    phase_or_goal_changed = request.phase_or_goal_changed
    if request.update is not None:
        updated = merge_update(state, request.update, path=str(store.state_path)).touched(store.now_iso())
        if (updated.goal, updated.current_phase) != (state.goal, state.current_phase):
            phase_or_goal_changed = True
        state = store.write_state(updated)
        reasons.append("state updated")
    return state, phase_or_goal_changed, reasons


def _complete(call: _Call, state: TaskState, control: Control, reasons: list[str]) -> GateResult:
    """next_action ends the task: a final checkpoint and summary, answer ``COMPLETE``."""
    final = call.store.write_state_checkpoint(state, "final")
    final_summary = call.store.write_summary(state)
    call.store.write_control(control)
    noted = _record(call, "complete", "next_action ends the task", final, final_summary)
    return GateResult(
        Status.COMPLETE,
        call.zone,
        f"task complete (next_action {state.next_action})",
        call.request.pressure,
        call.turn,
        state,
        final,
        final_summary,
        reasons=(*reasons, "final write"),
        ledger_error=noted,
    )


def _plan(
    call: _Call, state: TaskState, thresholds: Thresholds, phase_or_goal_changed: bool, reasons: list[str]
) -> _Plan:
    """Halt at critical pressure or when pressure went missing after the first turn; checkpoint when
    halting, compressing or the state changed; refresh the summary when anything of that, the phase or
    goal changed, a conflict was reported, or the summary no longer matches the state."""
    request, zone = call.request, call.zone
    reasons = list(reasons)
    missing_pressure = request.pressure is None and call.turn > 1
    must_halt = zone is GateZone.CRITICAL or missing_pressure
    if zone is GateZone.CRITICAL:
        reasons.append(f"pressure {request.pressure:.2f} >= critical {thresholds.critical:.2f}")
    if missing_pressure:
        reasons.append(f"no pressure reported at turn {call.turn}")
    if zone is GateZone.COMPRESS:
        reasons.append(f"pressure {request.pressure:.2f} >= compress {thresholds.compress:.2f}")
    if request.action_changed_state:
        reasons.append("action changed state")
    want_checkpoint = (
        must_halt or zone is GateZone.COMPRESS or request.action_changed_state or request.update is not None
    )
    stale_summary = not summary_matches(call.store.read_summary() or "", state)
    if phase_or_goal_changed:
        reasons.append("phase or goal changed")
    if request.summary_conflict:
        reasons.append("summary conflict reported")
    want_summary = want_checkpoint or phase_or_goal_changed or request.summary_conflict or stale_summary
    return _Plan(must_halt, want_checkpoint, want_summary, tuple(reasons))


def _continue_under_override(
    call: _Call,
    state: TaskState,
    control: Control,
    plan: _Plan,
    checkpoint: Path | None,
    summary: Path | None,
) -> GateResult:
    """A halt condition, let through by an explicit override (one fewer left)."""
    call.store.write_control(replace(control, override_remaining=control.override_remaining - 1))
    noted = _record(call, "override", "; ".join(plan.reasons), checkpoint, summary)
    return GateResult(
        Status.OK,
        call.zone,
        "critical: continuing under an explicit override",
        call.request.pressure,
        call.turn,
        state,
        checkpoint,
        summary,
        override_used=True,
        reasons=plan.reasons,
        ledger_error=noted,
    )


def _halt(
    call: _Call,
    state: TaskState,
    control: Control,
    plan: _Plan,
    checkpoint: Path | None,
    summary: Path | None,
) -> GateResult:
    """Record the halt; every later call answers ``HALT_CONTEXT_LIMIT`` until :func:`override`."""
    reason = "; ".join(r for r in plan.reasons if "pressure" in r) or "context limit"
    halt = HaltRecord(reason=reason, at=call.store.now_iso(), pressure=call.request.pressure, turn=call.turn)
    call.store.write_control(replace(control, halt=halt))
    noted = _record(call, "halt", reason, checkpoint, summary)
    return GateResult(
        Status.HALT_CONTEXT_LIMIT,
        call.zone,
        f"halted: {reason}",
        call.request.pressure,
        call.turn,
        state,
        checkpoint,
        summary,
        halted=True,
        reasons=plan.reasons,
        hint="restart from the checkpoint and summary, or `ctxhealth state override` to go on",
        ledger_error=noted,
    )


def _record(call: _Call, action: str, reason: str, checkpoint: Path | None, summary: Path | None) -> str:
    """Record the gate call; a ledger failure is reported, never allowed to undo the gate's answer."""
    ledger, request = call.ledger, call.request
    if ledger is None:
        return ""
    try:
        ledger.record_assessment(
            request.session_id, call.turn, pressure=request.pressure, zone=call.zone.value
        )
        ledger.record_decision(request.session_id, call.turn, f"gate:{action}", reason)
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
