"""The spec's history compression policy, chosen by the number of turns (assistant responses):

* fewer than 5 turns — raw: nothing changes;
* 5 to 15 — light: every message stays (decisions and facts intact); tool outputs over 2K
  tokens are shortened (head and tail around a marker; errors keep their last 50 lines + stack
  trace);
* more than 15 — aggressive: the turns older than the last 5 become one history message of
  ``Turn N: action → outcome`` lines; tool details of those turns and resolved errors go,
  user requests stay verbatim and unresolved error output stays (last 50 lines + stack trace).

Error output is never dropped while unresolved. The kept raw turns keep their calls and
results paired.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from msgspec.structs import replace

from ctxhealth.model import Message, Role, Session, ToolCall, ToolResult
from ctxhealth.recovery.budget import DEFAULT_ENCODING, messages_tokens, texts_tokens
from ctxhealth.recovery.digest import (
    call_target,
    digest,
    error_signature,
    is_failure,
    trim_error_output,
)
from ctxhealth.recovery.pairing import repair_pairs
from ctxhealth.recovery.parts import instruction_index, shorten_result, turn_starts, user_text
from ctxhealth.recovery.report import RecoveryReport, Removal, RemovalKind, Strategy
from ctxhealth.recovery.truncate import budget_error
from ctxhealth.signals.requests import clean_user_text, is_user_request

HISTORY_HEADER = "[HISTORY SUMMARY -- earlier turns compressed by ctxhealth]"
RAW_BELOW_TURNS = 5
AGGRESSIVE_ABOVE_TURNS = 15
LARGE_OUTPUT_TOKENS = 2_000
KEEP_RAW_TURNS = 5
_SHORT_OUTPUT_CHARS = 3_000  # about 750 tokens: what a > 2K-token output is cut down to


class CompressionLevel(StrEnum):
    RAW = "raw"
    LIGHT = "light"
    AGGRESSIVE = "aggressive"


@dataclass(frozen=True, slots=True)
class CompressionPolicy:
    raw_below_turns: int = RAW_BELOW_TURNS
    aggressive_above_turns: int = AGGRESSIVE_ABOVE_TURNS
    large_output_tokens: int = LARGE_OUTPUT_TOKENS
    keep_raw_turns: int = KEEP_RAW_TURNS

    def level(self, turns: int) -> CompressionLevel:
        if turns < self.raw_below_turns:
            return CompressionLevel.RAW
        if turns <= self.aggressive_above_turns:
            return CompressionLevel.LIGHT
        return CompressionLevel.AGGRESSIVE


def _one_line(text: str, limit: int = 100) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _action(message: Message) -> str:
    calls = message.tool_calls
    if calls:
        parts = []
        for c in calls[:3]:
            target = call_target(c)
            parts.append(f"{c.name} {_one_line(target, 60)}".strip())
        more = f" (+{len(calls) - 3} more)" if len(calls) > 3 else ""
        return "; ".join(parts) + more
    return _one_line(message.text) or "(no visible output)"


def _outcome(results: list[ToolResult]) -> str:
    if not results:
        return "answered"
    failed = [r for r in results if is_failure(r)]
    if failed:
        return f"failed: {_one_line(error_signature(failed[-1].text), 100)}"
    first = results[-1].text.strip().splitlines()
    return f"ok ({_one_line(first[0], 60)})" if first else "ok"


def _light(messages: tuple[Message, ...], policy: CompressionPolicy, encoding: str | None) -> list[Message]:
    results = [r for m in messages for r in m.tool_results]
    sizes = dict(
        zip([id(r) for r in results], texts_tokens([r.text for r in results], encoding), strict=True)
    )
    out = []
    for m in messages:
        if any(sizes[id(r)] > policy.large_output_tokens for r in m.tool_results):
            blocks = tuple(
                shorten_result(b, _SHORT_OUTPUT_CHARS)
                if isinstance(b, ToolResult) and sizes[id(b)] > policy.large_output_tokens
                else b
                for b in m.blocks
            )
            m = replace(m, blocks=blocks)
        out.append(m)
    return out


def _aggressive(
    session: Session, policy: CompressionPolicy, encoding: str | None
) -> tuple[list[Message], int]:
    messages = session.messages
    starts = turn_starts(messages)
    instr = instruction_index(messages)
    cut = starts[-policy.keep_raw_turns]
    unresolved = {e.index: e for e in digest(session).errors if not e.resolved}
    lines: list[str] = [HISTORY_HEADER]
    turn_no = 0
    calls: dict[str, ToolCall] = {}
    head: list[Message] = []
    pending_results: list[ToolResult] = []
    last_action = ""
    for i, m in enumerate(messages[:cut]):
        if m.role is Role.SYSTEM or i == instr:
            head.append(
                m
                if i != instr
                else replace(m, blocks=tuple(b for b in m.blocks if not isinstance(b, ToolResult)))
            )
            continue
        if m.role is Role.ASSISTANT:
            if last_action:
                lines.append(f"{last_action} → {_outcome(pending_results)}")
            turn_no += 1
            pending_results = []
            last_action = f"Turn {turn_no}: {_action(m)}"
            calls.update({c.id: c for c in m.tool_calls})
            continue
        pending_results.extend(m.tool_results)
        if is_user_request(m):
            lines.append(f"User (verbatim): {clean_user_text(m.text)}")
        elif m.compaction is not None:
            lines.append(f"Earlier summary: {m.compaction.text}")
        if i in unresolved:
            for r in m.tool_results:
                if is_failure(r):
                    lines.append(f"Unresolved error output (turn {turn_no}):\n{trim_error_output(r.text)}")
    if last_action:
        lines.append(f"{last_action} → {_outcome(pending_results)}")
    summary = user_text("\n".join(lines))
    return [*head, summary, *messages[cut:]], cut


def compress_history(
    session: Session,
    *,
    policy: CompressionPolicy | None = None,
    budget_tokens: int | None = None,
    encoding: str | None = DEFAULT_ENCODING,
) -> tuple[Session, RecoveryReport]:
    """Compress ``session``'s history per the spec's policy (see the module docstring)."""
    pol = policy or CompressionPolicy()
    messages = session.messages
    sizes = messages_tokens(messages, encoding)
    turns = len(turn_starts(messages))
    level = pol.level(turns)
    removals: list[Removal] = []
    if level is CompressionLevel.RAW:
        out: list[Message] = list(messages)
    elif level is CompressionLevel.LIGHT:
        out = _light(messages, pol, encoding)
        after = messages_tokens(out, encoding)
        removals = [
            Removal(i, RemovalKind.TRIMMED, sizes[i], after[i], "tool output > 2K tokens shortened")
            for i in range(len(messages))
            if out[i] is not messages[i]
        ]
    else:
        out, cut = _aggressive(session, pol, encoding)
        instr = instruction_index(messages)
        removals = [
            Removal(i, RemovalKind.SUMMARISED, sizes[i], 0, "folded into the history summary")
            for i in range(cut)
            if messages[i].role is not Role.SYSTEM and i != instr
        ]
    repaired, orphans = repair_pairs(out)
    removals += [Removal(o.index, RemovalKind.ORPHAN, 0, 0, f"{o.kind} {o.tool_id}") for o in orphans]
    after_sizes = messages_tokens(repaired, encoding)
    if budget_tokens is not None and sum(after_sizes) > budget_tokens:
        raise budget_error(sum(after_sizes), budget_tokens, f"the {level} compression of this history")
    report = RecoveryReport(
        strategy=Strategy.COMPRESS,
        tokens_before=sum(sizes),
        tokens_after=sum(after_sizes),
        messages_before=len(messages),
        messages_after=len(repaired),
        removals=tuple(removals),
        budget_tokens=budget_tokens,
        notes=(f"{level} ({turns} turns)",),
    )
    return replace(session, messages=repaired, reported_fill={}), report
