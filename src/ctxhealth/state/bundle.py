"""The working bundle: the little an agent needs in context to take its next step.

By default it holds the goal, the phase, the next action, the last successful action,
the constraints and the relevant artifacts, and nothing more; ``full=True`` adds
invariants, decisions and blockers for a restart that needs them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ctxhealth.recovery.text import bullets
from ctxhealth.state.schema import Artifact, Decision, Outcome, TaskState

__all__ = ["WorkingBundle", "working_bundle"]

# Artifacts whose role says they no longer matter are left out of the bundle.
_IRRELEVANT_ROLES = frozenset({"archived", "obsolete", "deleted", "superseded"})


@dataclass(frozen=True, slots=True)
class WorkingBundle:
    goal: str
    current_phase: str
    next_action: str
    last_successful_action: str
    constraints: tuple[str, ...]
    artifacts: tuple[Artifact, ...]
    invariants: tuple[str, ...] | None = None
    decisions: tuple[Decision, ...] | None = None
    blockers: tuple[str, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "goal": self.goal,
            "current_phase": self.current_phase,
            "next_action": self.next_action,
            "last_successful_action": self.last_successful_action,
            "constraints": list(self.constraints),
            "artifacts": [{"path": a.path, "role": a.role} for a in self.artifacts],
        }
        if self.invariants is not None:
            out["invariants"] = list(self.invariants)
        if self.decisions is not None:
            out["decisions"] = [{"decision": d.decision, "why": d.why} for d in self.decisions]
        if self.blockers is not None:
            out["blockers"] = list(self.blockers)
        return out

    def render_markdown(self) -> str:
        lines = [
            "## Working bundle",
            f"- Goal: {self.goal or '_none_'}",
            f"- Phase: {self.current_phase or '_none_'}",
            f"- Next action: {self.next_action}",
            f"- Last successful action: {self.last_successful_action or '_none_'}",
        ]
        lines += bullets("- Constraints", self.constraints)
        artifacts = [f"`{a.path}`" + (f" ({a.role})" if a.role else "") for a in self.artifacts]
        lines += bullets("- Artifacts", artifacts)
        lines += bullets("- Invariants", self.invariants or ())
        lines += bullets("- Decisions", [f"{d.decision} (why: {d.why})" for d in self.decisions or ()])
        lines += bullets("- Blockers", self.blockers or ())
        return "\n".join(lines) + "\n"


def _last_success(state: TaskState) -> str:
    if state.last_action.outcome is Outcome.SUCCESS and state.last_action.summary:
        return state.last_action.summary
    return state.completed_steps[-1] if state.completed_steps else ""


def working_bundle(state: TaskState, *, full: bool = False) -> WorkingBundle:
    """The working bundle of ``state``."""
    artifacts = tuple(a for a in state.artifacts if a.role.strip().lower() not in _IRRELEVANT_ROLES)
    return WorkingBundle(
        goal=state.goal,
        current_phase=state.current_phase,
        next_action=state.next_action,
        last_successful_action=_last_success(state),
        constraints=state.constraints,
        artifacts=artifacts,
        invariants=state.invariants if full else None,
        decisions=state.decisions if full else None,
        blockers=state.blockers if full else None,
    )
