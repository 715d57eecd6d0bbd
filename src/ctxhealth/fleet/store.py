"""Where fleet rows go: a DuckDB file or a folder of Parquet files, both incremental.

Both stores keep the ``files`` table (path, size, mtime, status): the next run reads only files
whose fingerprint changed or that are new, and replaces every row of those paths at once.

* **DuckDB** (``*.duckdb``, mode ``0600``): a whole run — the rows of files about to be read
  again deleted, then every batch's rows inserted — is one transaction, committed at the end, so
  a reader sees the previous run or this one, and a killed run leaves the store as it was. The
  schema version is kept in the ``meta`` table.
* **Parquet** (a folder): each batch writes new part files; ``meta.json`` lists the live parts
  and is replaced atomically once, when the run commits: a new generation goes live in one
  rename, so parts of an unfinished run are never read (and are removed by the next run). When a
  run re-reads files that already have rows, the old parts are rewritten once, without those
  paths; the old generation's parts are removed after the switch. Readers take ``meta.json``'s list.

One run at a time per store: a second run is refused (``<store>.lock``), never interleaved.

duckdb and pyarrow are imported lazily (the ``fleet`` extra). Rows arrive as the typed NumPy
columns the workers made (:mod:`ctxhealth.fleet.columns`; NumPy is in the ``fleet`` extra); a
DuckDB store scans them as they are and never imports pyarrow (Arrow arrays built from Python
values also import pandas: about 0.5 s of CPU for the two); a Parquet store makes Arrow arrays of
them. :func:`arrow_table` (Arrow's conversion of the Python values) is the reference both are
tested equal to.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol

from ctxhealth.atomic import PRIVATE_FILE_MODE, ExclusiveLock, write_atomic
from ctxhealth.errors import EnvironmentProblem, InputError, UsageError
from ctxhealth.fleet.columns import Columns, arrow_table_of, concat, duckdb_select
from ctxhealth.fleet.jobs import Batch
from ctxhealth.fleet.schema import BY_NAME, SCHEMA_VERSION, TABLES, Table, arrow_schema, duckdb_ddl
from ctxhealth.sources.reader import SESSION_SEPARATOR


class FleetStore(Protocol):
    """What a fleet run needs from where its rows go."""

    def known(self) -> dict[str, tuple[int, int]]:
        """Path -> (size, mtime_ns) of every file recorded with the current schema."""
        ...

    def append(self, batches: Sequence[Batch]) -> None:
        """Add these batches' rows (their files' ``files`` rows included); their old rows must be
        gone (:meth:`forget` them first, as :func:`~ctxhealth.fleet.run.run_fleet` does)."""
        ...

    def forget(self, paths: Sequence[str]) -> None:
        """Drop every row of these paths (before they are analysed again), in one step."""
        ...

    def counts(self) -> dict[str, int]:
        """Rows per table."""
        ...

    def verdicts(self) -> list[tuple[str, bool, float | None]]:
        """(action, healthy, cost_usd) of every session in the store."""
        ...

    def commit(self) -> None:
        """Make the whole run visible at once (until then readers see the previous run's tables)."""
        ...

    def close(self) -> None:
        """Release the store; a run not committed leaves the tables as they were before it."""
        ...


class _RunLock:
    """One fleet run at a time per store: an exclusive lock on ``<store>.lock``
    (:class:`~ctxhealth.atomic.ExclusiveLock`: ``flock``, ``msvcrt`` on Windows, or an owner file),
    refused (not waited for) when another run holds it."""

    def __init__(self, store: Path) -> None:
        self.path = store.with_name(store.name + ".lock")
        self.lock = ExclusiveLock(self.path)
        if not self.lock.acquire():
            held = f" (held by process {self.lock.owner})" if self.lock.owner else ""
            raise EnvironmentProblem(
                f"another ctxhealth fleet run is writing to this store{held}",
                hint=f"wait for it to finish, or write to another --out (the lock is {self.path.name})",
                path=str(store),
            )

    def release(self) -> None:
        self.lock.release()


def require(module: str) -> Any:
    """Import an optional dependency of the fleet, or say which extra to install."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise EnvironmentProblem(
            f"{module} is not installed", hint="install the fleet extra: pip install 'ctxhealth[fleet]'"
        ) from None


def arrow_table(table: Table, rows: Iterable[tuple[Any, ...]]) -> Any:
    """Rows (tuples in column order) as a ``pyarrow.Table`` with the table's schema: Arrow's own
    conversion of the Python values, the reference the typed columns are tested against."""
    pa = require("pyarrow")
    rows = list(rows)
    schema = arrow_schema(table)
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in table.columns]
    return pa.Table.from_arrays(
        [pa.array(col, type=f.type) for col, f in zip(columns, schema, strict=True)], schema=schema
    )


def _joined(batches: Sequence[Batch]) -> dict[str, Columns]:
    """Every table's columns of ``batches``, joined in order (a table no batch has rows of is absent)."""
    out: dict[str, Columns] = {}
    for table in TABLES:
        parts = [b.columns[table.name] for b in batches if table.name in b.columns]
        if parts:
            out[table.name] = concat(parts)
    return out


def open_store(out: str | Path) -> FleetStore:
    """The store for ``out``: a ``.duckdb`` file, or a folder of Parquet files (``.parquet`` or an
    existing folder with ``meta.json``)."""
    target = Path(out)
    if target.suffix == ".duckdb":
        return DuckDBStore(target)
    if target.suffix == ".parquet" or (target / "meta.json").is_file():
        return ParquetStore(target)
    raise UsageError(
        f"cannot tell what to write from {str(out)!r}",
        hint="name a DuckDB file (FILE.duckdb) or a Parquet folder (DIR.parquet)",
    )


def _version_error(where: Path, found: Any) -> InputError:
    return InputError(
        f"fleet tables of schema version {found}, this ctxhealth writes version {SCHEMA_VERSION}",
        hint="write to a new --out, or delete the old one to rebuild it",
        path=str(where),
    )


class DuckDBStore:
    """Fleet tables in one DuckDB file (``0600``); a whole run is one transaction."""

    def __init__(self, path: Path) -> None:
        duckdb = require("duckdb")
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.lock = _RunLock(path)
        self._in_run = False
        previous = os.umask(0o077)  # DuckDB creates the file (and its WAL) itself
        try:
            self.con = duckdb.connect(str(path))
        except duckdb.Error as exc:
            self.lock.release()
            raise EnvironmentProblem(
                f"cannot open DuckDB file ({exc})",
                hint="check the path, or close the program using it",
                path=str(path),
            ) from None
        finally:
            os.umask(previous)
        os.chmod(path, PRIVATE_FILE_MODE)
        # inserts only: one thread leaves the CPUs to the workers that analyse the sessions
        self.con.execute("SET threads TO 1")
        self.con.execute("CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
        found = self.con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if found is None:
            self.con.execute("INSERT INTO meta VALUES ('schema_version', ?)", [str(SCHEMA_VERSION)])
        elif int(found[0]) != SCHEMA_VERSION:
            self.con.close()
            raise _version_error(path, found[0])
        for table in TABLES:
            self.con.execute(duckdb_ddl(table))

    def known(self) -> dict[str, tuple[int, int]]:
        rows = self.con.execute("SELECT path, size, mtime_ns FROM files").fetchall()
        return {p: (s, m) for p, s, m in rows}

    def forget(self, paths: Sequence[str]) -> None:
        if not paths:
            return
        con = self.con
        self._begin()
        try:
            import numpy as np

            con.register("gone", {"path": np.array(list(paths), dtype=object)})
            for table in TABLES:
                # a file's own rows, and those of each session of a file holding several
                con.execute(
                    f'DELETE FROM "{table.name}" AS t WHERE path IN (SELECT path FROM gone) OR EXISTS '
                    f"(SELECT 1 FROM gone WHERE starts_with(t.path, gone.path || '{SESSION_SEPARATOR}'))"
                )
            con.unregister("gone")
        except BaseException:
            self._rollback()
            raise

    def append(self, batches: Sequence[Batch]) -> None:
        if not batches:
            return
        joined = _joined(batches)
        con = self.con
        self._begin()
        try:
            for table in TABLES:
                columns = joined.get(table.name)
                if columns:
                    arrays, select = duckdb_select(table, columns)
                    con.register("batch_rows", arrays)
                    con.execute(f'INSERT INTO "{table.name}" SELECT {select} FROM batch_rows')
                    con.unregister("batch_rows")
        except BaseException:
            self._rollback()
            raise

    def _begin(self) -> None:
        if not self._in_run:
            self.con.execute("BEGIN TRANSACTION")
            self._in_run = True

    def _rollback(self) -> None:
        if self._in_run:
            self._in_run = False
            self.con.execute("ROLLBACK")

    def commit(self) -> None:
        if self._in_run:
            self._in_run = False
            self.con.execute("COMMIT")

    def counts(self) -> dict[str, int]:
        return {t.name: self.con.execute(f'SELECT count(*) FROM "{t.name}"').fetchone()[0] for t in TABLES}

    def verdicts(self) -> list[tuple[str, bool, float | None]]:
        rows = self.con.execute("SELECT action, healthy, cost_usd FROM sessions").fetchall()
        return [(a, h, c) for a, h, c in rows]

    def close(self) -> None:
        try:
            self._rollback()
            self.con.close()
            for file in (self.path, self.path.with_name(self.path.name + ".wal")):
                if file.exists():
                    os.chmod(file, PRIVATE_FILE_MODE)
        finally:
            self.lock.release()


class ParquetStore:
    """Fleet tables as Parquet parts in a folder, listed by an atomically replaced ``meta.json``."""

    def __init__(self, root: Path) -> None:
        require("pyarrow")
        self.root = root
        self.meta_path = root / "meta.json"
        self.lock = _RunLock(root)
        self.parts: dict[str, list[str]] = {t.name: [] for t in TABLES}
        self.retired: list[str] = []  # parts of the previous generation, removed once the run commits
        self.run = os.urandom(4).hex()
        self.serial = 0
        if self.meta_path.is_file():
            try:
                meta = json.loads(self.meta_path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise InputError(
                    f"unreadable meta.json ({exc})",
                    hint="delete the folder to rebuild it",
                    path=str(self.meta_path),
                ) from None
            if meta.get("schema_version") != SCHEMA_VERSION:
                raise _version_error(root, meta.get("schema_version"))
            for name in self.parts:
                self.parts[name] = list(meta.get("parts", {}).get(name, []))
        self.committed = {name: list(parts) for name, parts in self.parts.items()}
        self._remove_unlisted()

    def _remove_unlisted(self) -> None:
        """Parts an unfinished run left behind (not in ``meta.json``)."""
        live = {p for parts in self.parts.values() for p in parts}
        for table in TABLES:
            folder = self.root / table.name
            if folder.is_dir():
                for part in folder.glob("*.parquet"):
                    if f"{table.name}/{part.name}" not in live:
                        part.unlink(missing_ok=True)

    def _read(self, name: str) -> Any:
        pq = require("pyarrow.parquet")
        pa = require("pyarrow")
        parts = [pq.read_table(self.root / p) for p in self.parts[name]]
        return pa.concat_tables(parts) if parts else arrow_table(BY_NAME[name], [])

    def known(self) -> dict[str, tuple[int, int]]:
        files = self._read("files").to_pydict()
        return {p: (s, m) for p, s, m in zip(files["path"], files["size"], files["mtime_ns"], strict=True)}

    def _write_part(self, name: str, table: Any) -> str:
        pa = require("pyarrow")
        pq = require("pyarrow.parquet")
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink, compression="zstd")
        self.serial += 1
        rel = f"{name}/part-{self.run}-{self.serial:05d}.parquet"
        write_atomic(self.root / rel, sink.getvalue().to_pybytes())
        return rel

    def _commit(self) -> None:
        meta = {"schema_version": SCHEMA_VERSION, "parts": self.parts}
        write_atomic(self.meta_path, json.dumps(meta, indent=1))

    def forget(self, paths: Sequence[str]) -> None:
        if not paths:
            return
        pa = require("pyarrow")
        pc = require("pyarrow.compute")
        old_parts = {name: list(parts) for name, parts in self.parts.items()}
        for table in TABLES:
            kept = self._read(table.name)
            of_gone = [_of_files(key, set(paths)) for key in kept["path"].to_pylist()]
            kept = kept.filter(pc.invert(pa.array(of_gone, type=pa.bool_())))
            self.parts[table.name] = [self._write_part(table.name, kept)] if kept.num_rows else []
        for name, parts in old_parts.items():
            self.retired += sorted(set(parts) - set(self.parts[name]))

    def append(self, batches: Sequence[Batch]) -> None:
        if not batches:
            return
        joined = _joined(batches)
        for table in TABLES:
            columns = joined.get(table.name)
            if columns:
                self.parts[table.name].append(self._write_part(table.name, arrow_table_of(table, columns)))

    def commit(self) -> None:
        """The new generation goes live in one rename of ``meta.json``; then the old parts go."""
        self._commit()
        self.committed = {name: list(parts) for name, parts in self.parts.items()}
        for rel in self.retired:
            (self.root / rel).unlink(missing_ok=True)
        self.retired = []

    def counts(self) -> dict[str, int]:
        pq = require("pyarrow.parquet")
        return {
            name: sum(pq.read_metadata(self.root / p).num_rows for p in parts)
            for name, parts in self.parts.items()
        }

    def verdicts(self) -> list[tuple[str, bool, float | None]]:
        table = self._read("sessions").select(["action", "healthy", "cost_usd"]).to_pydict()
        return list(zip(table["action"], table["healthy"], table["cost_usd"], strict=True))

    def close(self) -> None:
        try:
            if not self.meta_path.is_file():
                meta = {"schema_version": SCHEMA_VERSION, "parts": self.committed}
                write_atomic(self.meta_path, json.dumps(meta, indent=1))
        finally:
            self.lock.release()


def _of_files(key: str, paths: set[str]) -> bool:
    """Whether the row key ``key`` is one of ``paths`` or a session of one (``<path>#<session id>``)."""
    if key in paths:
        return True
    at = key.find(SESSION_SEPARATOR)
    while at != -1:
        if key[:at] in paths:
            return True
        at = key.find(SESSION_SEPARATOR, at + 1)
    return False


def parquet_files(root: Path) -> dict[str, list[Path]]:
    """The live part files of each table of a Parquet store (as ``meta.json`` lists them)."""
    meta_path = root / "meta.json"
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(
            f"not a fleet Parquet folder ({exc})", hint="run ctxhealth fleet first", path=str(root)
        ) from None
    if meta.get("schema_version") != SCHEMA_VERSION:
        raise _version_error(root, meta.get("schema_version"))
    return {
        name: [root / p for p in meta.get("parts", {}).get(name, [])] for name in (t.name for t in TABLES)
    }
