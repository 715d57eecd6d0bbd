"""The two fleet levels: the accounting level (no per-turn assessment) writes the same usage, cost,
cache, tool and compaction rows as the full level, on the real Claude Code sessions; its health
columns are NULL and a later full run over its store assesses every file."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import invoke
from ctxhealth.accounting.registry import ModelRegistry
from ctxhealth.fleet import JobOptions, run_fleet
from ctxhealth.fleet.schema import BY_NAME
from ctxhealth.policy.profile import default_profile

duckdb = pytest.importorskip("duckdb", reason="the fleet extra (duckdb) is not installed")

HEALTH_COLUMNS = {
    "zone",
    "pressure",
    "max_pressure",
    "risk",
    "action",
    "rule",
    "reasons",
    "healthy",
    "first_unhealthy_turn",
    "first_unhealthy_at",
    "waste_tokens",
}
ACCOUNTING_TABLES = ("sessions", "tool_calls", "cache_breaks", "responses", "costs", "files")


def rows(store: Path, table: str, *, accounting: bool) -> list[tuple[object, ...]]:
    names = [
        c for c in BY_NAME[table].names if not (accounting and table == "sessions" and c in HEALTH_COLUMNS)
    ]
    columns = ", ".join(f'"{c}"' for c in names)
    with duckdb.connect(str(store), read_only=True) as con:
        return sorted(con.execute(f'SELECT {columns} FROM "{table}"').fetchall(), key=repr)


def test_accounting_level_rows_equal_the_full_levels(claude_code_data: Path, tmp_path: Path) -> None:
    registry, profile = ModelRegistry.default(), default_profile()
    full = run_fleet([claude_code_data], tmp_path / "full.duckdb", JobOptions(registry, profile), jobs=1)
    cheap = run_fleet(
        [claude_code_data], tmp_path / "acc.duckdb", JobOptions(registry, profile, health=False), jobs=1
    )
    assert cheap.counts["turns"] == cheap.counts["decisions"] == 0 and full.counts["turns"] > 0
    for table in ACCOUNTING_TABLES:
        assert cheap.counts[table] == full.counts[table] > 0, table
        assert rows(tmp_path / "acc.duckdb", table, accounting=True) == rows(
            tmp_path / "full.duckdb", table, accounting=True
        ), table
    with duckdb.connect(str(tmp_path / "acc.duckdb"), read_only=True) as con:
        assert con.execute(
            "SELECT count(*) FROM sessions WHERE zone IS NOT NULL OR healthy IS NOT NULL"
        ).fetchone() == (0,)
    assert cheap.unhealthy == {} and full.unhealthy  # NULL health is not counted as unhealthy
    assert cheap.cost_usd == pytest.approx(full.cost_usd)

    # a full-level run over the accounting store assesses every file again (nothing is "unchanged")
    again = run_fleet([claude_code_data], tmp_path / "acc.duckdb", JobOptions(registry, profile), jobs=1)
    assert again.unchanged == 0 and again.counts == full.counts
    for table in ("sessions", "turns", "decisions"):
        assert rows(tmp_path / "acc.duckdb", table, accounting=False) == rows(
            tmp_path / "full.duckdb", table, accounting=False
        ), table


def test_accounting_level_rows_equal_the_full_levels_on_every_format_of_the_shared_data(
    tmp_path: Path,
) -> None:
    """The other agents' logs too (mini-swe-agent, OpenHands, tau-bench): the accounting level is
    the same reading of each file, without the Monitor."""
    from conftest import SHARED_DATA

    folders = [p for p in sorted(SHARED_DATA.glob("*")) if p.is_dir() and p.name != "claude-code"]
    if not folders:
        pytest.skip(f"the shared data is not at {SHARED_DATA}")
    registry, profile = ModelRegistry.default(), default_profile()
    full = run_fleet(folders, tmp_path / "full.duckdb", JobOptions(registry, profile), jobs=1)
    cheap = run_fleet(folders, tmp_path / "acc.duckdb", JobOptions(registry, profile, health=False), jobs=1)
    assert full.sessions == cheap.sessions > 100
    for table in ACCOUNTING_TABLES:
        assert rows(tmp_path / "acc.duckdb", table, accounting=True) == rows(
            tmp_path / "full.duckdb", table, accounting=True
        ), table


def test_the_cli_accounting_flag(claude_code_data: Path, tmp_path: Path) -> None:
    out = tmp_path / "f.duckdb"
    done = invoke(["fleet", str(claude_code_data), "--out", str(out), "--accounting", "-j", "1"])
    assert done.exit_code == 0, done.output
    with duckdb.connect(str(out), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM turns").fetchone() == (0,)
        assert con.execute("SELECT count(*) FROM responses").fetchone()[0] > 0  # type: ignore[index]
