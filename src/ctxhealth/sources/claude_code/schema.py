"""The typed msgspec schema of a Claude Code line: only the fields the reader uses.

Owns the structs both decoding paths build (:class:`_Node` for a line, :class:`_Msg` for its
``message``), the typed decoders (``_DECODE`` a line, ``_DECODE_LINES`` a whole file) and the line
kinds that carry a message.

Every field is as strict as the lenient path's getters are forgiving: a value the lenient path
would coerce, ignore or warn about is rejected here, so that line goes to the lenient path.
Integers are bounded to int64 because orjson turns larger ones into floats.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from ctxhealth.sources.claude_code.plain import _MESSAGE_KINDS as _MESSAGE_KINDS

_Int = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]


_Count = Annotated[int, msgspec.Meta(ge=0, le=2**53)]
"""A usage field: anything else (a negative, a string, null, ...) sends the line to the lenient
path, which ignores the field and names it in a warning."""


class _CacheCreation(msgspec.Struct, gc=False):
    """``usage.cache_creation`` (newer versions): the cache writes split by cache lifetime."""

    ephemeral_5m_input_tokens: _Count = 0
    ephemeral_1h_input_tokens: _Count = 0


class _OutputDetails(msgspec.Struct, gc=False):
    """``usage.output_tokens_details`` (2.1): the thinking part of ``output_tokens``."""

    thinking_tokens: _Count = 0


class _Usage(msgspec.Struct, gc=False):
    input_tokens: _Count = 0
    output_tokens: _Count = 0
    cache_creation_input_tokens: _Count = 0
    cache_read_input_tokens: _Count = 0
    cache_creation: _CacheCreation | None = None
    output_tokens_details: _OutputDetails | None = None


class _Text(msgspec.Struct, tag="text", gc=False):
    text: str


class _Thinking(msgspec.Struct, tag="thinking", gc=False):
    thinking: str = ""


class _RedactedThinking(msgspec.Struct, tag="redacted_thinking", gc=False):
    pass


class _ToolUse(msgspec.Struct, tag="tool_use", gc=False):
    id: str
    name: str
    # Kept raw and decoded by orjson, so a tool input has exactly the lenient path's values.
    input: msgspec.Raw = msgspec.Raw(b"null")


class _ServerToolUse(_ToolUse, tag="server_tool_use", gc=False):
    pass


class _McpToolUse(_ToolUse, tag="mcp_tool_use", gc=False):
    pass


class _Source(msgspec.Struct, gc=False):
    data: str = ""
    media_type: str = ""


class _Image(msgspec.Struct, tag="image", gc=False):
    source: _Source | None = None


class _Document(msgspec.Struct, tag="document", gc=False):
    source: _Source | None = None


class _ResultText(msgspec.Struct, tag="text", gc=False):
    text: str = ""


class _ToolResult(msgspec.Struct, tag="tool_result", gc=False):
    tool_use_id: str
    content: str | list[str | _ResultText | _Image | _Document] | None = None
    is_error: bool | None = None


_TypedBlock = (
    str | _Text | _Thinking | _RedactedThinking | _ToolUse | _ServerToolUse | _McpToolUse | _ToolResult
)


class _Msg(msgspec.Struct, gc=False):
    """``message`` of a line. ``content`` is raw JSON on the lenient path (``blocks`` None)."""

    content: str | list[_TypedBlock | _Image | _Document] | None = None
    id: str | None = None
    model: str | None = None
    usage: _Usage | None = None
    # Filled after decoding (typed path only): the content as model blocks. The odd JSON name
    # keeps it apart from real keys; a line that had such a key is overwritten anyway.
    blocks: list[Any] | None = msgspec.field(default=None, name="(ctxhealth blocks)")


class _CompactMeta(msgspec.Struct, gc=False):
    trigger: str | None = None
    preTokens: _Int | None = None
    postTokens: _Int | None = None
    cumulativeDroppedTokens: _Int | None = None


class _Attachment(msgspec.Struct, gc=False):
    type: str | None = None
    hookEvent: str | None = None
    content: Any = None


class _Node(msgspec.Struct, gc=False):
    """One line of the transcript, with its tree links (both decoding paths build this)."""

    type: str
    uuid: str | None = None
    parentUuid: str | None = None  # camelCase: JSON keys, decoded by name
    isSidechain: bool = False
    message: _Msg | None = None
    timestamp: str | None = None
    sessionId: str | None = None
    isCompactSummary: bool = False
    subtype: str | None = None
    compactMetadata: _CompactMeta | None = None
    logicalParentUuid: str | None = None
    totalCostUSD: float | None = None  # cost-state lines (2.1): Claude Code's own running total
    # print mode's stream-json (``-p --output-format stream-json``): snake_case keys, no tree links
    session_id: str | None = None
    parent_tool_use_id: str | None = None  # set on a sub-agent's lines: the call that started it
    total_cost_usd: Any = None  # its ``result`` line: Claude Code's own total (checked when read)
    modelUsage: Any = None  # and per model its ``contextWindow`` (checked when read)
    event: Any = None  # a ``stream_event`` line's API event (``--include-partial-messages``)
    attachment: _Attachment | None = None  # attachment lines (2.1); only hook context is read
    # Set after decoding: the 1-based line number (see ``_Msg.blocks`` for the name).
    line: int = msgspec.field(default=0, name="(ctxhealth line)")


_DECODER = msgspec.json.Decoder(_Node)
_DECODE = _DECODER.decode
_DECODE_LINES = _DECODER.decode_lines
"""Every line of a file in one call (:func:`ctxhealth.sources.claude_code.typed._typed_file`)."""
