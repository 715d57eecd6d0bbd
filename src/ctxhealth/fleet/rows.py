"""An analysed session's records as the columns of every fleet table, column by column by name.

Each table's columns (:mod:`ctxhealth.fleet.schema`) are fields of one record type of
:mod:`ctxhealth.analysis.records`: a column is that field read from each record (``path``, the
session's key, where the record has none), made a typed column (:mod:`ctxhealth.fleet.columns`)
straight from the records, without a tuple per row. :data:`RECORD_TYPES` says which record fills
which table; ``tests/test_fleet.py`` checks every column is a field.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain, repeat
from operator import attrgetter

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
from ctxhealth.fleet.columns import Columns, typed_column
from ctxhealth.fleet.schema import BY_NAME

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

Records = dict[str, Sequence[msgspec.Struct]]
"""One session's records of each session table (by table name)."""


def table_records(analysis: SessionAnalysis, key: str, file_bytes: int) -> Records:
    """The records of every session table of one analysed session, keyed ``key``."""
    r = analysis.rows
    return {
        "sessions": [analysis.session_row(key, file_bytes)],
        "turns": r.turns,
        "decisions": r.decisions,
        "tool_calls": r.tool_calls,
        "cache_breaks": r.cache_breaks,
        "responses": r.responses,
        "costs": r.costs,
    }


def table_columns(table: str, parts: Sequence[tuple[str, Sequence[msgspec.Struct]]]) -> Columns:
    """The rows of ``table`` of several sessions, each ``(key, its records of the table)`` in order,
    as typed columns: each column the field of its name read from every record, the ``path`` of a
    record type without one the key of its session."""
    own_path = "path" in RECORD_TYPES[table].__struct_fields__
    records = list(chain.from_iterable(records for _, records in parts))
    out: Columns = []
    for column in BY_NAME[table].columns:
        if column.name == "path" and not own_path:
            values = list(chain.from_iterable(repeat(key, len(records)) for key, records in parts))
        else:
            values = list(map(attrgetter(column.name), records))
        out.append(typed_column(column.type, values))
    return out
