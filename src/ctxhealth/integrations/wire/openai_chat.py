"""OpenAI Chat Completions (``POST /v1/chat/completions``): ``messages`` with system, user,
assistant (``tool_calls``) and ``tool`` messages.

Items are the ``messages`` (the system prompt is an item too). A note is a user message appended
after the last item (the API accepts a user message after ``tool`` messages).
"""

from __future__ import annotations

from typing import Any

import orjson

from ctxhealth.integrations.wire.base import (
    FINAL_HEADERS,
    ApiError,
    ApiStyle,
    ErrorKind,
    JSONDict,
    canonical,
    kept_original,
)
from ctxhealth.model import Message
from ctxhealth.sources.openai_chat import parse
from ctxhealth.sources.writers import to_openai_messages

_STATUS = {ErrorKind.HALT: 400, ErrorKind.TOO_LARGE: 413, ErrorKind.BAD_REQUEST: 400}
_CODES = {
    ErrorKind.HALT: "context_length_exceeded",
    ErrorKind.TOO_LARGE: "request_too_large",
    ErrorKind.BAD_REQUEST: "invalid_request",
}


def openai_error(kind: ErrorKind, message: str) -> ApiError:
    """The OpenAI error shape: ``{"error": {"message", "type", "param", "code"}}``."""
    return ApiError(
        _STATUS[kind],
        {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": _CODES[kind]}},
        dict(FINAL_HEADERS) if kind is ErrorKind.HALT else {},
    )


class OpenAIChat:
    style = ApiStyle.OPENAI_CHAT

    def items(self, body: JSONDict) -> list[Any]:
        messages = body.get("messages")
        return list(messages) if isinstance(messages, list) else []

    def head(self, body: JSONDict) -> Any:
        return None

    def to_messages(self, body: JSONDict, items: list[Any], *, with_head: bool) -> list[Message]:
        return list(parse(orjson.dumps(items), "request").messages)

    def with_items(self, body: JSONDict, items: list[Any]) -> JSONDict:
        return {**body, "messages": items}

    def write(self, messages: list[Message], originals: list[Any], parsed: list[Message]) -> list[Any]:
        out: list[Any] = []
        by_line = {m.line: m for m in parsed if m.line is not None}
        for m in messages:
            kept = kept_original(m, originals, by_line)
            if kept is not None:
                out.append(kept)
            else:
                out.extend(to_openai_messages([m]))
        return out

    def add_note(self, items: list[Any], text: str) -> list[Any]:
        return [*items, {"role": "user", "content": text}]

    def session_seed(self, body: JSONDict) -> str:
        items = self.items(body)
        system = next(
            (i for i in items if isinstance(i, dict) and i.get("role") in ("system", "developer")), None
        )
        first = next((i for i in items if isinstance(i, dict) and i.get("role") == "user"), None)
        return (canonical(system) + b"\x00" + canonical(first)).decode()

    def error(self, kind: ErrorKind, message: str) -> ApiError:
        return openai_error(kind, message)
