"""Truncate: keep the system prompt, the original instruction, a checkpoint right after it and
the last 2 message pairs (turns); drop the rest. Counts as one truncation (the policy escalates
to a restart after 2).

With a budget the result is made to fit, in this order: long tool results in the kept tail are
shortened (errors keep their last 50 lines + stack trace), fewer pairs are kept, the checkpoint
is built smaller; if the system prompt and instruction alone do not fit, ``UsageError``.
"""

from __future__ import annotations

from dataclasses import replace

from ctxhealth.errors import UsageError
from ctxhealth.model import Message, Session, ToolResult
from ctxhealth.recovery.budget import DEFAULT_ENCODING, messages_tokens
from ctxhealth.recovery.checkpoint import DEFAULT_BUDGET_TOKENS, build_checkpoint, render_text
from ctxhealth.recovery.pairing import repair_pairs
from ctxhealth.recovery.parts import (
    instruction_index,
    instruction_message,
    shorten_result,
    system_indices,
    turn_starts,
    user_text,
)
from ctxhealth.recovery.report import RecoveryReport, Removal, RemovalKind, Strategy, empty_report

DEFAULT_KEEP_PAIRS = 2
MIN_CHECKPOINT_TOKENS = 120
_RESULT_CHAR_LADDER = (None, 8_000, 2_000, 600)


def _shorten_tail(tail: list[Message], max_chars: int | None) -> list[Message]:
    if max_chars is None:
        return tail
    out = []
    for m in tail:
        if any(len(r.text) > max_chars for r in m.tool_results):
            blocks = tuple(shorten_result(b, max_chars) if isinstance(b, ToolResult) else b for b in m.blocks)
            m = replace(m, blocks=blocks)
        out.append(m)
    return out


def budget_error(needed: int, budget: int, what: str) -> UsageError:
    return UsageError(
        f"budget of {budget} tokens is too small: {what} alone take {needed} tokens",
        hint=f"raise --budget to at least {needed}",
    )


def truncate(
    session: Session,
    *,
    budget_tokens: int | None = None,
    keep_pairs: int = DEFAULT_KEEP_PAIRS,
    checkpoint_tokens: int = DEFAULT_BUDGET_TOKENS,
    encoding: str | None = DEFAULT_ENCODING,
) -> tuple[Session, RecoveryReport]:
    """Truncate ``session`` (see the module docstring). Deterministic."""
    messages = session.messages
    if not messages:
        return session, empty_report(Strategy.TRUNCATE)
    sizes = messages_tokens(messages, encoding)
    head_idx = system_indices(messages)
    instr = instruction_index(messages)
    if instr is not None:
        head_idx.append(instr)
    head = [instruction_message(messages[i]) if i == instr else messages[i] for i in head_idx]
    head_tokens = sum(messages_tokens(head, encoding))
    if budget_tokens is not None and head_tokens > budget_tokens:
        raise budget_error(head_tokens, budget_tokens, "the system prompt and the original instruction")

    starts = [i for i in turn_starts(messages) if instr is None or i > instr]
    after = (instr if instr is not None else -1) + 1
    cp_budget = checkpoint_tokens
    if budget_tokens is not None:
        cp_budget = max(MIN_CHECKPOINT_TOKENS, min(checkpoint_tokens, (budget_tokens - head_tokens) // 2))

    checkpoint_text = render_text(build_checkpoint(session, budget_tokens=cp_budget, encoding=encoding))
    best: tuple[list[Message], list[int], list[Message]] | None = None
    for pairs in range(min(keep_pairs, len(starts)), -1, -1):
        first = starts[-pairs] if pairs else len(messages)
        tail_idx = [i for i in range(max(first, after), len(messages)) if i not in head_idx]
        # With pairs == 0 the unanswered user messages at the very end are still kept.
        if pairs == 0:
            last = starts[-1] if starts else instr if instr is not None else -1
            tail_idx = [i for i in range(last + 1, len(messages)) if i not in head_idx]
        raw_tail = [messages[i] for i in tail_idx]
        for max_chars in _RESULT_CHAR_LADDER:
            tail = _shorten_tail(raw_tail, max_chars)
            best = (tail, tail_idx, [user_text(checkpoint_text)])
            if budget_tokens is None:
                break
            total = head_tokens + sum(messages_tokens([user_text(checkpoint_text), *tail], encoding))
            if total <= budget_tokens:
                break
            best = None
        if best is not None:
            break
    if best is None:
        # Last resort: no tail, the smallest checkpoint that fits what is left.
        budget = budget_tokens or 0
        room = budget - head_tokens - 8
        if room < MIN_CHECKPOINT_TOKENS // 2:
            raise budget_error(head_tokens + MIN_CHECKPOINT_TOKENS, budget, "the head and a checkpoint")
        message = user_text(render_text(build_checkpoint(session, budget_tokens=room, encoding=encoding)))
        needed = head_tokens + messages_tokens([message], encoding)[0]
        if needed > budget:
            raise budget_error(needed, budget, "the head and a minimal checkpoint")
        best = ([], [], [message])

    tail, tail_idx, injected = best
    out = [*head, *injected, *tail]
    repaired, orphans = repair_pairs(out)
    kept_idx = set(head_idx) | set(tail_idx)
    removals = [
        Removal(i, RemovalKind.DROPPED, sizes[i], 0) for i in range(len(messages)) if i not in kept_idx
    ]
    for i, new in zip(tail_idx, tail, strict=True):
        if new is not messages[i]:
            after_tokens = messages_tokens([new], encoding)[0]
            removals.append(
                Removal(i, RemovalKind.TRIMMED, sizes[i], after_tokens, "long tool output shortened")
            )
    offset = len(head) + len(injected)
    index_of = {offset + k: i for k, i in enumerate(tail_idx)}
    removals += [
        Removal(index_of.get(o.index, o.index), RemovalKind.ORPHAN, 0, 0, f"{o.kind} {o.tool_id}")
        for o in orphans
    ]
    result = replace(session, messages=repaired, reported_fill={})  # indices no longer apply
    after_sizes = messages_tokens(repaired, encoding)
    report = RecoveryReport(
        strategy=Strategy.TRUNCATE,
        tokens_before=sum(sizes),
        tokens_after=sum(after_sizes),
        messages_before=len(messages),
        messages_after=len(repaired),
        removals=tuple(sorted(removals, key=lambda r: (r.index, r.kind))),
        injected=tuple(m.text for m in injected),
        counts_as_truncation=True,
        budget_tokens=budget_tokens,
    )
    return result, report
