"""The normalised transcript model every reader produces and every layer above consumes.

A :class:`Session` is an ordered tuple of :class:`Message` objects (the main thread
only), each holding content :data:`Block` values. Sub-agent / sidechain threads are
kept apart in ``Session.sidechains`` (each one a Session of its own) so they never
distort the main thread's context fill, yet can be counted for tools and cost.

One :class:`Message` with role ``assistant`` is one model response ("turn"); readers
merge the several log lines that carry the same response. ``Usage`` is what the
provider reported for that response, when the log has it.

All classes are frozen: layers above build new values instead of mutating
(``msgspec.structs.replace``). They are ``msgspec.Struct`` classes, not dataclasses: a Struct class
is created in C at import (a frozen, slotted dataclass costs about 1 ms each at every start of a
hook or a ``check``), and its instances are cheaper to build and compare.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

import msgspec


class Role(StrEnum):
    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class Format(StrEnum):
    """Transcript formats ctxhealth can read."""

    CLAUDE_CODE = "claude-code"
    CODEX = "codex"
    MINI_SWE_AGENT = "mini-swe-agent"
    OPENAI_CHAT = "openai-chat"
    ANTHROPIC_MESSAGES = "anthropic-messages"
    SWE_AGENT = "swe-agent"
    OPENHANDS = "openhands"
    TAU_BENCH = "tau-bench"
    GEMINI_CLI = "gemini-cli"


class TextBlock(msgspec.Struct, frozen=True):
    text: str


class ThinkingBlock(msgspec.Struct, frozen=True):
    text: str


class ToolCall(msgspec.Struct, frozen=True):
    """A model's request to run a tool. ``input`` is the decoded JSON input (or raw text)."""

    id: str
    name: str
    input: Any


class ToolResult(msgspec.Struct, frozen=True):
    """The outcome of a tool call. ``exit_code`` when the result text carries one."""

    tool_call_id: str
    text: str
    is_error: bool = False
    exit_code: int | None = None


class CompactionSummary(msgspec.Struct, frozen=True):
    """The summary an agent injected when it compacted its context.

    ``pre_tokens`` is the fill just before compaction when the log states it
    (Claude Code ``compact_boundary.compactMetadata.preTokens``; the prompt of Codex's compaction
    request); ``post_tokens`` the size of the compacted conversation (summary and kept messages,
    without the system prompt and tool definitions) and ``dropped_tokens`` what the compactions of
    the session have dropped so far, when the log states them (``postTokens``,
    ``cumulativeDroppedTokens``, Claude Code 2.1).
    ``usage`` is what the compaction's own model request cost, when the log has it apart from the turns
    (Codex ``token_usage_record`` of the compaction response): it is priced with the session, never a turn.
    ``encrypted`` is true when the agent kept the summary only in encrypted form (Codex with the OpenAI
    provider): ``text`` is then empty because the log holds no readable summary, not because it was empty.
    """

    text: str
    trigger: str | None = None
    pre_tokens: int | None = None
    post_tokens: int | None = None
    dropped_tokens: int | None = None
    usage: Usage | None = None
    encrypted: bool = False


class ImageBlock(msgspec.Struct, frozen=True):
    """Non-text content (image, document). Only its size hint is kept."""

    media_type: str = ""
    approx_bytes: int = 0


Block = TextBlock | ThinkingBlock | ToolCall | ToolResult | CompactionSummary | ImageBlock


class Usage(msgspec.Struct, frozen=True):
    """Provider-reported token usage for one model response.

    ``context_tokens`` is the prompt size as the provider counted it: for Anthropic
    input + cache creation + cache read; for OpenAI-style logs ``prompt_tokens``.
    ``cache_write_1h_tokens`` is the part of ``cache_creation_tokens`` written to the 1-hour
    cache (Anthropic ``cache_creation.ephemeral_1h_input_tokens``), priced higher than the
    default 5-minute cache; 0 when the log does not split the writes.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_tokens: int = 0
    cache_read_tokens: int = 0
    reasoning_tokens: int = 0
    cache_write_1h_tokens: int = 0

    @property
    def context_tokens(self) -> int:
        return self.input_tokens + self.cache_creation_tokens + self.cache_read_tokens

    def merged(self, later: Usage | None) -> Usage:
        """The usage of one response after a later part of it (another line of the same response)
        reported ``later``: the prompt as first reported, the largest output (streamed lines report
        it growing), the largest reasoning with it. The one rule for a response given in parts: the
        readers merging its lines, the Monitor and the hooks' counters reading it in pieces."""
        if later is None or later.output_tokens <= self.output_tokens:
            return self
        return Usage(
            self.input_tokens,
            later.output_tokens,
            self.cache_creation_tokens,
            self.cache_read_tokens,
            max(self.reasoning_tokens, later.reasoning_tokens),
            self.cache_write_1h_tokens,
        )


class Message(msgspec.Struct, frozen=True):
    """One message in the context. For assistants, one model response.

    ``response_id`` is the provider's response id (Claude Code ``message.id``), used to
    deduplicate usage; ``id`` is the log's own id for the line (``uuid``); ``line`` is the
    1-based line (or list index) in the source where the message starts. ``synthetic`` marks an
    assistant message the client wrote itself in the model's place (Claude Code's stand-ins for
    an API error or an interruption): the reader knows its format, so it sets the flag, and
    accounting never counts such a message as a model response.
    """

    role: Role
    blocks: tuple[Block, ...]
    id: str | None = None
    response_id: str | None = None
    model: str | None = None
    usage: Usage | None = None
    timestamp: str | None = None
    sidechain: bool = False
    line: int | None = None
    synthetic: bool = False

    @property
    def text(self) -> str:
        """Concatenated visible text (text + compaction summaries), without tool payloads."""
        parts = [b.text for b in self.blocks if isinstance(b, (TextBlock, CompactionSummary))]
        return "\n".join(parts)

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        return tuple(b for b in self.blocks if isinstance(b, ToolCall))

    @property
    def tool_results(self) -> tuple[ToolResult, ...]:
        return tuple(b for b in self.blocks if isinstance(b, ToolResult))

    @property
    def compaction(self) -> CompactionSummary | None:
        for b in self.blocks:
            if isinstance(b, CompactionSummary):
                return b
        return None


def parse_timestamp(value: str | None) -> datetime | None:
    """A message's ``timestamp`` (ISO 8601, ``Z`` allowed) as an aware datetime with the offset the
    log wrote; a stamp without an offset is taken as UTC; None when absent or unreadable. The one
    reading of a log's time: callers that need UTC convert (``.astimezone(UTC)``)."""
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


class InjectedContext(msgspec.Struct, frozen=True):
    """Context a hook added to the conversation, as the agent logged it (Claude Code 2.1
    ``hook_additional_context`` attachments): the line, the hook event, the text the model read.
    ctxhealth's own notes start with ``[ctxhealth]``."""

    line: int
    event: str | None
    text: str


class ReadWarning(msgspec.Struct, frozen=True):
    """A problem a lenient reader stepped over: ``path:line: reason``."""

    path: str
    line: int | None
    reason: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return f"{where}: {self.reason}"


class Session(msgspec.Struct, frozen=True):
    """One agent session in the normalised model.

    ``context_window`` is set when the log itself states the window (Codex
    ``model_context_window``, already what the prompt may fill; ``window_whole``: the model's whole
    window, which the reserve still comes out of, as the ``contextWindow`` a Claude Code stream-json
    log's ``result`` line states); ``reported_fill`` maps message index -> the fill the log
    reported outside any message usage (Codex ``token_count`` events).

    ``cwd`` is the working directory the agent ran in, when the log states it (Codex ``session_meta.cwd``).

    ``outcome`` is the run's result when the log records one (tau-bench ``reward``; 1.0 is a
    success), ``task_id`` the task the run attempted when the log names it (evaluation runs:
    repeated trials of one task share it). ``agent_cost_usd`` is the agent's own running total
    of the session's cost when the log records one (Claude Code 2.1 ``cost-state`` lines): it
    includes requests no transcript keeps, such as a compaction's. ``injected_context`` is what
    hooks added to the main thread (in file order), when the log records it.
    """

    path: str
    format: Format
    messages: tuple[Message, ...]
    session_id: str | None = None
    model: str | None = None
    sidechains: tuple[Session, ...] = ()
    warnings: tuple[ReadWarning, ...] = ()
    context_window: int | None = None
    window_whole: bool = False
    reported_fill: dict[int, int] = msgspec.field(default_factory=dict)
    outcome: float | None = None
    task_id: str | None = None
    agent_cost_usd: float | None = None
    cwd: str | None = None
    injected_context: tuple[InjectedContext, ...] = ()

    @property
    def instruction(self) -> str:
        """The first real user request: the first user message with text (not a tool result)."""
        for m in self.messages:
            if m.role is Role.USER and m.compaction is None and m.text.strip():
                return m.text
        return ""

    @property
    def system_prompt(self) -> str:
        return "\n".join(m.text for m in self.messages if m.role is Role.SYSTEM)

    @property
    def assistant_turns(self) -> int:
        """Distinct model responses in the main thread."""
        return sum(1 for m in self.messages if m.role is Role.ASSISTANT)
