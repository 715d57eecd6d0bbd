"""What every API adapter offers (:class:`WireAdapter`) and the helpers they share.

Items are the raw JSON values of a conversation in request order (Anthropic and Chat Completions:
messages; Responses: input items; Gemini: contents). :func:`canonical` writes them with their
``cache_control`` markers left out and a content of one text block as its string: clients move their
cache breakpoints to the newest messages on every request (Claude Code does, turning the marked
message's string into a block list to carry the marker), and a moved marker must not read as an
edited history.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

import orjson

from ctxhealth.model import Message, Usage

JSONDict = dict[str, Any]


class ApiStyle(StrEnum):
    ANTHROPIC_MESSAGES = "anthropic-messages"
    OPENAI_CHAT = "openai-chat"
    OPENAI_RESPONSES = "openai-responses"
    GEMINI = "gemini"


class ErrorKind(StrEnum):
    """The errors the guard answers with itself, instead of the provider."""

    HALT = "halt"
    TOO_LARGE = "too_large"
    BAD_REQUEST = "bad_request"


FINAL_HEADERS = {"x-should-retry": "false"}
"""Sent with a halt: the openai and anthropic SDKs never retry a response that carries it."""


@dataclass(frozen=True, slots=True)
class ApiError:
    """An API-shaped error: HTTP status, JSON body, extra response headers."""

    status: int
    body: JSONDict
    headers: dict[str, str] = field(default_factory=dict)


class WireAdapter(Protocol):
    """One model API's request shape."""

    style: ApiStyle

    def items(self, body: JSONDict) -> list[Any]:
        """The conversation items of a request body, in order (a copy of the list)."""
        ...

    def head(self, body: JSONDict) -> Any:
        """What sits before the items and changes the whole context (system prompt, instructions)."""
        ...

    def to_messages(self, body: JSONDict, items: list[Any], *, with_head: bool) -> list[Message]:
        """``items`` as messages (with the system prompt first when ``with_head``). For Anthropic and
        Chat Completions one message per item, ``line`` = the item's 1-based position in ``items``."""
        ...

    def with_items(self, body: JSONDict, items: list[Any]) -> JSONDict:
        """A copy of ``body`` with ``items`` as its conversation (every other field kept)."""
        ...

    def write(self, messages: list[Message], originals: list[Any], parsed: list[Message]) -> list[Any]:
        """Recovered ``messages`` as items. A message equal to the one parsed from an original item
        (same ``line``) is written as that original item, byte for byte (keeps what the model
        cannot hold: signed thinking, images, cache markers)."""
        ...

    def add_note(self, items: list[Any], text: str) -> list[Any]:
        """``items`` with ``text`` added as the newest user content, in the API's shape."""
        ...

    def session_seed(self, body: JSONDict) -> str:
        """Text that identifies a conversation: system prompt + first user item."""
        ...

    def error(self, kind: ErrorKind, message: str) -> ApiError:
        """An error body in the API's own shape."""
        ...


_CACHE_MARKER = re.compile(rb',"cache_control":\{[^{}]*\}|"cache_control":\{[^{}]*\},?')
_ONE_TEXT_BLOCK = re.compile(rb'"content":\[\{"type":"text","text":("(?:[^"\\]++|\\.)*+")\}\]')
"""A content that is one text block and nothing else (once its marker is cut): the same content as
its text as a string. A client writes the message it puts its cache breakpoint on as a block list
(to carry the marker) and the same message as a string on the next request (Claude Code 2.1 does)."""
_ONE_TEXT_BLOCK_START = b'"content":[{"type":"text","text":'


def canonical(value: Any) -> bytes:
    """Compact JSON bytes of ``value`` without ``cache_control`` markers, a content of one text block
    written as its string.

    orjson writes compact JSON (no spaces), and a marker is a small flat object, so it is cut out of
    the bytes; inside a string the key's quotes would be escaped, so text is never touched.
    """
    data = orjson.dumps(value)
    if b'"cache_control"' in data:
        data = _CACHE_MARKER.sub(b"", data)
    if _ONE_TEXT_BLOCK_START in data:
        data = _ONE_TEXT_BLOCK.sub(rb'"content":\1', data)
    return data


def kept_original(message: Message, originals: list[Any], by_line: dict[int, Message]) -> Any | None:
    """The original item ``message`` was parsed from, when the message is unchanged (else None)."""
    line = message.line
    if line is None or not 0 < line <= len(originals):
        return None
    parsed = by_line.get(line)
    return originals[line - 1] if parsed is not None and parsed == message else None


def attach_usage(
    message: Message, usage: Usage | None, model: str | None, response_id: str | None
) -> Message:
    """``message`` with the usage, model and response id the provider reported for it."""
    from msgspec.structs import replace

    return replace(
        message,
        usage=usage if usage is not None else message.usage,
        model=model or message.model,
        response_id=response_id or message.response_id,
    )
