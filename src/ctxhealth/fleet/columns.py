"""A batch's rows of each fleet table as typed columns: built where the rows are made (a worker),
joined where they are written (the run's process) into NumPy arrays, and handed to DuckDB or to
Arrow.

A table's rows become one :class:`Column` per column of the table: numbers, booleans, timestamps
(microseconds since the epoch, UTC) and dates (days since it) as typed arrays with a mask where a
value is None; strings as a list (None is NULL). A worker makes them with the standard library's
:mod:`array` (:func:`typed_column`, :func:`typed_columns`): they pickle as their bytes, not value by
value, and a worker never imports NumPy (a tenth of a second or more of each process's CPU). The
process writing the store joins a table's columns of several batches into NumPy arrays
(:func:`concat`, the one step from one form to the other: typed arrays are read in place, the
strings become an object array) instead of converting every value (that conversion, on one process,
was the largest part of the writer's CPU); :func:`duckdb_select` and :func:`arrow_table_of` read its
result, and ``tests/test_fleet_store_columns.py`` checks both store exactly what
:func:`ctxhealth.fleet.store.arrow_table` (Arrow's own conversion of the Python values, the
reference) stores. NumPy is imported on first use there (the ``fleet`` extra).
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from itertools import chain, repeat
from operator import floordiv, sub
from typing import Any, NamedTuple

from ctxhealth.fleet.schema import Table

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_EPOCH_DAY = date(1970, 1, 1)
_MICROSECOND = timedelta(microseconds=1)
_TYPECODES = {
    "BIGINT": "q",
    "INTEGER": "q",
    "DOUBLE": "d",
    "BOOLEAN": "b",  # 0 or 1
    "TIMESTAMPTZ": "q",  # microseconds since the epoch
    "DATE": "i",  # days since the epoch
}
"""The :mod:`array` type a column of each type (VARCHAR aside: a list) is held in by a worker."""
_NUMPY_TYPES = {"q": "int64", "d": "float64", "b": "bool", "i": "int32"}
"""The NumPy type each of those arrays is read as (and a mask, ``b``) once joined."""
_INTEGERS = frozenset(("BIGINT", "INTEGER"))
if array("i").itemsize != 4 or array("q").itemsize != 8:  # pragma: no cover - every platform Python runs on
    raise ImportError("ctxhealth.fleet needs 32-bit C ints and 64-bit C long longs")


class Column(NamedTuple):
    """One column of a table's rows: ``values`` a typed array (for VARCHAR a sequence of str or
    None), ``nulls`` a boolean array true where the value is NULL (None when no value is, and always
    None for VARCHAR, whose None values are the NULLs). A worker's columns hold :mod:`array` arrays
    and lists; joined (:func:`concat`), NumPy arrays."""

    values: Any
    nulls: Any | None


Columns = list[Column]
"""A table's rows, column by column in the table's column order."""


def _microseconds(moment: datetime) -> int:
    """Microseconds since the epoch of ``moment`` (a naive one taken as UTC, as Arrow takes it)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // _MICROSECOND


def _timestamps(values: Sequence[datetime]) -> array[int]:
    """Microseconds since the epoch of each of ``values``: every value's distance from the epoch in
    whole microseconds (timedelta arithmetic, exact), mapped at C speed; a naive value cannot be
    subtracted from the aware epoch, so a column holding one is converted value by value."""
    try:
        distances = list(map(sub, values, repeat(_EPOCH)))
    except TypeError:
        return array("q", [_microseconds(v) for v in values])
    return array("q", map(floordiv, distances, repeat(_MICROSECOND)))


def typed_column(kind: str, values: Sequence[Any]) -> Column:
    """The values of one column of type ``kind`` (a column type of :mod:`~ctxhealth.fleet.schema`)
    as a :class:`Column`; a NULL keeps the place of its row with another value of the column in it
    (masked), so no type is ever inferred from values."""
    if kind == "VARCHAR":
        return Column(values if type(values) is list else list(values), None)
    code = _TYPECODES[kind]
    if kind in _INTEGERS:
        # an array refuses None as an integer: try first, and look for NULLs only when it refuses
        try:
            return Column(array(code, values), None)
        except TypeError:
            pass
    nulls = None
    if None in values:
        nulls = array("b", [v is None for v in values])
        filler = next((v for v in values if v is not None), None)
        if filler is None:  # every value None: zeros of the type, all masked
            return Column(array(code, [0]) * len(values), nulls)
        values = [filler if v is None else v for v in values]
    if kind == "TIMESTAMPTZ":
        return Column(_timestamps(values), nulls)
    if kind == "DATE":
        return Column(array(code, [(v - _EPOCH_DAY).days for v in values]), nulls)
    if kind == "BOOLEAN":
        return Column(array(code, map(bool, values)), nulls)
    return Column(array(code, values), nulls)


def typed_columns(table: Table, rows: Sequence[tuple[Any, ...]]) -> Columns:
    """``rows`` (tuples in ``table``'s column order, at least one) as typed columns."""
    return [
        typed_column(column.type, values)
        for column, values in zip(table.columns, zip(*rows, strict=True), strict=True)
    ]


def _numpy(values: Any) -> Any:
    """A worker's typed array read as NumPy (in place), or its strings as an object array."""
    import numpy as np

    if isinstance(values, array):
        return np.frombuffer(values, dtype=_NUMPY_TYPES[values.typecode])
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def concat(parts: Sequence[Columns]) -> Columns:
    """The rows of one or more batches of one table as one set of NumPy columns, in order."""
    import numpy as np

    out: Columns = []
    for pieces in zip(*parts, strict=True):
        if len(pieces) == 1:
            values = _numpy(pieces[0].values)
        elif isinstance(pieces[0].values, array):
            values = np.concatenate([_numpy(p.values) for p in pieces])
        else:
            values = _numpy(list(chain.from_iterable(p.values for p in pieces)))
        nulls = None
        if any(p.nulls is not None for p in pieces):
            nulls = np.concatenate(
                [np.zeros(len(p.values), dtype=bool) if p.nulls is None else _numpy(p.nulls) for p in pieces]
            )
        out.append(Column(values, nulls))
    return out


def row_count(columns: Columns) -> int:
    """How many rows the columns hold."""
    return len(columns[0].values) if columns else 0


def duckdb_select(table: Table, columns: Columns) -> tuple[dict[str, Any], str]:
    """The arrays DuckDB scans (registered as one relation, without pyarrow) and the ``SELECT``
    list that makes them the table's values: timestamps and dates rebuilt from their numbers, a
    masked value NULL, and (DuckDB would take a NumPy NaN for NULL) a NaN of a DOUBLE column NaN."""
    import numpy as np

    arrays: dict[str, Any] = {}
    select: list[str] = []
    for i, (column, (values, nulls)) in enumerate(zip(table.columns, columns, strict=True)):
        kind = column.type
        name = f"c{i}"
        if nulls is not None and nulls.all():
            select.append(f"NULL::{kind}")
            continue
        arrays[name] = values
        if kind == "VARCHAR":
            select.append(f'"{name}"')
            continue
        if kind == "TIMESTAMPTZ":
            expr = f"timezone('UTC', make_timestamp(\"{name}\"))"
        elif kind == "DATE":
            expr = f"DATE '1970-01-01' + \"{name}\""
        else:
            expr = f'"{name}"::{kind}'
            if kind == "DOUBLE" and (nan := np.isnan(values)).any():
                arrays[f"n{i}"] = nan
                expr = f"CASE WHEN \"n{i}\" THEN 'NaN'::DOUBLE ELSE {expr} END"
        if nulls is not None and nulls.any():
            arrays[f"m{i}"] = nulls
            expr = f'CASE WHEN "m{i}" THEN NULL ELSE {expr} END'
        select.append(expr)
    if not arrays:  # every column NULL: DuckDB still needs one to count the rows
        arrays["rows"] = np.zeros(row_count(columns), dtype=np.int8)
    return arrays, ", ".join(select)


def arrow_table_of(table: Table, columns: Columns) -> Any:
    """The columns as a ``pyarrow.Table`` with the table's schema (for the Parquet store)."""
    import pyarrow as pa

    from ctxhealth.fleet.schema import arrow_schema

    schema = arrow_schema(table)
    arrays = []
    for column, (values, nulls), field in zip(table.columns, columns, schema, strict=True):
        if column.type == "VARCHAR":
            arrays.append(pa.array(values, type=field.type))
            continue
        # the array as NumPy holds it (timestamps and dates as their numbers), read as the field's type
        arrays.append(pa.array(values, mask=nulls).cast(field.type))
    return pa.Table.from_arrays(arrays, schema=schema)
