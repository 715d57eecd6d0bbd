"""The typed path: a Claude Code line decoded by the ``msgspec`` schema into a node.

Owns :func:`_typed_node` (a line), :func:`_typed_file` (a whole clean file in one decoder call,
the same nodes) and the conversion of schema blocks into model :class:`Block` values
(tool-call inputs decoded by orjson, exactly as the lenient path does). Imported only when a
read takes the typed path (see :mod:`.records`), so small hook feeds never load ``msgspec``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
import orjson

from ctxhealth.model import Block, ImageBlock, ThinkingBlock
from ctxhealth.native import KERNELS
from ctxhealth.sources.claude_code.schema import (
    _DECODE,
    _DECODE_LINES,
    _MESSAGE_KINDS,
    _Document,
    _Image,
    _McpToolUse,
    _Node,
    _RedactedThinking,
    _ResultText,
    _ServerToolUse,
    _Text,
    _Thinking,
    _ToolResult,
    _ToolUse,
)
from ctxhealth.sources.lines import make_call, make_result, make_text, valid_utf8


def _typed_node(raw: bytes | memoryview, check_utf8: bool) -> _Node | None:
    """The typed path: a node, or None when the lenient path must read this line."""
    if check_utf8 and not valid_utf8(raw):
        return None
    try:
        node = _DECODE(raw)
    except (msgspec.DecodeError, RecursionError):
        return None
    if node.type in _MESSAGE_KINDS:
        message = node.message
        if message is None:
            return None  # the lenient path words the warning
        try:
            message.blocks = _typed_blocks(message.content)
        except orjson.JSONDecodeError:
            return None
    return node


def _typed_file(data: bytes, limit: int) -> list[_Node] | None:
    """Every line of ``data`` decoded in one call, numbered, when every line would take the typed
    path of :func:`_typed_node` one by one; else None (the caller reads it line by line).

    That is: the file ends with a newline, is no longer than the line limit ``limit``, every line
    starts with ``{`` and ends with ``}`` and is valid UTF-8, decodes with the schema into exactly
    one node and has a usable message. The decoder reads across newlines, so the line ends are
    what keeps each value inside its line: a JSON string holds no raw newline, and after a ``}``
    the next token cannot be a ``{``, so a value that reached past its line's ``}`` would fail to
    decode. Each line then holds at least one whole value, and as many nodes as lines means one
    node per line, in order.
    """
    if len(data) > limit:
        return None
    lines = _object_lines(data)
    if lines < 0:
        return None
    try:
        nodes = _DECODE_LINES(data)
    except (msgspec.DecodeError, RecursionError):
        return None
    if len(nodes) != lines:
        return None
    for number, node in enumerate(nodes, 1):
        node.line = number
        if node.type in _MESSAGE_KINDS:
            message = node.message
            if message is None:
                return None
            try:
                message.blocks = _typed_blocks(message.content)
            except orjson.JSONDecodeError:
                return None
    return nodes


def _object_lines_py(data: bytes) -> int:
    """The lines of ``data`` when it ends with a newline, every line starts with ``{`` and ends with
    ``}`` and it is valid UTF-8; else -1 (what :func:`_typed_file` needs of a file before one decode)."""
    end = len(data)
    if not data.endswith(b"\n"):
        return -1
    find = data.find
    check_utf8 = not data.isascii()
    lines = 0
    start = 0
    while start < end:
        stop = find(b"\n", start)
        if data[start] != 0x7B or data[stop - 1] != 0x7D:
            return -1
        if check_utf8:
            # most lines of a file that is not ASCII are: isascii is a scan, a UTF-8 check a decode
            line = data[start:stop]
            if not line.isascii() and not valid_utf8(line):
                return -1
        lines += 1
        start = stop + 1
    return lines


_object_lines: Callable[[bytes], int] = _object_lines_py
"""The test :func:`_typed_file` runs: :func:`_object_lines_py`, or the same in C (one pass over the
lines, one over the bytes for UTF-8: about a quarter of the Python loop's time on Claude Code files)."""
if KERNELS is not None:
    _object_lines = KERNELS.object_lines


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
