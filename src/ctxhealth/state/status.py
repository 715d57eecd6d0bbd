"""The statuses the task-state commands report, each with its ``STATUS:*`` line and exit code."""

from __future__ import annotations

from enum import StrEnum

from ctxhealth.errors import ExitCode

__all__ = ["Status"]


class Status(StrEnum):
    """Outcome of ``ensure`` / ``status`` / the gate, printed as ``STATUS:<value>``."""

    OK = "OK"
    INITIALISED = "INITIALISED"
    COMPLETE = "COMPLETE"
    HALT_CONTEXT_LIMIT = "HALT_CONTEXT_LIMIT"
    MISSING_STATE = "MISSING_STATE"
    INVALID_STATE = "INVALID_STATE"
    FOREIGN_STATE = "FOREIGN_STATE"

    @property
    def line(self) -> str:
        return f"STATUS:{self.value}"

    @property
    def exit_code(self) -> ExitCode:
        """0 go on / done, 1 halted (a threshold was crossed), 3 the state needs attention."""
        if self in (Status.OK, Status.INITIALISED, Status.COMPLETE):
            return ExitCode.OK
        if self is Status.HALT_CONTEXT_LIMIT:
            return ExitCode.UNHEALTHY
        return ExitCode.BAD_INPUT

    @property
    def may_continue(self) -> bool:
        """True when the agent may take its next action."""
        return self in (Status.OK, Status.INITIALISED)
