"""What a recovery strategy did: the strategy, what it removed or replaced, sizes before and after.

Strategies are pure functions ``Session -> (Session, RecoveryReport)``. Counters that span
turns (truncations, restarts, cooldown) live in the policy layer; a report only says what
this one call did. Hand it back with ``monitor.record_recovery(report.action,
fill=report.tokens_after)`` (:func:`ctxhealth.policy.record` adds one truncation for a
truncate, one restart + cooldown + step reset for a restart).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from ctxhealth.policy import Action


class Strategy(StrEnum):
    TRUNCATE = "truncate"
    RESTART = "restart"
    REANCHOR = "reanchor"
    CLEAR = "clear"
    COMPRESS = "compress"


class RemovalKind(StrEnum):
    """How a piece of context was affected."""

    DROPPED = "dropped"  # the message is gone
    CLEARED = "cleared"  # the block's content was replaced by a placeholder
    TRIMMED = "trimmed"  # the block's content was shortened
    SUMMARISED = "summarised"  # the message was replaced by a one-line summary
    ORPHAN = "orphan"  # a tool call or result was removed because its partner was gone


@dataclass(frozen=True, slots=True)
class Removal:
    """One message (by index in the input session) that a strategy changed, and how."""

    index: int
    kind: RemovalKind
    tokens_before: int
    tokens_after: int
    detail: str = ""


@dataclass(frozen=True, slots=True)
class RecoveryReport:
    """The outcome of one strategy call."""

    strategy: Strategy
    tokens_before: int
    tokens_after: int
    messages_before: int
    messages_after: int
    removals: tuple[Removal, ...] = ()
    injected: tuple[str, ...] = ()  # texts the strategy added (checkpoint, re-anchor, ...)
    counts_as_truncation: bool = False
    counts_as_restart: bool = False
    budget_tokens: int | None = None
    notes: tuple[str, ...] = ()

    @property
    def action(self) -> Action:
        """The policy action this recovery carried out (for ``Monitor.record_recovery``)."""
        return _ACTIONS[self.strategy]

    @property
    def tokens_removed(self) -> int:
        return max(0, self.tokens_before - self.tokens_after)


def empty_report(strategy: Strategy) -> RecoveryReport:
    """The report of ``strategy`` on a session without messages: nothing to do."""
    return RecoveryReport(strategy, 0, 0, 0, 0, notes=("empty session: nothing to recover",))


_ACTIONS = {
    Strategy.TRUNCATE: Action.TRUNCATE,
    Strategy.RESTART: Action.RESTART,
    Strategy.REANCHOR: Action.REANCHOR,
    Strategy.CLEAR: Action.CLEAR_TOOL_RESULTS,
    Strategy.COMPRESS: Action.COMPRESS_HISTORY,
}
