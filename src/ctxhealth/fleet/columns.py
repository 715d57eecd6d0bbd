"""A batch's rows of each fleet table as typed NumPy columns: built where the rows are made (a
worker), joined where they are written (the run's process), and handed to DuckDB or to Arrow.

A table's rows become one :class:`Column` per column of the table: numbers, booleans, timestamps
(microseconds since the epoch, UTC) and dates (days since it) as typed arrays with a mask where a
value is None; strings as an object array (None is NULL). So a worker sends arrays that pickle as
their bytes, not tuples of Python values, and the process writing the store concatenates arrays
instead of converting every value (that conversion, on one process, was the largest part of the
writer's CPU). :func:`typed_column` is the one conversion (a worker calls it per column, with the
values read from the records; :func:`typed_columns` from rows); :func:`duckdb_select` and
:func:`arrow_table_of` read its result, and ``tests/test_fleet_store_columns.py`` checks both store
exactly what :func:`ctxhealth.fleet.store.arrow_table` (Arrow's own conversion of the Python
values, the reference) stores. NumPy is imported on first use (the ``fleet`` extra).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from itertools import repeat
from operator import floordiv, sub
from typing import Any, NamedTuple

from ctxhealth.fleet.schema import Table

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_EPOCH_DAY = date(1970, 1, 1)
_MICROSECOND = timedelta(microseconds=1)
_DTYPES = {
    "BIGINT": "int64",
    "INTEGER": "int64",
    "DOUBLE": "float64",
    "BOOLEAN": "bool",
    "TIMESTAMPTZ": "int64",  # microseconds since the epoch
    "DATE": "int32",  # days since the epoch
}
"""The NumPy type a column of each type (VARCHAR aside: object arrays) is held in."""
_INTEGERS = frozenset(("BIGINT", "INTEGER"))


class Column(NamedTuple):
    """One column of a table's rows: ``values`` a typed array (an object array of str or None for
    VARCHAR), ``nulls`` a boolean array true where the value is NULL (None when no value is, and
    always None for VARCHAR, whose None values are the NULLs)."""

    values: Any
    nulls: Any | None


Columns = list[Column]
"""A table's rows, column by column in the table's column order."""


def _microseconds(moment: datetime) -> int:
    """Microseconds since the epoch of ``moment`` (a naive one taken as UTC, as Arrow takes it)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // _MICROSECOND


def _timestamps(values: Sequence[datetime]) -> Any:
    """Microseconds since the epoch of each of ``values``, as an int64 array: every value's
    distance from the epoch in whole microseconds (timedelta arithmetic, exact), mapped at C speed
    (2.4x NumPy's own conversion of the distances); a naive value cannot be subtracted from the
    aware epoch, so a column holding one is converted value by value."""
    import numpy as np

    try:
        distances = list(map(sub, values, repeat(_EPOCH)))
    except TypeError:
        return np.array([_microseconds(v) for v in values], dtype=np.int64)
    return np.fromiter(map(floordiv, distances, repeat(_MICROSECOND)), dtype=np.int64, count=len(distances))


def typed_column(kind: str, values: Sequence[Any]) -> Column:
    """The values of one column of type ``kind`` (a column type of :mod:`~ctxhealth.fleet.schema`)
    as a :class:`Column`; a NULL keeps the place of its row with another value of the column in it
    (masked), so no type is ever inferred from values."""
    import numpy as np

    if kind == "VARCHAR":
        return Column(np.array(values, dtype=object), None)
    if kind in _INTEGERS:
        # NumPy refuses None as an integer (where it would take it as NaN or False): try first, and
        # look for NULLs only when it refuses
        try:
            return Column(np.array(values, dtype=np.int64), None)
        except TypeError:
            pass
    nulls = None
    if None in values:
        nulls = np.array([v is None for v in values], dtype=bool)
        filler = next((v for v in values if v is not None), None)
        if filler is None:  # every value None: zeros of the type, all masked
            return Column(np.zeros(len(values), dtype=_DTYPES[kind]), nulls)
        values = [filler if v is None else v for v in values]
    if kind == "TIMESTAMPTZ":
        return Column(_timestamps(values), nulls)
    if kind == "DATE":
        return Column(np.array([(v - _EPOCH_DAY).days for v in values], dtype=_DTYPES[kind]), nulls)
    return Column(np.array(values, dtype=_DTYPES[kind]), nulls)


def typed_columns(table: Table, rows: Sequence[tuple[Any, ...]]) -> Columns:
    """``rows`` (tuples in ``table``'s column order, at least one) as typed columns."""
    return [
        typed_column(column.type, values)
        for column, values in zip(table.columns, zip(*rows, strict=True), strict=True)
    ]


def concat(parts: Sequence[Columns]) -> Columns:
    """The rows of several batches of one table as one set of columns, in order."""
    import numpy as np

    if len(parts) == 1:
        return parts[0]
    out: Columns = []
    for pieces in zip(*parts, strict=True):
        values = np.concatenate([p.values for p in pieces])
        nulls = None
        if any(p.nulls is not None for p in pieces):
            nulls = np.concatenate(
                [np.zeros(len(p.values), dtype=bool) if p.nulls is None else p.nulls for p in pieces]
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
