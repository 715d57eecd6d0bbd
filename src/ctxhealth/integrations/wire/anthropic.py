"""Anthropic Messages (``POST /v1/messages``): ``system`` + ``messages`` with content blocks.

Items are the ``messages``; the system prompt is the head. Rewritten lists keep the API's rules:
roles alternate (same-role neighbours are merged), ``tool_result`` blocks lead their user message.
A note is a text block after the last user message's content (after its tool results), so the
cached prefix before it stays byte-identical.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ctxhealth.integrations.wire.base import (
    FINAL_HEADERS,
    ApiError,
    ApiStyle,
    ErrorKind,
    JSONDict,
    canonical,
    kept_original,
)
from ctxhealth.model import Message, Role
from ctxhealth.sources.anthropic_messages import parse_blocks
from ctxhealth.sources.lines import WarningSink
from ctxhealth.sources.writers import to_anthropic_messages

_ROLES = {"user": Role.USER, "assistant": Role.ASSISTANT}
_ERROR_TYPES = {
    ErrorKind.HALT: (400, "invalid_request_error"),
    ErrorKind.TOO_LARGE: (413, "request_too_large"),
    ErrorKind.BAD_REQUEST: (400, "invalid_request_error"),
}


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, list):
        return list(content)
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return []


def merge_roles(items: list[Any]) -> list[Any]:
    """Merge neighbours of the same role into one message, ``tool_result`` blocks first."""
    out: list[Any] = []
    for item in items:
        if (
            out
            and isinstance(item, dict)
            and isinstance(out[-1], dict)
            and out[-1].get("role") == item.get("role")
        ):
            combined = _blocks(out[-1].get("content")) + _blocks(item.get("content"))
            combined.sort(key=lambda b: 0 if isinstance(b, dict) and b.get("type") == "tool_result" else 1)
            out[-1] = {**out[-1], "content": combined}
        else:
            out.append(item)
    return out


ONE_M_BETA = "context-1m"
"""The ``anthropic-beta`` feature (``context-1m-2025-08-07``) by which a request asks for a Claude model's
1M-token context; the response names the plain model (Claude Code sends it for a ``[1m]`` model)."""


def requested_model(model: str | None, headers: Mapping[str, str]) -> str | None:
    """The model id a request asks for, as the registry reads it: with the 1M beta, the id with the
    ``[1m]`` suffix (the registry's 1M window for it)."""
    if not model or model.endswith("[1m]"):
        return model
    beta = next((v for k, v in headers.items() if k.lower() == "anthropic-beta"), "")
    if any(part.strip().startswith(ONE_M_BETA) for part in beta.split(",")):
        return f"{model}[1m]"
    return model


class AnthropicMessages:
    style = ApiStyle.ANTHROPIC_MESSAGES

    def items(self, body: JSONDict) -> list[Any]:
        messages = body.get("messages")
        return list(messages) if isinstance(messages, list) else []

    def head(self, body: JSONDict) -> Any:
        return body.get("system")

    def to_messages(self, body: JSONDict, items: list[Any], *, with_head: bool) -> list[Message]:
        sink = WarningSink("request")
        out: list[Message] = []
        system = body.get("system")
        if with_head and system:
            out.append(Message(role=Role.SYSTEM, blocks=tuple(parse_blocks(system, sink, 0)), line=0))
        for index, item in enumerate(items, start=1):
            role = _ROLES.get(str(item.get("role"))) if isinstance(item, dict) else None
            if role is None:
                role = Role.USER
            content = item.get("content") if isinstance(item, dict) else None
            out.append(Message(role=role, blocks=tuple(parse_blocks(content, sink, index)), line=index))
        return out

    def with_items(self, body: JSONDict, items: list[Any]) -> JSONDict:
        return {**body, "messages": items}

    def write(self, messages: list[Message], originals: list[Any], parsed: list[Message]) -> list[Any]:
        out: list[Any] = []
        by_line = {m.line: m for m in parsed if m.line is not None}
        for m in messages:
            if m.role is Role.SYSTEM:
                continue  # the body's own system prompt is kept as it is
            kept = kept_original(m, originals, by_line)
            if kept is not None:
                out.append(kept)
            else:
                out.extend(to_anthropic_messages([m]))
        return merge_roles(out)

    def add_note(self, items: list[Any], text: str) -> list[Any]:
        out = list(items)
        note = {"type": "text", "text": text}
        if out and isinstance(out[-1], dict) and out[-1].get("role") == "user":
            out[-1] = {**out[-1], "content": [*_blocks(out[-1].get("content")), note]}
        else:
            out.append({"role": "user", "content": [note]})
        return out

    def session_seed(self, body: JSONDict) -> str:
        first = next(
            (i for i in self.items(body) if isinstance(i, dict) and i.get("role") == "user"),
            None,
        )
        return (canonical(body.get("system")) + b"\x00" + canonical(first)).decode()

    def error(self, kind: ErrorKind, message: str) -> ApiError:
        status, kind_name = _ERROR_TYPES[kind]
        headers = dict(FINAL_HEADERS) if kind is ErrorKind.HALT else {}
        return ApiError(status, {"type": "error", "error": {"type": kind_name, "message": message}}, headers)
