"""Read the overview's rows back from fleet tables: a DuckDB file, or a Parquet folder (through DuckDB).

Only what the overview needs is read (``sessions``, ``costs`` and the number of ``cache_breaks``),
as dictionaries keyed by column name, so the overview renders the same whichever input it had.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ctxhealth.errors import InputError
from ctxhealth.fleet.schema import SCHEMA_VERSION
from ctxhealth.fleet.store import parquet_files, require

Rows = list[dict[str, Any]]


def _fetch(con: Any, sql: str) -> Rows:
    cursor = con.execute(sql)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def load_overview_rows(source: str | Path) -> tuple[Rows, Rows, int]:
    """(sessions, costs, cache breaks) from the fleet tables at ``source``.

    Raises :class:`InputError` when ``source`` is not a fleet store of this schema version.
    """
    duckdb = require("duckdb")
    path = Path(source)
    if path.is_dir():
        parts = parquet_files(path)
        con = duckdb.connect()

        def scan(name: str) -> str:
            files = parts[name]
            if not files:
                return f"(SELECT * FROM {name}_empty)"
            listing = ", ".join("'" + str(f).replace("'", "''") + "'" for f in files)
            return f"read_parquet([{listing}])"

        from ctxhealth.fleet.schema import BY_NAME, duckdb_ddl

        for name in ("sessions", "costs", "cache_breaks"):
            con.execute(duckdb_ddl(BY_NAME[name]).replace(f'"{name}"', f"{name}_empty"))
        tables = {name: scan(name) for name in ("sessions", "costs", "cache_breaks")}
    elif path.is_file():
        try:
            con = duckdb.connect(str(path), read_only=True)
            found = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        except duckdb.Error as exc:
            raise InputError(
                f"not a fleet DuckDB file ({exc})",
                hint="run ctxhealth fleet --out FILE.duckdb first",
                path=str(path),
            ) from None
        if found is None or int(found[0]) != SCHEMA_VERSION:
            raise InputError(
                f"fleet tables of schema version {found[0] if found else '?'}, expected {SCHEMA_VERSION}",
                hint="rebuild them with this ctxhealth (ctxhealth fleet ... --out NEW.duckdb)",
                path=str(path),
            )
        tables = {name: name for name in ("sessions", "costs", "cache_breaks")}
    else:
        raise InputError(
            "no such file or directory", hint="pass the --out of a ctxhealth fleet run", path=str(path)
        )
    try:
        sessions = _fetch(con, f"SELECT * FROM {tables['sessions']}")
        costs = _fetch(con, f"SELECT * FROM {tables['costs']}")
        breaks = con.execute(f"SELECT count(*) FROM {tables['cache_breaks']}").fetchone()[0]
    finally:
        con.close()
    return sessions, costs, int(breaks)
