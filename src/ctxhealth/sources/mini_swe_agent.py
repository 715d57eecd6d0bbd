"""Reader for mini-swe-agent trajectories (``*.traj.json``: ``{info, messages, instance_id, ...}``).

Two action styles. 1.x (and 2.x's text mode) has no structured tool calls. An assistant message whose
text holds exactly one ```` ```bash ```` block (2.x text mode: ```` ```mswea_bash_command ````) is a
tool call (the agent rejects zero or several blocks with a format
error instead of running anything): it becomes a :class:`ToolCall` named ``bash`` with input
``{"command": ...}`` and a synthesised id ``bash-<index>``. The next user message is that
call's :class:`ToolResult`: ``<returncode>N</returncode>`` sets ``exit_code`` and
``is_error = N != 0``; the "timed out and has been killed" notice is an error without an exit
code; any other text (e.g. the final submission diff) is a result without an exit code.

2.x (``"trajectory_format": "mini-swe-agent-1.1"``) uses tool calls by default: an assistant message's
``tool_calls[{id, function: {name, arguments}}]`` are :class:`ToolCall` s (arguments decoded), and each
``role: "tool"`` message is the result of its ``tool_call_id``; its exit code is ``extra.returncode``
(else the ``returncode`` of the JSON content, else a ``<returncode>`` tag). The closing ``role: "exit"``
message (exit status, submission) is the harness's record, not context: it is skipped without a warning.
Such trajectories are read by the lenient path.

Usage comes from ``extra.response.usage``: ``prompt_tokens`` is the context fill, split into
``input_tokens`` (uncached) and ``cache_read_tokens`` (``prompt_tokens_details.cached_tokens``);
``completion_tokens`` is output. The model's hidden reasoning is not kept: the agent never
sends it back, so it is not part of the context. ``line`` is the 1-based index in ``messages``.

A trajectory is decoded with a typed ``msgspec`` schema of the fields used here, skipping the
rest (each response's ``choices`` and reasoning, the run's config and stats); a document the
schema rejects is read by the lenient orjson path, with the same result and warnings.
"""

from __future__ import annotations

import contextlib
import re
from datetime import UTC, datetime
from typing import Annotated, Any

import msgspec

from ctxhealth.model import Block, Format, Message, Role, Session, ToolResult, Usage
from ctxhealth.sources.lines import (
    BadJSON,
    WarningSink,
    as_int,
    each_message,
    get_dict,
    get_list,
    get_str,
    load_document,
    loads,
    make_call,
    make_message,
    make_result,
    make_text,
    type_name,
    valid_utf8,
)
from ctxhealth.sources.openai_chat import usage_with_warnings

_BASH_BLOCK = re.compile(r"```(?:bash|mswea_bash_command)\s*\n(.*?)\n```", re.DOTALL)
_RETURNCODE = re.compile(r"^\s*<returncode>\s*(-?\d{1,9})\s*</returncode>")
_TIMEOUT = re.compile(r"^The last command .{0,20000}? timed out", re.DOTALL)
_ROLES = {"system": Role.SYSTEM, "user": Role.USER, "assistant": Role.ASSISTANT}
_LENIENT_ROLES = {**_ROLES, "tool": Role.TOOL, "exit": Role.SYSTEM}
_SKIPPED_ROLES = frozenset({"exit"})
"""Roles of entries that are the harness's own record, not context (2.x ``exit``)."""


def _text(content: Any, sink: WarningSink, index: int) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
        return "\n".join(parts)
    if content is not None:
        sink.add(index, f"message content is {type_name(content)}, expected string")
    return ""


def _quote_role(role: Any) -> str:
    return repr(str(role)[:40])


def _observation(call_id: str, text: str) -> ToolResult:
    match = _RETURNCODE.match(text)
    if match is not None:
        code = int(match.group(1))
        return make_result(call_id, text, code != 0, code)
    return make_result(call_id, text, _TIMEOUT.match(text) is not None)


# --- the typed schema: only the fields this reader uses (see ``claude_code`` for the idea) ----
#
# Every field is as strict as the lenient path is forgiving, so a document the lenient path
# would coerce, ignore or warn about is rejected here and read by the lenient path instead.

_Int = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
_Count = Annotated[int, msgspec.Meta(ge=0, le=2**53)]
"""A usage field: anything else (a negative, a string, null, ...) goes to the lenient path, which
names it in a warning."""


class _PromptDetails(msgspec.Struct, gc=False):
    cached_tokens: _Count = 0


class _CompletionDetails(msgspec.Struct, gc=False):
    reasoning_tokens: _Count = 0


class _Usage(msgspec.Struct, gc=False):
    prompt_tokens: _Count = 0
    completion_tokens: _Count = 0
    prompt_tokens_details: _PromptDetails | None = None
    completion_tokens_details: _CompletionDetails | None = None


class _Response(msgspec.Struct, gc=False):
    id: str | None = None
    model: str | None = None
    created: _Int | None = None
    usage: _Usage | None = None


class _Extra(msgspec.Struct, gc=False):
    response: _Response | None = None


class _Message(msgspec.Struct, gc=False):
    role: str
    content: str | None = None
    extra: _Extra | None = None
    tool_calls: list[Any] | None = None


class _ModelConfig(msgspec.Struct, gc=False):
    model_name: str | None = None


class _Config(msgspec.Struct, gc=False):
    model: _ModelConfig | None = None


class _Info(msgspec.Struct, gc=False):
    config: _Config | None = None


class _Trajectory(msgspec.Struct, gc=False):
    messages: list[_Message] | None = None
    info: _Info | None = None
    instance_id: str | None = None


_DECODE = msgspec.json.Decoder(_Trajectory).decode

#: One message as both paths hand it on: (index, role, text, response id, model, usage, timestamp, the
#: message's own structured calls and result (2.x), or None).
_Entry = tuple[int, Role, str, str | None, str | None, Usage | None, str | None, "_Structured | None"]
_Structured = tuple[tuple[tuple[str, str, Any], ...], ToolResult | None]


def _typed_usage(raw: _Usage | None) -> Usage | None:
    """:func:`parse_usage` of a typed ``usage``."""
    if raw is None:
        return None
    prompt = raw.prompt_tokens
    details = raw.prompt_tokens_details
    cached = min(details.cached_tokens if details is not None else 0, prompt)
    completion = raw.completion_tokens_details
    return Usage(
        input_tokens=prompt - cached,
        cache_read_tokens=cached,
        output_tokens=raw.completion_tokens,
        reasoning_tokens=completion.reasoning_tokens if completion is not None else 0,
    )


def _typed_read(data: bytes) -> tuple[list[_Entry], str | None, str | None] | None:
    """(entries, configured model, instance id), or None when the lenient path must read ``data``."""
    if not data.isascii() and not valid_utf8(data):
        return None
    try:
        doc = _DECODE(data)
    except (msgspec.DecodeError, RecursionError):
        return None
    if doc.messages is None:
        return None  # the lenient path words the warning
    entries: list[_Entry] = []
    for index, raw in enumerate(doc.messages, start=1):
        role = _ROLES.get(raw.role)
        if role is None or raw.tool_calls:
            return None  # 2.x tool calls, or a role the lenient path warns about
        text = raw.content or ""
        if role is Role.ASSISTANT:
            response = raw.extra.response if raw.extra is not None else None
            if response is None:
                entries.append((index, role, text, None, None, None, None, None))
            else:
                created = response.created
                entries.append(
                    (
                        index,
                        role,
                        text,
                        response.id,
                        response.model,
                        _typed_usage(response.usage),
                        _timestamp_of(created),
                        None,
                    )
                )
        else:
            entries.append((index, role, text, None, None, None, None, None))
    info = doc.info
    config = info.config if info is not None else None
    model = config.model if config is not None else None
    return entries, model.model_name if model is not None else None, doc.instance_id


def _lenient_read(data: bytes, sink: WarningSink) -> tuple[list[_Entry], str | None, str | None] | None:
    """(entries, configured model, instance id); None when the document is not an object."""
    doc = load_document(data, sink)
    if not isinstance(doc, dict):
        if doc is not None:
            sink.add(None, f"document is {type_name(doc)}, expected an object")
        return None
    raw_messages = get_list(doc, "messages")
    if raw_messages is None:
        sink.add(None, "no 'messages' array in the trajectory")
        raw_messages = []
    config_model = get_str(get_dict(get_dict(get_dict(doc, "info"), "config"), "model"), "model_name")
    entries: list[_Entry] = []
    for index, raw, role in each_message(raw_messages, _LENIENT_ROLES, sink, _quote_role):
        if raw.get("role") in _SKIPPED_ROLES:
            continue
        text = _text(raw.get("content"), sink, index)
        if role is Role.TOOL:
            entries.append((index, role, text, None, None, None, None, ((), _tool_message(raw, text, index))))
        elif role is Role.ASSISTANT:
            response = get_dict(get_dict(raw, "extra"), "response")
            calls = _tool_calls(raw, index)
            entries.append(
                (
                    index,
                    role,
                    text,
                    get_str(response, "id"),
                    get_str(response, "model"),
                    usage_with_warnings(get_dict(response, "usage"), sink, index),
                    _timestamp(response),
                    (calls, None) if calls else None,
                )
            )
        else:
            entries.append((index, role, text, None, None, None, None, None))
    return entries, config_model, get_str(doc, "instance_id")


def _tool_calls(raw: dict[str, Any], index: int) -> tuple[tuple[str, str, Any], ...]:
    """A 2.x assistant message's ``tool_calls`` as ``(id, name, decoded arguments)``."""
    out = []
    for k, call in enumerate(get_list(raw, "tool_calls") or []):
        function = get_dict(call, "function")
        arguments: Any = function.get("arguments") if function is not None else None
        if isinstance(arguments, str):
            with contextlib.suppress(BadJSON):
                arguments = loads(arguments) if arguments.strip() else {}
        call_id = get_str(call, "id") or f"call-{index}-{k}"
        out.append((call_id, get_str(function, "name") or "bash", arguments))
    return tuple(out)


def _tool_message(raw: dict[str, Any], text: str, index: int) -> ToolResult:
    """A 2.x ``role: "tool"`` message: the result of its ``tool_call_id``, exit code from ``extra``."""
    call_id = get_str(raw, "tool_call_id") or f"tool-{index}"
    extra = get_dict(raw, "extra")
    code = as_int(extra.get("returncode")) if extra is not None else None
    if code is None and text.lstrip().startswith("{"):
        try:
            decoded = loads(text)
        except BadJSON:
            decoded = None
        code = as_int(decoded.get("returncode")) if isinstance(decoded, dict) else None
    if code is None:
        return _observation(call_id, text)
    return make_result(call_id, text, code != 0, code)


def parse(data: bytes, path: str, *, typed: bool = True) -> Session:
    """Read one mini-swe-agent trajectory into a :class:`Session`.

    The document is decoded with a typed ``msgspec`` schema of the fields used here (the rest,
    e.g. each response's full ``choices`` and reasoning, is skipped); a document the schema
    rejects is read by the lenient path, which words the warnings. ``typed=False`` uses the
    lenient path only (same result, slower). As for Claude Code, the one difference is a number
    too large for a double in a field never read: orjson rejects the document, msgspec does not.
    """
    sink = WarningSink(path)
    read = _typed_read(data) if typed else None
    if read is None:
        read = _lenient_read(data, sink)
        if read is None:
            return Session(path=path, format=Format.MINI_SWE_AGENT, messages=(), warnings=sink.result())
    entries, config_model, instance_id = read
    messages: list[Message] = []
    pending: str | None = None
    last_model: str | None = None
    for index, role, text, response_id, model, usage, timestamp, structured in entries:
        blocks: list[Block]
        if structured is not None:
            result = structured[1]
            if result is not None:
                messages.append(make_message(role, (result,), None, None, None, None, None, False, index))
                pending = None
                continue
        if role is Role.ASSISTANT:
            last_model = model or last_model
            blocks = [make_text(text)]
            actions = _BASH_BLOCK.findall(text)
            pending = None
            if structured is not None:
                blocks.extend(make_call(call_id, name, value) for call_id, name, value in structured[0])
            elif len(actions) == 1:
                pending = f"bash-{index}"
                blocks.append(make_call(pending, "bash", {"command": actions[0].strip()}))
            messages.append(
                make_message(role, tuple(blocks), None, response_id, model, usage, timestamp, False, index)
            )
            continue
        if role is Role.USER and pending is not None:
            blocks = [_observation(pending, text)]
        else:
            blocks = [make_text(text)]
        pending = None
        messages.append(make_message(role, tuple(blocks), None, None, None, None, None, False, index))
    return Session(
        path=path,
        format=Format.MINI_SWE_AGENT,
        messages=tuple(messages),
        session_id=instance_id,
        model=config_model or last_model,
        warnings=sink.result(),
    )


def _timestamp(response: dict[str, Any] | None) -> str | None:
    return _timestamp_of(as_int(response.get("created")) if isinstance(response, dict) else None)


def _timestamp_of(created: int | None) -> str | None:
    if created is None or not 0 <= created < 2**37:
        return None
    return datetime.fromtimestamp(created, tz=UTC).isoformat().replace("+00:00", "Z")
