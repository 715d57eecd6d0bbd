"""Schema migrations of the ledger: an ordered list of small named steps, applied on open.

Each step is a function ``mNNN_name(conn)`` that moves the schema one step forward.
Applied steps are recorded by name in ``_migrations``; opening the ledger applies
the missing ones in order inside one write transaction, so users never run an
upgrade command and two processes opening an old ledger at once cannot both
apply the same step. Never edit a released step: add a new one.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

__all__ = ["MIGRATIONS", "Migration", "applied_migrations", "apply_migrations"]

Migration = Callable[[sqlite3.Connection], None]


def m001_initial(conn: sqlite3.Connection) -> None:
    """Sessions seen (with the byte offset read so far), per-turn assessments, decisions."""
    conn.execute(
        """CREATE TABLE sessions (
            path TEXT PRIMARY KEY,
            session_id TEXT,
            byte_offset INTEGER NOT NULL DEFAULT 0,
            first_seen TEXT NOT NULL,
            updated_at TEXT NOT NULL
        )"""
    )
    conn.execute(
        """CREATE TABLE assessments (
            id INTEGER PRIMARY KEY,
            session_id TEXT,
            turn INTEGER NOT NULL,
            tokens INTEGER,
            pressure REAL,
            zone TEXT,
            recorded_at TEXT NOT NULL
        )"""
    )
    conn.execute(
        """CREATE TABLE decisions (
            id INTEGER PRIMARY KEY,
            session_id TEXT,
            turn INTEGER,
            action TEXT NOT NULL,
            reason TEXT NOT NULL DEFAULT '',
            outcome TEXT,
            recorded_at TEXT NOT NULL
        )"""
    )


def m002_checkpoints_events_errors(conn: sqlite3.Connection) -> None:
    """Checkpoints written, hook events received and internal errors (hooks fail open)."""
    conn.execute(
        """CREATE TABLE checkpoints (
            id INTEGER PRIMARY KEY,
            session_id TEXT,
            source_path TEXT,
            json_path TEXT NOT NULL,
            markdown_path TEXT,
            tokens INTEGER,
            created_at TEXT NOT NULL
        )"""
    )
    conn.execute(
        """CREATE TABLE hook_events (
            id INTEGER PRIMARY KEY,
            event TEXT NOT NULL,
            session_id TEXT,
            payload_summary TEXT NOT NULL DEFAULT '',
            recorded_at TEXT NOT NULL
        )"""
    )
    conn.execute(
        """CREATE TABLE errors (
            id INTEGER PRIMARY KEY,
            location TEXT NOT NULL,
            message TEXT NOT NULL,
            recorded_at TEXT NOT NULL
        )"""
    )


def m003_tail_state(conn: sqlite3.Connection) -> None:
    """Incremental tailing needs the line count and a small blob of reader state per file."""
    conn.execute("ALTER TABLE sessions ADD COLUMN line_count INTEGER NOT NULL DEFAULT 0")
    conn.execute("ALTER TABLE sessions ADD COLUMN tail_state TEXT NOT NULL DEFAULT '{}'")


def m004_details_and_outcome_time(conn: sqlite3.Connection) -> None:
    """Free-form details on assessments; when a decision's outcome became known."""
    conn.execute("ALTER TABLE assessments ADD COLUMN details TEXT NOT NULL DEFAULT '{}'")
    conn.execute("ALTER TABLE decisions ADD COLUMN outcome_at TEXT")


def m005_indexes(conn: sqlite3.Connection) -> None:
    """Reports query by session and by time."""
    conn.execute("CREATE INDEX idx_assessments_session ON assessments(session_id, turn)")
    conn.execute("CREATE INDEX idx_decisions_session ON decisions(session_id, turn)")
    conn.execute("CREATE INDEX idx_checkpoints_session ON checkpoints(session_id)")
    conn.execute("CREATE INDEX idx_hook_events_session ON hook_events(session_id)")
    conn.execute("CREATE INDEX idx_sessions_session_id ON sessions(session_id)")


MIGRATIONS: tuple[Migration, ...] = (
    m001_initial,
    m002_checkpoints_events_errors,
    m003_tail_state,
    m004_details_and_outcome_time,
    m005_indexes,
)


def _ensure_table(conn: sqlite3.Connection) -> None:
    conn.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")


def applied_migrations(conn: sqlite3.Connection) -> list[str]:
    """Names of the steps already applied, in the order they were applied."""
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_migrations'"
    ).fetchone()
    if exists is None:
        return []
    return [row[0] for row in conn.execute("SELECT name FROM _migrations ORDER BY rowid")]


def apply_migrations(
    conn: sqlite3.Connection,
    now: str,
    migrations: tuple[Migration, ...] = MIGRATIONS,
) -> list[str]:
    """Apply the missing steps in order, in one ``BEGIN IMMEDIATE`` transaction; return their names.

    ``conn`` must be in autocommit mode (``isolation_level=None``).
    """
    names = [m.__name__ for m in migrations]
    if applied_migrations(conn) == names:
        return []  # the common case: read-only check, no write lock taken
    conn.execute("BEGIN IMMEDIATE")
    try:
        _ensure_table(conn)
        done = set(applied_migrations(conn))
        newly: list[str] = []
        for step in migrations:
            if step.__name__ in done:
                continue
            step(conn)
            conn.execute("INSERT INTO _migrations (name, applied_at) VALUES (?, ?)", (step.__name__, now))
            newly.append(step.__name__)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return newly
