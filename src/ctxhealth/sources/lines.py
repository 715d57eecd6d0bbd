"""Small shared helpers for readers: JSON decoding, line splitting, typed field access, warnings.

Readers are lenient: a value of the wrong type is never trusted and never crashes the reader.
The typed getters below return ``None`` (or a default) for anything that is not exactly the
expected JSON type, so format modules can read untrusted dictionaries without ``isinstance``
noise. :class:`WarningSink` collects ``file:line: reason`` warnings with a cap, so a file of a
million junk lines cannot exhaust memory.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from ctxhealth.model import ReadWarning

#: Warnings kept per file; beyond this one summary warning counts the rest.
MAX_WARNINGS = 200

#: Longest excerpt of a reason (error text) kept in a warning.
_MAX_REASON = 160


class BadJSON(ValueError):
    """A line or document that is not valid JSON (internal; readers turn it into a warning)."""


def loads(raw: bytes | str) -> Any:
    """Decode JSON with orjson; raise :class:`BadJSON` with a short reason on any failure."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise BadJSON(shorten(str(exc))) from None


def dumps(value: Any) -> str:
    """Compact JSON text of ``value`` (non-serialisable parts become ``str``)."""
    try:
        return orjson.dumps(value, default=str).decode()
    except (TypeError, orjson.JSONEncodeError):
        return str(value)


def shorten(text: str, limit: int = _MAX_REASON) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def split_lines(data: bytes, first_line: int = 1) -> Iterator[tuple[int, bytes]]:
    """Yield ``(line_number, line)`` for every non-blank line of ``data`` (``\r\n`` tolerated)."""
    for number, line in enumerate(data.split(b"\n"), first_line):
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
