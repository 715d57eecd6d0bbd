"""An analysed session's records as the rows of every fleet table, column by column by name.

Each table's columns (:mod:`ctxhealth.fleet.schema`) are fields of one record type of
:mod:`ctxhealth.analysis.records`: a row is the record's fields read in the table's column order
(``path``, the session's key, first where the record has none). :data:`RECORD_TYPES` says which
record fills which table; ``tests/test_fleet.py`` checks every column is a field.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from operator import attrgetter
from typing import Any

import msgspec

from ctxhealth.analysis import (
    CacheBreakRow,
    CostRow,
    ResponseRow,
    SessionAnalysis,
    SessionRow,
    ToolCallRow,
    TurnRecord,
)
from ctxhealth.fleet.schema import BY_NAME

Row = tuple[Any, ...]
"""One table row, in the table's column order (what the stores write)."""

RECORD_TYPES: dict[str, type[msgspec.Struct]] = {
    "sessions": SessionRow,
    "turns": TurnRecord,
    "decisions": TurnRecord,
    "tool_calls": ToolCallRow,
    "cache_breaks": CacheBreakRow,
    "responses": ResponseRow,
    "costs": CostRow,
}
"""The record type whose fields fill each session table."""


def _getter(table: str) -> Callable[[Any], Any]:
    names = BY_NAME[table].names
    if "path" not in RECORD_TYPES[table].__struct_fields__:
        names = names[1:]
    get = attrgetter(*names)
    return get


_GET = {name: _getter(name) for name in RECORD_TYPES}


def rows_of(table: str, records: Iterable[msgspec.Struct], key: str) -> list[Row]:
    """``records`` as rows of ``table``, each keyed ``key`` (the session's path) when the record
    type has no ``path`` of its own."""
    get = _GET[table]
    if "path" in RECORD_TYPES[table].__struct_fields__:
        return [get(r) for r in records]
    prefix = (key,)
    return [prefix + get(r) for r in records]


def table_rows(analysis: SessionAnalysis, key: str, file_bytes: int) -> dict[str, list[Row]]:
    """Rows of every session table of one analysed session, keyed ``key``."""
    r = analysis.rows
    return {
        "sessions": rows_of("sessions", [analysis.session_row(key, file_bytes)], key),
        "turns": rows_of("turns", r.turns, key),
        "decisions": rows_of("decisions", r.decisions, key),
        "tool_calls": rows_of("tool_calls", r.tool_calls, key),
        "cache_breaks": rows_of("cache_breaks", r.cache_breaks, key),
        "responses": rows_of("responses", r.responses, key),
        "costs": rows_of("costs", r.costs, key),
    }
