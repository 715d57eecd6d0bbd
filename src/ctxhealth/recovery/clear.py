"""Clear old tool results, with the semantics of the Anthropic API's context editing
(``clear_tool_uses``): once a trigger is reached (context tokens or number of tool uses), the
results of all but the last N tool uses are replaced by a short placeholder saying what was
there; named tools are never cleared; tool inputs can be cleared too; and if clearing would win
fewer than ``clear_at_least_tokens`` nothing is cleared (clearing breaks the prompt cache, so
it must be worth it). Calls and results stay paired: only their content changes.

Error results keep their signature line in the placeholder, so a failure is never lost.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

import orjson

from ctxhealth.model import Block, Session, ToolCall, ToolResult
from ctxhealth.recovery.budget import DEFAULT_ENCODING, messages_tokens, texts_tokens
from ctxhealth.recovery.digest import call_target, error_signature, is_failure
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


def clear_tool_results(
    session: Session,
    config: ClearConfig | None = None,
    *,
    encoding: str | None = DEFAULT_ENCODING,
) -> tuple[Session, RecoveryReport]:
    """Clear old tool results of ``session`` per ``config`` (see the module docstring)."""
    cfg = config or ClearConfig()
    messages, orphans = repair_pairs(session.messages)
    sizes = messages_tokens(session.messages, encoding)
    before = sum(sizes)

    calls: list[ToolCall] = [c for m in messages for c in m.tool_calls]
    results = {r.tool_call_id: r for m in messages for r in m.tool_results}
    notes: list[str] = []

    reached = (
        before >= cfg.trigger.value
        if cfg.trigger.kind is TriggerKind.TOKENS
        else len(calls) >= cfg.trigger.value
    )
    keep = cfg.keep_tool_uses
    eligible = [
        c
        for c in (calls[:-keep] if keep > 0 else calls)
        if c.name not in cfg.exclude_tools and c.id in results and not _is_cleared(results[c.id])
    ]
    result_sizes = dict(
        zip(
            [c.id for c in eligible],
            texts_tokens([results[c.id].text for c in eligible], encoding),
            strict=True,
        )
    )
    input_sizes = (
        dict(
            zip(
                [c.id for c in eligible],
                texts_tokens([_input_json(c.input) for c in eligible], encoding),
                strict=True,
            )
        )
        if cfg.clear_tool_inputs
        else {}
    )
    placeholders = {c.id: result_placeholder(c, results[c.id], result_sizes[c.id]) for c in eligible}
    placeholder_sizes = dict(
        zip(placeholders, texts_tokens(list(placeholders.values()), encoding), strict=True)
    )
    gain = sum(max(0, result_sizes[i] - placeholder_sizes[i]) for i in placeholders)
    gain += sum(max(0, n - 6) for n in input_sizes.values())

    if not reached:
        notes.append(f"trigger not reached ({cfg.trigger.kind} {cfg.trigger.value:,})")
        eligible = []
    elif gain < cfg.clear_at_least_tokens:
        notes.append(
            f"would clear {gain:,} tokens, below clear_at_least "
            f"{cfg.clear_at_least_tokens:,}: nothing cleared"
        )
        eligible = []
    # Only worth replacing when the placeholder is smaller than what it replaces.
    chosen = {c.id for c in eligible if placeholder_sizes[c.id] < result_sizes[c.id] or cfg.clear_tool_inputs}

    out = []
    changed: list[int] = []
    for i, m in enumerate(messages):
        blocks: list[Block] = []
        touched = False
        for b in m.blocks:
            if (
                isinstance(b, ToolResult)
                and b.tool_call_id in chosen
                and placeholder_sizes[b.tool_call_id] < result_sizes[b.tool_call_id]
            ):
                blocks.append(replace(b, text=placeholders[b.tool_call_id]))
                touched = True
            elif (
                isinstance(b, ToolCall)
                and b.id in chosen
                and cfg.clear_tool_inputs
                and input_sizes.get(b.id, 0) > 6
            ):
                blocks.append(
                    replace(
                        b,
                        input={
                            INPUT_PLACEHOLDER_KEY: f"input of {b.name} cleared, {input_sizes[b.id]:,} tokens"
                        },
                    )
                )
                touched = True
            else:
                blocks.append(b)
        if touched:
            changed.append(i)
            out.append(replace(m, blocks=tuple(blocks)))
        else:
            out.append(m)
    after_sizes = messages_tokens(out, encoding)
    # Indices refer to the input; without orphans repaired (the usual case) they coincide.
    removals = [
        Removal(
            i, RemovalKind.CLEARED, messages_tokens([messages[i]], encoding)[0], after_sizes[i], "tool output"
        )
        for i in changed
    ]
    removals += [Removal(o.index, RemovalKind.ORPHAN, 0, 0, f"{o.kind} {o.tool_id}") for o in orphans]
    report = RecoveryReport(
        strategy=Strategy.CLEAR,
        tokens_before=before,
        tokens_after=sum(after_sizes),
        messages_before=len(session.messages),
        messages_after=len(out),
        removals=tuple(removals),
        notes=tuple(notes),
    )
    return replace(session, messages=tuple(out)), report
