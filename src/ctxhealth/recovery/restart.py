"""Checkpoint restart: the system prompt plus one user message — the original instruction
verbatim, the checkpoint block, and the spec's continuation directive. Everything else in the
live context (after the last compaction, see :mod:`.live`) is dropped; given a budget, the
checkpoint spends all of it that the system prompt and the instruction leave. Counts as one
restart; the policy layer owns the restart counter, the cooldown and
the step-counter reset that follow.
"""

from __future__ import annotations

from msgspec.structs import replace

from ctxhealth.model import Session
from ctxhealth.recovery.budget import DEFAULT_ENCODING, messages_tokens, text_tokens
from ctxhealth.recovery.checkpoint import DEFAULT_BUDGET_TOKENS, build_checkpoint, render_block
from ctxhealth.recovery.live import live_context
from ctxhealth.recovery.parts import original_request, system_indices, user_text
from ctxhealth.recovery.report import RecoveryReport, Removal, RemovalKind, Strategy, empty_report
from ctxhealth.recovery.truncate import budget_error

RESTART_DIRECTIVE = (
    "Continue from where the previous execution left off. Do not repeat completed work. "
    "Pick up at the next step."
)
_FRAMING_TOKENS = 8


def restart_message_text(instruction: str, checkpoint_block: str) -> str:
    """The one user message of a restart: instruction, checkpoint block, directive."""
    parts = [p for p in (instruction.strip(), checkpoint_block, RESTART_DIRECTIVE) if p]
    return "\n\n".join(parts)


def restart(
    session: Session,
    *,
    budget_tokens: int | None = None,
    checkpoint_tokens: int = DEFAULT_BUDGET_TOKENS,
    encoding: str | None = DEFAULT_ENCODING,
) -> tuple[Session, RecoveryReport]:
    """Restart ``session`` from a checkpoint (see the module docstring). Deterministic.

    With ``budget_tokens`` the checkpoint gets all of the budget the system prompt and the
    instruction leave (not only ``checkpoint_tokens``)."""
    live = live_context(session)
    messages = live.messages
    if not messages:
        return session, empty_report(Strategy.RESTART)
    sizes = messages_tokens(messages, encoding)
    keep = system_indices(messages)
    head = [messages[i] for i in keep]
    instruction = original_request(messages)
    fixed = (
        sum(messages_tokens(head, encoding))
        + text_tokens(restart_message_text(instruction, ""), encoding)
        + _FRAMING_TOKENS
    )
    cp_budget = checkpoint_tokens
    if budget_tokens is not None:
        if fixed > budget_tokens:
            raise budget_error(fixed, budget_tokens, "the system prompt and the original instruction")
        cp_budget = budget_tokens - fixed
    text = restart_message_text(
        instruction,
        render_block(build_checkpoint(session, budget_tokens=cp_budget, encoding=encoding)),
    )
    out = (*head, user_text(text))
    after = messages_tokens(out, encoding)
    if budget_tokens is not None and sum(after) > budget_tokens:
        raise budget_error(sum(after), budget_tokens, "the instruction and the smallest checkpoint")
    report = RecoveryReport(
        strategy=Strategy.RESTART,
        tokens_before=sum(sizes),
        tokens_after=sum(after),
        messages_before=len(messages),
        messages_after=len(out),
        removals=tuple(
            Removal(live.original(i), RemovalKind.DROPPED, sizes[i], 0)
            for i in range(len(messages))
            if i not in keep
        ),
        injected=(text,),
        counts_as_restart=True,
        budget_tokens=budget_tokens,
        notes=live.notes,
    )
    return replace(session, messages=out, reported_fill={}), report
