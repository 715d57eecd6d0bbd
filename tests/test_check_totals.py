"""`check` over several sessions: the closing summary, skipped files with reasons, `--series`, and
the progress bar (only on a terminal, only when the work takes a while)."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

from conftest import invoke
from ctxhealth.accounting.registry import ModelRegistry
from ctxhealth.cli import progress
from ctxhealth.cli.progress import ProgressBar
from ctxhealth.policy.profile import default_profile
from ctxhealth.signals.zones import tier_zone_of, window_zone_of, worse

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "claude-code-session.jsonl"


def chat(path: Path, fills: list[int]) -> Path:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Fix the failing parser test"}]
    for n, fill in enumerate(fills):
        messages.append(
            {"role": "assistant", "id": f"r{n}", "content": f"step {n}", "usage": {"prompt_tokens": fill}}
        )
        messages.append({"role": "user", "content": f"go on {n}"})
    path.write_text(json.dumps({"model": "gpt-4o", "messages": messages}))
    return path


def folder(root: Path) -> Path:
    root.mkdir()
    shutil.copy(EXAMPLE, root / "a.jsonl")
    chat(root / "calm.json", [1_000, 2_000])
    chat(root / "full.json", [100_000, 150_000, 181_000])  # past the full tier's hard limit: restart
    (root / "README.txt").write_text("notes, not a transcript\n")
    return root


def test_summary_counts_sessions_unhealthy_by_action_cost_and_skipped_files(tmp_path: Path) -> None:
    root = folder(tmp_path / "runs")
    result = invoke(["check", str(root)])
    assert result.exit_code == 1, result.output
    summary = result.stdout[result.stdout.index("\nsummary\n") :]
    lines = invoke(["check", "--json", str(root)]).stdout.splitlines()
    reports = [doc for doc in map(json.loads, lines) if "skipped" not in doc]
    assert [json.loads(x)["skipped"]["path"] for x in lines if "skipped" in json.loads(x)] == [
        str(root / "README.txt")
    ]
    unhealthy = [r for r in reports if not r["healthy"]]
    assert len(reports) == 3 and unhealthy
    actions = ", ".join(f"{r['action']} 1" for r in sorted(unhealthy, key=lambda r: r["action"]))
    assert f"sessions     3, {len(unhealthy)} unhealthy ({actions})" in summary
    assert f"worst        {unhealthy[0]['path']}" in summary
    cost = sum(r["cost_usd"] or 0.0 for r in reports)
    assert f"total cost   ${cost:,.2f}" in summary
    assert f"skipped      1 file\n    {root / 'README.txt'}: not a transcript" in summary


def test_json_output_stays_json_lines_one_object_per_session_or_skipped_file(tmp_path: Path) -> None:
    root = folder(tmp_path / "runs")
    result = invoke(["check", "--json", str(root)])
    docs = [json.loads(line) for line in result.stdout.splitlines()]
    assert all(doc["schema_version"] == 1 for doc in docs)
    assert len([d for d in docs if "skipped" in d]) == 1 and len([d for d in docs if "turns" in d]) == 3
    assert "summary" not in result.stdout


def test_a_file_that_fails_to_read_is_skipped_the_rest_are_checked_and_the_exit_is_3(tmp_path: Path) -> None:
    root = folder(tmp_path / "runs")
    (root / "broken.jsonl.gz").write_bytes(b"\x1f\x8b" + b"not gzip at all" * 4)
    result = invoke(["check", str(root)])
    assert result.exit_code == 3
    assert result.stdout.count("  verdict ") == 3
    assert f"{root / 'broken.jsonl.gz'}: corrupt gzip data" in result.stdout
    as_json = invoke(["check", "--json", str(root)])
    assert as_json.exit_code == 3
    docs = [json.loads(x) for x in as_json.stdout.splitlines()]
    assert len([d for d in docs if "skipped" not in d]) == 3
    assert f"{root / 'broken.jsonl.gz'}: corrupt gzip data" in as_json.stderr


def test_series_has_one_entry_per_turn(tmp_path: Path) -> None:
    path = chat(tmp_path / "full.json", [100_000, 150_000, 181_000])
    result = invoke(["check", "--json", "--series", str(path), str(EXAMPLE)])
    for line in result.stdout.splitlines():
        report = json.loads(line)
        series = report["series"]
        assert len(series) == report["turns"]
        assert [s["turn"] for s in series] == list(range(report["turns"]))
        assert series[-1]["action"] == report["action"]
        assert series[-1]["fill"] == report["fill"]["current"]
        assert max(s["fill"] for s in series) == report["fill"]["peak"]
        assert set(series[0]) >= {"turn", "fill", "pressure", "zone", "action"}
    first = json.loads(result.stdout.splitlines()[0])
    assert [s["fill"] for s in first["series"]] == [100_000, 150_000, 181_000]
    # the zone is the worse of the tier zone (absolute tokens) and the window zone (share of usable)
    info = ModelRegistry.default().lookup("gpt-4o")
    p = default_profile()
    for entry in first["series"]:
        th = p.thresholds(info.tier)
        tier = tier_zone_of(entry["fill"], th.sweet_spot, th.compact_zone, th.hard_limit)
        share = entry["fill"] / info.usable_window
        window = window_zone_of(
            share, p.window_yellow, p.window_orange, p.window_critical, p.window_autocompact
        )
        assert entry["zone"] == worse(tier, window).value
    assert first["series"][-1]["action"] == "restart"


def test_series_without_json_is_a_usage_error(tmp_path: Path) -> None:
    result = invoke(["check", "--series", str(EXAMPLE)])
    assert result.exit_code == 2


def test_progress_bar_shows_only_on_a_terminal_after_a_while(monkeypatch: Any) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    quiet = Terminal()
    with ProgressBar("checking", 3, stream=quiet) as bar:
        bar.advance(label="a")  # short work: nothing shown
    assert quiet.getvalue() == ""
    piped = io.StringIO()
    monkeypatch.setattr(progress, "SHOW_AFTER_SECONDS", 0.0)
    with ProgressBar("checking", 3, stream=piped) as bar:
        bar.advance(label="a")  # not a terminal: nothing shown
    assert piped.getvalue() == ""
    shown = Terminal()
    with ProgressBar("checking", 3, stream=shown) as bar:
        bar.advance(label="a")
        bar.advance(label="b")
    assert "checking" in shown.getvalue()


def _unhealthy_report(path: str, session_id: str, fmt: str, pressure: float) -> dict[str, Any]:
    return {
        "path": path,
        "format": fmt,
        "session_id": session_id,
        "healthy": False,
        "action": "restart",
        "pressure": pressure,
        "fill": {"peak_pct": 4.0},
        "cost_usd": None,
    }


def test_worst_lines_name_the_session_of_a_file_holding_several() -> None:
    from ctxhealth.report.check_report import CheckTotals, render_totals_text

    totals = CheckTotals()
    totals.add(_unhealthy_report("runs.json", "task-3-trial-0", "tau-bench", 0.2))
    totals.add(_unhealthy_report("runs.json", "task-9-trial-1", "tau-bench", 0.1))
    totals.add(_unhealthy_report("one.jsonl", "abc", "claude-code", 0.05))
    text = render_totals_text(totals)
    assert "worst        runs.json [task-3-trial-0]: restart" in text
    assert "worst        runs.json [task-9-trial-1]: restart" in text
    assert "worst        one.jsonl: restart" in text  # one session per file: the path says it all
    worst = totals.to_dict()["worst"]
    assert [w.get("session_id") for w in worst] == ["task-3-trial-0", "task-9-trial-1", "abc"]


def test_total_cost_is_unknown_when_no_session_has_a_price() -> None:
    from ctxhealth.report.check_report import CheckTotals, render_totals_text

    totals = CheckTotals()
    totals.add(_unhealthy_report("runs.json", "task-3-trial-0", "tau-bench", 0.2))
    text = render_totals_text(totals)
    assert "total cost   unknown" in text and "$0.0000" not in text


def test_a_heading_adds_the_session_id_only_when_the_path_does_not_say_it() -> None:
    from ctxhealth.report.check_report import session_heading

    folder = {
        "path": "calls/django__django-10880",
        "format": "openhands",
        "session_id": "django__django-10880",
    }
    assert session_heading(folder) == "calls/django__django-10880"
    line = {"path": "output.jsonl", "format": "openhands", "session_id": "django__django-10880"}
    assert session_heading(line) == "output.jsonl [django__django-10880]"
