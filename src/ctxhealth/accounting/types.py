"""Value types of the accounting layer, shared by registry, fill and cost (no logic here)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Tier(StrEnum):
    """Quality tier of a model: how early quality degrades with absolute context length."""

    FULL = "full"
    COMPACT = "compact"
    LOCAL = "local"


class FillSource(StrEnum):
    """Where a token count came from."""

    REPORTED = "reported"
    EXACT = "exact"
    ESTIMATED = "estimated"


@dataclass(frozen=True, slots=True)
class Prices:
    """USD per million tokens.

    ``cache_write`` is the default (Anthropic: 5-minute) cache write; ``cache_write_1h`` the
    1-hour cache write where a provider sells one (None: priced as ``cache_write``).
    ``long_context`` are the prices of every token of a request whose prompt (input + cache
    writes + cache reads) exceeds ``long_context_above`` tokens, where a provider has such a
    tier (Anthropic Sonnet 4 / 4.5 and Gemini Pro above 200K).
    """

    input: float
    output: float
    cache_write: float
    cache_read: float
    cache_write_1h: float | None = None
    long_context_above: int | None = None
    long_context: Prices | None = None


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """What the registry knows about a model id.

    ``reserved_output`` is kept free for the response; ``autocompact_buffer`` is the margin
    at which the host compacts (Claude Code: 13K). ``usable_window`` subtracts both.
    """

    id: str
    family: str
    window: int
    tier: Tier
    reserved_output: int = 0
    autocompact_buffer: int = 0
    prices: Prices | None = None
    encoding: str | None = None
    known: bool = True

    @property
    def usable_window(self) -> int:
        return max(1, self.window - self.reserved_output - self.autocompact_buffer)


@dataclass(frozen=True, slots=True)
class TurnFill:
    """Context fill at one model response (turn ``turn``, 0-based, main thread)."""

    turn: int
    message_index: int
    tokens: int
    source: FillSource
    output_tokens: int = 0


@dataclass(frozen=True, slots=True)
class CompactionRecord:
    """One compaction: fill before (last turn before) and after (first turn after)."""

    index: int
    message_index: int
    pre_tokens: int | None
    post_tokens: int | None
    trigger: str | None
    post_source: FillSource | None = None
    """Set when ``post_tokens`` is not the next response's fill but what the compaction left (no
    response came after it), counted: ``estimated``."""
    log_post_tokens: int | None = None
    """The compacted conversation as the log states it (Claude Code 2.1 ``postTokens``, which
    leaves out the system prompt and tool definitions)."""
    dropped_tokens: int | None = None
    """What the compactions so far dropped, as the log states it (``cumulativeDroppedTokens``)."""
