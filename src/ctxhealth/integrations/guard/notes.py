"""The words the guard adds to a request or answers with: warnings, advice, the halt error.

A note names what ctxhealth saw (the policy's reasons, with their numbers) and what to do now.
The re-anchor text itself comes from :mod:`ctxhealth.recovery.reanchor` (the spec's wording).
"""

from __future__ import annotations

from ctxhealth.monitor import Assessment
from ctxhealth.policy import Action

_ADVICE = {
    Action.WARN: "Finish the current step, stay on the original request and avoid repeating work.",
    Action.REANCHOR: "Re-read the original request and make sure your next steps serve it.",
    Action.CLEAR_TOOL_RESULTS: "Old tool output is crowding the context and the same mistake repeats: "
    "stop re-running it, re-read the task's requirements, and try another approach.",
    Action.COMPRESS_HISTORY: "The history is long: summarise what is done before going on.",
    Action.TRUNCATE: "The context is near its limit: write down what is done and what is next now; "
    "older turns may be dropped soon.",
    Action.RESTART: "The session should restart from a checkpoint: write down the task, what is done, "
    "what failed and what is next, then continue from that summary.",
    Action.HALT: "Stop: write a checkpoint of your progress (done, next, blockers) and end this session.",
}


def note_text(action: Action, assessment: Assessment) -> str:
    """The note added for ``action`` (warn, or advice about a stronger action)."""
    lines = [f"[CTXHEALTH -- {action.value.replace('_', ' ').upper()}]"]
    lines.extend(f"- {reason}" for reason in assessment.reasons)
    a = assessment
    lines.append(f"Context: {a.fill:,} tokens, zone {a.zone.value}, pressure {a.pressure:.2f}.")
    lines.append(_ADVICE[action])
    return "\n".join(lines)


HALT_PREFIX = "prompt is too long for a healthy context"
"""How a halt's message begins: the words clients read as a context-window error, which they do
not retry (litellm raises ``ContextWindowExceededError`` for them, which mini-swe-agent and other
litellm users treat as final; the OpenAI body also carries ``code: context_length_exceeded``)."""


def halt_text(assessment: Assessment) -> str:
    """The error message of a halted session: why, and what the agent must do."""
    reasons = "; ".join(assessment.reasons) or "critical context pressure"
    return (
        f"{HALT_PREFIX}: ctxhealth halted this session ({reasons}; {assessment.fill:,} tokens, "
        f"pressure {assessment.pressure:.2f}). Stop here: write a checkpoint of what is done, what is "
        "next and what blocks you, then start a new session from it. Requests of this conversation "
        "are refused until it starts afresh."
    )
