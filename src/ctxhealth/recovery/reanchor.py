"""Re-anchor: append the spec's ``[RE-ANCHOR -- Context drift detected]`` message with the reason
(similarity and tokens) and the original request verbatim. Removes nothing (a trailing tool call
that never got a result is the only thing dropped, because a provider would reject it).

When the caller has no drift measurement, :func:`drift_similarity` computes the spec's:
|instruction words ∩ words of the last 2,000 characters of assistant output| / |instruction words|.
"""

from __future__ import annotations

import re
from dataclasses import replace

from ctxhealth.model import Role, Session
from ctxhealth.recovery.budget import DEFAULT_ENCODING, messages_tokens
from ctxhealth.recovery.pairing import repair_pairs
from ctxhealth.recovery.parts import user_text
from ctxhealth.recovery.report import RecoveryReport, Removal, RemovalKind, Strategy

REANCHOR_TEMPLATE = """[RE-ANCHOR -- Context drift detected]

Your recent output has drifted from the original request.
Reason: Task drift detected (similarity={similarity}) at {tokens} tokens

ORIGINAL REQUEST (verbatim):
{instruction}

Refocus on satisfying this specific request.
Do not repeat completed work -- continue from where you are,
but ensure your output addresses the original request above."""

DRIFT_WINDOW_CHARS = 2_000
_WORD = re.compile(r"[a-z0-9_]+")


def drift_similarity(session: Session) -> float:
    """The spec's asymmetric overlap of instruction words with recent assistant output (1.0 = on topic)."""
    wanted = set(_WORD.findall(session.instruction.lower()))
    if not wanted:
        return 1.0
    output = "\n".join(m.text for m in session.messages if m.role is Role.ASSISTANT)[-DRIFT_WINDOW_CHARS:]
    seen = set(_WORD.findall(output.lower()))
    return len(wanted & seen) / len(wanted)


def reanchor_text(instruction: str, similarity: float, tokens: int) -> str:
    return REANCHOR_TEMPLATE.format(
        similarity=f"{similarity:.2f}", tokens=f"{tokens:,}", instruction=instruction
    )


def reanchor(
    session: Session,
    *,
    similarity: float | None = None,
    tokens: int | None = None,
    encoding: str | None = DEFAULT_ENCODING,
) -> tuple[Session, RecoveryReport]:
    """Append the re-anchor message to ``session``. ``similarity`` / ``tokens`` default to the
    spec's drift measure and the session's size."""
    messages = session.messages
    sizes = messages_tokens(messages, encoding)
    s = drift_similarity(session) if similarity is None else similarity
    t = sum(sizes) if tokens is None else tokens
    text = reanchor_text(session.instruction, s, t)
    repaired, orphans = repair_pairs((*messages, user_text(text)))
    after = messages_tokens(repaired, encoding)
    report = RecoveryReport(
        strategy=Strategy.REANCHOR,
        tokens_before=sum(sizes),
        tokens_after=sum(after),
        messages_before=len(messages),
        messages_after=len(repaired),
        removals=tuple(Removal(o.index, RemovalKind.ORPHAN, 0, 0, f"{o.kind} {o.tool_id}") for o in orphans),
        injected=(text,),
    )
    return replace(session, messages=repaired), report
