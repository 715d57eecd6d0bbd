"""Message content and usage of a decoded Claude Code line as model values.

Owns the typed path's conversion of schema blocks into model :class:`Block` values (tool-call
inputs decoded by orjson, exactly as the lenient path does), the lenient path's fallback to the
shared Anthropic block parser, and the clamping of usage counts.
"""

from __future__ import annotations

from typing import Any

import orjson

from ctxhealth.model import Block, ImageBlock, ThinkingBlock, Usage
from ctxhealth.sources.anthropic_messages import parse_blocks
from ctxhealth.sources.claude_code.schema import (
    _Document,
    _Image,
    _McpToolUse,
    _Msg,
    _Node,
    _RedactedThinking,
    _ResultText,
    _ServerToolUse,
    _Text,
    _Thinking,
    _ToolResult,
    _ToolUse,
    _Usage,
)
from ctxhealth.sources.lines import WarningSink, make_call, make_result, make_text, make_usage


def _typed_blocks(content: Any) -> list[Block]:
    """Model blocks of a typed ``content``; raises ``orjson.JSONDecodeError`` on a bad tool input."""
    if content is None:
        return []
    if type(content) is str:
        return [make_text(content)]
    blocks: list[Block] = []
    append = blocks.append
    for item in content:
        cls = type(item)
        if cls is _Text:
            append(make_text(item.text))
        elif cls is _ToolResult:
            inner = item.content
            if inner is None:
                append(make_result(item.tool_use_id, "", item.is_error is True))
            elif type(inner) is str:
                append(make_result(item.tool_use_id, inner, item.is_error is True))
            else:
                parts: list[str] = []
                images: list[Block] = []
                for part in inner:
                    kind = type(part)
                    if kind is _ResultText:
                        parts.append(part.text)
                    elif kind is str:
                        parts.append(part)
                    else:
                        images.append(_typed_image(part))
                append(make_result(item.tool_use_id, "\n".join(parts), item.is_error is True))
                blocks.extend(images)
        elif cls is _ToolUse or cls is _ServerToolUse or cls is _McpToolUse:
            append(make_call(item.id, item.name, orjson.loads(memoryview(item.input))))
        elif cls is _Thinking:
            append(ThinkingBlock(item.thinking))
        elif cls is str:
            append(make_text(item))
        elif cls is _RedactedThinking:
            append(ThinkingBlock(""))
        else:
            append(_typed_image(item))
    return blocks


def _typed_image(item: _Image | _Document) -> ImageBlock:
    source = item.source
    kind = "image" if type(item) is _Image else "document"
    if source is None:
        return ImageBlock(media_type=kind, approx_bytes=0)
    return ImageBlock(media_type=source.media_type or kind, approx_bytes=len(source.data) * 3 // 4)


def _blocks(node: _Node, message: _Msg, sink: WarningSink) -> list[Block]:
    """The message's content as model blocks (already converted on the typed path).

    The list is the draft's own from here on (a merged response extends it): every node is
    built at most once, and nodes are dropped after the read.
    """
    blocks = message.blocks
    if blocks is None:
        return parse_blocks(message.content, sink, node.line)
    return blocks


def _usage(raw: _Usage | None) -> Usage | None:
    if raw is None:
        return None
    created = raw.cache_creation_input_tokens
    read = raw.cache_read_input_tokens
    return make_usage(
        raw.input_tokens if raw.input_tokens > 0 else 0,
        raw.output_tokens if raw.output_tokens > 0 else 0,
        created if created > 0 else 0,
        read if read > 0 else 0,
    )
