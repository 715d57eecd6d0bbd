"""The ledger: API round-trips, redaction of rows, and migrations from every older schema."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ctxhealth.errors import LedgerError
from ctxhealth.state.ledger import Ledger, TailState
from ctxhealth.state.migrations import MIGRATIONS, apply_migrations

# The final schema written out by hand: table -> [(column, declared type, not null, pk)].
EXPECTED_COLUMNS: dict[str, list[tuple[str, str, int, int]]] = {
    "_migrations": [("name", "TEXT", 0, 1), ("applied_at", "TEXT", 1, 0)],
    "sessions": [
        ("path", "TEXT", 0, 1),
        ("session_id", "TEXT", 0, 0),
        ("byte_offset", "INTEGER", 1, 0),
        ("first_seen", "TEXT", 1, 0),
        ("updated_at", "TEXT", 1, 0),
        ("line_count", "INTEGER", 1, 0),
        ("tail_state", "TEXT", 1, 0),
    ],
    "assessments": [
        ("id", "INTEGER", 0, 1),
        ("session_id", "TEXT", 0, 0),
        ("turn", "INTEGER", 1, 0),
        ("tokens", "INTEGER", 0, 0),
        ("pressure", "REAL", 0, 0),
        ("zone", "TEXT", 0, 0),
        ("recorded_at", "TEXT", 1, 0),
        ("details", "TEXT", 1, 0),
    ],
    "decisions": [
        ("id", "INTEGER", 0, 1),
        ("session_id", "TEXT", 0, 0),
        ("turn", "INTEGER", 0, 0),
        ("action", "TEXT", 1, 0),
        ("reason", "TEXT", 1, 0),
        ("outcome", "TEXT", 0, 0),
        ("recorded_at", "TEXT", 1, 0),
        ("outcome_at", "TEXT", 0, 0),
    ],
    "checkpoints": [
        ("id", "INTEGER", 0, 1),
        ("session_id", "TEXT", 0, 0),
        ("source_path", "TEXT", 0, 0),
        ("json_path", "TEXT", 1, 0),
        ("markdown_path", "TEXT", 0, 0),
        ("tokens", "INTEGER", 0, 0),
        ("created_at", "TEXT", 1, 0),
    ],
    "hook_events": [
        ("id", "INTEGER", 0, 1),
        ("event", "TEXT", 1, 0),
        ("session_id", "TEXT", 0, 0),
        ("payload_summary", "TEXT", 1, 0),
        ("recorded_at", "TEXT", 1, 0),
    ],
    "errors": [
        ("id", "INTEGER", 0, 1),
        ("location", "TEXT", 1, 0),
        ("message", "TEXT", 1, 0),
        ("recorded_at", "TEXT", 1, 0),
    ],
}
EXPECTED_INDEXES = {
    "idx_assessments_session": ("assessments", ["session_id", "turn"]),
    "idx_decisions_session": ("decisions", ["session_id", "turn"]),
    "idx_checkpoints_session": ("checkpoints", ["session_id"]),
    "idx_hook_events_session": ("hook_events", ["session_id"]),
    "idx_sessions_session_id": ("sessions", ["session_id"]),
}


def _fixed_clock() -> datetime:
    return datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def _schema(db: Path) -> tuple[dict[str, list[tuple[str, str, int, int]]], dict[str, tuple[str, list[str]]]]:
    conn = sqlite3.connect(db)
    try:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
            )
        ]
        columns = {
            t: [(r[1], r[2], r[3], r[5]) for r in conn.execute(f"PRAGMA table_info({t})")] for t in tables
        }
        indexes = {}
        for name, table in conn.execute(
            "SELECT name, tbl_name FROM sqlite_master WHERE type='index' AND sql IS NOT NULL"
        ):
            indexes[name] = (table, [r[2] for r in conn.execute(f"PRAGMA index_info({name})")])
        return columns, indexes
    finally:
        conn.close()


def test_fresh_ledger_has_exact_schema(tmp_path: Path) -> None:
    with Ledger.open(tmp_path) as ledger:
        assert ledger.migrations() == [m.__name__ for m in MIGRATIONS]
        assert ledger.integrity_ok()
    columns, indexes = _schema(tmp_path / "ledger.db")
    assert columns == EXPECTED_COLUMNS
    assert indexes == EXPECTED_INDEXES


def test_wal_mode(tmp_path: Path) -> None:
    Ledger.open(tmp_path).close()
    conn = sqlite3.connect(tmp_path / "ledger.db")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


@pytest.mark.parametrize("applied", range(len(MIGRATIONS)))
def test_upgrade_from_every_old_schema(tmp_path: Path, applied: int) -> None:
    db = tmp_path / "ledger.db"
    conn = sqlite3.connect(db, isolation_level=None)
    apply_migrations(conn, "2020-01-01T00:00:00+00:00", MIGRATIONS[:applied])
    if applied >= 1:  # data written by the old version must survive the upgrade
        conn.execute(
            "INSERT INTO sessions (path, session_id, byte_offset, first_seen, updated_at) "
            "VALUES ('/t.jsonl', 's-old', 1234, 'x', 'x')"
        )
        conn.execute(
            "INSERT INTO decisions (session_id, turn, action, recorded_at) VALUES ('s-old', 2, 'warn', 'x')"
        )
    conn.close()

    with Ledger.open(tmp_path, clock=_fixed_clock) as ledger:
        assert ledger.migrations() == [m.__name__ for m in MIGRATIONS]
        if applied >= 1:
            tail = ledger.get_tail("/t.jsonl")
            assert tail == TailState(offset=1234, line=0, state={}, session_id="s-old")
            [decision] = ledger.decisions("s-old")
            assert (decision.action, decision.turn, decision.outcome_at) == ("warn", 2, None)
    columns, indexes = _schema(db)
    assert columns == EXPECTED_COLUMNS
    assert indexes == EXPECTED_INDEXES


def test_reopen_applies_nothing(tmp_path: Path) -> None:
    Ledger.open(tmp_path).close()
    conn = sqlite3.connect(tmp_path / "ledger.db", isolation_level=None)
    assert apply_migrations(conn, "now") == []
    conn.close()


def test_newer_ledger_is_refused_with_hint(tmp_path: Path) -> None:
    Ledger.open(tmp_path).close()
    conn = sqlite3.connect(tmp_path / "ledger.db")
    conn.execute("INSERT INTO _migrations VALUES ('m999_future', 'x')")
    conn.commit()
    conn.close()
    with pytest.raises(LedgerError, match="newer ctxhealth") as info:
        Ledger.open(tmp_path)
    assert "upgrade" in info.value.hint


def test_damaged_file_is_a_ledger_error(tmp_path: Path) -> None:
    (tmp_path / "ledger.db").write_bytes(b"this is not a database" * 100)
    with pytest.raises(LedgerError) as info:
        Ledger.open(tmp_path)
    assert info.value.hint


def test_tail_round_trip_and_update(tmp_path: Path) -> None:
    with Ledger.open(tmp_path) as ledger:
        assert ledger.get_tail("/a.jsonl") is None
        ledger.set_tail("/a.jsonl", TailState(100, 3, {"pending": ["x"], "n": 2}, "s1"))
        assert ledger.get_tail("/a.jsonl") == TailState(100, 3, {"pending": ["x"], "n": 2}, "s1")
        ledger.set_tail("/a.jsonl", TailState(250, 7, {}))
        assert ledger.get_tail("/a.jsonl") == TailState(250, 7, {}, "s1")  # session id kept
        [row] = ledger.sessions()
        assert (row.path, row.offset, row.line) == ("/a.jsonl", 250, 7)


def test_records_and_queries(tmp_path: Path) -> None:
    with Ledger.open(tmp_path, clock=_fixed_clock) as ledger:
        a = ledger.record_assessment("s", 1, tokens=1000, pressure=0.4, zone="green", details={"drift": 0.9})
        d = ledger.record_decision("s", 1, "continue", "all good")
        ledger.record_outcome(d, "ok")
        c = ledger.record_checkpoint("s", "/cp.json", "/cp.md", tokens=420, source_path="/t.jsonl")
        h = ledger.record_hook_event("PreCompact", "s", "trigger=auto")
        e = ledger.record_error("hook:stop", "boom")
        assert min(a, d, c, h, e) >= 1
        assert ledger.counts() == {
            "sessions": 0,
            "assessments": 1,
            "decisions": 1,
            "checkpoints": 1,
            "hook_events": 1,
            "errors": 1,
        }
        [assessment] = ledger.assessments("s")
        assert assessment.details == {"drift": 0.9} and assessment.pressure == 0.4
        [decision] = ledger.decisions()
        assert decision.outcome == "ok" and decision.outcome_at == _fixed_clock().isoformat()
        assert ledger.checkpoints("s")[0].markdown_path == "/cp.md"
        assert ledger.hook_events("other") == []
        assert ledger.errors()[0].where == "hook:stop"
        with pytest.raises(LedgerError):
            ledger.record_outcome(9999, "x")


def test_rows_are_redacted(tmp_path: Path) -> None:
    secret = "sk-" + "proj-" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9"
    with Ledger.open(tmp_path) as ledger:
        ledger.record_hook_event("UserPromptSubmit", "s", f"prompt mentions {secret}")
        ledger.record_error("where", f"failed with key {secret}")
        ledger.record_decision("s", 1, "warn", f"saw {secret}")
        ledger.record_assessment("s", 1, details={"note": secret})
        ledger.set_tail("/t", TailState(1, 1, {"buffer": secret}))
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file())
    assert secret.encode() not in raw


def test_long_text_is_clipped(tmp_path: Path) -> None:
    with Ledger.open(tmp_path) as ledger:
        ledger.record_hook_event("E", None, "x" * 50_000)
        assert len(ledger.hook_events()[0].payload_summary) <= 4_000


def test_unwritable_home_is_a_ledger_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(LedgerError):
        Ledger.open(blocker / "home")


def test_failed_write_leaves_no_open_transaction(tmp_path: Path) -> None:
    with Ledger.open(tmp_path) as ledger:
        with pytest.raises(LedgerError):
            ledger._insert("INSERT INTO decisions (action, recorded_at) VALUES (NULL, 'x')", ())
        assert ledger.record_error("after", "still writable") >= 1
        assert ledger.counts()["decisions"] == 0
