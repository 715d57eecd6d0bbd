"""Reader for Anthropic Messages API transcripts, and the Anthropic content-block parser.

Accepted shapes: ``{"system": str | [blocks], "messages": [...], "model"?: str}`` or a bare
list of ``{"role", "content"}`` messages whose content blocks use ``tool_use`` / ``tool_result``.
Each message becomes one :class:`Message` (``line`` = 1-based index in ``messages``; the system
prompt, when present, is a SYSTEM message with ``line`` 0). Assistant messages may carry
``usage`` (API response style) and ``id``/``model``.

:func:`parse_blocks` turns an Anthropic ``content`` value (a string or a list of blocks) into
model blocks; the Claude Code reader uses it too, since Claude Code logs API messages verbatim.
"""

from __future__ import annotations

from typing import Any

from ctxhealth.model import (
    Block,
    Format,
    ImageBlock,
    Message,
    Role,
    Session,
    TextBlock,
    ThinkingBlock,
    ToolCall,
    ToolResult,
    Usage,
)
from ctxhealth.sources.lines import (
    COUNT_LIMIT,
    BadJSON,
    WarningSink,
    dumps,
    each_message,
    get_bool,
    get_dict,
    get_str,
    loads,
    message_list,
    token_count,
    type_name,
)

_ROLES = {"user": Role.USER, "assistant": Role.ASSISTANT, "system": Role.SYSTEM}


def detect(head: bytes) -> bool:
    """True when a JSON document's head looks like Anthropic Messages content."""
    stripped = head.lstrip()
    if not stripped.startswith((b"{", b"[")):
        return False
    if b'"role"' not in head and b'"messages"' not in head:
        return False
    anthropic = b'"tool_use"' in head or b'"tool_result"' in head or b'"tool_use_id"' in head
    openai = b'"tool_calls"' in head or b'"tool_call_id"' in head or b'"role": "tool"' in head
    openai = openai or b'"role":"tool"' in head
    if anthropic and not openai:
        return True
    # A top-level "system" key (string or blocks) is Anthropic's request shape.
    if stripped.startswith(b"{") and (b'"system":' in head or b'"system" :' in head) and not openai:
        return b'"role": "system"' not in head and b'"role":"system"' not in head
    return False


def _image(block: dict[str, Any]) -> ImageBlock:
    source = get_dict(block, "source") or {}
    data = get_str(source, "data") or ""
    media = get_str(source, "media_type") or str(block.get("type", ""))
    return ImageBlock(media_type=media, approx_bytes=len(data) * 3 // 4)


def _result_text(content: Any, extra: list[Block]) -> str:
    """Text of a ``tool_result`` content (string or list of text/image blocks)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for item in content:
            if isinstance(item, str):
                parts.append(item)
            elif isinstance(item, dict):
                kind = item.get("type")
                if kind == "text":
                    parts.append(get_str(item, "text") or "")
                elif kind in ("image", "document"):
                    extra.append(_image(item))
                else:
                    parts.append(dumps(item))
        return "\n".join(parts)
    return dumps(content)


def parse_blocks(content: Any, sink: WarningSink, line: int | None) -> list[Block]:
    """Anthropic ``content`` (string or list of blocks) -> model blocks; oddities become warnings."""
    if content is None:
        return []
    if isinstance(content, str):
        return [TextBlock(content)]
    if not isinstance(content, list):
        sink.add(line, f"message content is {type_name(content)}, expected string or array")
        return []
    blocks: list[Block] = []
    for item in content:
        if isinstance(item, str):
            blocks.append(TextBlock(item))
            continue
        if not isinstance(item, dict):
            sink.add(line, f"content block is {type_name(item)}, expected object")
            continue
        kind = item.get("type")
        if kind == "text":
            text = item.get("text")
            if isinstance(text, str):
                blocks.append(TextBlock(text))
            else:
                sink.add(line, f"text block has {type_name(text)} text")
        elif kind == "thinking":
            blocks.append(ThinkingBlock(get_str(item, "thinking") or ""))
        elif kind == "redacted_thinking":
            blocks.append(ThinkingBlock(""))
        elif kind in ("tool_use", "server_tool_use", "mcp_tool_use"):
            call_id = get_str(item, "id")
            name = get_str(item, "name")
            if call_id is None or name is None:
                sink.add(line, f"{kind} block without a string id and name")
            blocks.append(ToolCall(call_id or "", name or "", item.get("input")))
        elif kind == "tool_result" or (isinstance(kind, str) and kind.endswith("_tool_result")):
            extra: list[Block] = []
            call_id = get_str(item, "tool_use_id")
            if call_id is None:
                sink.add(line, f"{kind} block without a string tool_use_id")
            text = _result_text(item.get("content"), extra)
            blocks.append(ToolResult(call_id or "", text, is_error=get_bool(item, "is_error")))
            blocks.extend(extra)
        elif kind in ("image", "document"):
            blocks.append(_image(item))
        else:
            sink.add(line, f"unknown content block type {dumps(kind)[:40]} skipped")
    return blocks


def count_tokens(raw: dict[str, Any], key: str, problems: list[str] | None = None) -> int:
    """A non-negative token count field (0 when absent; 0 and a problem named when not a count)."""
    value = raw.get(key)
    if type(value) is int and 0 <= value <= COUNT_LIMIT:  # the common case, checked first
        return value
    return token_count(raw, key, problems)


def parse_usage(raw: Any, problems: list[str] | None = None) -> Usage | None:
    """Anthropic ``usage`` -> :class:`Usage` (``None`` when absent or not an object); fields that
    are not token counts are ignored and named in ``problems``."""
    if not isinstance(raw, dict):
        return None
    created = count_tokens(raw, "cache_creation_input_tokens", problems)
    split = raw.get("cache_creation")
    one_hour = count_tokens(split, "ephemeral_1h_input_tokens", problems) if isinstance(split, dict) else 0
    return Usage(
        input_tokens=count_tokens(raw, "input_tokens", problems),
        output_tokens=count_tokens(raw, "output_tokens", problems),
        cache_creation_tokens=created,
        cache_read_tokens=count_tokens(raw, "cache_read_input_tokens", problems),
        cache_write_1h_tokens=min(one_hour, created),
    )


def _usage(raw: Any, sink: WarningSink, index: int) -> Usage | None:
    problems: list[str] = []
    usage = parse_usage(raw, problems)
    for problem in problems:
        sink.add(index, problem)
    return usage


def parse(data: bytes, path: str) -> Session:
    """Read one Anthropic Messages transcript (a JSON document) into a :class:`Session`."""
    sink = WarningSink(path)
    try:
        doc = loads(data)
    except BadJSON as exc:
        sink.add(None, f"invalid JSON: {exc}")
        return Session(path=path, format=Format.ANTHROPIC_MESSAGES, messages=(), warnings=sink.result())
    return parse_document(doc, path, sink)


def parse_document(doc: Any, path: str, sink: WarningSink | None = None) -> Session:
    """A decoded Messages document (``{"system"?: ..., "messages": [...], "model"?: ...}`` or a bare
    message list) as a :class:`Session`; ``path`` names it in warnings."""
    sink = sink if sink is not None else WarningSink(path)
    messages: list[Message] = []
    system = doc.get("system") if isinstance(doc, dict) else None
    if system is not None:
        blocks = parse_blocks(system, sink, 0)
        messages.append(Message(role=Role.SYSTEM, blocks=tuple(blocks), line=0))
    model, raw_messages = message_list(doc, sink)
    for index, raw, role in each_message(raw_messages, _ROLES, sink):
        blocks = parse_blocks(raw.get("content"), sink, index)
        msg_model = get_str(raw, "model")
        if role is Role.ASSISTANT and msg_model:
            model = msg_model
        messages.append(
            Message(
                role=role,
                blocks=tuple(blocks),
                response_id=get_str(raw, "id") if role is Role.ASSISTANT else None,
                model=msg_model,
                usage=_usage(raw.get("usage"), sink, index) if role is Role.ASSISTANT else None,
                line=index,
            )
        )
    return Session(
        path=path,
        format=Format.ANTHROPIC_MESSAGES,
        messages=tuple(messages),
        model=model,
        warnings=sink.result(),
    )
