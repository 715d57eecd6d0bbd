"""Truncate: keep the system prompt, the original instruction, a checkpoint right after it and
the last 2 message pairs (turns); drop the rest. Counts as one truncation (the policy escalates
to a restart after 2). It works on the live context (after the last compaction, see
:mod:`.live`): the "before" size is what the model sees now, never the replayed history.

With a budget the result is made to fit, in this order: long tool results in the kept tail are
shortened (errors keep their last 50 lines + stack trace), fewer pairs are kept, the checkpoint
is built smaller; if the system prompt and instruction alone do not fit, ``UsageError``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from msgspec.structs import replace

from ctxhealth.errors import UsageError
from ctxhealth.model import Message, Session, ToolResult
from ctxhealth.recovery.budget import DEFAULT_ENCODING, messages_tokens
from ctxhealth.recovery.checkpoint import DEFAULT_BUDGET_TOKENS, build_checkpoint, render_text
from ctxhealth.recovery.live import live_context
from ctxhealth.recovery.pairing import Orphan, repair_pairs
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


@dataclass(frozen=True, slots=True)
class _Head:
    """What every truncation keeps first: system messages and the original request."""

    indices: list[int]
    messages: list[Message]
    tokens: int
    instruction: int | None


@dataclass(frozen=True, slots=True)
class _Fit:
    """A candidate result: the injected checkpoint message(s) and the kept tail (with indices)."""

    injected: list[Message]
    tail: list[Message]
    tail_indices: list[int]


def _locate_head(messages: tuple[Message, ...], encoding: str | None) -> _Head:
    indices = system_indices(messages)
    instr = instruction_index(messages)
    if instr is not None:
        indices.append(instr)
    head = [instruction_message(messages[i]) if i == instr else messages[i] for i in indices]
    return _Head(indices, head, sum(messages_tokens(head, encoding)), instr)


def _tail_indices(messages: tuple[Message, ...], head: _Head, starts: list[int], pairs: int) -> list[int]:
    """Indices of the last ``pairs`` turns (with 0 pairs, the unanswered user messages at the end)."""
    instr = head.instruction
    if pairs:
        first = max(starts[-pairs], (instr if instr is not None else -1) + 1)
    else:
        first = (starts[-1] if starts else instr if instr is not None else -1) + 1
    kept = set(head.indices)
    return [i for i in range(first, len(messages)) if i not in kept]


def _fit_tail(
    messages: tuple[Message, ...],
    head: _Head,
    checkpoint: Message,
    keep_pairs: int,
    budget: int | None,
    encoding: str | None,
) -> _Fit | None:
    """The richest tail that fits: fewest pairs dropped first, then long tool results shortened."""
    starts = [i for i in turn_starts(messages) if head.instruction is None or i > head.instruction]
    for pairs in range(min(keep_pairs, len(starts)), -1, -1):
        indices = _tail_indices(messages, head, starts, pairs)
        raw = [messages[i] for i in indices]
        for max_chars in _RESULT_CHAR_LADDER:
            tail = _shorten_tail(raw, max_chars)
            if budget is None:
                return _Fit([checkpoint], tail, indices)
            if head.tokens + sum(messages_tokens([checkpoint, *tail], encoding)) <= budget:
                return _Fit([checkpoint], tail, indices)
    return None


def _checkpoint_only(session: Session, head: _Head, budget: int, encoding: str | None) -> _Fit:
    """The last resort: no tail, the smallest checkpoint that fits what the head leaves."""
    room = budget - head.tokens - 8
    if room < MIN_CHECKPOINT_TOKENS // 2:
        raise budget_error(head.tokens + MIN_CHECKPOINT_TOKENS, budget, "the head and a checkpoint")
    message = user_text(render_text(build_checkpoint(session, budget_tokens=room, encoding=encoding)))
    needed = head.tokens + messages_tokens([message], encoding)[0]
    if needed > budget:
        raise budget_error(needed, budget, "the head and a minimal checkpoint")
    return _Fit([message], [], [])


def _removals(
    messages: tuple[Message, ...],
    sizes: list[int],
    head: _Head,
    fit: _Fit,
    orphans: tuple[Orphan, ...],
    encoding: str | None,
) -> list[Removal]:
    """What was dropped, shortened or unpaired, by index in ``messages``."""
    kept = set(head.indices) | set(fit.tail_indices)
    out = [Removal(i, RemovalKind.DROPPED, sizes[i], 0) for i in range(len(messages)) if i not in kept]
    for i, new in zip(fit.tail_indices, fit.tail, strict=True):
        if new is not messages[i]:
            after = messages_tokens([new], encoding)[0]
            out.append(Removal(i, RemovalKind.TRIMMED, sizes[i], after, "long tool output shortened"))
    offset = len(head.messages) + len(fit.injected)
    index_of = {offset + k: i for k, i in enumerate(fit.tail_indices)}
    out += [
        Removal(index_of.get(o.index, o.index), RemovalKind.ORPHAN, 0, 0, f"{o.kind} {o.tool_id}")
        for o in orphans
    ]
    return out


def truncate(
    session: Session,
    *,
    budget_tokens: int | None = None,
    keep_pairs: int = DEFAULT_KEEP_PAIRS,
    checkpoint_tokens: int = DEFAULT_BUDGET_TOKENS,
    encoding: str | None = DEFAULT_ENCODING,
) -> tuple[Session, RecoveryReport]:
    """Truncate the live context of ``session`` (see the module docstring). Deterministic."""
    live = live_context(session)
    messages = live.messages
    if not messages:
        return session, empty_report(Strategy.TRUNCATE)
    sizes = messages_tokens(messages, encoding)
    head = _locate_head(messages, encoding)
    if budget_tokens is not None and head.tokens > budget_tokens:
        raise budget_error(head.tokens, budget_tokens, "the system prompt and the original instruction")
    cp_budget = checkpoint_tokens
    if budget_tokens is not None:
        cp_budget = max(MIN_CHECKPOINT_TOKENS, min(checkpoint_tokens, (budget_tokens - head.tokens) // 2))
    checkpoint = user_text(render_text(build_checkpoint(session, budget_tokens=cp_budget, encoding=encoding)))
    fit = _fit_tail(messages, head, checkpoint, keep_pairs, budget_tokens, encoding)
    if fit is None:
        fit = _checkpoint_only(session, head, budget_tokens or 0, encoding)
    repaired, orphans = repair_pairs([*head.messages, *fit.injected, *fit.tail])
    removals = _removals(messages, sizes, head, fit, orphans, encoding)
    after_sizes = messages_tokens(repaired, encoding)
    report = RecoveryReport(
        strategy=Strategy.TRUNCATE,
        tokens_before=sum(sizes),
        tokens_after=sum(after_sizes),
        messages_before=len(messages),
        messages_after=len(repaired),
        removals=tuple(
            sorted(
                (dataclasses.replace(r, index=live.original(r.index)) for r in removals),
                key=lambda r: (r.index, r.kind),
            )
        ),
        injected=tuple(m.text for m in fit.injected),
        counts_as_truncation=True,
        budget_tokens=budget_tokens,
        notes=live.notes,
    )
    return replace(session, messages=repaired, reported_fill={}), report  # indices no longer apply
