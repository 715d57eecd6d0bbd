"""The audit in the fleet tables and the HTML report: `cache_breaks` and `responses` hold what
`ctxhealth audit --json` lists for the same inputs, and the report's overview (from transcripts or
from the tables) shows the audit's totals; each session's breaks are marked on its timeline."""

from __future__ import annotations

import html as htmllib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from audit_fixtures import ClaudeLog
from conftest import invoke

duckdb = pytest.importorskip("duckdb", reason="the fleet extra (duckdb) is not installed")
pytest.importorskip("pyarrow", reason="the fleet extra (pyarrow) is not installed")


def corpus(root: Path) -> Path:
    """Two projects; breaks of every kind the fixtures can show (compaction, model switch, idle
    against a 5-minute and a 1-hour TTL, prefix change); a session resumed in a second file that
    repeats the first file's responses; requests in two ISO weeks."""
    mix = ClaudeLog("mix").user("go").response(read=0, write=30_000).response(read=30_000, write=2_000)
    mix.compact(pre_tokens=32_000).response(read=0, write=8_000)
    mix.response(read=8_000, write=500).response(read=0, write=8_600, model="claude-opus-4-1-20250805")
    mix.write(root / "proj-a" / "mix.jsonl")
    five = ClaudeLog("five").user("go").response(read=0, write=20_000)
    five.response(read=20_000, write=500).wait(600).response(read=0, write=20_600)
    five.write(root / "proj-a" / "five.jsonl")
    hour = ClaudeLog("hour").user("go").response(read=0, write=20_000, write_1h=20_000)
    hour.response(read=20_000, write=500, write_1h=500).wait(600).response(read=10_000, write=10_600)
    hour.wait(4000).response(read=0, write=21_200)
    hour.write(root / "proj-b" / "hour.jsonl")
    resumed = ClaudeLog("same").user("go").response(read=0, write=10_000).response(read=10_000, write=800)
    resumed.wait(7 * 86_400).response(read=0, write=11_000)
    resumed.write(root / "proj-b" / "one.jsonl")
    resumed.response(read=11_000, write=300).write(root / "proj-b" / "two.jsonl")
    return root


def audit_docs(*paths: Path) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    result = invoke(["audit", "--json", *map(str, paths)])
    assert result.exit_code in (0, 1), result.output
    docs = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    sessions = {str(Path(d["path"]).resolve()): d for d in docs if d["kind"] == "session"}
    return sessions, docs[-1]


def fleet(root: Path, out: Path) -> None:
    result = invoke(["fleet", str(root), "--out", str(out), "--jobs", "1"])
    assert result.exit_code == 0, result.output


def rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def assert_tables_hold_the_audit(db: Path, sessions: dict[str, dict[str, Any]]) -> int:
    """Row by row, `cache_breaks` and `responses` equal the audit's lists; returns the breaks seen."""
    table = rows(
        db,
        "SELECT path, thread, line, response_id, cause, detail, cached_before, cached_after, "
        "tokens_rewritten, cost_usd FROM cache_breaks ORDER BY path, thread, message_index",
    )
    by_path: dict[str, list[tuple[Any, ...]]] = {}
    for path, *rest in table:
        by_path.setdefault(path, []).append(tuple(rest))
    stored = {p for (p,) in rows(db, "SELECT path FROM sessions")}
    assert stored == set(sessions)
    for path, doc in sessions.items():
        listed = doc["cache"]["breaks"]
        got = by_path.get(path, [])
        assert len(got) == len(listed), path
        for row, b in zip(got, listed, strict=True):
            fields = ("thread", "line", "response_id", "cause", "detail", "cached_before", "cached_after")
            assert row[:7] == tuple(b[k] for k in fields)
            assert row[7] == b["tokens"]
            assert row[8] == pytest.approx(b["usd"], abs=1e-8)
    hit = dict(rows(db, "SELECT path, cache_hit_rate FROM sessions"))
    counts = dict(rows(db, "SELECT path, count(*) FROM responses GROUP BY path"))
    usd = dict(rows(db, "SELECT path, sum(cost_usd) FROM responses GROUP BY path"))
    for path, doc in sessions.items():
        rate = doc["cache"]["hit_rate"]
        assert hit[path] == (None if rate is None else pytest.approx(rate, abs=1e-4))
        assert counts.get(path, 0) == len(doc["responses"]) == doc["cost"]["requests"]
        if doc["responses"]:
            assert usd[path] == pytest.approx(doc["cost"]["usd"], abs=1e-6)
    return len(table)


def figures(page: str) -> dict[str, str]:
    return dict(re.findall(r'<div data-figure="([^"]+)" data-value="([^"]*)">', page))


def assert_overview_is_the_audit_totals(page: str, totals: dict[str, Any]) -> None:
    found = figures(page)
    cache, cost = totals["cache"], totals["cost"]
    assert float(found["cost"]) == pytest.approx(cost["usd"], abs=1e-6)
    assert int(found["requests"]) == totals["requests"] == cost["requests"]
    if cache["hit_rate"] is None:
        assert found["hit-rate"] == ""
    else:
        assert float(found["hit-rate"]) == pytest.approx(cache["hit_rate"], abs=1e-9)
    assert int(found["breaks"]) == cache["breaks"]
    assert float(found["usd-breaks"]) == pytest.approx(cache["usd_breaks"], abs=1e-6)
    causes = re.findall(r'<tr data-cause="([^"]+)"><td>[^<]*</td><td class="num">([\d,]+)</td>', page)
    assert {c: int(n.replace(",", "")) for c, n in causes} == cache["breaks_by_cause"]
    projects = re.findall(r'<tr data-project="([^"]+)" data-value="([^"]+)">', page)
    assert {htmllib.unescape(p): float(v) for p, v in projects} == pytest.approx(cost["by_project"])
    weeks = re.findall(r'<tr data-week="([^"]+)" data-value="([^"]+)">', page)
    assert {w: float(v) for w, v in weeks} == pytest.approx(cost["by_week"])


def report(tmp_path: Path, *args: str) -> str:
    out = tmp_path / "report.html"
    result = invoke(["report", *args, "-o", str(out)])
    assert result.exit_code == 0, result.output
    return out.read_text(encoding="utf-8")


def sections(page: str) -> dict[str, str]:
    found = re.findall(r'<section class="session".*?</section>', page, flags=re.S)
    out = {}
    for s in found:
        path = re.search(r'<div class="muted">(.*?) · ', s)
        assert path is not None
        out[htmllib.unescape(path.group(1))] = s
    return out


def test_cache_breaks_and_responses_rows_equal_what_audit_lists(tmp_path: Path) -> None:
    root = corpus(tmp_path / "sessions")
    db = tmp_path / "fleet.duckdb"
    fleet(root, db)
    sessions, totals = audit_docs(root)
    assert assert_tables_hold_the_audit(db, sessions) == sum(
        len(d["cache"]["breaks"]) for d in sessions.values()
    )
    causes = {c for (c,) in rows(db, "SELECT DISTINCT cause FROM cache_breaks")}
    assert causes == {"compaction", "model-switch", "idle", "prefix-change"}
    # the audit's "breaks" leave out compactions and clears; the table lists them with their cause
    assert rows(db, "SELECT count(*) FROM cache_breaks WHERE cause NOT IN ('compaction', 'clear')") == [
        (totals["cache"]["breaks"],)
    ]
    # the resumed session repeats the first file's responses: both files keep them (per session),
    # the totals count them once
    assert rows(db, "SELECT count(*) - count(DISTINCT response_id) FROM responses") == [(3,)]


def test_cache_breaks_rows_equal_what_audit_lists_on_the_real_claude_code_sessions(
    claude_code_data: Path, tmp_path: Path
) -> None:
    db = tmp_path / "real.duckdb"
    fleet(claude_code_data, db)
    sessions, _ = audit_docs(claude_code_data)
    assert assert_tables_hold_the_audit(db, sessions) >= 3


@pytest.mark.parametrize("source", ["transcripts", "fleet.duckdb", "fleet.parquet"])
def test_report_overview_shows_the_audit_totals(tmp_path: Path, source: str) -> None:
    root = corpus(tmp_path / "sessions")
    if source == "transcripts":
        page = report(tmp_path, str(root))
    else:
        fleet(root, tmp_path / source)
        page = report(tmp_path, "--from", str(tmp_path / source))
    sessions, totals = audit_docs(root)
    assert totals["cache"]["breaks"] > 0 and len(totals["cost"]["by_week"]) == 2
    assert_overview_is_the_audit_totals(page, totals)
    # every main-thread break is marked on its session's timeline, its hover says cause, tokens, cost
    drawn = sections(page)
    assert set(drawn) == set(sessions)
    for path, doc in sessions.items():
        main = [b for b in doc["cache"]["breaks"] if b["thread"] == 0]
        tips = re.findall(r'class="ev ev-cache_break"[^>]*data-tip="([^"]*)"', drawn[path])
        assert len(tips) == len(main), path
        for tip, b in zip(tips, main, strict=True):
            text = htmllib.unescape(tip)
            assert text.startswith(f"cache break: {b['cause']}")
            assert f"{b['tokens']:,} tokens lost" in text and "cost $" in text


def test_report_overview_shows_the_audit_totals_on_the_real_claude_code_sessions(
    claude_code_data: Path, tmp_path: Path
) -> None:
    _, totals = audit_docs(claude_code_data)
    assert_overview_is_the_audit_totals(report(tmp_path, str(claude_code_data)), totals)
    fleet(claude_code_data, tmp_path / "real.duckdb")
    assert_overview_is_the_audit_totals(report(tmp_path, "--from", str(tmp_path / "real.duckdb")), totals)


@pytest.mark.parametrize("out_name", ["old.duckdb", "old.parquet"])
def test_a_store_of_schema_version_1_is_refused(tmp_path: Path, out_name: str) -> None:
    root = corpus(tmp_path / "sessions")
    out = tmp_path / out_name
    fleet(root, out)
    if out_name.endswith(".duckdb"):
        con = duckdb.connect(str(out))
        con.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
        con.close()
    else:
        meta = json.loads((out / "meta.json").read_text())
        (out / "meta.json").write_text(json.dumps({**meta, "schema_version": 1}))
    for args in (
        ["fleet", str(root), "--out", str(out)],
        ["report", "--from", str(out), "-o", str(tmp_path / "r.html")],
    ):
        result = invoke(args)
        assert result.exit_code == 3, result.output
        assert "schema version 1" in result.output
