"""The typed columns a worker makes (:mod:`ctxhealth.fleet.columns`) hold exactly the values the
Arrow tables of :func:`~ctxhealth.fleet.store.arrow_table` (the reference) hold, for every column
type of every fleet table: as the DuckDB store scans them, as the Parquet store makes Arrow arrays
of them, and joined from several batches; and a DuckDB run imports neither pyarrow nor pandas."""

from __future__ import annotations

import math
import subprocess
import sys
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxhealth.fleet.columns import arrow_table_of, concat, duckdb_select, typed_columns
from ctxhealth.fleet.schema import TABLES, Table, duckdb_ddl
from ctxhealth.fleet.store import arrow_table

duckdb = pytest.importorskip("duckdb")
pytest.importorskip("pyarrow")

_ZONES = st.sampled_from([UTC, timezone(timedelta(hours=5, minutes=30)), timezone(timedelta(hours=-8))])
_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "VARCHAR": st.text(max_size=12),
    "INTEGER": st.integers(-(2**31), 2**31 - 1),
    "BIGINT": st.integers(-(2**63), 2**63 - 1),
    "DOUBLE": st.floats(allow_nan=True, allow_infinity=True) | st.integers(-(2**40), 2**40),
    "BOOLEAN": st.booleans(),
    "TIMESTAMPTZ": st.datetimes(datetime(1, 1, 2), datetime(9999, 12, 30), timezones=_ZONES | st.none()),
    "DATE": st.dates(date(1, 1, 1), date(9999, 12, 31)),
}


def _rows(table: Table) -> st.SearchStrategy[list[tuple[Any, ...]]]:
    # per column: always None, never None, or sometimes
    def column(kind: str) -> st.SearchStrategy[Any]:
        return st.sampled_from(["none", "never", "some"]).flatmap(
            lambda how: (
                st.none() if how == "none" else _VALUES[kind] if how == "never" else st.none() | _VALUES[kind]
            )
        )

    row = st.tuples(*(column(c.type) for c in table.columns))
    return st.lists(row, min_size=1, max_size=6)


def _stored(
    table: Table, rows: list[tuple[Any, ...]], numpy: bool, split: int = 0, arrow: bool = False
) -> list[tuple[Any, ...]]:
    """The rows as DuckDB stores them: through the typed columns (``numpy``; made of the rows
    before and after ``split`` apart and joined when it is given; as the Parquet store's Arrow
    table when ``arrow``), else through the reference Arrow table."""
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute(duckdb_ddl(table))
    if numpy:
        if split:
            columns = concat([typed_columns(table, rows[:split]), typed_columns(table, rows[split:])])
        else:
            columns = concat([typed_columns(table, rows)])
        if arrow:
            con.register("batch_rows", arrow_table_of(table, columns))
            con.execute(f'INSERT INTO "{table.name}" SELECT * FROM batch_rows')
        else:
            arrays, select = duckdb_select(table, columns)
            con.register("batch_rows", arrays)
            con.execute(f'INSERT INTO "{table.name}" SELECT {select} FROM batch_rows')
    else:
        con.register("batch_rows", arrow_table(table, rows))
        con.execute(f'INSERT INTO "{table.name}" SELECT * FROM batch_rows')
    out = con.execute(f'SELECT * FROM "{table.name}" ORDER BY rowid').fetchall()
    con.close()
    # NaN is not equal to itself: compare its text
    return [tuple("NaN" if isinstance(v, float) and math.isnan(v) else v for v in r) for r in out]


@pytest.mark.parametrize("table", TABLES, ids=[t.name for t in TABLES])
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_numpy_columns_store_what_the_arrow_table_stores(table: Table, data: st.DataObject) -> None:
    rows = data.draw(_rows(table))
    reference = _stored(table, rows, numpy=False)
    assert _stored(table, rows, numpy=True) == reference
    assert _stored(table, rows, numpy=True, arrow=True) == reference
    if len(rows) > 1:
        split = data.draw(st.integers(1, len(rows) - 1))
        assert _stored(table, rows, numpy=True, split=split) == reference
        assert _stored(table, rows, numpy=True, split=split, arrow=True) == reference


def test_a_null_nan_and_extremes_keep_their_values() -> None:
    responses = next(t for t in TABLES if t.name == "responses")
    moment = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=timezone(timedelta(hours=2)))
    row = (
        "p",
        0,
        1,
        None,
        "r\x00é",
        moment,
        "m",
        2**31 - 1,
        0,
        0,
        -(2**31),
        float("nan"),
    )
    stored = _stored(responses, [row, tuple(None for _ in row)], numpy=True)
    assert stored[0][:5] == ("p", 0, 1, None, "r\x00é")
    assert stored[0][5] == moment and stored[0][-1] == "NaN"
    assert stored[1] == tuple(None for _ in row)


def _imported_after(script: str, modules: tuple[str, ...]) -> subprocess.CompletedProcess[str]:
    """A fresh interpreter's run of ``script`` (with ``ModelRegistry``, ``default_profile`` and
    ``FileEntry`` imported); its stdout is the sorted list of ``modules`` it then holds."""
    code = (
        "import sys\n"
        "from ctxhealth.accounting.registry import ModelRegistry\n"
        "from ctxhealth.fleet.files import FileEntry\n"
        "from ctxhealth.policy.profile import default_profile\n"
        f"{script}\n"
        f"print(sorted(m for m in {modules!r} if m in sys.modules))\n"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)


def test_a_duckdb_run_imports_neither_pyarrow_nor_pandas(tmp_path: Path) -> None:
    source = next(iter(sorted((Path(__file__).parent / "fixtures").rglob("*.jsonl"))))
    script = (
        "from ctxhealth.fleet import JobOptions, run_fleet\n"
        f"r = run_fleet([{str(source)!r}], {str(tmp_path / 'f.duckdb')!r}, "
        "JobOptions(ModelRegistry.default(), default_profile(), health=False), jobs=1)\n"
        "assert r.analysed == 1, r"
    )
    done = _imported_after(script, ("pyarrow", "pandas"))
    assert done.stdout.strip() == "[]", done.stderr


def test_a_workers_batch_is_made_without_numpy() -> None:
    """A worker reads, analyses and makes its batch's columns without importing NumPy (only the
    process writing the store joins them into NumPy arrays), at both levels."""
    sessions = sorted((Path(__file__).parent / "fixtures").rglob("*.jsonl"))[:3]
    script = (
        "from ctxhealth.fleet.jobs import JobOptions, analyse_batch\n"
        "assert 'numpy' not in sys.modules\n"
        f"entries = [FileEntry(p, 1, 0) for p in {[str(p) for p in sessions]!r}]\n"
        "registry, profile = ModelRegistry.default(), default_profile()\n"
        "for health in (False, True):\n"
        "    batch = analyse_batch(entries, JobOptions(registry, profile, health=health))\n"
        "    assert sum(o.ok for o in batch.outcomes) > 0 and batch.columns['sessions'], batch.outcomes"
    )
    done = _imported_after(script, ("numpy",))
    assert done.stdout.strip() == "[]", done.stderr


def test_joining_makes_numpy_arrays_of_the_workers_columns() -> None:
    """A single batch's columns and several batches' are NumPy arrays once joined, with the values,
    masks and types of the rows."""
    import numpy as np

    files = next(t for t in TABLES if t.name == "files")
    rows = [("a", 1, 2, "ok", "", 3), ("b", 4, 5, "skipped", "why", 3)]
    one = concat([typed_columns(files, rows)])
    two = concat([typed_columns(files, rows[:1]), typed_columns(files, rows[1:])])
    for joined in (one, two):
        assert all(isinstance(c.values, np.ndarray) for c in joined)
        assert [list(c.values) for c in joined] == [list(column) for column in zip(*rows, strict=True)]
        assert joined[1].values.dtype == np.int64 and joined[0].values.dtype == object
