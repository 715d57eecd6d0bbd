"""The user-facing warnings: near the context limit, a high tool-failure rate, task drift.

Each returns a :class:`WarningMessage` with a one-line headline and a short explanation that says
what ctxhealth saw and what the person can do; thresholds are passed in so the text always
shows the numbers that triggered it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class WarningKind(StrEnum):
    NEAR_LIMIT = "near-limit"
    FAILURE_RATE = "failure-rate"
    DRIFT = "drift"


@dataclass(frozen=True, slots=True)
class WarningMessage:
    kind: WarningKind
    headline: str
    detail: str

    @property
    def text(self) -> str:
        return f"{self.headline}\n{self.detail}"


def warn_near_limit(
    tokens: int, limit: int, *, zone: str = "", pressure: float | None = None
) -> WarningMessage:
    """Context is close to its limit (``limit``: the tier's hard limit or the usable window)."""
    share = tokens / limit if limit > 0 else 1.0
    where = f" ({zone} zone)" if zone else ""
    p = f", pressure {pressure:.2f}" if pressure is not None else ""
    return WarningMessage(
        WarningKind.NEAR_LIMIT,
        f"ctxhealth: context at {tokens:,} of {limit:,} tokens ({share:.0%}){where}{p}.",
        "Quality degrades from here. Finish the current step, then compact, or let ctxhealth "
        "truncate or restart from a checkpoint; clear old tool output to win room now.",
    )


def warn_failure_rate(
    failures: int, calls: int, *, threshold: float = 0.40, consecutive: int = 0
) -> WarningMessage:
    """Tool calls are failing often (the spec: > 40% with at least 4 calls, or 3+ in a row)."""
    rate = failures / calls if calls else 0.0
    streak = f"; {consecutive} in a row" if consecutive else ""
    return WarningMessage(
        WarningKind.FAILURE_RATE,
        f"ctxhealth: {failures} of {calls} tool calls failed "
        f"({rate:.0%}, threshold {threshold:.0%}){streak}.",
        "The agent may be in a failure spiral. Stop and check the latest error; a restart from a "
        "checkpoint drops the failed attempts but keeps the task and the blocking error.",
    )


def warn_drift(similarity: float, tokens: int, *, threshold: float = 0.15) -> WarningMessage:
    """Recent output shares few words with the original request."""
    return WarningMessage(
        WarningKind.DRIFT,
        f"ctxhealth: task drift, similarity {similarity:.2f} "
        f"(threshold {threshold:.2f}) at {tokens:,} tokens.",
        "Recent output has moved away from the original request. Re-anchor the agent on it "
        "(`ctxhealth recover --strategy reanchor`) or restate the request.",
    )
