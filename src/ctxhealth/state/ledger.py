"""The ledger: one SQLite database (WAL) that remembers what ctxhealth saw and did.

It lives at ``<home>/ledger.db``; the caller passes ``home`` (the CLI resolves
``$CTXHEALTH_HOME``, default ``~/.ctxhealth``). Tables: sessions seen (with the
byte offset, line count and reader state for incremental tailing), per-turn
assessments, decisions and their outcomes, checkpoints, hook events and errors.

Many short-lived processes (hooks, the status line) write at once, so every
write is one short ``BEGIN IMMEDIATE`` transaction with a busy timeout, and the
schema is brought up to date on open (:mod:`ctxhealth.state.migrations`).
Every text column that can carry transcript text is redacted (:func:`ctxhealth.redact.scrub`)
before it is written; the database and its side files are ``0600``.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import orjson

from ctxhealth.atomic import PRIVATE_FILE_MODE, create_private_file
from ctxhealth.errors import LedgerError
from ctxhealth.redact import scrub
from ctxhealth.state.migrations import MIGRATIONS, applied_migrations, apply_migrations

__all__ = [
    "LEDGER_FILENAME",
    "AssessmentRow",
    "CheckpointRow",
    "DecisionRow",
    "ErrorRow",
    "HookEventRow",
    "Ledger",
    "SessionRow",
    "TailState",
]

LEDGER_FILENAME = "ledger.db"
BUSY_TIMEOUT_MS = 10_000
_MAX_TEXT = 4_000  # a row holds a summary, never a whole payload

Clock = Callable[[], datetime]


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _enable_wal(conn: sqlite3.Connection) -> None:
    """Switch the database to WAL, once per file (the mode is stored in the file).

    Changing the journal mode takes an exclusive lock, and SQLite answers ``database is
    locked`` at once, without waiting on the busy timeout, when several processes open a new
    ledger together: so skip the change when the file is already in WAL mode, and retry briefly.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
            if str(mode).lower() != "wal":
                conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def _make_private(path: Path) -> None:
    """Create the ledger file ``0600`` before SQLite does (it would use the umask), in a ``0700``
    home; SQLite gives its ``-wal`` and ``-shm`` files the database file's permissions, and those
    left wider by an older version are narrowed."""
    create_private_file(path)
    for suffix in ("-wal", "-shm", "-journal"):
        side = path.with_name(path.name + suffix)
        with contextlib.suppress(OSError):
            if side.stat().st_mode & 0o077:
                os.chmod(side, PRIVATE_FILE_MODE)


@dataclass(frozen=True, slots=True)
class TailState:
    """How far a transcript file has been read: byte offset, lines, and a reader's own state."""

    offset: int = 0
    line: int = 0
    state: dict[str, Any] = field(default_factory=dict)
    session_id: str | None = None


@dataclass(frozen=True, slots=True)
class SessionRow:
    path: str
    session_id: str | None
    offset: int
    line: int
    first_seen: str
    updated_at: str


@dataclass(frozen=True, slots=True)
class AssessmentRow:
    id: int
    session_id: str | None
    turn: int
    tokens: int | None
    pressure: float | None
    zone: str | None
    details: dict[str, Any]
    recorded_at: str


@dataclass(frozen=True, slots=True)
class DecisionRow:
    id: int
    session_id: str | None
    turn: int | None
    action: str
    reason: str
    outcome: str | None
    recorded_at: str
    outcome_at: str | None


@dataclass(frozen=True, slots=True)
class CheckpointRow:
    id: int
    session_id: str | None
    source_path: str | None
    json_path: str
    markdown_path: str | None
    tokens: int | None
    created_at: str


@dataclass(frozen=True, slots=True)
class HookEventRow:
    id: int
    event: str
    session_id: str | None
    payload_summary: str
    recorded_at: str


@dataclass(frozen=True, slots=True)
class ErrorRow:
    id: int
    where: str
    message: str
    recorded_at: str


def _clip(text: str) -> str:
    text = scrub(text)
    return text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT - 15] + "...[truncated]"


def _dumps(value: dict[str, Any]) -> str:
    return orjson.dumps(scrub(value), option=orjson.OPT_NON_STR_KEYS).decode()


def _loads(text: str) -> dict[str, Any]:
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


class Ledger:
    """An open ledger. Use ``with Ledger.open(home) as ledger: ...``."""

    TABLES = ("sessions", "assessments", "decisions", "checkpoints", "hook_events", "errors")

    def __init__(self, conn: sqlite3.Connection, path: Path, clock: Clock) -> None:
        self._conn = conn
        self.path = path
        self._clock = clock

    # -- lifecycle -------------------------------------------------------------------------

    @classmethod
    def open(cls, home: Path, *, clock: Clock = _utc_now) -> Ledger:
        """Open (creating if needed) ``home/ledger.db`` and bring its schema up to date."""
        path = Path(home) / LEDGER_FILENAME
        try:
            _make_private(path)
            conn = sqlite3.connect(
                path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
            )
        except (OSError, sqlite3.Error) as exc:
            raise LedgerError(
                f"cannot open the ledger: {exc}",
                hint="check that CTXHEALTH_HOME points to a writable directory",
                path=str(path),
            ) from exc
        try:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            # a newer ledger is refused before anything is written to it (the journal mode, a
            # migration): it is never downgraded or changed, only left alone
            known = {m.__name__ for m in MIGRATIONS}
            unknown = [name for name in applied_migrations(conn) if name not in known]
            if unknown:
                raise LedgerError(
                    f"the ledger was written by a newer ctxhealth (unknown migrations: {', '.join(unknown)})",
                    hint="upgrade ctxhealth, or point CTXHEALTH_HOME at another directory",
                    path=str(path),
                )
            _enable_wal(conn)
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            apply_migrations(conn, clock().isoformat())
        except sqlite3.Error as exc:
            conn.close()
            full = any(word in str(exc) for word in ("disk I/O error", "disk is full"))
            raise LedgerError(
                f"cannot prepare the ledger: {exc}",
                hint="free some disk space (the ledger is left as it was)"
                if full
                else "if the file is damaged, move it aside; a new ledger is created on the next run",
                path=str(path),
            ) from exc
        except LedgerError:
            conn.close()
            raise
        return cls(conn, path, clock)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- plumbing --------------------------------------------------------------------------

    def _now(self) -> str:
        return self._clock().isoformat()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One short write transaction; the write lock is taken up front (no upgrade deadlock)."""
        try:
            self._conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise LedgerError(
                f"cannot write to the ledger: {exc}",
                hint="another process holds the ledger too long; retry",
                path=str(self.path),
            ) from exc
        try:
            yield self._conn
            self._conn.execute("COMMIT")
        except BaseException:
            # Leave no transaction open, whatever failed (the body or the commit itself).
            if self._conn.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    self._conn.execute("ROLLBACK")
            raise

    def _insert(self, sql: str, params: tuple[Any, ...]) -> int:
        try:
            with self._write() as conn:
                cursor = conn.execute(sql, params)
                row_id = cursor.lastrowid
        except sqlite3.Error as exc:
            raise LedgerError(
                f"cannot write to the ledger: {exc}",
                hint="retry; run `ctxhealth doctor` if it persists",
                path=str(self.path),
            ) from exc
        return int(row_id or 0)

    def _query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        try:
            return list(self._conn.execute(sql, params))
        except sqlite3.Error as exc:
            raise LedgerError(
                f"cannot read the ledger: {exc}",
                hint="retry; run `ctxhealth doctor` if it persists",
                path=str(self.path),
            ) from exc

    # -- tailing ---------------------------------------------------------------------------

    def get_tail(self, path: str | Path) -> TailState | None:
        """Where reading of transcript ``path`` stopped last time, or None if never seen."""
        rows = self._query(
            "SELECT byte_offset, line_count, tail_state, session_id FROM sessions WHERE path = ?",
            (str(path),),
        )
        if not rows:
            return None
        offset, line, blob, session_id = rows[0]
        return TailState(offset=int(offset), line=int(line), state=_loads(blob), session_id=session_id)

    def set_tail(self, path: str | Path, tail: TailState) -> None:
        """Remember how far ``path`` has been read (insert or update)."""
        now = self._now()
        try:
            with self._write() as conn:
                conn.execute(
                    """INSERT INTO sessions
                           (path, session_id, byte_offset, line_count, tail_state, first_seen, updated_at)
                       VALUES (?, ?, ?, ?, ?, ?, ?)
                       ON CONFLICT(path) DO UPDATE SET
                           session_id = COALESCE(excluded.session_id, sessions.session_id),
                           byte_offset = excluded.byte_offset,
                           line_count = excluded.line_count,
                           tail_state = excluded.tail_state,
                           updated_at = excluded.updated_at""",
                    (str(path), tail.session_id, tail.offset, tail.line, _dumps(tail.state), now, now),
                )
        except sqlite3.Error as exc:
            raise LedgerError(
                f"cannot write to the ledger: {exc}", hint="retry", path=str(self.path)
            ) from exc

    # -- records ---------------------------------------------------------------------------

    def record_assessment(
        self,
        session_id: str | None,
        turn: int,
        *,
        tokens: int | None = None,
        pressure: float | None = None,
        zone: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> int:
        """Store one per-turn assessment (fill, pressure, zone, and any details); return its id."""
        return self._insert(
            """INSERT INTO assessments (session_id, turn, tokens, pressure, zone, details, recorded_at)
               VALUES (?, ?, ?, ?, ?, ?, ?)""",
            (session_id, turn, tokens, pressure, zone, _dumps(details or {}), self._now()),
        )

    def record_decision(
        self,
        session_id: str | None,
        turn: int | None,
        action: str,
        reason: str = "",
        *,
        outcome: str | None = None,
    ) -> int:
        """Store one policy decision (and its outcome when already known); return its id."""
        now = self._now()
        return self._insert(
            """INSERT INTO decisions (session_id, turn, action, reason, outcome, recorded_at, outcome_at)
               VALUES (?, ?, ?, ?, ?, ?, ?)""",
            (
                session_id,
                turn,
                str(action),
                _clip(reason),
                None if outcome is None else _clip(outcome),
                now,
                None if outcome is None else now,
            ),
        )

    def record_outcome(self, decision_id: int, outcome: str) -> None:
        """Attach the outcome of an earlier decision."""
        try:
            with self._write() as conn:
                cursor = conn.execute(
                    "UPDATE decisions SET outcome = ?, outcome_at = ? WHERE id = ?",
                    (_clip(outcome), self._now(), decision_id),
                )
                updated = cursor.rowcount
        except sqlite3.Error as exc:
            raise LedgerError(
                f"cannot write to the ledger: {exc}", hint="retry", path=str(self.path)
            ) from exc
        if updated == 0:
            raise LedgerError(
                f"no decision with id {decision_id}",
                hint="pass the id returned by record_decision",
                path=str(self.path),
            )

    def record_checkpoint(
        self,
        session_id: str | None,
        json_path: str | Path,
        markdown_path: str | Path | None = None,
        *,
        tokens: int | None = None,
        source_path: str | Path | None = None,
    ) -> int:
        """Store where a checkpoint was written; return its id."""
        return self._insert(
            """INSERT INTO checkpoints (session_id, source_path, json_path, markdown_path, tokens, created_at)
               VALUES (?, ?, ?, ?, ?, ?)""",
            (
                session_id,
                None if source_path is None else str(source_path),
                str(json_path),
                None if markdown_path is None else str(markdown_path),
                tokens,
                self._now(),
            ),
        )

    def record_hook_event(self, event: str, session_id: str | None, payload_summary: str = "") -> int:
        """Store one hook invocation with a short, redacted summary of its payload; return its id."""
        return self._insert(
            "INSERT INTO hook_events (event, session_id, payload_summary, recorded_at) VALUES (?, ?, ?, ?)",
            (str(event), session_id, _clip(payload_summary), self._now()),
        )

    def record_error(self, where: str, message: str) -> int:
        """Store an internal error (hooks fail open and log here); return its id."""
        return self._insert(
            "INSERT INTO errors (location, message, recorded_at) VALUES (?, ?, ?)",
            (_clip(where), _clip(message), self._now()),
        )

    # -- queries ---------------------------------------------------------------------------

    def counts(self) -> dict[str, int]:
        """Number of rows per table."""
        return {t: int(self._query(f"SELECT COUNT(*) FROM {t}")[0][0]) for t in self.TABLES}

    def migrations(self) -> list[str]:
        """Names of the schema steps applied to this ledger, in order."""
        return applied_migrations(self._conn)

    def integrity_ok(self) -> bool:
        """SQLite's own ``PRAGMA integrity_check`` passed."""
        rows = self._query("PRAGMA integrity_check")
        return bool(rows) and rows[0][0] == "ok"

    def sessions(self, limit: int = 100) -> list[SessionRow]:
        rows = self._query(
            """SELECT path, session_id, byte_offset, line_count, first_seen, updated_at
               FROM sessions ORDER BY updated_at DESC, path LIMIT ?""",
            (limit,),
        )
        return [SessionRow(p, s, int(o), int(n), f, u) for p, s, o, n, f, u in rows]

    def assessments(self, session_id: str | None = None, limit: int = 1000) -> list[AssessmentRow]:
        columns = "id, session_id, turn, tokens, pressure, zone, details, recorded_at"
        rows = self._session_rows("assessments", columns, session_id, limit)
        return [AssessmentRow(i, s, t, k, p, z, _loads(d), r) for i, s, t, k, p, z, d, r in rows]

    def decisions(self, session_id: str | None = None, limit: int = 1000) -> list[DecisionRow]:
        columns = "id, session_id, turn, action, reason, outcome, recorded_at, outcome_at"
        return [DecisionRow(*row) for row in self._session_rows("decisions", columns, session_id, limit)]

    def checkpoints(self, session_id: str | None = None, limit: int = 1000) -> list[CheckpointRow]:
        columns = "id, session_id, source_path, json_path, markdown_path, tokens, created_at"
        return [CheckpointRow(*row) for row in self._session_rows("checkpoints", columns, session_id, limit)]

    def hook_events(self, session_id: str | None = None, limit: int = 1000) -> list[HookEventRow]:
        columns = "id, event, session_id, payload_summary, recorded_at"
        return [HookEventRow(*row) for row in self._session_rows("hook_events", columns, session_id, limit)]

    def errors(self, limit: int = 100) -> list[ErrorRow]:
        """The most recent internal errors, newest first."""
        rows = self._query(
            "SELECT id, location, message, recorded_at FROM errors ORDER BY id DESC LIMIT ?", (limit,)
        )
        return [ErrorRow(*row) for row in rows]

    def _session_rows(
        self, table: str, columns: str, session_id: str | None, limit: int
    ) -> list[tuple[Any, ...]]:
        """``columns`` of the first ``limit`` rows of ``table`` by id: one session's, or all."""
        where, params = ("", ()) if session_id is None else ("WHERE session_id = ?", (session_id,))
        return self._query(f"SELECT {columns} FROM {table} {where} ORDER BY id LIMIT ?", (*params, limit))
