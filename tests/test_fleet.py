"""`ctxhealth fleet`: the tables agree with `check --json`, runs are incremental, both stores and both
engines write the same rows, and a store of another schema version is refused."""

from __future__ import annotations

import json
import re
import shutil
import textwrap
from pathlib import Path
from typing import Any

import pytest

from conftest import invoke
from ctxhealth.accounting.registry import ModelRegistry
from ctxhealth.fleet import SCHEMA_VERSION, JobOptions, run_fleet
from ctxhealth.fleet.schema import BY_NAME, TABLES, reference_markdown
from ctxhealth.policy.profile import default_profile

duckdb = pytest.importorskip("duckdb", reason="the fleet extra (duckdb) is not installed")
pq = pytest.importorskip("pyarrow.parquet", reason="the fleet extra (pyarrow) is not installed")

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "claude-code-session.jsonl"


def options() -> JobOptions:
    return JobOptions(ModelRegistry.default(), default_profile())


def chat(path: Path, fills: list[int], *, failing_tool: bool = False) -> Path:
    """An OpenAI chat transcript with one reported response per fill, each calling a tool."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You fix bugs."},
        {"role": "user", "content": "Fix the failing parser test in parser.py"},
    ]
    for n, fill in enumerate(fills):
        messages.append(
            {
                "role": "assistant",
                "id": f"r{n}",
                "content": f"step {n}: reading parser.py",
                "tool_calls": [
                    {
                        "id": f"c{n}",
                        "type": "function",
                        "function": {"name": "bash", "arguments": '{"cmd": "ls"}'},
                    }
                ],
                "usage": {"prompt_tokens": fill, "completion_tokens": 20},
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": "parser.py tests.py"})
    path.write_text(json.dumps({"model": "gpt-4o", "messages": messages}))
    return path


def corpus(root: Path) -> Path:
    """A folder like a user's: two projects, three sessions, and a file that is not a transcript."""
    (root / "proj-a").mkdir(parents=True)
    (root / "proj-b").mkdir()
    shutil.copy(EXAMPLE, root / "proj-a" / "one.jsonl")
    chat(root / "proj-a" / "two.json", [2_000, 9_000, 30_000])
    chat(root / "proj-b" / "three.json", [100_000, 130_000, 150_000, 170_000])
    (root / "proj-b" / "notes.txt").write_text("not a transcript\n")
    return root


def table(db: Path, sql: str) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def check_json(*paths: Path) -> list[dict[str, Any]]:
    result = invoke(["check", "--json", "--series", *map(str, paths)])
    assert result.exit_code in (0, 1), result.output
    docs = [json.loads(line) for line in result.stdout.splitlines()]
    return [doc for doc in docs if "skipped" not in doc]


def assert_tables_match_check(db: Path, reports: list[dict[str, Any]]) -> None:
    by_path = {str(Path(r["path"]).resolve()): r for r in reports}
    sessions = table(
        db, "SELECT path, turns, tool_calls, tool_errors, action, healthy, fill_peak FROM sessions"
    )
    assert {row[0] for row in sessions} == set(by_path)
    for path, turns, calls, errors, action, healthy, peak in sessions:
        r = by_path[path]
        assert (turns, calls, errors, action, healthy, peak) == (
            r["turns"],
            r["tool_calls"],
            r["tool_errors"],
            r["action"],
            r["healthy"],
            r["fill"]["peak"],
        ), path
    counts = {
        name: dict(table(db, f"SELECT path, count(*) FROM {name} GROUP BY path"))
        for name in ("turns", "tool_calls", "decisions")
    }
    series = {
        path: table(
            db, f"SELECT turn, fill, pressure, zone, action FROM turns WHERE path = '{path}' ORDER BY turn"
        )
        for path in by_path
    }
    for path, r in by_path.items():
        assert counts["turns"].get(path, 0) == r["turns"] == len(r["series"])
        assert counts["tool_calls"].get(path, 0) == r["tool_calls"]
        assert counts["decisions"].get(path, 0) == sum(s["action"] != "continue" for s in r["series"])
        assert series[path] == [
            (s["turn"], s["fill"], s["pressure"], s["zone"], s["action"]) for s in r["series"]
        ]
    costs = dict(table(db, "SELECT path, sum(cost_usd) FROM costs GROUP BY path"))
    for path, r in by_path.items():
        if r["cost_usd"] is None:
            assert costs.get(path) is None
        else:
            assert costs[path] == pytest.approx(r["cost_usd"], abs=1e-5)


def test_row_counts_equal_check_json_on_the_same_inputs(tmp_path: Path) -> None:
    root = corpus(tmp_path / "sessions")
    db = tmp_path / "fleet.duckdb"
    result = invoke(["fleet", str(root), "--out", str(db), "--jobs", "1", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["sessions"] == 3
    assert summary["skipped"] == [
        {"path": str((root / "proj-b" / "notes.txt").resolve()), "reason": summary["skipped"][0]["reason"]}
    ]
    assert "not a transcript" in summary["skipped"][0]["reason"]
    reports = check_json(root)
    assert_tables_match_check(db, reports)
    unhealthy: dict[str, int] = {}
    for r in reports:
        if not r["healthy"]:
            unhealthy[r["action"]] = unhealthy.get(r["action"], 0) + 1
    assert summary["store"]["unhealthy_by_action"] == unhealthy
    assert summary["store"]["cost_usd"] == pytest.approx(sum(r["cost_usd"] or 0.0 for r in reports), abs=1e-5)
    assert table(db, "SELECT value FROM meta WHERE key = 'schema_version'") == [(str(SCHEMA_VERSION),)]
    projects = table(db, "SELECT project, count(*) FROM sessions GROUP BY project ORDER BY project")
    assert projects == [("proj-a", 2), ("proj-b", 1)]


def test_row_counts_equal_check_json_on_the_real_claude_code_sessions(
    claude_code_data: Path, tmp_path: Path
) -> None:
    db = tmp_path / "real.duckdb"
    run_fleet([claude_code_data], db, options(), jobs=2)
    assert_tables_match_check(db, check_json(claude_code_data))
    # every compaction the accounting found is a session-level count, and f67ab274 has two
    assert table(db, "SELECT compactions FROM sessions WHERE session_id LIKE 'f67ab274%'") == [(2,)]


@pytest.mark.parametrize("out_name", ["fleet.duckdb", "fleet.parquet"])
def test_a_second_run_reads_only_new_and_changed_files(tmp_path: Path, out_name: str) -> None:
    root = corpus(tmp_path / "sessions")
    out = tmp_path / out_name
    first = run_fleet([root], out, options(), jobs=1)
    assert (first.analysed, first.unchanged, first.sessions) == (4, 0, 3)
    counts = first.counts
    again = run_fleet([root], out, options(), jobs=1)
    assert (again.analysed, again.unchanged) == (0, 4)
    assert again.counts == counts
    # the folder grows by one session and one session gains turns
    chat(root / "proj-b" / "four.json", [1_000, 2_000])
    chat(root / "proj-a" / "two.json", [2_000, 9_000, 30_000, 31_000, 32_000])
    grown = run_fleet([root], out, options(), jobs=1)
    assert (grown.analysed, grown.unchanged, grown.sessions) == (2, 3, 2)
    assert grown.counts["sessions"] == counts["sessions"] + 1
    assert grown.counts["turns"] == counts["turns"] + 2 + 2  # four.json's 2 turns, two.json's 2 more
    assert grown.counts["files"] == counts["files"] + 1
    full = run_fleet([root], out, options(), jobs=1, full=True)
    assert full.analysed == 5 and full.counts == grown.counts


def test_parquet_store_ignores_parts_of_an_unfinished_run(tmp_path: Path) -> None:
    root = corpus(tmp_path / "sessions")
    out = tmp_path / "fleet.parquet"
    first = run_fleet([root], out, options(), jobs=1)
    meta = json.loads((out / "meta.json").read_text())
    live = meta["parts"]["sessions"][0]
    stray = out / "sessions" / "part-deadbeef-00001.parquet"
    shutil.copy(out / live, stray)  # a part written by a run that was killed before its meta.json
    again = run_fleet([root], out, options(), jobs=1)
    assert again.counts == first.counts
    assert not stray.exists()
    rows = sum(
        pq.read_metadata(out / p).num_rows
        for p in json.loads((out / "meta.json").read_text())["parts"]["sessions"]
    )
    assert rows == 3


def test_dask_engine_writes_the_same_rows_as_the_local_engine(tmp_path: Path) -> None:
    distributed = pytest.importorskip(
        "distributed", reason="the fleet extra (dask[distributed]) is not installed"
    )
    root = corpus(tmp_path / "sessions")
    local = run_fleet([root], tmp_path / "local.duckdb", options(), jobs=2)
    started = run_fleet(
        [root], tmp_path / "dask.duckdb", options(), engine="dask", jobs=1, dask_processes=False
    )
    assert started.counts == local.counts
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster:
        result = invoke(
            [
                *("fleet", str(root), "--out", str(tmp_path / "sched.parquet"), "--engine", "dask"),
                *("--scheduler", cluster.scheduler_address, "--json"),
            ],
        )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["rows"] == local.counts
    query = "SELECT path, turns, action, fill_peak, cost_usd FROM sessions ORDER BY path"
    assert table(tmp_path / "dask.duckdb", query) == table(tmp_path / "local.duckdb", query)


def test_a_started_cluster_leaves_glibc_memory_trimming_alone_and_samples_no_stacks(
    tmp_path: Path, monkeypatch: Any
) -> None:
    # Dask's default worker environment fixes MALLOC_TRIM_THRESHOLD_, and with it glibc's mmap
    # threshold: every file read becomes a fresh mapping (10x the page faults); a cluster the run
    # starts must not pass it to its workers
    distributed = pytest.importorskip(
        "distributed", reason="the fleet extra (dask[distributed]) is not installed"
    )
    import dask
    from distributed.nanny import _get_env_variables

    seen: list[dict[str, str]] = []
    profiled: list[bool] = []
    real = distributed.LocalCluster

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(_get_env_variables("distributed.nanny.pre-spawn-environ"))
        profiled.append(dask.config.get("distributed.worker.profile.enabled"))
        return real(*args, **kwargs)

    monkeypatch.setattr(distributed, "LocalCluster", spy)
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    assert "MALLOC_TRIM_THRESHOLD_" in dask.config.get("distributed.nanny.pre-spawn-environ")
    root = corpus(tmp_path / "sessions")
    run_fleet([root], tmp_path / "d.duckdb", options(), engine="dask", jobs=1, dask_processes=False)
    assert seen and "MALLOC_TRIM_THRESHOLD_" not in seen[0]
    assert profiled == [False]  # no dashboard: the workers' stack sampling is off
    assert "MALLOC_TRIM_THRESHOLD_" in dask.config.get("distributed.nanny.pre-spawn-environ")


def test_the_workers_of_a_started_cluster_run_its_periodic_checks_less_often(
    tmp_path: Path, monkeypatch: Any
) -> None:
    # read inside the worker processes themselves, at the end of a real run: the settings travel
    # with the nannies, not with this process's configuration (which the run leaves as it was)
    distributed = pytest.importorskip(
        "distributed", reason="the fleet extra (dask[distributed]) is not installed"
    )
    import dask

    from ctxhealth.fleet.run import STARTED_CLUSTER

    keys = [
        "distributed.admin.tick.interval",
        "distributed.admin.system-monitor.interval",
        "distributed.worker.memory.monitor-interval",
    ]
    before = {key: dask.config.get(key) for key in keys}
    assert all(before[key] != STARTED_CLUSTER[key] for key in keys)  # the defaults differ
    seen: list[dict[str, Any]] = []
    real = distributed.Client

    class Recording(real):  # type: ignore[misc, valid-type]
        def close(self, *args: Any, **kwargs: Any) -> Any:
            if not seen:
                seen.append(self.run(lambda: {key: dask.config.get(key) for key in keys}))
            return super().close(*args, **kwargs)

    monkeypatch.setattr(distributed, "Client", Recording)
    root = corpus(tmp_path / "sessions")
    run_fleet([root], tmp_path / "d.duckdb", options(), engine="dask", jobs=1)
    (worker,) = seen[0].values()
    assert worker == {key: STARTED_CLUSTER[key] for key in keys}
    assert {key: dask.config.get(key) for key in keys} == before


def test_scheduler_without_the_dask_engine_is_a_usage_error(tmp_path: Path) -> None:
    root = corpus(tmp_path / "sessions")
    result = invoke(["fleet", str(root), "--out", str(tmp_path / "x.duckdb"), "--scheduler", "tcp://x:1"])
    assert result.exit_code == 2
    assert "--engine dask" in result.output


def test_a_store_of_another_schema_version_is_refused(tmp_path: Path) -> None:
    root = corpus(tmp_path / "sessions")
    db = tmp_path / "old.duckdb"
    run_fleet([root], db, options(), jobs=1)
    con = duckdb.connect(str(db))
    con.execute("UPDATE meta SET value = '0' WHERE key = 'schema_version'")
    con.close()
    result = invoke(["fleet", str(root), "--out", str(db)])
    assert result.exit_code == 3
    assert "schema version 0" in result.output and "old.duckdb" in result.output
    result = invoke(["report", "--from", str(db), "-o", str(tmp_path / "r.html")])
    assert result.exit_code == 3


def test_an_unknown_output_kind_is_a_usage_error(tmp_path: Path) -> None:
    result = invoke(["fleet", str(EXAMPLE), "--out", str(tmp_path / "out.csv")])
    assert result.exit_code == 2
    assert "FILE.duckdb" in result.output


@pytest.mark.parametrize("out_name", ["fleet.duckdb", "fleet.parquet"])
def test_report_from_tables_renders_the_overview(tmp_path: Path, out_name: str) -> None:
    root = corpus(tmp_path / "sessions")
    out = tmp_path / out_name
    run_fleet([root], out, options(), jobs=1)
    html_path = tmp_path / "overview.html"
    result = invoke(["report", "--from", str(out), "-o", str(html_path)])
    assert result.exit_code == 0, result.output
    html = html_path.read_text()
    assert "3 session(s) from fleet tables" in html
    # the most unhealthy sessions get a timeline from the turns table: one point per turn
    sections = re.findall(r'<section class="session".*?</section>', html, flags=re.S)
    assert len(sections) == 3
    reports = {str(Path(r["path"]).resolve()): r for r in check_json(root)}
    for section in sections:
        found = re.search(r'<div class="muted">(.*?) · ', section)
        assert found is not None
        assert section.count('class="pt"') == reports[found.group(1)]["turns"]
    one = invoke(["report", "--from", str(out), "-o", str(html_path), "--timelines", "1"])
    assert one.exit_code == 0, one.output
    assert html_path.read_text().count('<section class="session"') == 1
    assert html.count('<tr><td title="') == 3  # one ranked row per session
    assert "proj-a" in html and "proj-b" in html
    assert "cache breaks" in html


def test_the_schema_reference_in_the_docs_is_current() -> None:
    doc = (REPO / "docs" / "fleet.md").read_text()
    assert reference_markdown() in doc, (
        "regenerate the schema section of docs/fleet.md from reference_markdown()"
    )
    assert {t.name for t in TABLES} == {
        "sessions",
        "turns",
        "decisions",
        "tool_calls",
        "cache_breaks",
        "responses",
        "costs",
        "files",
    }


def test_the_dask_settings_the_docs_give_for_ones_own_cluster_are_those_of_a_started_cluster() -> None:
    yaml = pytest.importorskip("yaml", reason="the fleet extra (dask, which needs PyYAML) is not installed")
    from ctxhealth.fleet.run import STARTED_CLUSTER

    doc = (REPO / "docs" / "fleet.md").read_text()
    block = re.search(r"```yaml\n(.*?)```", doc, re.S)
    assert block, "docs/fleet.md gives the started cluster's settings as a YAML block"
    flat: dict[str, Any] = {}

    def walk(node: dict[str, Any], prefix: str) -> None:
        for key, value in node.items():
            if isinstance(value, dict):
                walk(value, f"{prefix}{key}.")
            else:
                flat[prefix + key] = value

    walk(yaml.safe_load(textwrap.dedent(block.group(1))), "")
    assert flat == STARTED_CLUSTER


AGENT_FIXTURES = REPO / "tests" / "fixtures" / "agents"


@pytest.mark.parametrize("out_name", ["fleet.duckdb", "fleet.parquet"])
def test_every_session_of_a_file_holding_several_is_written_and_replaced_together(
    tmp_path: Path, out_name: str
) -> None:
    root = tmp_path / "runs"
    root.mkdir()
    shutil.copy(AGENT_FIXTURES / "tau-bench-results.json", root / "tau.json")
    shutil.copy(AGENT_FIXTURES / "openhands-output.jsonl", root / "output.jsonl")
    shutil.copy(EXAMPLE, root / "one.jsonl")
    reports = check_json(root)
    per_file = {str((root / n).resolve()): 0 for n in ("tau.json", "output.jsonl", "one.jsonl")}
    for r in reports:
        per_file[str(Path(r["path"]).resolve())] += 1
    assert per_file[str((root / "tau.json").resolve())] > 1  # the point of this test
    out = tmp_path / out_name
    first = run_fleet([root], out, options(), jobs=1)
    assert first.sessions == len(reports)
    assert first.counts["sessions"] == len(reports) and first.counts["files"] == 3
    assert first.counts["turns"] == sum(r["turns"] for r in reports)
    again = run_fleet([root], out, options(), jobs=1)
    assert (again.analysed, again.counts) == (0, first.counts)
    # a changed file replaces all its sessions' rows, no more and no fewer
    (root / "tau.json").write_text((root / "tau.json").read_text() + "\n")
    changed = run_fleet([root], out, options(), jobs=1)
    assert changed.analysed == 1 and changed.counts == first.counts


def test_sessions_of_one_file_are_told_apart_in_every_table(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    root.mkdir()
    shutil.copy(AGENT_FIXTURES / "tau-bench-results.json", root / "tau.json")
    db = tmp_path / "fleet.duckdb"
    run_fleet([root], db, options(), jobs=1)
    reports = check_json(root)
    rows = table(db, "SELECT path, session_id, turns FROM sessions ORDER BY path")
    file = str((root / "tau.json").resolve())
    expected = sorted((f"{file}#{r['session_id']}", r["session_id"], r["turns"]) for r in reports)
    assert rows == expected
    turns = dict(table(db, "SELECT path, count(*) FROM turns GROUP BY path"))
    assert turns == {key: n for key, _, n in expected if n}


def test_an_openhands_call_folder_is_one_session_as_check_reads_it(
    openhands_data: Path, tmp_path: Path
) -> None:
    calls = openhands_data / "llm_completions"
    instances = sorted(p for p in calls.iterdir() if p.is_dir())[:2]
    root = tmp_path / "llm_completions"
    for instance in instances:
        shutil.copytree(instance, root / instance.name)
    db = tmp_path / "fleet.duckdb"
    first = run_fleet([root], db, options(), jobs=2)
    reports = check_json(root)
    assert len(reports) == len(instances) == first.sessions
    assert_tables_match_check(db, reports)
    again = run_fleet([root], db, options(), jobs=1)
    assert (again.analysed, again.counts) == (0, first.counts)
    # one more call in a folder re-reads that folder alone, as one session still
    newest = sorted((root / instances[0].name).iterdir())[-1]
    shutil.copy(newest, newest.with_name(newest.stem + "1.json"))
    grown = run_fleet([root], db, options(), jobs=1)
    assert (grown.analysed, grown.counts["sessions"]) == (1, len(instances))
    assert_tables_match_check(db, check_json(root))


def test_the_store_cost_is_unknown_when_no_session_has_a_price(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    shutil.copy(AGENT_FIXTURES / "tau-bench-results.json", runs / "tau.json")  # no usage in the log
    result = invoke(["fleet", str(runs), "--out", str(tmp_path / "f.duckdb"), "-j", "1"])
    assert result.exit_code == 0, result.output
    assert "cost unknown (2 without prices or usage)" in result.stdout


def test_every_column_of_a_session_table_is_a_field_of_its_record() -> None:
    from ctxhealth.fleet.rows import RECORD_TYPES

    for name, record in RECORD_TYPES.items():
        fields = set(record.__struct_fields__)
        columns = BY_NAME[name].names
        assert set(columns) - {"path"} <= fields, name
        if "path" in fields:  # a record that carries its key has exactly the table's columns, in order
            assert record.__struct_fields__ == columns, name


def test_rows_are_mapped_by_name_not_position() -> None:
    """Reordering a record's fields cannot move a value into another column: each row reads the
    table's column names from the record."""
    from datetime import UTC, datetime

    from ctxhealth.analysis import TurnRecord
    from ctxhealth.fleet.rows import table_columns

    def row_of(table: str, record: Any) -> tuple[Any, ...]:
        """The one row the columns of ``record`` make, back as Python values."""
        row = []
        for values, nulls in table_columns(table, [("k", [record])]):
            value = values[0]
            if nulls is not None and nulls[0]:
                value = None
            elif hasattr(value, "item"):  # a NumPy scalar
                value = value.item()
            row.append(value)
        return tuple(row)

    when = datetime(2026, 1, 1, tzinfo=UTC)
    micros = int(when.timestamp()) * 1_000_000  # a timestamp column holds microseconds since the epoch
    turn = TurnRecord(
        3,
        7,
        when,
        1_000,
        "reported",
        5,
        900,
        100,
        0.25,
        "yellow",
        "green",
        0.5,
        "warn",
        "warning",
        0.8,
        2,
        healthy=True,
        reasons="why",
        drifting=False,
    )
    row = row_of("turns", turn)
    assert dict(zip(BY_NAME["turns"].names, row, strict=True)) == {
        "path": "k",
        "turn": 3,
        "message_index": 7,
        "timestamp": micros,
        "fill": 1_000,
        "fill_source": "reported",
        "output_tokens": 5,
        "cache_read_tokens": 900,
        "cache_write_tokens": 100,
        "pressure": 0.25,
        "zone": "yellow",
        "base_zone": "green",
        "risk": 0.5,
        "action": "warn",
        "rule": "warning",
        "drift": 0.8,
        "indicators": 2,
    }
    decision = row_of("decisions", turn)
    assert dict(zip(BY_NAME["decisions"].names, decision, strict=True)) == {
        "path": "k",
        "turn": 3,
        "message_index": 7,
        "timestamp": micros,
        "action": "warn",
        "rule": "warning",
        "healthy": True,
        "reasons": "why",
    }


def test_finished_batches_are_gathered_into_few_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every write has a fixed cost (an insert or a Parquet part per table): the rows of many small
    batches go to the store in one step, and the tables hold every row."""
    from ctxhealth.fleet import run as fleet_run
    from ctxhealth.fleet.store import DuckDBStore

    root = tmp_path / "sessions"
    (root / "p").mkdir(parents=True)
    for i in range(6):
        chat(root / "p" / f"s{i}.json", [1_000 * (i + 1), 2_000 * (i + 1)])
    writes: list[int] = []
    original = DuckDBStore.append

    def counted(self: DuckDBStore, outcomes: Any) -> None:
        writes.append(len(outcomes))
        original(self, outcomes)

    monkeypatch.setattr(DuckDBStore, "append", counted)
    monkeypatch.setattr(fleet_run, "MAX_BATCH_FILES", 1)  # one file per task: six batches
    options = JobOptions(ModelRegistry.default(), default_profile())
    result = run_fleet([root], tmp_path / "f.duckdb", options, jobs=1)
    assert result.sessions == 6 and result.counts["sessions"] == 6
    assert [n for n in writes if n] == [6]


@pytest.mark.parametrize("content", [b"", b"\n", b" \t\r\n\x0b\x0c\n"])
def test_an_empty_or_blank_file_is_skipped_as_empty(tmp_path: Path, content: bytes) -> None:
    # the check reads the bytes as they are (no stripped copy): blank means what bytes.strip() strips
    from ctxhealth.fleet.files import discover
    from ctxhealth.fleet.jobs import analyse_file

    file = tmp_path / "blank.jsonl"
    file.write_bytes(content)
    (entry,) = discover([file])
    outcome = analyse_file(entry, options())
    assert (outcome.status, outcome.reason) == ("skipped", "empty file")
    assert not content.strip()


def test_a_file_with_one_visible_byte_is_not_empty(tmp_path: Path) -> None:
    from ctxhealth.fleet.files import discover
    from ctxhealth.fleet.jobs import analyse_file

    file = tmp_path / "x.jsonl"
    file.write_bytes(b" \n\x85\n")  # \x85 is whitespace to str.strip, not to bytes.strip
    (entry,) = discover([file])
    assert analyse_file(entry, options()).reason != "empty file"


def test_a_started_worker_process_moves_what_it_imported_out_of_the_collectors_reach() -> None:
    import gc

    from ctxhealth.accounting.catalog import default_catalog, set_default_catalog
    from ctxhealth.fleet.run import start_worker

    catalog = default_catalog()
    gc.unfreeze()  # a command run in this process before (the CLI's start-up freezes what it imported)
    assert gc.get_freeze_count() == 0
    try:
        start_worker(catalog, freeze=False)  # the caller's process, a cluster's own workers
        assert gc.get_freeze_count() == 0
        start_worker(catalog)
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
        set_default_catalog(catalog)


def test_dask_tasks_hold_more_files_than_the_local_engines() -> None:
    """Each Dask task costs its event loops a few milliseconds, so the Dask engine's tasks are four
    times a process pool's (bytes and files); both keep the discovery order and every file."""
    from ctxhealth.fleet import run as fleet_run
    from ctxhealth.fleet.files import FileEntry

    size = 1 << 20
    entries = [FileEntry(f"/s/{i}.jsonl", size, i) for i in range(1024)]
    local = fleet_run.batches(entries, 2, fleet_run.BATCH_BYTES, fleet_run.MAX_BATCH_FILES)
    dask = fleet_run.batches(entries, 2, fleet_run.DASK_BATCH_BYTES, fleet_run.DASK_MAX_BATCH_FILES)
    assert [len(b) for b in local] == [8] * 128
    assert [len(b) for b in dask] == [32] * 32
    for grouped in (local, dask):
        assert [e for b in grouped for e in b] == entries
    # a small corpus still gives every worker several tasks
    few = fleet_run.batches(entries[:16], 2, fleet_run.DASK_BATCH_BYTES, fleet_run.DASK_MAX_BATCH_FILES)
    assert len(few) == 8
