"""Risk across agents: labels from logs and SWE-bench reports, folds grouped by task, per-agent
validation with leave-one-agent-out, per-format risk models, and features a log cannot report
being missing rather than zero."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES, invoke
from ctxhealth.errors import ConfigError
from ctxhealth.evaluation import (
    CANDIDATE_FEATURES,
    POOLED,
    LabelledRun,
    collect_runs,
    label_of,
    read_labels,
    read_swebench_report,
    run_name,
    stratified_folds,
    task_folds,
    validate_by_agent,
)
from ctxhealth.model import Message, Role, TextBlock, Usage
from ctxhealth.monitor import Monitor
from ctxhealth.policy.profile import Profile, default_profile, load_profile
from ctxhealth.sources import read_sessions

AGENTS = FIXTURES / "agents"


def test_labels_csv_may_name_instances(tmp_path: Path) -> None:
    f = tmp_path / "labels.csv"
    f.write_text("instance,resolved\ndjango__django-1,1\ndjango__django-2,0\n")
    assert read_labels(str(f)) == {"django__django-1": 0, "django__django-2": 1}


def test_swebench_reports_in_each_shape(tmp_path: Path) -> None:
    summary = tmp_path / "summary.json"
    summary.write_text(json.dumps({"resolved_ids": ["a"], "unresolved_ids": ["b"], "error_ids": ["c"]}))
    assert read_swebench_report(str(summary)) == {"a": 0, "b": 1, "c": 1}
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"generated": ["a", "b"], "applied": ["a", "b"], "resolved": ["b"]}))
    assert read_swebench_report(str(old)) == {"a": 1, "b": 0}
    per_instance = tmp_path / "report.json"
    per_instance.write_text(json.dumps({"a": {"resolved": True}, "b": {"resolved": False}}))
    assert read_swebench_report(str(per_instance)) == {"a": 0, "b": 1}
    empty = tmp_path / "empty.json"
    empty.write_text("{}")
    with pytest.raises(ConfigError):
        read_swebench_report(str(empty))


def test_a_label_is_found_by_file_stem_session_or_the_log_outcome() -> None:
    tau = list(read_sessions([AGENTS / "tau-bench-results.json"]))
    assert [label_of(s, None) for s in tau] == [0, 1]
    assert [run_name(s) for s in tau] == [
        "tau-bench-results.json#task-7-trial-0",
        "tau-bench-results.json#task-7-trial-1",
    ]
    # a label given for the run overrides what the log says
    assert label_of(tau[0], {"tau-bench-results.json#task-7-trial-0": 1}) == 1
    (traj,) = read_sessions([AGENTS / "swe-agent-0.x.traj"])
    assert label_of(traj, None) is None
    assert label_of(traj, {"swe-agent-0.x": 0}) == 0


def test_trials_of_one_task_share_a_fold() -> None:
    labels = [i % 2 for i in range(40)]
    tasks = [f"t{i // 4}" for i in range(40)]
    folds = task_folds(labels, tasks, 5, seed=3)
    for t in set(tasks):
        assert len({f for f, task in zip(folds, tasks, strict=True) if task == t}) == 1
    # every run its own task: exactly the plain stratified folds
    unique = [f"r{i}" for i in range(40)]
    assert task_folds(labels, unique, 5, seed=3) == stratified_folds(labels, 5, seed=3)


def _runs(agent: str, n: int, seed: int, flip: bool = False) -> list[LabelledRun]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        failed = int(i % 3 == 0)
        signal = failed if not flip else 1 - failed
        feats = {}
        for p in (0.25, 0.5, 0.75, 1.0):
            row = {f: rng.random() * 10 for f in CANDIDATE_FEATURES}
            row["peak_fill"] = p * (20000 + 30000 * signal + 15000 * rng.random())
            row["turns"] = 10 + 30 * p
            feats[p] = row
        out.append(LabelledRun(f"{agent}-{i}.json", failed, feats, agent=agent))
    return out


def test_validate_by_agent_gives_each_agent_its_table_and_a_held_out_fit() -> None:
    runs = _runs("a", 36, 1) + _runs("b", 36, 2)
    model = default_profile().risk
    assert model is not None
    asked: list[str] = []

    def model_for(agent: str):  # type: ignore[no-untyped-def]
        asked.append(agent)
        return model

    results = validate_by_agent(runs, model_for, folds=3, rounds=50)
    assert [r.agent for r in results] == ["a", "b", POOLED]
    assert {"a", "b", POOLED} <= set(asked)
    for r in results[:2]:
        assert r.within.runs == 36 and r.held_out is not None and r.held_out.runs == 36
        # the other agent's fit carries over: fill separates the classes the same way in both
        assert r.held_out.risk[1.0].auc > 0.7
    assert results[2].held_out is None and results[2].within.runs == 72


def test_a_held_out_agent_whose_signal_runs_the_other_way_scores_below_chance() -> None:
    runs = _runs("a", 36, 1) + _runs("flipped", 36, 2, flip=True)
    model = default_profile().risk
    assert model is not None
    results = {r.agent: r for r in validate_by_agent(runs, model, folds=3, rounds=50)}
    held = results["flipped"].held_out
    assert held is not None and held.risk[1.0].auc < 0.3


def test_a_profile_scores_each_format_with_its_own_model(tmp_path: Path) -> None:
    base = default_profile()
    assert "tau-bench" in base.risk_by_format
    tau = base.for_format("tau-bench")
    assert tau.risk is base.risk_by_format["tau-bench"] and tau.risk is not base.risk
    assert base.for_format("mini-swe-agent") is base  # the format the shipped model was fitted on
    # no model was fitted on Claude Code sessions: they are scored by peak fill alone
    assert base.for_format("claude-code").risk.features == ("peak_fill",)  # type: ignore[union-attr]
    # round trip through a profile file
    path = tmp_path / "p.json"
    path.write_text(json.dumps(base.to_dict()))
    again = load_profile(path)
    assert again.risk_by_format["tau-bench"].weights == base.risk_by_format["tau-bench"].weights
    with pytest.raises(ConfigError):
        Profile().with_overrides({"risk_by_format": 3})


def test_the_monitor_picks_the_model_of_the_session_format() -> None:
    (session, _) = read_sessions([AGENTS / "tau-bench-results.json"])
    by_format = Monitor(profile=default_profile()).observe_session(session)
    tau_only = default_profile().for_format("tau-bench")
    plain = Monitor(profile=Profile(risk=tau_only.risk)).observe_session(session)
    other = Monitor(profile=Profile(risk=default_profile().risk)).observe_session(session)
    assert by_format.risk == plain.risk
    assert by_format.risk != other.risk


def test_output_tokens_are_missing_when_no_response_reports_usage() -> None:
    m = Monitor(profile=default_profile())
    m.observe(Message(Role.USER, (TextBlock("fix it"),)))
    m.observe(Message(Role.ASSISTANT, (TextBlock("on it"),)))
    assert "output_tokens" not in m.features() and "output_per_turn" not in m.features()
    m.observe(Message(Role.ASSISTANT, (TextBlock("done"),), usage=Usage(input_tokens=10, output_tokens=7)))
    assert m.features()["output_tokens"] == 7.0


def test_collect_runs_reads_outcomes_from_the_log_and_groups_trials(tmp_path: Path) -> None:
    shutil.copy(AGENTS / "tau-bench-results.json", tmp_path / "tau.json")
    shutil.copy(AGENTS / "openhands-output.jsonl", tmp_path / "output.jsonl")
    runs = collect_runs([str(tmp_path)])
    assert sorted(r.agent for r in runs) == ["openhands", "openhands", "tau-bench", "tau-bench"]
    tau = [r for r in runs if r.agent == "tau-bench"]
    assert len({r.group for r in tau}) == 1 and len({r.name for r in tau}) == 2
    assert sorted(r.failed for r in runs) == [0, 0, 1, 1]


def test_validate_and_calibrate_by_agent_from_the_command_line(tau_bench_data: Path, tmp_path: Path) -> None:
    out = tmp_path / "profile.json"
    r = invoke(
        ["calibrate", str(tau_bench_data), "--by", "agent", "--folds", "3", "--out", str(out), "--json"],
    )
    assert r.exit_code == 0, r.output
    summary = json.loads(r.output)
    assert list(summary["fits"]) == ["tau-bench"] and summary["fits"]["tau-bench"]["runs"] == 200
    profile = load_profile(out)
    assert set(profile.risk_by_format) == {"tau-bench"}
    r = invoke(["validate", str(tau_bench_data), "--by", "agent", "--folds", "3", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    (agent,) = doc["agents"]
    assert agent["agent"] == "tau-bench" and agent["within"]["runs"] == 200
    assert agent["within"]["failed"] == 116 and agent["leave_one_agent_out"] is None


def test_validate_says_how_many_sessions_it_left_out_for_want_of_a_label(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    shutil.copy(FIXTURES / "agents" / "tau-bench-results.json", runs / "tau.json")  # labelled by reward
    shutil.copy(FIXTURES / "openai-chat.json", runs / "chat.json")  # no outcome recorded
    result = invoke(["validate", "--no-cv", str(runs)])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("2 runs")
    assert "1 session without a label left out" in result.stderr
    assert "left out: chat.json" in result.stderr  # the name a --labels CSV row would match
