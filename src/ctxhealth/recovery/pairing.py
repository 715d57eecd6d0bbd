"""Tool call / tool result pairing: the invariant every recovered message list must satisfy.

Providers reject a request with a tool call that has no result, or a result whose call is not
in the preceding assistant message (HTTP 400). In the normalised model a pair is well formed
when every :class:`ToolCall` of an assistant message has exactly one :class:`ToolResult` in
the non-assistant messages that follow it up to the next assistant message, and every result
answers a call of that nearest preceding assistant message.

:func:`find_orphans` lists violations; :func:`repair_pairs` removes them (never invents a
result) and drops messages left without content.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from msgspec.structs import replace

from ctxhealth.model import Block, Message, Role, ToolCall, ToolResult


class OrphanKind(StrEnum):
    CALL_WITHOUT_RESULT = "call-without-result"
    RESULT_WITHOUT_CALL = "result-without-call"
    DUPLICATE_RESULT = "duplicate-result"


@dataclass(frozen=True, slots=True)
class Orphan:
    """One pairing violation: message index, tool id, what is wrong."""

    index: int
    tool_id: str
    kind: OrphanKind


def _segments(messages: Sequence[Message]) -> list[tuple[int | None, list[int]]]:
    """Split into (assistant index or None for the prefix, indices of following non-assistant messages)."""
    segments: list[tuple[int | None, list[int]]] = [(None, [])]
    for i, m in enumerate(messages):
        if m.role is Role.ASSISTANT:
            segments.append((i, []))
        else:
            segments[-1][1].append(i)
    return segments


def find_orphans(messages: Sequence[Message]) -> tuple[Orphan, ...]:
    """Every pairing violation in ``messages`` (empty when the list is well formed)."""
    found: list[Orphan] = []
    for assistant, followers in _segments(messages):
        calls = {c.id for c in messages[assistant].tool_calls} if assistant is not None else set()
        seen: set[str] = set()
        for i in followers:
            for r in messages[i].tool_results:
                if r.tool_call_id not in calls:
                    found.append(Orphan(i, r.tool_call_id, OrphanKind.RESULT_WITHOUT_CALL))
                elif r.tool_call_id in seen:
                    found.append(Orphan(i, r.tool_call_id, OrphanKind.DUPLICATE_RESULT))
                seen.add(r.tool_call_id)
        if assistant is not None:
            for c in messages[assistant].tool_calls:
                if c.id not in seen:
                    found.append(Orphan(assistant, c.id, OrphanKind.CALL_WITHOUT_RESULT))
    # Tool results inside assistant messages are never valid.
    for i, m in enumerate(messages):
        if m.role is Role.ASSISTANT:
            found.extend(Orphan(i, r.tool_call_id, OrphanKind.RESULT_WITHOUT_CALL) for r in m.tool_results)
    return tuple(sorted(found, key=lambda o: (o.index, o.tool_id, o.kind)))


def repair_pairs(messages: Sequence[Message]) -> tuple[tuple[Message, ...], tuple[Orphan, ...]]:
    """Drop every unpaired tool call and result; drop messages left empty.

    Returns the repaired messages and the orphans removed (indices refer to the input).
    """
    orphans = find_orphans(messages)
    if not orphans:
        return tuple(messages), ()
    drop_calls: dict[int, set[str]] = {}
    drop_results: dict[int, set[str]] = {}
    for o in orphans:
        target = drop_calls if o.kind is OrphanKind.CALL_WITHOUT_RESULT else drop_results
        target.setdefault(o.index, set()).add(o.tool_id)
    out: list[Message] = []
    for i, m in enumerate(messages):
        calls = drop_calls.get(i, set())
        results = drop_results.get(i, set())
        if not calls and not results:
            out.append(m)
            continue
        kept: list[Block] = []
        first_result_seen: set[str] = set()
        for b in m.blocks:
            if isinstance(b, ToolCall) and b.id in calls:
                continue
            if isinstance(b, ToolResult) and b.tool_call_id in results:
                # A duplicate keeps its first occurrence unless the id is unpaired altogether.
                dup_only = all(
                    o.kind is OrphanKind.DUPLICATE_RESULT
                    for o in orphans
                    if o.index == i and o.tool_id == b.tool_call_id
                )
                if (
                    m.role is not Role.ASSISTANT
                    and dup_only
                    and b.tool_call_id not in first_result_seen
                    and not _seen_earlier(messages, i, b.tool_call_id)
                ):
                    first_result_seen.add(b.tool_call_id)
                    kept.append(b)
                continue
            kept.append(b)
        if kept:
            out.append(replace(m, blocks=tuple(kept)))
    repaired = tuple(out)
    # Dropping an emptied assistant message can re-segment the list: repeat until stable.
    rest, more = repair_pairs(repaired) if find_orphans(repaired) else (repaired, ())
    return rest, orphans + more


def _seen_earlier(messages: Sequence[Message], index: int, tool_id: str) -> bool:
    """True when a result for ``tool_id`` appears before ``index`` in the same segment."""
    for j in range(index - 1, -1, -1):
        m = messages[j]
        if m.role is Role.ASSISTANT:
            return False
        if any(r.tool_call_id == tool_id for r in m.tool_results):
            return True
    return False
