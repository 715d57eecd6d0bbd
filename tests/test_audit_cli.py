"""`ctxhealth audit` end to end on transcripts and pack manifests written by the tests."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from audit_fixtures import ClaudeLog, manifest, write_json
from conftest import invoke

SESSION_KEYS = {"schema_version", "path", "session_id", "cache", "cost", "waste", "findings"}


def run(*args: str) -> tuple[int, list[dict[str, Any]]]:
    result = invoke(["audit", "--json", *args])
    docs = [json.loads(line) for line in result.output.splitlines() if line.strip()]
    return result.exit_code, docs


def warm_session(tmp_path: Path, name: str = "warm") -> Path:
    """Every request reads the whole earlier prompt from the cache: hit rate ~96%."""
    log = ClaudeLog(name).user("Fix the failing test in parser.py")
    cached = 0
    for _ in range(30):
        log.response(read=cached, write=1_000 if cached else 20_000)
        cached += 1_000 if cached else 20_000
    return log.write(tmp_path / "proj" / f"{name}.jsonl")


def cold_session(tmp_path: Path, name: str = "cold") -> Path:
    """A prefix that changes on every request (say, a timestamp in the system prompt): nothing is read."""
    log = ClaudeLog(name).user("Fix the failing test in parser.py")
    for n in range(30):
        log.response(read=0, write=20_000 + 1_000 * n)
    return log.write(tmp_path / "proj" / f"{name}.jsonl")


def test_check_cache_passes_on_a_warm_cache(tmp_path: Path) -> None:
    code, docs = run("--check", "cache", str(warm_session(tmp_path)))
    session, totals = docs
    assert code == 0
    assert session.keys() >= SESSION_KEYS and session["schema_version"] == 1
    assert session["cache"]["breaks"] == [] and session["findings"] == []
    assert session["cache"]["hit_rate"] > 0.9
    rows = session["responses"]
    assert [r["hit_rate"] for r in rows[:3]] == pytest.approx([0, 20_000 / 21_004, 21_000 / 22_004])
    assert (
        rows[1]["response_id"] == "msg_warm_002" and rows[1]["line"] == 5
    )  # prompt, 2 lines + result, then this one
    assert totals["kind"] == "totals" and totals["verdicts"] == {"cache": totals["verdicts"]["cache"]}
    assert totals["verdicts"]["cache"]["status"] == "pass"


def test_check_cache_fails_when_the_last_50_requests_miss_the_cache(tmp_path: Path) -> None:
    code, docs = run("--check", "cache", str(cold_session(tmp_path)), str(warm_session(tmp_path)))
    totals = docs[-1]
    # 30 cold + 30 warm requests at the same times: the last 50 hold 20 cold and 30 warm ones.
    assert code == 1
    assert totals["verdicts"]["cache"]["status"] == "fail"
    fail = [f for f in totals["findings"] if f["severity"] == "fail"]
    assert len(fail) == 1 and "last 50 requests" in fail[0]["reason"]
    assert totals["cache"]["last50_hit_rate"] <= 0.6
    cold = next(d for d in docs if d.get("session_id") == "cold")
    assert cold["cache"]["hit_rate"] == 0
    assert cold["findings"][0]["evidence"]["response_id"] == "msg_cold_030"


def test_text_output_gives_one_line_per_finding_and_the_verdicts(tmp_path: Path) -> None:
    result = invoke(["audit", "--check", "cache", str(cold_session(tmp_path))])
    assert result.exit_code == 1
    assert "cold.jsonl:" in result.output and "[cache] fail: cache hit rate over the last 30 requests 0%" in (
        result.output
    )
    assert "cache: FAIL" in result.output


def test_breaks_idle_against_the_ttl_the_log_shows(tmp_path: Path) -> None:
    five_minutes = ClaudeLog("five").user("go").response(read=0, write=20_000)
    five_minutes.response(read=20_000, write=500).wait(600).response(read=0, write=20_600)
    one_hour = ClaudeLog("hour").user("go").response(read=0, write=20_000, write_1h=20_000)
    one_hour.response(read=20_000, write=500, write_1h=500).wait(600).response(read=10_000, write=10_600)
    one_hour.wait(4000).response(read=0, write=21_200)
    code, docs = run(
        "--check",
        "cache",
        "--fail-on",
        "warn",
        str(five_minutes.write(tmp_path / "a" / "five.jsonl")),
        str(one_hour.write(tmp_path / "a" / "hour.jsonl")),
    )
    five, hour, totals = docs
    assert code == 1  # breaks are warnings
    assert [(b["cause"], b["detail"]) for b in five["cache"]["breaks"]] == [
        ("idle", "idle 10m07s (cache TTL 5m00s)")  # 600 s waited + 7 s of the turn
    ]
    assert [b["cause"] for b in hour["cache"]["breaks"]] == ["prefix-change", "idle"]
    assert hour["cache"]["breaks"][1]["detail"] == "idle 1h06m47s (cache TTL 1h00m00s)"
    # The 1-hour writes are priced at 2x input ($6/M for Sonnet 4), the rest at 1.25x.
    first = hour["responses"][0]["usd"]
    assert first == pytest.approx((4 * 3 + 20_000 * 6 + 120 * 15) / 1e6)
    breaks = [f for d in (five, hour) for f in d["findings"] if f["reason"].startswith("cache break")]
    assert [f["severity"] for f in breaks] == ["warn"] * 3
    assert totals["cache"]["breaks"] == 3


def test_compaction_and_model_switch_breaks(tmp_path: Path) -> None:
    log = ClaudeLog("mix").user("go").response(read=0, write=30_000).response(read=30_000, write=2_000)
    log.compact(pre_tokens=32_000).response(read=0, write=8_000)
    log.response(read=8_000, write=500).response(read=0, write=8_600, model="claude-opus-4-1-20250805")
    _, docs = run("--check", "cache", str(log.write(tmp_path / "mix.jsonl")))
    breaks = docs[0]["cache"]["breaks"]
    assert [b["cause"] for b in breaks] == ["compaction", "model-switch"]
    assert breaks[0]["detail"].startswith("compacted (auto) at line")
    # Only the model switch is a finding (a compaction is meant) and only it counts as avoidable.
    found = [f["reason"].split(":")[0] for f in docs[0]["findings"] if f["reason"].startswith("cache break")]
    assert found == ["cache break (model-switch)"]
    assert docs[0]["cache"]["usd_breaks"] == pytest.approx(breaks[1]["usd"])
    assert breaks[1]["usd"] == pytest.approx(8_500 * (18.75 - 1.5) / 1e6)


PER = (100_000 * 3 + 1 * 15) / 1e6


def weekly_log(name: str, week_one: int, week_two: int) -> ClaudeLog:
    """``week_one`` requests in the week of 2026-01-05, ``week_two`` in the next, each costing ``PER``
    (100K uncached input and the 1 output token the streamed first line reports)."""
    log = ClaudeLog(name, start=datetime(2026, 1, 6, 9, 0, tzinfo=UTC)).user("go")
    for _ in range(week_one):
        log.response(read=0, write=0, input_tokens=100_000, output=0)
    log.wait(7 * 86_400)
    for _ in range(week_two):
        log.response(read=0, write=0, input_tokens=100_000, output=0)
    return log


def test_cost_trend_alert_on_a_week_25_percent_over_the_one_before(tmp_path: Path) -> None:
    code, docs = run("--check", "cost", str(weekly_log("grow", 4, 5).write(tmp_path / "grow.jsonl")))
    totals = docs[-1]
    assert totals["cost"]["by_week"] == pytest.approx({"2026-W02": 4 * PER, "2026-W03": 5 * PER})
    last = totals["cost"]["trend"][-1]
    assert last["growth"] == pytest.approx(0.25) and last["alert"] is True
    assert code == 1 and totals["verdicts"]["cost"]["status"] == "fail"
    assert "2026-W03" in totals["findings"][0]["reason"] and "25%" in totals["findings"][0]["reason"]


def test_no_cost_alert_at_20_percent_or_less(tmp_path: Path) -> None:
    code, docs = run("--check", "cost", str(weekly_log("flat", 5, 6).write(tmp_path / "flat.jsonl")))
    assert docs[-1]["cost"]["trend"][-1]["growth"] == pytest.approx(0.2)
    assert code == 0 and docs[-1]["verdicts"]["cost"]["status"] == "pass"


def test_since_drops_earlier_responses(tmp_path: Path) -> None:
    path = weekly_log("grow", 4, 5).write(tmp_path / "grow.jsonl")
    code, docs = run("--check", "cost", "--since", "2026-01-12", str(path))
    assert docs[-1]["cost"]["by_week"] == pytest.approx({"2026-W03": 5 * PER})
    assert code == 0


def test_responses_repeated_in_a_resumed_session_are_counted_once_in_the_totals(tmp_path: Path) -> None:
    log = weekly_log("same", 2, 0)
    log.write(tmp_path / "p" / "one.jsonl")
    log.write(tmp_path / "p" / "two.jsonl")  # a resumed session starts with the same responses
    _, docs = run("--check", "cost", str(tmp_path / "p"))
    assert [d["cost"]["usd"] for d in docs[:2]] == pytest.approx([2 * PER, 2 * PER])
    assert docs[-1]["cost"]["usd"] == pytest.approx(2 * PER)
    assert docs[-1]["cost"]["by_project"] == pytest.approx({"p": 2 * PER})
    assert docs[-1]["requests"] == 2 and docs[-1]["cost"]["requests"] == 2


def test_ground_rules_pass_for_identical_packs_and_fail_on_a_changed_prefix_or_order(tmp_path: Path) -> None:
    a = write_json(tmp_path / "packs" / "a.json", manifest())
    b = write_json(tmp_path / "packs" / "b.json", manifest())
    code, docs = run("--check", "ground-rules", str(a), str(b))
    assert code == 0 and docs[-1]["manifests"] == [str(a), str(b)]
    write_json(tmp_path / "packs" / "c.json", manifest(l2="specs, edited"))
    write_json(
        tmp_path / "packs" / "d.json", manifest(files=[("src/b.py", "L3", 0.6), ("src/a.py", "L3", 0.9)])
    )
    write_json(tmp_path / "packs" / "e.json", manifest(input_digest="other", errors_given=True))
    code, docs = run("--check", "ground-rules", str(tmp_path / "packs"))
    reasons = sorted(
        (Path(f["evidence"]["path"]).name, f["reason"].split(" (")[0]) for f in docs[-1]["findings"]
    )
    assert code == 1
    assert reasons == [
        ("c.json", f"L2 differs from {a} for the same input"),
        ("d.json", f"file order differs from {a} for the same input"),
        ("e.json", "errors were given but the pack has no L4 level"),
    ]


def test_scores_and_usage_on_a_pack_manifest(tmp_path: Path) -> None:
    good = write_json(tmp_path / "good.json", manifest())
    low = write_json(
        tmp_path / "low.json", manifest(files=[("src/a.py", "L3", 0.9), ("docs/x.md", "L2", 0.31)])
    )
    big = write_json(tmp_path / "big.json", manifest(tokens=170_000, budget=180_000))
    code, docs = run("--check", "scores", "--check", "usage", str(good), str(low), str(big))
    findings = [(Path(f["evidence"]["path"]).name, f["check"]) for f in docs[-1]["findings"]]
    assert code == 1
    assert findings == [("big.json", "usage"), ("low.json", "scores")]
    assert "docs/x.md was packed (L2) with score 0.310 < threshold 0.400" in docs[-1]["findings"][1]["reason"]


def test_a_broken_manifest_is_a_clear_input_error(tmp_path: Path) -> None:
    bad = manifest()
    del bad["files"][0]["score"]
    path = write_json(tmp_path / "bad.json", bad)
    result = invoke(["audit", str(path)])
    assert result.exit_code == 3
    assert f"{path}: not a valid pack manifest: files[0] (src/a.py) has no numeric 'score'" in result.output


def test_instruction_files_over_their_line_limits(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".claude" / "rules").mkdir(parents=True)
    (repo / "CLAUDE.md").write_text("Use pytest.\n" * 160)
    (repo / "AGENTS.md").write_text("Be brief.\n" * 40)
    (repo / ".claude" / "rules" / "style.md").write_text("- short lines\n" * 120)
    warm_session(repo / "logs")
    code, docs = run("--check", "instructions", "--check", "cost", str(repo))
    totals = docs[-1]
    assert code == 1 and totals["verdicts"]["cost"]["status"] == "pass"
    files = {Path(i["path"]).name: i for i in totals["instructions"]}
    assert set(files) == {"CLAUDE.md", "AGENTS.md", "style.md"}
    assert files["CLAUDE.md"]["lines"] == 160 and files["CLAUDE.md"]["tokens_per_request"] == 12 * 160 // 4
    assert files["CLAUDE.md"]["tokens_per_session"] == 480 * 30  # 30 requests in the one session
    _, alone = run("--check", "instructions", str(repo))  # no transcript read: no per-session figure
    assert [i["tokens_per_session"] for i in alone[-1]["instructions"]] == [None, None, None]
    assert alone[-1]["transcripts_read"] is False and totals["transcripts_read"] is True
    text = invoke(["audit", "--check", "instructions", str(repo)]).output
    assert "total: no transcript read" in text and "0 sessions" not in text
    failed = sorted(Path(f["evidence"]["path"]).name for f in totals["findings"])
    assert failed == ["CLAUDE.md", "style.md"]


def test_usage_check_fails_a_session_that_filled_80_percent_of_the_window(tmp_path: Path) -> None:
    log = ClaudeLog("full").user("go").response(read=0, write=100_000).response(read=100_000, write=65_000)
    code, docs = run("--check", "usage", str(log.write(tmp_path / "full.jsonl")))
    assert code == 1
    finding = docs[0]["findings"][0]
    assert finding["reason"].startswith("context fill peaked at 165,004 of 200,000 tokens (83%")
    assert finding["evidence"]["response_id"] == "msg_full_002"


def test_a_bad_since_is_a_usage_error(tmp_path: Path) -> None:
    result = invoke(["audit", "--since", "last tuesday", str(warm_session(tmp_path))])
    assert result.exit_code == 2
    assert "--since 'last tuesday' is not a date" in result.output


def test_a_damaged_line_is_reported_and_the_rest_of_the_session_still_audited(tmp_path: Path) -> None:
    path = warm_session(tmp_path)
    lines = path.read_text().splitlines()
    lines.insert(3, '{"type": "assistant", "message": ')  # a line cut off mid-write
    path.write_text("\n".join(lines) + "\n")
    code, docs = run("--check", "cache", str(path))
    assert code == 0
    [warning] = docs[0]["warnings"]
    assert warning.startswith(f"{path}:4: invalid JSON")
    assert docs[0]["cost"]["requests"] == 30
    text = invoke(["audit", "--check", "cache", str(path)]).output
    assert "reader stepped over 1 problems:" in text and f"{path}:4: invalid JSON" in text


def test_checks_of_files_alone_read_no_transcript(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "data").mkdir(parents=True)
    (repo / "data" / "broken.jsonl").write_text('{"type": "assistant", "message": {"content": [}\n')
    code, docs = run("--check", "instructions", "--check", "ground-rules", str(repo))
    assert code == 0 and len(docs) == 1 and docs[0]["sessions"] == 0
    assert docs[0]["verdicts"]["instructions"]["reason"] == "0 instruction files within their line limits"
    result = invoke(["audit", "--check", "cost", str(repo)])
    assert result.exit_code == 3  # the broken transcript is the only thing there: bad input
    assert "no transcripts found" in result.output


def test_a_missing_path_is_an_input_error(tmp_path: Path) -> None:
    result = invoke(["audit", "--check", "scores", str(tmp_path / "packs")])
    assert result.exit_code == 3
    assert f"{tmp_path / 'packs'}: no such file or folder" in result.output
