"""Prompt-cache health of a session: hit rates, and every cache break with its likely cause and cost.

* Hit rate of a response: cache-read tokens over its prompt (input + cache writes + cache reads).
  Of a session: the same ratio over the sums of all its responses (sub-agents included), and over
  its last ``last_n`` (50) responses in time order.
* A **cache break**: a response whose cached prefix (cache-read tokens) shrank by at least
  ``MIN_BREAK_TOKENS`` against the previous response of the same thread (smaller shrinks are
  how providers round: Gemini's implicit cache reports a few tokens less from one request to the
  next on an unchanged prefix, and nothing under the minimum cacheable prompt is ever cached).
  Its cause, from evidence in the log, first match wins:

  1. ``compaction`` / ``clear`` — the thread was compacted (a compaction summary) or cleared
     (a ``/clear`` or ``/compact`` command) since the previous response;
  2. ``model-switch`` — another model answered (each model has its own cache);
  3. ``idle`` — longer than the cache TTL since the previous response: 5 minutes, or 1 hour once
     the session has written to the 1-hour cache;
  4. ``system-change`` — a system message appeared or changed between the two (where the log
     holds the system prompt's text);
  5. ``lookback`` — more than 20 content blocks were added since the previous request, more
     than the provider looks back for an earlier cache entry;
  6. ``prefix-change`` — the cache still held a shorter prefix: the prompt changed after its
     first N tokens (an earlier message, the tool list or the system prompt were re-written);
  7. ``unknown``.

* What a break cost: the response's price minus its price had the lost prefix been read from
  the cache (lost = the prefix the previous response left cached, capped at this prompt, minus
  what was read); what the session would have cost with every break avoided is the total minus
  those. Compactions and clears are listed too, but are not findings (they are meant).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum
from typing import Any

from msgspec.structs import replace

from ctxhealth.accounting.cost import iter_threads, usage_cost
from ctxhealth.audit.responses import Response
from ctxhealth.model import Role, Session

DEFAULT_TTL = timedelta(minutes=5)
ONE_HOUR_TTL = timedelta(hours=1)
MIN_BREAK_TOKENS = 1_024
"""The smallest prompt Anthropic and OpenAI cache (and the monitor's ``cache_min_prompt``)."""
LOOKBACK_BLOCKS = 20
"""Anthropic looks for an earlier cache entry at most about 20 content blocks before a breakpoint."""

_CLEAR_COMMAND = re.compile(r"<command-name>\s*/?(clear|compact)\b|^\s*/(clear|compact)\b", re.MULTILINE)


class BreakCause(StrEnum):
    COMPACTION = "compaction"
    CLEAR = "clear"
    MODEL_SWITCH = "model-switch"
    IDLE = "idle"
    SYSTEM_CHANGE = "system-change"
    LOOKBACK = "lookback"
    PREFIX_CHANGE = "prefix-change"
    UNKNOWN = "unknown"


EXPECTED_CAUSES = frozenset({BreakCause.COMPACTION, BreakCause.CLEAR})
"""Breaks that are meant (the context was rewritten on purpose): listed, never findings."""


@dataclass(frozen=True, slots=True)
class CacheBreak:
    """One cache break: the response (index into the session's responses), its cause and cost."""

    index: int
    response: Response
    previous: Response
    cause: BreakCause
    detail: str
    tokens: int
    usd: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "response_id": self.response.response_id,
            "line": self.response.line,
            "thread": self.response.thread,
            "cause": str(self.cause),
            "detail": self.detail,
            "cached_before": self.previous.usage.cache_read_tokens,
            "cached_after": self.response.usage.cache_read_tokens,
            "tokens": self.tokens,
            "usd": self.usd,
        }


@dataclass(frozen=True, slots=True)
class CacheReport:
    """Hit rates and breaks of one session."""

    hit_rate: float | None
    last_n_hit_rate: float | None
    breaks: tuple[CacheBreak, ...]
    usd_breaks: float
    usd_without_breaks: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "hit_rate": self.hit_rate,
            "last50_hit_rate": self.last_n_hit_rate,
            "breaks": [b.to_dict() for b in self.breaks],
            "usd_breaks": self.usd_breaks,
            "usd_without_breaks": self.usd_without_breaks,
        }


def hit_rate(responses: Sequence[Response]) -> float | None:
    """Cache-read tokens over prompt tokens summed over ``responses`` (None without any prompt)."""
    read = sum(r.usage.cache_read_tokens for r in responses)
    prompt = sum(r.usage.context_tokens for r in responses)
    return read / prompt if prompt > 0 else None


def last_responses(responses: Sequence[Response], n: int) -> list[Response]:
    """The last ``n`` responses in time order (thread order where a timestamp is missing)."""
    if all(r.time is not None for r in responses):
        ordered = sorted(responses, key=lambda r: r.time)  # type: ignore[arg-type, return-value]
    else:
        ordered = list(responses)
    return ordered[-n:] if n > 0 else []


def audit_cache(
    session: Session, responses: Sequence[Response], *, last_n: int = 50, min_break: int = MIN_BREAK_TOKENS
) -> CacheReport:
    """Hit rates and cache breaks of ``session`` from its priced ``responses``."""
    threads = list(iter_threads(session))
    one_hour_seen = False
    previous: dict[int, Response] = {}
    breaks: list[CacheBreak] = []
    for index, response in enumerate(responses):
        before = previous.get(response.thread)
        ttl = ONE_HOUR_TTL if one_hour_seen else DEFAULT_TTL
        shrink = 0 if before is None else before.usage.cache_read_tokens - response.usage.cache_read_tokens
        if before is not None and shrink >= min_break:
            cause, detail = _cause(threads[response.thread], before, response, ttl)
            tokens, usd = _break_cost(before, response)
            breaks.append(CacheBreak(index, response, before, cause, detail, tokens, usd))
        if response.usage.cache_write_1h_tokens > 0:
            one_hour_seen = True
        previous[response.thread] = response
    total = None if any(r.usd is None for r in responses) else sum(r.usd or 0.0 for r in responses)
    usd_breaks = sum(b.usd or 0.0 for b in breaks if b.cause not in EXPECTED_CAUSES)
    return CacheReport(
        hit_rate=hit_rate(responses),
        last_n_hit_rate=hit_rate(last_responses(responses, last_n)),
        breaks=tuple(breaks),
        usd_breaks=usd_breaks,
        usd_without_breaks=None if total is None else total - usd_breaks,
    )


def _break_cost(before: Response, response: Response) -> tuple[int, float | None]:
    """Tokens of the prefix lost and what losing it cost (vs reading it from the cache)."""
    usage = response.usage
    cached_before = before.usage.cache_read_tokens + before.usage.cache_creation_tokens
    lost = max(0, min(cached_before, usage.context_tokens) - usage.cache_read_tokens)
    if response.prices is None or response.usd is None:
        return lost, None
    from_writes = min(lost, usage.cache_creation_tokens)
    from_input = min(lost - from_writes, usage.input_tokens)
    one_hour = min(usage.cache_write_1h_tokens, usage.cache_creation_tokens - from_writes)
    avoided = replace(
        usage,
        cache_creation_tokens=usage.cache_creation_tokens - from_writes,
        cache_write_1h_tokens=one_hour,
        input_tokens=usage.input_tokens - from_input,
        cache_read_tokens=usage.cache_read_tokens + from_writes + from_input,
    )
    return lost, max(0.0, response.usd - usage_cost(avoided, response.prices))


def _cause(thread: Session, before: Response, response: Response, ttl: Any) -> tuple[BreakCause, str]:
    between = thread.messages[before.position + 1 : response.position]
    for message in between:
        summary = message.compaction
        if summary is not None:
            how = f" ({summary.trigger})" if summary.trigger else ""
            return BreakCause.COMPACTION, f"compacted{how} at line {message.line}"
        if message.role is Role.USER and _CLEAR_COMMAND.search(message.text):
            return BreakCause.CLEAR, f"context cleared by a command at line {message.line}"
    if before.model and response.model and before.model != response.model:
        return BreakCause.MODEL_SWITCH, f"model {before.model} -> {response.model}"
    if before.time is not None and response.time is not None and response.time - before.time > ttl:
        idle = response.time - before.time
        return BreakCause.IDLE, f"idle {_duration(idle)} (cache TTL {_duration(ttl)})"
    if any(m.role is Role.SYSTEM for m in between):
        return BreakCause.SYSTEM_CHANGE, "a system message changed before this request"
    blocks = len(thread.messages[before.position].blocks) + sum(len(m.blocks) for m in between)
    if blocks > LOOKBACK_BLOCKS:
        return BreakCause.LOOKBACK, f"{blocks} content blocks since the previous request"
    kept = response.usage.cache_read_tokens
    if kept > 0:
        new_prompt = any(m.role is Role.USER and not m.tool_results and m.text.strip() for m in between)
        after = " after a new user prompt" if new_prompt else ""
        return BreakCause.PREFIX_CHANGE, f"prompt changed after its first {kept:,} tokens{after}"
    return BreakCause.UNKNOWN, "nothing in the log explains it"


def _duration(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m{seconds % 60:02d}s"
    return f"{seconds // 60}m{seconds % 60:02d}s"
