"""Re-anchor: append the spec's ``[RE-ANCHOR -- Context drift detected]`` message with the reason
(similarity and tokens) and the request to refocus on. Removes nothing from the live context (a
trailing tool call that never got a result is the only thing dropped, because a provider would
reject it); on a session with compactions the live context is what follows the last one.

People give new requests mid-session: the re-anchor names the *current* request (the latest real
user request, see :mod:`ctxhealth.signals.requests`) first, and the original task second as
context, so it never sends the agent back to a request the person has since replaced. When the
two are the same the text is the spec's, word for word.

When the caller has no drift measurement, :func:`drift_similarity` computes the spec's measure
against the current task: |task words ∩ words of the last 2,000 characters of assistant output| /
|task words|, with the drift detector's words (stop words removed, light stemming).
"""

from __future__ import annotations

from msgspec.structs import replace

from ctxhealth.model import Role, Session
from ctxhealth.recovery.budget import DEFAULT_ENCODING, messages_tokens
from ctxhealth.recovery.live import live_context
from ctxhealth.recovery.pairing import repair_pairs
from ctxhealth.recovery.parts import original_request, user_text
from ctxhealth.recovery.report import RecoveryReport, Removal, RemovalKind, Strategy
from ctxhealth.signals.requests import TaskTracker, clean_user_text
from ctxhealth.signals.text import content_words

REANCHOR_TEMPLATE = """[RE-ANCHOR -- Context drift detected]

Your recent output has drifted from the original request.
Reason: Task drift detected (similarity={similarity}) at {tokens} tokens

ORIGINAL REQUEST (verbatim):
{instruction}

Refocus on satisfying this specific request.
Do not repeat completed work -- continue from where you are,
but ensure your output addresses the original request above."""

REANCHOR_CURRENT_TEMPLATE = """[RE-ANCHOR -- Context drift detected]

Your recent output has drifted from the current request.
Reason: Task drift detected (similarity={similarity}) at {tokens} tokens

CURRENT REQUEST (verbatim):
{current}

ORIGINAL TASK (context only; where it differs, the current request above replaces it):
{original}

Refocus on satisfying the current request.
Do not repeat completed work -- continue from where you are,
but ensure your output addresses the current request above."""

DRIFT_WINDOW_CHARS = 2_000


def track_requests(session: Session) -> TaskTracker:
    """The original and current request of ``session`` (the drift detector's rule)."""
    tracker = TaskTracker()
    for i, m in enumerate(session.messages):
        if m.role is Role.USER:
            tracker.observe(m, i)
    return tracker


def drift_similarity(session: Session, tracker: TaskTracker | None = None) -> float:
    """The spec's asymmetric overlap of the current task's words with recent assistant output
    (1.0 = on topic, or when there is no task)."""
    task = tracker if tracker is not None else track_requests(session)
    wanted = set(task.words)
    if not wanted:
        return 1.0
    output = "\n".join(m.text for m in session.messages if m.role is Role.ASSISTANT)[-DRIFT_WINDOW_CHARS:]
    return len(wanted & set(content_words(output))) / len(wanted)


def _full_text(session: Session, index: int | None, fallback: str) -> str:
    """The whole text of the request at ``index`` (a tracker keeps only its first characters)."""
    if index is None or not 0 <= index < len(session.messages):
        return fallback
    return clean_user_text(session.messages[index].text)


def reanchor_text(current: str, similarity: float, tokens: int, original: str = "") -> str:
    """The re-anchor message: the current request first, the original task second when it differs
    (the spec's text, naming the original request, when there is only one)."""
    sim, size = f"{similarity:.2f}", f"{tokens:,}"
    current, original = current.strip(), original.strip()
    if not original or original == current or not current:
        return REANCHOR_TEMPLATE.format(similarity=sim, tokens=size, instruction=current or original)
    return REANCHOR_CURRENT_TEMPLATE.format(similarity=sim, tokens=size, current=current, original=original)


def reanchor(
    session: Session,
    *,
    similarity: float | None = None,
    tokens: int | None = None,
    encoding: str | None = DEFAULT_ENCODING,
) -> tuple[Session, RecoveryReport]:
    """Append the re-anchor message to the live context of ``session``. ``similarity`` / ``tokens``
    default to the spec's drift measure against the current task and the live context's size."""
    tracker = track_requests(session)
    live = live_context(session)
    messages = live.messages
    sizes = messages_tokens(messages, encoding)
    s = drift_similarity(session, tracker) if similarity is None else similarity
    t = sum(sizes) if tokens is None else tokens
    text = reanchor_text(
        _full_text(session, tracker.current_index, tracker.current), s, t, original_request(session.messages)
    )
    repaired, orphans = repair_pairs((*messages, user_text(text)))
    after = messages_tokens(repaired, encoding)
    report = RecoveryReport(
        strategy=Strategy.REANCHOR,
        tokens_before=sum(sizes),
        tokens_after=sum(after),
        messages_before=len(messages),
        messages_after=len(repaired),
        removals=tuple(
            Removal(live.original(o.index), RemovalKind.ORPHAN, 0, 0, f"{o.kind} {o.tool_id}")
            for o in orphans
        ),
        injected=(text,),
        notes=live.notes,
    )
    return replace(session, messages=repaired, reported_fill={}), report
