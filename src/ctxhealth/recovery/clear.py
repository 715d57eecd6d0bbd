"""Clear old tool results, with the semantics of the Anthropic API's context editing
(``clear_tool_uses``): once a trigger is reached (context tokens or number of tool uses), the
results of all but the last N tool uses are replaced by a short placeholder saying what was
there; named tools are never cleared; tool inputs can be cleared too; and if clearing would win
fewer than ``clear_at_least_tokens`` nothing is cleared (clearing breaks the prompt cache, so
it must be worth it). Calls and results stay paired: only their content changes.

Error results keep their signature line in the placeholder, so a failure is never lost. It works
on the live context (after the last compaction, see :mod:`.live`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import orjson
from msgspec.structs import replace

from ctxhealth.model import Block, Message, Session, ToolCall, ToolResult
from ctxhealth.recovery.budget import DEFAULT_ENCODING, messages_tokens, texts_tokens
from ctxhealth.recovery.digest import call_target, error_signature, is_failure
from ctxhealth.recovery.live import live_context
from ctxhealth.recovery.pairing import repair_pairs
from ctxhealth.recovery.report import RecoveryReport, Removal, RemovalKind, Strategy

PLACEHOLDER_PREFIX = "[cleared by ctxhealth:"
INPUT_PLACEHOLDER_KEY = "cleared"


class TriggerKind(StrEnum):
    TOKENS = "input_tokens"
    TOOL_USES = "tool_uses"


@dataclass(frozen=True, slots=True)
class ClearTrigger:
    kind: TriggerKind = TriggerKind.TOKENS
    value: int = 100_000


@dataclass(frozen=True, slots=True)
class ClearConfig:
    """Defaults follow the Anthropic API: trigger at 100K input tokens, keep the last 3 tool uses."""

    trigger: ClearTrigger = field(default_factory=ClearTrigger)
    keep_tool_uses: int = 3
    clear_at_least_tokens: int = 0
    exclude_tools: frozenset[str] = frozenset()
    clear_tool_inputs: bool = False


def _input_json(value: Any) -> str:
    if isinstance(value, str):
        return value
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_SORT_KEYS).decode()


def result_placeholder(call: ToolCall | None, result: ToolResult, tokens: int) -> str:
    name = call.name if call is not None else "tool"
    target = call_target(call) if call is not None else ""
    about = f" for `{target[:80]}`" if target else ""
    error = f"; it failed: {error_signature(result.text)}" if is_failure(result) else ""
    return f"{PLACEHOLDER_PREFIX} {name} result{about}, {tokens:,} tokens{error}]"


def _is_cleared(result: ToolResult) -> bool:
    return result.text.startswith(PLACEHOLDER_PREFIX)


@dataclass(frozen=True, slots=True)
class _Plan:
    """What clearing would do: per eligible call id its result's size, placeholder and size, and its
    input's size (when inputs are cleared); the ids chosen; why nothing was cleared, if so."""

    result_sizes: dict[str, int]
    placeholders: dict[str, str]
    placeholder_sizes: dict[str, int]
    input_sizes: dict[str, int]
    chosen: frozenset[str]
    notes: tuple[str, ...]


def _eligible_calls(
    messages: tuple[Message, ...], cfg: ClearConfig
) -> tuple[list[ToolCall], dict[str, ToolResult]]:
    """Calls older than the last ``keep_tool_uses``, not excluded, with a result not yet cleared."""
    calls = [c for m in messages for c in m.tool_calls]
    results = {r.tool_call_id: r for m in messages for r in m.tool_results}
    keep = cfg.keep_tool_uses
    older = calls[:-keep] if keep > 0 else calls
    eligible = [
        c
        for c in older
        if c.name not in cfg.exclude_tools and c.id in results and not _is_cleared(results[c.id])
    ]
    return eligible, results


def _trigger_reached(cfg: ClearConfig, tokens: int, calls: int) -> bool:
    return (
        tokens >= cfg.trigger.value if cfg.trigger.kind is TriggerKind.TOKENS else calls >= cfg.trigger.value
    )


def _plan(messages: tuple[Message, ...], cfg: ClearConfig, tokens: int, encoding: str | None) -> _Plan:
    """Size every eligible result, its placeholder and its input; decide whether clearing is worth it."""
    eligible, results = _eligible_calls(messages, cfg)
    ids = [c.id for c in eligible]
    result_sizes = dict(zip(ids, texts_tokens([results[i].text for i in ids], encoding), strict=True))
    input_sizes: dict[str, int] = {}
    if cfg.clear_tool_inputs:
        input_sizes = dict(
            zip(ids, texts_tokens([_input_json(c.input) for c in eligible], encoding), strict=True)
        )
    placeholders = {c.id: result_placeholder(c, results[c.id], result_sizes[c.id]) for c in eligible}
    placeholder_sizes = dict(
        zip(placeholders, texts_tokens(list(placeholders.values()), encoding), strict=True)
    )
    gain = sum(max(0, result_sizes[i] - placeholder_sizes[i]) for i in placeholders)
    gain += sum(max(0, n - 6) for n in input_sizes.values())
    notes: tuple[str, ...] = ()
    calls = sum(len(m.tool_calls) for m in messages)
    if not _trigger_reached(cfg, tokens, calls):
        notes = (f"trigger not reached ({cfg.trigger.kind} {cfg.trigger.value:,})",)
    elif gain < cfg.clear_at_least_tokens:
        least = cfg.clear_at_least_tokens
        notes = (f"would clear {gain:,} tokens, below clear_at_least {least:,}: nothing cleared",)
    # Only worth replacing when the placeholder is smaller than what it replaces.
    chosen = frozenset(
        i for i in ids if not notes and (placeholder_sizes[i] < result_sizes[i] or cfg.clear_tool_inputs)
    )
    return _Plan(result_sizes, placeholders, placeholder_sizes, input_sizes, chosen, notes)


def _cleared_block(block: Block, plan: _Plan, cfg: ClearConfig) -> Block:
    """``block`` with its content replaced by the plan's placeholder, or ``block`` itself."""
    if isinstance(block, ToolResult):
        i = block.tool_call_id
        if i in plan.chosen and plan.placeholder_sizes[i] < plan.result_sizes[i]:
            return replace(block, text=plan.placeholders[i])
    elif isinstance(block, ToolCall) and block.id in plan.chosen and cfg.clear_tool_inputs:
        size = plan.input_sizes.get(block.id, 0)
        if size > 6:
            return replace(
                block, input={INPUT_PLACEHOLDER_KEY: f"input of {block.name} cleared, {size:,} tokens"}
            )
    return block


def _apply(messages: tuple[Message, ...], plan: _Plan, cfg: ClearConfig) -> tuple[list[Message], list[int]]:
    """The messages with the plan applied, and the indices of those that changed."""
    out: list[Message] = []
    changed: list[int] = []
    for i, m in enumerate(messages):
        blocks = tuple(_cleared_block(b, plan, cfg) for b in m.blocks)
        if any(a is not b for a, b in zip(blocks, m.blocks, strict=True)):
            changed.append(i)
            m = replace(m, blocks=blocks)
        out.append(m)
    return out, changed


def clear_tool_results(
    session: Session,
    config: ClearConfig | None = None,
    *,
    encoding: str | None = DEFAULT_ENCODING,
) -> tuple[Session, RecoveryReport]:
    """Clear old tool results of the live context of ``session`` per ``config`` (see the module
    docstring): pair repair, a plan (what to clear and whether it is worth it), then apply it."""
    cfg = config or ClearConfig()
    live = live_context(session)
    sizes = messages_tokens(live.messages, encoding)
    before = sum(sizes)
    messages, orphans = repair_pairs(live.messages)
    plan = _plan(messages, cfg, before, encoding)
    out, changed = _apply(messages, plan, cfg)
    after_sizes = messages_tokens(out, encoding)
    # Indices refer to the input; without orphans repaired (the usual case) they coincide.
    removals = [
        Removal(
            live.original(i),
            RemovalKind.CLEARED,
            messages_tokens([messages[i]], encoding)[0],
            after_sizes[i],
            "tool output",
        )
        for i in changed
    ]
    removals += [
        Removal(live.original(o.index), RemovalKind.ORPHAN, 0, 0, f"{o.kind} {o.tool_id}") for o in orphans
    ]
    report = RecoveryReport(
        strategy=Strategy.CLEAR,
        tokens_before=before,
        tokens_after=sum(after_sizes),
        messages_before=len(live.messages),
        messages_after=len(out),
        removals=tuple(removals),
        notes=(*live.notes, *plan.notes),
    )
    return replace(session, messages=tuple(out), reported_fill={}), report
