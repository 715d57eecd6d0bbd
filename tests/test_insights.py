"""ctxhealth insights: one step per model response (checked against plain loops over the raw JSON),
slips as defined, Wilson intervals against statsmodels, bands adding up, change-points only where
intervals separate, the snowball, composition, suggestions, the CLI document."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from conftest import invoke
from ctxhealth.accounting.fill import account_session
from ctxhealth.insights import (
    InsightsBuilder,
    InsightsFilter,
    change_point,
    measure_session,
    snowball,
    wilson,
)
from ctxhealth.insights.stats import PCT_EDGES
from ctxhealth.model import (
    CompactionSummary,
    Format,
    Message,
    Role,
    Session,
    TextBlock,
    ToolCall,
    ToolResult,
    Usage,
)
from ctxhealth.sources import read_sessions

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "claude-code-session.jsonl"
REQUIRED = (
    "sessions",
    "steps",
    "slips",
    "bands",
    "by_model",
    "by_agent",
    "by_project",
    "composition",
    "suggestions",
)


def _doc(*paths: Path) -> dict[str, Any]:
    result = invoke("insights", "--json", *map(str, paths))
    assert result.exit_code == 0, result.output
    (line,) = result.stdout.splitlines()  # one document
    return json.loads(line)


# --- one step per response, against the raw JSON --------------------------------------------------


def _claude_code_responses(path: Path) -> int:
    ids = set()
    for line in path.read_bytes().splitlines():
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        message = record.get("message") or {}
        if (
            record.get("type") == "assistant"
            and not record.get("isSidechain")
            and message.get("model") != "<synthetic>"
        ):
            ids.add(message.get("id"))
    return len(ids)


def test_claude_code_steps_are_one_per_response_id(claude_code_data: Path) -> None:
    doc = _doc(claude_code_data)
    steps = {Path(s["path"]).name: s["steps"] for s in doc["per_session"]}
    raw = {p.name: _claude_code_responses(p) for p in claude_code_data.glob("*/*.jsonl")}
    assert steps == {name: n for name, n in raw.items() if n}
    assert doc["steps"] == sum(raw.values()) == sum(b["steps"] for b in doc["bands"])


def test_mini_swe_agent_and_tau_bench_steps_are_one_per_assistant_message(
    mini_swe_data: Path, tau_bench_data: Path
) -> None:
    trajs = sorted((mini_swe_data / "trajs").rglob("*.traj.json"))[:40]
    doc = _doc(*trajs)
    raw = sum(sum(m["role"] == "assistant" for m in json.loads(p.read_bytes())["messages"]) for p in trajs)
    assert doc["steps"] == raw == sum(b["steps"] for b in doc["token_bands"])
    (results,) = tau_bench_data.glob("*.json")
    doc = _doc(results)
    runs = json.loads(results.read_bytes())
    assert doc["sessions"] == len(runs)
    assert doc["steps"] == sum(sum(m["role"] == "assistant" for m in run["traj"]) for run in runs)


# --- statistics -----------------------------------------------------------------------------------


@pytest.mark.parametrize("trials", [1, 5, 17, 100, 2_454])
def test_wilson_intervals_match_statsmodels(trials: int) -> None:
    proportion = pytest.importorskip("statsmodels.stats.proportion", reason="statsmodels (test extra)")
    for successes in sorted({0, 1, trials // 3, trials // 2, trials - 1, trials}):
        low, high = proportion.proportion_confint(successes, trials, alpha=0.05, method="wilson")
        ours = wilson(successes, trials)
        assert ours == pytest.approx((low, high), abs=1e-12)


def test_a_change_point_needs_intervals_that_separate() -> None:
    flat = [(float(i % 100), i % 5 == 0) for i in range(1_000)]  # 20% everywhere
    assert change_point(flat, PCT_EDGES, "pct") is None
    rising = [(float(p), p >= 60 and i % 2 == 0) for i in range(20) for p in range(0, 100, 2)]
    point = change_point(rising, PCT_EDGES, "pct")
    assert point is not None and point["at_pct"] == 60
    assert point["above"]["ci_low"] > point["below"]["ci_high"]
    few = rising[::40]  # the same shape on too few steps: no claim
    assert change_point(few, PCT_EDGES, "pct") is None


def test_the_snowball_counts_the_next_step_given_the_slips_so_far() -> None:
    result = snowball([[True, True, False, True], [False, False]])
    by = {r["slips_so_far"]: (r["steps"], r["slips"]) for r in result["by_slips_so_far"]}
    assert by == {"0": (3, 1), "1": (1, 1), "2": (2, 1), "3+": (0, 0)}
    assert (result["after_slip"]["steps"], result["after_slip"]["slips"]) == (2, 1)
    assert (result["after_clean_step"]["steps"], result["after_clean_step"]["slips"]) == (2, 1)


# --- slips on a session we write ------------------------------------------------------------------


def _reply(n: int, *calls: ToolCall, fill: int | None = None) -> Message:
    usage = Usage(input_tokens=fill) if fill is not None else None
    return Message(
        Role.ASSISTANT,
        (TextBlock(f"step {n}"), *calls),
        response_id=f"r{n}",
        model="claude-sonnet-4-5",
        usage=usage,
    )


def _result(call_id: str, text: str, error: bool = False) -> Message:
    return Message(Role.USER, (ToolResult(call_id, text, is_error=error),))


def _session(messages: list[Message], format: Format = Format.CLAUDE_CODE) -> Session:
    return Session(path="p/s.jsonl", format=format, messages=tuple(messages), model="claude-sonnet-4-5")


def _slips(session: Session) -> list[tuple[str, ...]]:
    return [s.slips for s in measure_session(session, account_session(session)).steps]


def test_each_kind_of_slip_is_counted_at_the_step_that_made_it() -> None:
    read = lambda i: ToolCall(f"c{i}", "Read", {"file_path": "/r/a.py"})  # noqa: E731
    bash = lambda i: ToolCall(f"c{i}", "Bash", {"command": "make test"})  # noqa: E731
    edit = ToolCall("e1", "Edit", {"file_path": "/r/a.py", "old_string": "x", "new_string": "y"})
    messages = [
        Message(Role.USER, (TextBlock("fix the build please, it fails on the parser"),)),
        _reply(0, read(1), fill=20_000),
        _result("c1", "x = 1"),
        _reply(1, bash(2), fill=21_000),
        _result("c2", "error: build failed", error=True),
        _reply(2, bash(3), fill=22_000),  # the same failed call again
        _result("c3", "error: build failed", error=True),
        _reply(3, read(4), fill=23_000),  # the same read, nothing edited: a re-read
        _result("c4", "x = 1"),
        Message(Role.USER, (TextBlock("no, that's not what I asked"),)),
        _reply(4, edit, fill=24_000),
        _result("e1", "String to replace not found", error=True),
        _reply(5, fill=25_000),
        Message(Role.USER, (TextBlock("[Request interrupted by user]"),)),
        _reply(6, fill=26_000),
    ]
    assert _slips(_session(messages)) == [
        (),
        ("failed_call",),
        ("failed_call", "repeat_failed"),
        ("reread", "correction"),
        ("failed_call", "failed_edit"),
        ("correction",),
        (),
    ]


def test_a_read_after_an_edit_or_a_compaction_is_no_reread() -> None:
    read = lambda i: ToolCall(f"c{i}", "Read", {"file_path": "/r/a.py"})  # noqa: E731
    edit = ToolCall("e1", "Edit", {"file_path": "/r/a.py", "old_string": "x", "new_string": "y"})
    messages = [
        _reply(0, read(1), fill=10_000),
        _result("c1", "x"),
        _reply(1, edit, fill=11_000),
        _result("e1", "ok"),
        _reply(2, read(2), fill=12_000),
        _result("c2", "y"),
        Message(Role.USER, (CompactionSummary("summary of the work so far"),)),
        _reply(3, read(3), fill=5_000),
        _result("c3", "y"),
        _reply(4, read(4), fill=6_000),
        _result("c4", "y"),
    ]
    assert _slips(_session(messages)) == [(), (), (), (), ("reread",)]


def test_a_simulated_customer_saying_no_is_no_correction() -> None:
    messages = [
        Message(Role.USER, (TextBlock("I want to change my flight"),)),
        _reply(0),
        Message(Role.USER, (TextBlock("No, that's all, thanks"),)),
        _reply(1),
    ]
    assert _slips(_session(messages, Format.TAU_BENCH)) == [(), ()]
    assert _slips(_session(messages, Format.CLAUDE_CODE)) == [("correction",), ()]


def test_the_fixed_prefix_is_the_first_prompt_minus_what_the_log_holds() -> None:
    ask = "a" * 4_000  # about 1,000 tokens at 4 characters a token
    messages = [Message(Role.USER, (TextBlock(ask),)), _reply(0, fill=15_000)]
    session = _session(messages)
    account = account_session(session)
    comp = measure_session(session, account).composition
    assert comp.fixed_prefix is not None
    held = 15_000 - comp.fixed_prefix
    assert 1_000 <= held <= 1_000 + 10  # the text plus a few tokens of framing


# --- the document -----------------------------------------------------------------------------------


def test_the_document_holds_every_section_and_its_bands_add_up(claude_code_data: Path) -> None:
    doc = _doc(claude_code_data)
    assert doc["schema_version"] == 1 and "one model response" in doc["step"]
    assert all(key in doc for key in REQUIRED)
    for key in ("bands", "token_bands"):
        assert sum(b["steps"] for b in doc[key]) == doc["steps"]
        assert sum(b["slips"] for b in doc[key]) == doc["slips"]
    assert set(doc["bands"][0]) == {"from_pct", "to_pct", "steps", "slips", "rate", "ci_low", "ci_high"}
    for group in ("by_model", "by_agent", "by_project"):
        assert sum(g["steps"] for g in doc[group]) == doc["steps"]
    ranks = [s["rank"] for s in doc["suggestions"]]
    assert ranks == list(range(1, len(ranks) + 1))
    assert [s["score"] for s in doc["suggestions"]] == sorted(
        (s["score"] for s in doc["suggestions"]), reverse=True
    )
    assert all(s["evidence"] for s in doc["suggestions"])
    prefix = doc["composition"]["fixed_prefix"]
    assert prefix["sessions_known"] == doc["sessions"] and 0 < prefix["mean_share_of_window"] < 0.2


def test_filters_choose_sessions(claude_code_data: Path) -> None:
    everything = _doc(claude_code_data)
    opus = json.loads(invoke("insights", "--json", "--model", "opus", str(claude_code_data)).stdout)
    assert 0 < opus["sessions"] < everything["sessions"]
    assert {g["model"] for g in opus["by_model"]} == {
        m for m in (g["model"] for g in everything["by_model"]) if "opus" in m
    }
    none = json.loads(invoke("insights", "--json", "--agent", "codex", str(claude_code_data)).stdout)
    assert (
        none["sessions"] == 0
        and none["steps"] == 0
        and none["sessions_left_out"] == everything["sessions"] + 2
    )


def test_days_leaves_out_old_and_undated_sessions() -> None:
    from datetime import UTC, datetime

    (session,) = read_sessions([EXAMPLE])
    ended = max(m.timestamp for m in session.messages if m.timestamp)
    now = datetime.fromisoformat(ended.replace("Z", "+00:00"))
    recent = InsightsBuilder(filter=InsightsFilter(days=1, now=now))
    assert recent.add(session) is not None
    late = InsightsBuilder(filter=InsightsFilter(days=1, now=now.replace(year=now.year + 1)))
    assert late.add(session) is None and late.left_out == 1
    assert now.tzinfo is not None and UTC is not None


def test_the_text_output_says_what_a_step_is() -> None:
    result = invoke("insights", str(EXAMPLE))
    assert result.exit_code == 0
    assert "one step = one model response" in result.stdout
    assert "slip rate by fill (% of the usable window)" in result.stdout
    assert "where the context goes" in result.stdout


def test_the_html_report_has_the_insights_section(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    result = invoke("report", str(EXAMPLE), "-o", str(out))
    assert result.exit_code == 0, result.output
    html = out.read_text()
    doc = _doc(EXAMPLE)
    assert '<section id="insights">' in html
    assert f"{doc['steps']:,} steps, {doc['slips']:,} slipped" in html


def test_an_instruction_file_over_its_limit_is_a_suggestion(tmp_path: Path) -> None:
    import shutil

    project = tmp_path / "repo"
    project.mkdir()
    shutil.copy(EXAMPLE, project / "s.jsonl")
    (project / "CLAUDE.md").write_text("".join(f"- rule {i}\n" for i in range(200)))
    (project / "AGENTS.md").write_text("short\n")
    doc = _doc(project)
    found = [s for s in doc["suggestions"] if s["kind"] == "instruction_file"]
    assert len(found) == 1 and "CLAUDE.md has 200 lines" in found[0]["title"]
    assert found[0]["effect"]["value"] > 0 and found[0]["evidence"][0]["figure"] == 200


def test_a_claude_code_project_folder_names_its_repository(tmp_path: Path) -> None:
    from ctxhealth.insights.build import project_instruction_files

    repo = tmp_path / "home" / "me" / "repo"
    repo.mkdir(parents=True)
    (repo / "CLAUDE.md").write_text("x\n")
    assert project_instruction_files("-home-me-repo", root=tmp_path) == [repo / "CLAUDE.md"]
    assert project_instruction_files("-home-me-other", root=tmp_path) == []
    assert project_instruction_files("repo", root=tmp_path) == []


def test_days_reads_a_stamp_without_an_offset_as_utc_like_every_other_table() -> None:
    from datetime import UTC, datetime, timedelta

    from msgspec.structs import replace

    (session,) = read_sessions([EXAMPLE])
    naive = tuple(
        replace(m, timestamp=m.timestamp.removesuffix("Z")) if m.timestamp else m for m in session.messages
    )
    session = replace(session, messages=naive)
    ended = max(m.timestamp for m in session.messages if m.timestamp)
    now = datetime.fromisoformat(ended).replace(tzinfo=UTC) + timedelta(hours=1)
    kept = InsightsBuilder(filter=InsightsFilter(days=1, now=now))
    assert kept.add(session) is not None and kept.left_out == 0
