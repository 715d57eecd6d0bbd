"""Small shared helpers for readers: JSON decoding, line splitting, typed field access, warnings.

Readers are lenient: a value of the wrong type is never trusted and never crashes the reader.
The typed getters below return ``None`` (or a default) for anything that is not exactly the
expected JSON type, so format modules can read untrusted dictionaries without ``isinstance``
noise. :class:`WarningSink` collects ``file:line: reason`` warnings with a cap, so a file of a
million junk lines cannot exhaust memory.

The steps several readers share live here too: :func:`head_objects` (what ``detect`` of a JSONL
format looks at), :func:`load_document`, :func:`message_list` and :func:`each_message` (the outer
layers of a chat-style JSON document), and :func:`valid_utf8` (the guard before a typed decode).

The ``make_*`` functions build model values with every field given positionally (a reader builds
thousands per file); the model's classes are ``msgspec.Struct``, whose ``__init__`` runs in C.
"""

from __future__ import annotations

import _thread
import json as _json
import math
import os
from codecs import utf_8_decode
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import orjson

from ctxhealth.model import (
    Block,
    Message,
    ReadWarning,
    Role,
    TextBlock,
    ToolCall,
    ToolResult,
    Usage,
)

#: Warnings kept per file; beyond this one summary warning counts the rest.
MAX_WARNINGS = 200

#: Longest excerpt of a reason (error text) kept in a warning.
_MAX_REASON = 160


class BadJSON(ValueError):
    """A line or document that is not valid JSON (internal; readers turn it into a warning)."""


def loads(raw: bytes | str) -> Any:
    """Decode JSON with orjson; raise :class:`BadJSON` with a short reason on any failure.

    JSON that the grammar allows but orjson refuses is still read: a lone surrogate escape
    (``"\\ud800"``) becomes U+FFFD, a number too large for a double (``1e400``) becomes infinity
    (no count field accepts it). Only then is the standard library's slower decoder used.
    """
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        message = str(exc)
        reason = shorten(message)
    if message.startswith(_CUT_OFF):
        # the input ends inside a value (orjson read everything before without objecting): no
        # decoder reads it, so the slow one is not tried (a line cut off by a head's end, mostly)
        raise BadJSON(reason)
    try:
        try:
            value = _json.loads(raw, parse_constant=_no_constant)
        except RecursionError:
            value = _json.loads(flatten_deep(raw), parse_constant=_no_constant)
    except (ValueError, RecursionError):
        raise BadJSON(reason) from None
    return _clean_surrogates(value)


_CUT_OFF = "unexpected end of data"
"""How orjson's error begins when the input ends before its value does."""


def _no_constant(name: str) -> Any:
    """``NaN`` / ``Infinity`` (as Python's ``json.dump`` writes them) are not JSON: the value
    reads as null, so it costs its field and never the line or the session."""
    return None


MAX_DEPTH = 200
"""Nesting kept by :func:`loads` when a document is nested deeper than the decoders allow:
anything deeper becomes null (it costs that value, never the line)."""


def flatten_deep(raw: bytes | str, limit: int = MAX_DEPTH) -> bytes:
    """``raw`` with every array or object nested deeper than ``limit`` replaced by ``null``
    (a byte scan that knows strings; used only after the decoders refused the depth)."""
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else bytes(raw)
    out = bytearray()
    depth = 0
    skip_from = -1  # depth at which a too-deep value started, or -1
    in_string = escaped = False
    for byte in data:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:
                escaped = True
            elif byte == 0x22:
                in_string = False
            if skip_from < 0:
                out.append(byte)
            continue
        if byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):
            depth += 1
            if depth > limit and skip_from < 0:
                skip_from = depth
                out += b"null"
                continue
        elif byte in (0x5D, 0x7D):
            depth -= 1
            if skip_from >= 0 and depth < skip_from:
                skip_from = -1
                continue
        if skip_from < 0:
            out.append(byte)
    return bytes(out)


def _clean_surrogates(value: Any) -> Any:
    """``value`` with lone surrogates in its strings (and keys) replaced by U+FFFD."""
    kind = type(value)
    if kind is str:
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        return value
    if kind is list:
        return [_clean_surrogates(v) for v in value]
    if kind is dict:
        return {_clean_surrogates(k): _clean_surrogates(v) for k, v in value.items()}
    return value


def dumps(value: Any) -> str:
    """Compact JSON text of ``value`` (non-serialisable parts become ``str``)."""
    try:
        return orjson.dumps(value, default=str).decode()
    except (TypeError, orjson.JSONEncodeError):
        return str(value)


def shorten(text: str, limit: int = _MAX_REASON) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


MAX_LINE_ENV = "CTXHEALTH_MAX_LINE_BYTES"
"""The environment variable that sets :func:`max_line_bytes`."""
DEFAULT_MAX_LINE_BYTES = 64 << 20
"""The longest line of a line-per-record transcript that is read (64 MiB). The longest line among
the real transcripts we test on is 343 KiB (a Claude Code tool result); an inlined screenshot is a
few MB of base64. A longer line is skipped with a warning: it costs that line, never the session."""


def max_line_bytes() -> int:
    """The line cap of line-per-record formats (``CTXHEALTH_MAX_LINE_BYTES``, else 64 MiB)."""
    raw = os.environ.get(MAX_LINE_ENV, "").strip()
    if raw.isdigit() and int(raw) > 0:
        return int(raw)
    return DEFAULT_MAX_LINE_BYTES


def long_line(size: int, limit: int) -> str:
    """The warning for a line longer than :func:`max_line_bytes` (the reader skips it)."""
    return (
        f"line is {size:,} bytes, more than the line limit of {limit:,}; skipped "
        f"(set {MAX_LINE_ENV} to a larger number of bytes to read it)"
    )


def split_lines(
    data: bytes, first_line: int = 1, sink: WarningSink | None = None
) -> Iterator[tuple[int, bytes]]:
    """Yield ``(line_number, line)`` for every non-blank line of ``data`` (``\r\n`` tolerated).

    A line longer than :func:`max_line_bytes` is skipped, and said so to ``sink`` when given
    (detection passes none: a line it cannot judge is simply not looked at)."""
    limit = max_line_bytes()
    for number, line in enumerate(data.split(b"\n"), first_line):
        if len(line) > limit:
            if sink is not None:
                sink.add(number, long_line(len(line), limit))
            continue
        if line and not line.isspace():
            yield number, line


def get_str(obj: Any, key: str) -> str | None:
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, str) else None


def get_int(obj: Any, key: str) -> int | None:
    """An integer field (``bool`` is rejected; integral floats are accepted)."""
    if isinstance(obj, dict):
        return as_int(obj.get(key))
    return None


def as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
        return int(value)
    return None


def as_float(value: Any) -> float | None:
    """A finite JSON number as a float, else None (``bool``, NaN, infinities, and integers too
    large for a float are not values of any field)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


COUNT_LIMIT = 2**53
"""Largest token count a usage field may hold (beyond it the number is not a count but damage)."""


def token_count(
    raw: dict[str, Any], key: str, problems: list[str] | None = None, where: str = "usage"
) -> int:
    """A usage field as a token count: a non-negative integer up to :data:`COUNT_LIMIT` (an integral
    float too). Anything else present (a string, a negative, a huge number, null, a list) counts 0
    and, when ``problems`` is given, adds a sentence naming the field ``where.key``."""
    if key not in raw:
        return 0
    value = raw[key]
    if type(value) is int and 0 <= value <= COUNT_LIMIT:
        return value
    if type(value) is float and value.is_integer() and 0 <= value <= COUNT_LIMIT:
        return int(value)
    if problems is not None:
        problems.append(f"{where}.{key} is {_describe_count(value)}, not a token count; ignored")
    return 0


def _describe_count(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return type_name(value) if value is None else f"a {type_name(value)}"
    shown = _short_number(value)
    if value < 0:
        return f"negative ({shown})"
    if value != value or value > COUNT_LIMIT:
        return f"out of range ({shown})"
    return f"not a whole number ({shown})"


def _short_number(value: int | float) -> str:
    """A number for a warning: an integer too large for a float (309+ digits) by its length
    (formatting it as a float would raise OverflowError)."""
    if isinstance(value, int) and abs(value) > 10**15:
        digits = len(str(abs(value))) if abs(value).bit_length() < 100_000 else "many"
        return f"{'-' if value < 0 else ''}an integer of {digits} digits"
    return f"{value:.6g}"


def get_dict(obj: Any, key: str) -> dict[str, Any] | None:
    if isinstance(obj, dict):
        value = obj.get(key)
        if isinstance(value, dict):
            return value
    return None


def get_list(obj: Any, key: str) -> list[Any] | None:
    if isinstance(obj, dict):
        value = obj.get(key)
        if isinstance(value, list):
            return value
    return None


def get_bool(obj: Any, key: str) -> bool:
    return isinstance(obj, dict) and obj.get(key) is True


def type_name(value: Any) -> str:
    """The JSON name of a decoded value's type, for warnings."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


class WarningSink:
    """Collects :class:`ReadWarning` values for one file, keeping at most ``limit``."""

    __slots__ = ("_items", "dropped", "limit", "path")

    def __init__(self, path: str, limit: int = MAX_WARNINGS) -> None:
        self.path = path
        self.limit = limit
        self._items: list[ReadWarning] = []
        self.dropped = 0

    def add(self, line: int | None, reason: str) -> None:
        if len(self._items) < self.limit:
            self._items.append(ReadWarning(self.path, line, shorten(reason, 300)))
        else:
            self.dropped += 1

    def __len__(self) -> int:
        return len(self._items) + self.dropped

    def result(self) -> tuple[ReadWarning, ...]:
        items = list(self._items)
        if self.dropped:
            items.append(ReadWarning(self.path, None, f"{self.dropped} more warnings not shown"))
        return tuple(items)


# --- steps several readers share ----------------------------------------------------------------

#: ``detect`` of a JSONL format judges at most this many decoded lines ...
_HEAD_OBJECTS = 5
#: ... among this many non-blank lines of the head.
_HEAD_LINES = 8


def _decode_head(head: bytes) -> Iterator[Any]:
    decoded = 0
    for tried, (_, raw) in enumerate(split_lines(head)):
        if decoded >= _HEAD_OBJECTS or tried >= _HEAD_LINES:
            break
        if not raw.lstrip().startswith(b"{"):
            continue
        try:
            obj = loads(raw)
        except BadJSON:
            continue
        decoded += 1
        yield obj


_DONE = object()


class _HeadValues:
    """The values of one head decoded as far as a reader's ``detect`` has read them, so the next
    reader asked about the same head reads them again without decoding (a format is found by asking
    each reader in turn, and most of them read the same first lines)."""

    __slots__ = ("_lock", "_source", "_values", "head")

    def __init__(self, head: bytes) -> None:
        self.head = head
        self._values: list[Any] = []
        self._source: Iterator[Any] | None = _decode_head(head)
        self._lock = _thread.allocate_lock()  # two threads may read the same head (one-byte heads are shared)

    def __iter__(self) -> Iterator[Any]:
        values = self._values
        i = 0
        while True:
            if i < len(values):
                yield values[i]
                i += 1
                continue
            with self._lock:
                if i < len(values):  # another reader decoded it meanwhile
                    continue
                source = self._source
                if source is None:
                    return
                value = next(source, _DONE)
                if value is _DONE:
                    self._source = None
                    return
                values.append(value)


_HEAD_KEPT_BYTES = 1 << 20
"""The largest head whose values are kept for the next reader (a head is a few KB; one whose first
line is longer holds the whole file, which is not kept alive after its detection)."""
_last_head = _HeadValues(b"")


def head_objects(head: bytes) -> Iterator[Any]:
    """The decoded values of the first lines of ``head`` that open with ``{`` and decode: at most
    5 of them, from the first 8 non-blank lines (a line cut off by the end of ``head`` is skipped
    like any other that does not decode). Asked again about the same ``head`` object (the next
    reader's ``detect``), the values already decoded are given again, not decoded again: the values
    are shared, and no reader changes them."""
    global _last_head
    kept = _last_head
    if kept.head is not head:
        if len(head) > _HEAD_KEPT_BYTES:
            return _decode_head(head)
        kept = _last_head = _HeadValues(head)
    return iter(kept)


def load_document(data: bytes, sink: WarningSink) -> Any:
    """The decoded JSON document; ``None``, with an ``invalid JSON`` warning, when it is not JSON."""
    try:
        return loads(data)
    except BadJSON as exc:
        sink.add(None, f"invalid JSON: {exc}")
        return None


def message_list(doc: Any, sink: WarningSink) -> tuple[str | None, list[Any]]:
    """``(model, messages)`` of a chat document: a bare array of messages, or an object with a
    ``messages`` array and an optional ``model``. Any other shape is warned about and has none."""
    if isinstance(doc, list):
        return None, doc
    if isinstance(doc, dict):
        model = get_str(doc, "model")
        found = get_list(doc, "messages")
        if found is None:
            sink.add(None, "no 'messages' array in the document")
        return model, found or []
    sink.add(None, f"document is {type_name(doc)}, expected an object or array")
    return None, []


def _json_excerpt(value: Any) -> str:
    return dumps(value)[:40]


def each_message(
    raw_messages: list[Any],
    roles: Mapping[str, Role],
    sink: WarningSink,
    quote_role: Callable[[Any], str] = _json_excerpt,
) -> Iterator[tuple[int, dict[str, Any], Role]]:
    """``(index, message, role)`` for each message object whose ``role`` is in ``roles`` (index
    1-based); any other entry is warned about (its role worded by ``quote_role``) and skipped."""
    for index, raw in enumerate(raw_messages, start=1):
        if not isinstance(raw, dict):
            sink.add(index, f"message is {type_name(raw)}, expected object")
            continue
        role = roles.get(str(raw.get("role")))
        if role is None:
            sink.add(index, f"unknown role {quote_role(raw.get('role'))}")
            continue
        yield index, raw, role


def valid_utf8(data: bytes | memoryview) -> bool:
    """True when ``data`` is valid UTF-8. A typed (``msgspec``) decode checks this first: it does
    not check the UTF-8 of the fields it skips, while orjson rejects the whole input."""
    try:
        utf_8_decode(data, "strict", True)
    except UnicodeDecodeError:
        return False
    return True


# --- construction of model values -------------------------------------------------------------


def make_text(text: str) -> TextBlock:
    """``TextBlock(text)``."""
    return TextBlock(text)


def make_call(call_id: str, name: str, value: Any) -> ToolCall:
    """``ToolCall(call_id, name, value)``."""
    return ToolCall(call_id, name, value)


def make_result(call_id: str, text: str, is_error: bool, exit_code: int | None = None) -> ToolResult:
    """``ToolResult(call_id, text, is_error, exit_code)``."""
    return ToolResult(call_id, text, is_error, exit_code)


def make_usage(
    input_tokens: int, output_tokens: int, cache_creation: int, cache_read: int, cache_write_1h: int = 0
) -> Usage:
    """``Usage(...)`` without reasoning tokens."""
    return Usage(input_tokens, output_tokens, cache_creation, cache_read, 0, cache_write_1h)


def make_message(
    role: Role,
    blocks: tuple[Block, ...],
    id: str | None,
    response_id: str | None,
    model: str | None,
    usage: Usage | None,
    timestamp: str | None,
    sidechain: bool,
    line: int | None,
    synthetic: bool = False,
) -> Message:
    """``Message(...)`` with every field given, in field order."""
    return Message(role, blocks, id, response_id, model, usage, timestamp, sidechain, line, synthetic)
