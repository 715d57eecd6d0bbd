"""Read the report's rows back from fleet tables: a DuckDB file, or a Parquet folder (through DuckDB).

What the overview needs (``sessions`` and ``costs`` as dictionaries keyed by column name, so the
overview renders the same whichever input it had; the ``responses`` and ``cache_breaks`` rows
counted into the audit's totals, session by session in path order); and the ``turns``,
``decisions`` and ``cache_breaks`` rows of the few most unhealthy sessions, for their timelines.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ctxhealth.analysis import CacheBreakRow, TurnRecord
from ctxhealth.errors import InputError
from ctxhealth.fleet.schema import BY_NAME, SCHEMA_VERSION, duckdb_ddl
from ctxhealth.fleet.store import parquet_files, require
from ctxhealth.report.html.build import Timeline, severity
from ctxhealth.report.html.totals import AuditTotals, ResponseRecord

Rows = list[dict[str, Any]]


def _fetch(con: Any, sql: str) -> Rows:
    cursor = con.execute(sql)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


Timelines = dict[str, Timeline]
READ_TABLES = ("sessions", "costs", "responses", "cache_breaks", "turns", "decisions")


def load_overview_rows(source: str | Path, timelines: int = 0) -> tuple[Rows, Rows, AuditTotals, Timelines]:
    """(sessions, costs, audit totals, timelines) from the fleet tables at ``source``; ``timelines``
    maps the path of each of the ``timelines`` most unhealthy sessions to its turns (as
    :class:`TurnRecord`), ``decisions`` rows (dictionaries) and cache breaks (as
    :class:`CacheBreakRow`), each without ``path``, in turn order.

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

        for name in READ_TABLES:
            con.execute(duckdb_ddl(BY_NAME[name]).replace(f'"{name}"', f"{name}_empty"))
        tables = {name: scan(name) for name in READ_TABLES}
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
        tables = {name: name for name in READ_TABLES}
    else:
        raise InputError(
            "no such file or directory", hint="pass the --out of a ctxhealth fleet run", path=str(path)
        )
    try:
        sessions = _fetch(con, f"SELECT * FROM {tables['sessions']}")
        costs = _fetch(con, f"SELECT * FROM {tables['costs']}")
        totals = _audit_totals(con, tables, [str(r["path"]) for r in sessions])
        drawn: Timelines = {}
        for row in sorted(sessions, key=severity)[:timelines]:
            key = str(row["path"])
            drawn[key] = (
                [TurnRecord(**r) for r in _rows_of(con, tables["turns"], "turns", key)],
                _rows_of(con, tables["decisions"], "decisions", key),
                [CacheBreakRow(**r) for r in _rows_of(con, tables["cache_breaks"], "cache_breaks", key)],
            )
    finally:
        con.close()
    return sessions, costs, totals, drawn


def _audit_totals(con: Any, tables: dict[str, str], paths: list[str]) -> AuditTotals:
    """The audit's totals from the ``responses`` and ``cache_breaks`` rows, session by session in
    path order (the order a folder is read in), each session's responses in the audit's order."""
    responses: dict[str, list[ResponseRecord]] = {p: [] for p in paths}
    cursor = con.execute(
        "SELECT path, response_id, line, model, timestamp, cost_usd, "
        "input_tokens + cache_write_tokens + cache_read_tokens, cache_read_tokens "
        f"FROM {tables['responses']} ORDER BY path, thread, message_index"
    )
    for path, rid, line, model, time, usd, prompt, read in cursor.fetchall():
        responses.setdefault(path, []).append(ResponseRecord(rid, line, model, time, usd, prompt, read))
    breaks: dict[str, list[tuple[str, int, float | None]]] = {}
    cursor = con.execute(
        f"SELECT path, cause, tokens_rewritten, cost_usd FROM {tables['cache_breaks']} "
        "ORDER BY path, thread, message_index"
    )
    for path, cause, tokens, usd in cursor.fetchall():
        breaks.setdefault(path, []).append((cause, tokens, usd))
    totals = AuditTotals()
    for path in sorted(responses.keys() | breaks.keys()):
        totals.add_session(path, responses.get(path, []), breaks.get(path, []))
    return totals


def _rows_of(con: Any, source: str, name: str, path: str) -> Rows:
    """One session's rows of ``name`` without the ``path`` column, by column name, in turn order."""
    names = BY_NAME[name].names[1:]
    columns = ", ".join(f'"{c}"' for c in names)
    order = "thread, message_index" if name == "cache_breaks" else "turn"
    rows = con.execute(f"SELECT {columns} FROM {source} WHERE path = ? ORDER BY {order}", [path]).fetchall()
    return [dict(zip(names, r, strict=True)) for r in rows]
