"""Token usage, model and response id read out of a model response as its bytes go by.

:class:`UsageTap` is fed the response body chunk by chunk, exactly as forwarded (nothing is held
back or changed). For a server-sent event stream it splits lines as they complete and decodes only
the ``data:`` payloads that carry usage:

* Anthropic: ``message_start`` (``message.usage``: input and cache tokens, ``message.id``,
  ``message.model``), then ``message_delta`` (``usage.output_tokens``, cumulative; newer servers
  repeat the input counts there too);
* Chat Completions with ``stream_options.include_usage``: the last ``chat.completion.chunk`` with
  empty ``choices`` and ``usage``;
* Responses: ``response.completed`` (``response.usage``);
* Gemini: ``usageMetadata`` of the chunks (the latest wins; ``modelVersion``, ``responseId``).

For a plain JSON body the text is collected (up to :data:`MAX_JSON_BYTES`) and read at the end.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from ctxhealth.integrations.wire.base import ApiStyle
from ctxhealth.model import Usage
from ctxhealth.sources import anthropic_messages, openai_chat
from ctxhealth.sources.gemini_cli import gemini_usage
from ctxhealth.sources.lines import token_count

MAX_JSON_BYTES = 16 * 1024 * 1024
MAX_LINE_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class ResponseFacts:
    """What a response told about itself: usage (None when it reported none), model, id."""

    usage: Usage | None = None
    model: str | None = None
    response_id: str | None = None


def _int(raw: dict[str, Any], key: str) -> int:
    value = raw.get(key)
    return value if type(value) is int and value > 0 else 0


def responses_usage(raw: Any) -> Usage | None:
    """Responses ``usage`` -> :class:`Usage` (``input_tokens`` split into uncached + cached)."""
    if not isinstance(raw, dict):
        return None
    details = raw.get("input_tokens_details")
    cached = _int(details, "cached_tokens") if isinstance(details, dict) else 0
    total = _int(raw, "input_tokens")
    out_details = raw.get("output_tokens_details")
    reasoning = _int(out_details, "reasoning_tokens") if isinstance(out_details, dict) else 0
    return Usage(
        input_tokens=total - min(cached, total),
        cache_read_tokens=min(cached, total),
        output_tokens=_int(raw, "output_tokens"),
        reasoning_tokens=reasoning,
    )


def usage_metadata(raw: Any) -> Usage | None:
    """Gemini ``usageMetadata`` -> :class:`Usage` (``promptTokenCount`` includes the cached part;
    thoughts are billed as output)."""
    if not isinstance(raw, dict):
        return None
    return gemini_usage(
        token_count(raw, "promptTokenCount"),
        token_count(raw, "cachedContentTokenCount"),
        token_count(raw, "candidatesTokenCount"),
        token_count(raw, "thoughtsTokenCount"),
    )


def _str(raw: Any, key: str) -> str | None:
    value = raw.get(key) if isinstance(raw, dict) else None
    return value if isinstance(value, str) else None


class UsageTap:
    """Reads usage from a response body fed in chunks; :meth:`facts` gives what it found."""

    __slots__ = ("_buffer", "_json", "_model", "_rid", "_size", "_usage", "sse", "style")

    def __init__(self, style: ApiStyle, content_type: str | None) -> None:
        self.style = style
        self.sse = bool(content_type) and "text/event-stream" in str(content_type)
        self._buffer = b""
        self._json: list[bytes] | None = None if self.sse else []
        self._size = 0
        self._usage: Usage | None = None
        self._model: str | None = None
        self._rid: str | None = None

    def feed(self, chunk: bytes) -> None:
        if not chunk:
            return
        if self._json is not None:
            self._size += len(chunk)
            if self._size <= MAX_JSON_BYTES:
                self._json.append(chunk)
            return
        data = self._buffer + chunk if self._buffer else chunk
        start = 0
        while True:
            end = data.find(b"\n", start)
            if end < 0:
                break
            line = data[start:end]
            start = end + 1
            if line.startswith(b"data:") and b'"usage' in line:
                self._event(line[5:].strip())
        rest = data[start:]
        self._buffer = rest if len(rest) <= MAX_LINE_BYTES else b""

    def _event(self, payload: bytes) -> None:
        try:
            doc = orjson.loads(payload)
        except orjson.JSONDecodeError:
            return
        if not isinstance(doc, dict):
            return
        if self.style is ApiStyle.ANTHROPIC_MESSAGES:
            kind = doc.get("type")
            if kind == "message_start":
                message = doc.get("message")
                self._take_message(message)
            elif kind == "message_delta":
                self._merge_anthropic_delta(doc.get("usage"))
        elif self.style is ApiStyle.GEMINI:
            self._take_gemini(doc)
        elif self.style is ApiStyle.OPENAI_CHAT:
            usage = openai_chat.parse_usage(doc.get("usage"))
            if usage is not None:
                self._usage, self._model, self._rid = usage, _str(doc, "model"), _str(doc, "id")
        elif doc.get("type") in ("response.completed", "response.incomplete", "response.failed"):
            response = doc.get("response")
            usage = responses_usage(response.get("usage")) if isinstance(response, dict) else None
            if usage is not None:
                self._usage, self._model, self._rid = usage, _str(response, "model"), _str(response, "id")

    def _take_message(self, message: Any) -> None:
        if not isinstance(message, dict):
            return
        self._usage = anthropic_messages.parse_usage(message.get("usage")) or self._usage
        self._model = _str(message, "model") or self._model
        self._rid = _str(message, "id") or self._rid

    def _take_gemini(self, doc: dict[str, Any]) -> None:
        usage = usage_metadata(doc.get("usageMetadata"))
        if usage is not None:
            self._usage = usage
        self._model = _str(doc, "modelVersion") or self._model
        self._rid = _str(doc, "responseId") or self._rid

    def _merge_anthropic_delta(self, raw: Any) -> None:
        if not isinstance(raw, dict):
            return
        base = self._usage or Usage()
        self._usage = Usage(
            input_tokens=_int(raw, "input_tokens") or base.input_tokens,
            output_tokens=_int(raw, "output_tokens") or base.output_tokens,
            cache_creation_tokens=_int(raw, "cache_creation_input_tokens") or base.cache_creation_tokens,
            cache_read_tokens=_int(raw, "cache_read_input_tokens") or base.cache_read_tokens,
        )

    def facts(self) -> ResponseFacts:
        """What the response reported (a JSON body is read here, once)."""
        if self._json is not None:
            parts, self._json = self._json, None
            self._read_json(b"".join(parts))
        return ResponseFacts(self._usage, self._model, self._rid)

    def _read_json(self, data: bytes) -> None:
        try:
            doc = orjson.loads(data) if data else None
        except orjson.JSONDecodeError:
            return
        if self.style is ApiStyle.GEMINI and isinstance(doc, list):  # a stream without ``alt=sse``
            for chunk in doc:
                if isinstance(chunk, dict):
                    self._take_gemini(chunk)
            return
        if not isinstance(doc, dict):
            return
        if self.style is ApiStyle.ANTHROPIC_MESSAGES:
            self._take_message(doc)
            return
        if self.style is ApiStyle.GEMINI:
            self._take_gemini(doc)
            return
        parse = openai_chat.parse_usage if self.style is ApiStyle.OPENAI_CHAT else responses_usage
        self._usage = parse(doc.get("usage"))
        self._model, self._rid = _str(doc, "model"), _str(doc, "id")
