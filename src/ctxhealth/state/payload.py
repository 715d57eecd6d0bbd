"""The JSON documents of the task-state commands, built in one place for every surface that reports
them (``ctxhealth state ...`` and the MCP ``task_state`` tool): the fields of a startup result
(``status`` / ``ensure``) and of a gate call (``state checkpoint``). The caller adds
``schema_version`` and ``status``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ctxhealth.state.gate import GateResult, Thresholds
from ctxhealth.state.schema import state_to_dict
from ctxhealth.state.startup import StartupResult

__all__ = ["gate_payload", "startup_payload"]


def startup_payload(root: Path, result: StartupResult, **extra: Any) -> dict[str, Any]:
    """The JSON fields of a startup result; ``extra`` fields go just before the state."""
    return {
        "root": str(root),
        "detail": result.detail,
        "hint": result.hint,
        "missing": list(result.missing),
        "summary_conflict": result.summary_conflict,
        **extra,
        "state": None if result.state is None else state_to_dict(result.state),
    }


def gate_payload(root: Path, result: GateResult, thresholds: Thresholds) -> dict[str, Any]:
    """The JSON fields of one gate call: zone, pressure, what was written, whether it halted, why."""
    return {
        "root": str(root),
        "detail": result.detail,
        "hint": result.hint,
        "zone": result.zone.value,
        "pressure": result.pressure,
        "turn": result.turn,
        "thresholds": {
            "warning": thresholds.warning,
            "compress": thresholds.compress,
            "critical": thresholds.critical,
        },
        "checkpoint": None if result.checkpoint is None else str(result.checkpoint),
        "summary": None if result.summary is None else str(result.summary),
        "halted": result.halted,
        "override_used": result.override_used,
        "reasons": list(result.reasons),
    }
