"""Reader for OpenAI Chat Completions message lists.

Accepted shapes: a JSON array of messages, ``{"messages": [...], "model"?: str}``, or JSON Lines with
one message a line (what a home-made agent appends to as it runs; ``line`` is then the file's line). Roles
``system`` / ``developer`` (-> SYSTEM), ``user``, ``assistant``, ``tool``. ``content`` is a
string, null, or a list of parts (``text`` / ``input_text`` / ``output_text``, ``image_url``,
``refusal``). Assistant ``tool_calls[].function.arguments`` is a JSON string: decoded when
valid, kept as the raw string (with a warning) when not. A ``tool`` message becomes a TOOL
message holding a :class:`ToolResult` for its ``tool_call_id``. Assistant messages may carry
``usage`` (``prompt_tokens`` = fill; cached tokens split out) and ``id``/``model``.
``line`` is the 1-based index in the message list.
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
    BadJSON,
    WarningSink,
    dumps,
    each_message,
    get_dict,
    get_str,
    load_document,
    loads,
    message_list,
    split_lines,
    token_count,
    type_name,
)

_ROLES = {
    "system": Role.SYSTEM,
    "developer": Role.SYSTEM,
    "user": Role.USER,
    "assistant": Role.ASSISTANT,
    "tool": Role.TOOL,
    "function": Role.TOOL,
}
_TEXT_PARTS = frozenset({"text", "input_text", "output_text", "refusal"})


def _message_line(line: bytes) -> bool:
    """True for one JSON line that is a role/content message."""
    try:
        obj = loads(line)
    except BadJSON:
        return False
    return (
        isinstance(obj, dict)
        and isinstance(obj.get("role"), str)
        and ("content" in obj or "tool_calls" in obj)
        and "messages" not in obj
    )


def _is_jsonl(data: bytes) -> bool:
    """True when the first line of ``data`` is a whole message object (JSON Lines of messages)."""
    stripped = data.lstrip()
    if not stripped.startswith(b"{"):
        return False
    first, newline, _ = stripped.partition(b"\n")
    return bool(newline) and _message_line(first)


def detect(head: bytes) -> bool:
    """True for a JSON array / ``{"messages": ...}`` document of role/content messages, or JSON Lines
    of them."""
    stripped = head.lstrip()
    if stripped.startswith(b"{") and b'"messages"' not in head:
        return _is_jsonl(head)
    if not stripped.startswith((b"[", b"{")):
        return False
    return b'"role"' in head and (b'"content"' in head or b'"tool_calls"' in head)


def _content(content: Any, sink: WarningSink, index: int) -> list[Block]:
    if content is None:
        return []
    if isinstance(content, str):
        return [TextBlock(content)]
    if not isinstance(content, list):
        sink.add(index, f"message content is {type_name(content)}, expected string or array")
        return []
    blocks: list[Block] = []
    for part in content:
        if isinstance(part, str):
            blocks.append(TextBlock(part))
        elif isinstance(part, dict):
            kind = get_str(part, "type")
            if kind in _TEXT_PARTS:
                blocks.append(TextBlock(get_str(part, "text") or get_str(part, "refusal") or ""))
            elif kind in ("image_url", "input_image", "file", "input_audio"):
                url = get_str(get_dict(part, "image_url"), "url") or ""
                blocks.append(ImageBlock(media_type=str(kind), approx_bytes=len(url) * 3 // 4))
            else:
                sink.add(index, f"unknown content part type {dumps(part.get('type'))[:40]} skipped")
        else:
            sink.add(index, f"content part is {type_name(part)}, expected object")
    return blocks


def _tool_calls(raw: Any, sink: WarningSink, index: int) -> list[Block]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        sink.add(index, f"tool_calls is {type_name(raw)}, expected array")
        return []
    calls: list[Block] = []
    for position, call in enumerate(raw):
        function = get_dict(call, "function")
        if function is None:
            sink.add(index, f"tool call {position} has no 'function' object")
            continue
        call_id = get_str(call, "id") or f"call-{index}-{position}"
        name = get_str(function, "name") or ""
        arguments: Any = function.get("arguments")
        if isinstance(arguments, str):
            try:
                arguments = loads(arguments) if arguments.strip() else {}
            except BadJSON:
                sink.add(index, f"tool call {call_id[:40]} arguments are not valid JSON; kept as text")
        calls.append(ToolCall(call_id, name, arguments))
    return calls


def parse_usage(raw: Any, problems: list[str] | None = None) -> Usage | None:
    """OpenAI ``usage`` -> :class:`Usage`: ``prompt_tokens`` split into uncached, cache writes
    (LiteLLM's ``cache_creation_input_tokens``) and cache reads (``cached_tokens``, else LiteLLM's
    ``cache_read_input_tokens``); fields that are not token counts are ignored and named in
    ``problems``."""
    if not isinstance(raw, dict):
        return None
    prompt = token_count(raw, "prompt_tokens", problems)
    details = get_dict(raw, "prompt_tokens_details")
    if details is not None and details.get("cached_tokens") is not None:
        cached = token_count(details, "cached_tokens", problems, "usage.prompt_tokens_details")
    else:
        cached = token_count(raw, "cache_read_input_tokens", problems)
    cached = min(cached, prompt)
    # LiteLLM-style logs of Anthropic models count cache writes inside prompt_tokens too.
    written = min(token_count(raw, "cache_creation_input_tokens", problems), prompt - cached)
    completion = get_dict(raw, "completion_tokens_details")
    reasoning = (
        token_count(completion, "reasoning_tokens", problems, "usage.completion_tokens_details")
        if completion
        else 0
    )
    return Usage(
        input_tokens=prompt - cached - written,
        cache_creation_tokens=written,
        cache_read_tokens=cached,
        output_tokens=token_count(raw, "completion_tokens", problems),
        reasoning_tokens=reasoning,
    )


def usage_with_warnings(raw: Any, sink: WarningSink, index: int) -> Usage | None:
    """:func:`parse_usage`, each field that is not a token count a warning at ``index``."""
    problems: list[str] = []
    usage = parse_usage(raw, problems)
    for problem in problems:
        sink.add(index, problem)
    return usage


def parse(data: bytes, path: str) -> Session:
    """Read one Chat Completions message list (a document, or JSON Lines) into a :class:`Session`."""
    sink = WarningSink(path)
    if _is_jsonl(data):
        return _parse_lines(data, path, sink)
    return parse_document(load_document(data, sink), path, sink)


def _parse_lines(data: bytes, path: str, sink: WarningSink) -> Session:
    messages: list[Message] = []
    model: str | None = None
    for number, raw in split_lines(data, sink=sink):
        try:
            obj = loads(raw)
        except BadJSON as exc:
            sink.add(number, f"invalid JSON: {exc}")  # e.g. a line still being written
            continue
        role = _ROLES.get(str(obj.get("role"))) if isinstance(obj, dict) else None
        if role is None or not isinstance(obj, dict):
            what = f"role {dumps(obj.get('role'))[:40]}" if isinstance(obj, dict) else type_name(obj)
            sink.add(number, f"line is not a message (unknown {what})")
            continue
        messages.append(chat_message(obj, role, sink, number))
        model = messages[-1].model or model
    return Session(
        path=path, format=Format.OPENAI_CHAT, messages=tuple(messages), model=model, warnings=sink.result()
    )


def parse_document(doc: Any, path: str, sink: WarningSink | None = None) -> Session:
    """A decoded Chat Completions document (a message list, or ``{"messages": ..., "model": ...}``)
    as a :class:`Session`; ``path`` names it in warnings."""
    sink = sink if sink is not None else WarningSink(path)
    # Invalid JSON (already warned about) and a JSON null both read as an empty list.
    model, raw_messages = message_list(doc, sink) if doc is not None else (None, [])
    messages, model = chat_messages(raw_messages, sink, model)
    return Session(
        path=path,
        format=Format.OPENAI_CHAT,
        messages=tuple(messages),
        model=model,
        warnings=sink.result(),
    )


def chat_messages(
    raw_messages: list[Any], sink: WarningSink, model: str | None = None
) -> tuple[list[Message], str | None]:
    """Chat Completions messages -> ``(messages, model)``; the readers of formats that embed a
    Chat Completions list (tau-bench, OpenHands) share it. ``model`` is the document's model,
    replaced by the latest assistant message's own."""
    messages: list[Message] = []
    for index, raw, role in each_message(raw_messages, _ROLES, sink):
        messages.append(chat_message(raw, role, sink, index))
        if messages[-1].model:
            model = messages[-1].model
    return messages, model


def chat_message(raw: dict[str, Any], role: Role, sink: WarningSink, index: int) -> Message:
    """One Chat Completions message object (its ``role`` already resolved) -> :class:`Message`."""
    blocks = _content(raw.get("content"), sink, index)
    msg_model = get_str(raw, "model")
    usage = None
    response_id = None
    if role is Role.ASSISTANT:
        reasoning = get_str(raw, "reasoning_content") or get_str(raw, "reasoning")
        if reasoning:
            blocks.insert(0, ThinkingBlock(reasoning))
        blocks.extend(_tool_calls(raw.get("tool_calls"), sink, index))
        usage = usage_with_warnings(raw.get("usage"), sink, index)
        response_id = get_str(raw, "id")
    elif role is Role.TOOL:
        call_id = get_str(raw, "tool_call_id") or get_str(raw, "name") or ""
        if not call_id:
            sink.add(index, "tool message without a tool_call_id")
        text = "\n".join(b.text for b in blocks if isinstance(b, TextBlock))
        blocks = [ToolResult(call_id, text)]
    return Message(
        role=role,
        blocks=tuple(blocks),
        response_id=response_id,
        model=msg_model,
        usage=usage,
        line=index,
    )
