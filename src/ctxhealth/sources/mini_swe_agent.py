"""Reader for mini-swe-agent trajectories (``*.traj.json``: ``{info, messages, instance_id, ...}``).

mini-swe-agent has no structured tool calls. An assistant message whose text holds exactly one
```` ```bash ```` block is a tool call (the agent rejects zero or several blocks with a format
error instead of running anything): it becomes a :class:`ToolCall` named ``bash`` with input
``{"command": ...}`` and a synthesised id ``bash-<index>``. The next user message is that
call's :class:`ToolResult`: ``<returncode>N</returncode>`` sets ``exit_code`` and
``is_error = N != 0``; the "timed out and has been killed" notice is an error without an exit
code; any other text (e.g. the final submission diff) is a result without an exit code.

Usage comes from ``extra.response.usage``: ``prompt_tokens`` is the context fill, split into
``input_tokens`` (uncached) and ``cache_read_tokens`` (``prompt_tokens_details.cached_tokens``);
``completion_tokens`` is output. The model's hidden reasoning is not kept: the agent never
sends it back, so it is not part of the context. ``line`` is the 1-based index in ``messages``.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from ctxhealth.model import Block, Format, Message, Role, Session, TextBlock, ToolCall, ToolResult
from ctxhealth.sources.lines import (
    BadJSON,
    WarningSink,
    as_int,
    get_dict,
    get_list,
    get_str,
    loads,
    type_name,
)
from ctxhealth.sources.openai_chat import parse_usage

_BASH_BLOCK = re.compile(r"```bash\s*\n(.*?)\n```", re.DOTALL)
_RETURNCODE = re.compile(r"^\s*<returncode>\s*(-?\d{1,9})\s*</returncode>")
_TIMEOUT = re.compile(r"^The last command .{0,20000}? timed out", re.DOTALL)
_HEAD = re.compile(rb'^\s*\{\s*"info"\s*:\s*\{\s*"exit_status"')
_ROLES = {"system": Role.SYSTEM, "user": Role.USER, "assistant": Role.ASSISTANT}


def detect(head: bytes) -> bool:
    """True for a JSON object with mini-swe-agent's trajectory keys near its start."""
    stripped = head.lstrip()
    if not stripped.startswith(b"{"):
        return False
    if b'"trajectory_format"' in head or b'"mini_version"' in head:
        return True
    return _HEAD.match(stripped) is not None


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


def _observation(call_id: str, text: str) -> ToolResult:
    match = _RETURNCODE.match(text)
    if match is not None:
        code = int(match.group(1))
        return ToolResult(call_id, text, is_error=code != 0, exit_code=code)
    if _TIMEOUT.match(text):
        return ToolResult(call_id, text, is_error=True)
    return ToolResult(call_id, text)


def parse(data: bytes, path: str) -> Session:
    """Read one mini-swe-agent trajectory into a :class:`Session`."""
    sink = WarningSink(path)
    try:
        doc = loads(data)
    except BadJSON as exc:
        sink.add(None, f"invalid JSON: {exc}")
        doc = None
    if not isinstance(doc, dict):
        if doc is not None:
            sink.add(None, f"document is {type_name(doc)}, expected an object")
        return Session(path=path, format=Format.MINI_SWE_AGENT, messages=(), warnings=sink.result())
    raw_messages = get_list(doc, "messages")
    if raw_messages is None:
        sink.add(None, "no 'messages' array in the trajectory")
        raw_messages = []
    config_model = get_str(get_dict(get_dict(get_dict(doc, "info"), "config"), "model"), "model_name")
    messages: list[Message] = []
    pending: str | None = None
    last_model: str | None = None
    for index, raw in enumerate(raw_messages, start=1):
        if not isinstance(raw, dict):
            sink.add(index, f"message is {type_name(raw)}, expected object")
            continue
        role = _ROLES.get(str(raw.get("role")))
        if role is None:
            sink.add(index, f"unknown role {str(raw.get('role'))[:40]!r}")
            continue
        text = _text(raw.get("content"), sink, index)
        blocks: list[Block]
        if role is Role.ASSISTANT:
            response = get_dict(get_dict(raw, "extra"), "response")
            model = get_str(response, "model")
            last_model = model or last_model
            blocks = [TextBlock(text)]
            actions = _BASH_BLOCK.findall(text)
            pending = None
            if len(actions) == 1:
                pending = f"bash-{index}"
                blocks.append(ToolCall(pending, "bash", {"command": actions[0].strip()}))
            messages.append(
                Message(
                    role=role,
                    blocks=tuple(blocks),
                    response_id=get_str(response, "id"),
                    model=model,
                    usage=parse_usage(get_dict(response, "usage")),
                    timestamp=_timestamp(response),
                    line=index,
                )
            )
            continue
        if role is Role.USER and pending is not None:
            blocks = [_observation(pending, text)]
        else:
            blocks = [TextBlock(text)]
        pending = None
        messages.append(Message(role=role, blocks=tuple(blocks), line=index))
    return Session(
        path=path,
        format=Format.MINI_SWE_AGENT,
        messages=tuple(messages),
        session_id=get_str(doc, "instance_id"),
        model=config_model or last_model,
        warnings=sink.result(),
    )


def _timestamp(response: dict[str, Any] | None) -> str | None:
    created = as_int(response.get("created")) if isinstance(response, dict) else None
    if created is None or not 0 <= created < 2**37:
        return None
    return datetime.fromtimestamp(created, tz=UTC).isoformat().replace("+00:00", "Z")
