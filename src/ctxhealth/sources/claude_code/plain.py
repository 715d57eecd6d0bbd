"""Plain records the lenient path builds for a Claude Code line, without importing ``msgspec``.

Owns :class:`PlainNode` and its parts: slotted classes with the same fields, order and defaults
as the typed schema's structs (:mod:`.schema`), so the builder and the tree walk read either
kind alike. A hook feeding a few new lines decodes them on the lenient path and so never pays
for importing ``msgspec``. For the type checker they are the schema's structs (same attributes).
Also owns the line kinds that carry a message.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = [
    "_MESSAGE_KINDS",
    "PlainAttachment",
    "PlainCacheCreation",
    "PlainCompactMeta",
    "PlainMsg",
    "PlainNode",
    "PlainOutputDetails",
    "PlainUsage",
]

_MESSAGE_KINDS = ("user", "assistant")

if TYPE_CHECKING:
    from ctxhealth.sources.claude_code.schema import _Attachment as PlainAttachment
    from ctxhealth.sources.claude_code.schema import _CacheCreation as PlainCacheCreation
    from ctxhealth.sources.claude_code.schema import _CompactMeta as PlainCompactMeta
    from ctxhealth.sources.claude_code.schema import _Msg as PlainMsg
    from ctxhealth.sources.claude_code.schema import _Node as PlainNode
    from ctxhealth.sources.claude_code.schema import _OutputDetails as PlainOutputDetails
    from ctxhealth.sources.claude_code.schema import _Usage as PlainUsage
else:

    class PlainCacheCreation:
        __slots__ = ("ephemeral_1h_input_tokens", "ephemeral_5m_input_tokens")

        def __init__(self, ephemeral_5m_input_tokens: int = 0, ephemeral_1h_input_tokens: int = 0) -> None:
            self.ephemeral_5m_input_tokens = ephemeral_5m_input_tokens
            self.ephemeral_1h_input_tokens = ephemeral_1h_input_tokens

    class PlainOutputDetails:
        __slots__ = ("thinking_tokens",)

        def __init__(self, thinking_tokens: int = 0) -> None:
            self.thinking_tokens = thinking_tokens

    class PlainUsage:
        __slots__ = (
            "cache_creation",
            "cache_creation_input_tokens",
            "cache_read_input_tokens",
            "input_tokens",
            "output_tokens",
            "output_tokens_details",
        )

        def __init__(
            self,
            input_tokens: int = 0,
            output_tokens: int = 0,
            cache_creation_input_tokens: int = 0,
            cache_read_input_tokens: int = 0,
            cache_creation: PlainCacheCreation | None = None,
            output_tokens_details: PlainOutputDetails | None = None,
        ) -> None:
            self.output_tokens_details = output_tokens_details
            self.input_tokens = input_tokens
            self.output_tokens = output_tokens
            self.cache_creation_input_tokens = cache_creation_input_tokens
            self.cache_read_input_tokens = cache_read_input_tokens
            self.cache_creation = cache_creation

    class PlainMsg:
        __slots__ = ("blocks", "content", "id", "model", "usage")

        def __init__(
            self,
            content: Any = None,
            id: str | None = None,
            model: str | None = None,
            usage: PlainUsage | None = None,
            blocks: list[Any] | None = None,
        ) -> None:
            self.content = content
            self.id = id
            self.model = model
            self.usage = usage
            self.blocks = blocks

    class PlainCompactMeta:
        __slots__ = ("cumulativeDroppedTokens", "postTokens", "preTokens", "trigger")

        def __init__(
            self,
            trigger: str | None = None,
            preTokens: int | None = None,
            postTokens: int | None = None,
            cumulativeDroppedTokens: int | None = None,
        ) -> None:
            self.trigger = trigger
            self.preTokens = preTokens
            self.postTokens = postTokens
            self.cumulativeDroppedTokens = cumulativeDroppedTokens

    class PlainAttachment:
        __slots__ = ("content", "hookEvent", "type")

        def __init__(
            self, type: str | None = None, hookEvent: str | None = None, content: Any = None
        ) -> None:
            self.type = type
            self.hookEvent = hookEvent
            self.content = content

    class PlainNode:
        __slots__ = (
            "attachment",
            "compactMetadata",
            "event",
            "isCompactSummary",
            "isSidechain",
            "line",
            "logicalParentUuid",
            "message",
            "modelUsage",
            "parentUuid",
            "parent_tool_use_id",
            "sessionId",
            "session_id",
            "subtype",
            "timestamp",
            "totalCostUSD",
            "total_cost_usd",
            "type",
            "uuid",
        )

        def __init__(
            self,
            type: str,
            uuid: str | None = None,
            parentUuid: str | None = None,
            isSidechain: bool = False,
            message: PlainMsg | None = None,
            timestamp: str | None = None,
            sessionId: str | None = None,
            isCompactSummary: bool = False,
            subtype: str | None = None,
            compactMetadata: PlainCompactMeta | None = None,
            logicalParentUuid: str | None = None,
            totalCostUSD: float | None = None,
            attachment: PlainAttachment | None = None,
            line: int = 0,
            session_id: str | None = None,
            parent_tool_use_id: str | None = None,
            total_cost_usd: Any = None,
            modelUsage: Any = None,
            event: Any = None,
        ) -> None:
            self.type = type
            self.uuid = uuid
            self.parentUuid = parentUuid
            self.isSidechain = isSidechain
            self.message = message
            self.timestamp = timestamp
            self.sessionId = sessionId
            self.isCompactSummary = isCompactSummary
            self.subtype = subtype
            self.compactMetadata = compactMetadata
            self.logicalParentUuid = logicalParentUuid
            self.totalCostUSD = totalCostUSD
            self.attachment = attachment
            self.line = line
            self.session_id = session_id
            self.parent_tool_use_id = parent_tool_use_id
            self.total_cost_usd = total_cost_usd
            self.modelUsage = modelUsage
            self.event = event
