"""One log, one reading: every surface that assesses a session reads the same final zone, action,
pressure and fill from it, on the logs the real agents wrote (the recorded fixtures of Claude Code
2.1, Codex CLI 0.171, Gemini CLI 0.61 and mini-swe-agent 2.4): ``check`` (and the MCP tool, which
calls the same function), the fleet's ``sessions`` row, ``ctxhealth watch`` and the hooks' saved
assessment after a ``Stop``. A surface that took another window or another account of the same log
would advise otherwise (the Codex hooks and watch took the registry's 1M window for gpt-5.5, where
the rollout states 258,400)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ctxhealth.accounting.registry import ModelRegistry
from ctxhealth.analysis import analyse_session
from ctxhealth.integrations.claude_code.agents import Agent
from ctxhealth.integrations.claude_code.hooks import run_hook
from ctxhealth.integrations.claude_code.tailstate import load_counters
from ctxhealth.integrations.watch import open_watch
from ctxhealth.policy.profile import default_profile
from ctxhealth.report.assessed import check_session
from ctxhealth.sources import read_session

AGENTS = Path(__file__).parent / "fixtures" / "agents"
LOGS = sorted(
    [
        *AGENTS.glob("claude-code-*/*.jsonl"),
        *AGENTS.glob("codex-*/*/rollout.jsonl"),
        *AGENTS.glob("gemini-*/*/chat.jsonl"),
        *AGENTS.glob("mini-swe-agent-*/*/traj.json"),
    ]
)
HOOKED = {
    "claude-code": (Agent.CLAUDE_CODE, "Stop"),
    "codex": (Agent.CODEX, "Stop"),
    "gemini-cli": (Agent.GEMINI, "AfterAgent"),
}

Reading = tuple[str, str, float, int]


def _hooks(log: Path, tmp: Path, session_id: str | None, format: str) -> Reading:
    """The assessment the hooks save after the turn's last hook, read from the copied log."""
    agent, event = HOOKED[format]
    copy = tmp / log.parent.name / log.name
    copy.parent.mkdir(parents=True)
    shutil.copy(log, copy)
    if (log.parent / "projects.json").exists():
        shutil.copy(log.parent / "projects.json", copy.parent / "projects.json")
    payload = {
        "session_id": session_id or "s",
        "transcript_path": str(copy),
        "cwd": str(tmp),
        "hook_event_name": event,
    }
    result = run_hook(event, json.dumps(payload).encode(), home=str(tmp / "home"), agent=agent)
    assert result.stderr == "", result.stderr
    counters = load_counters(str(tmp / "home"), str(copy))
    assert counters is not None and counters.assessment is not None
    a = counters.assessment
    return a["zone"], a["action"], round(a["pressure"], 4), a["fill"]


@pytest.mark.parametrize("log", LOGS, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}/{p.name}")
def test_every_surface_reads_a_real_agents_log_alike(log: Path, tmp_path: Path) -> None:
    registry, profile = ModelRegistry.default(), default_profile()
    session = read_session(log)
    report = check_session(session, registry=registry, profile=profile)
    readings: dict[str, Reading] = {
        "check": (report["zone"], report["action"], round(report["pressure"], 4), report["fill"]["current"])
    }
    row = analyse_session(session, registry=registry, profile=profile, events=False).session_row(str(log), 0)
    assert row.zone is not None and row.action is not None and row.pressure is not None
    readings["fleet"] = (row.zone, row.action, round(row.pressure, 4), row.fill_current)
    watch = open_watch(log)
    assert watch.poll() > 0 and watch.assessment is not None
    w = watch.assessment
    readings["watch"] = (w.zone.value, w.action.value, round(w.pressure, 4), w.fill)
    if session.format.value in HOOKED:
        readings["hooks"] = _hooks(log, tmp_path, session.session_id, session.format.value)
    assert len(set(readings.values())) == 1, readings


@pytest.mark.parametrize(
    "log", [p for p in LOGS if p.name in ("rollout.jsonl", "chat.jsonl")], ids=lambda p: p.parent.name
)
def test_the_hooks_count_turns_and_cost_as_check_does(log: Path, tmp_path: Path) -> None:
    # a Codex compaction's own request is billed though it is no turn (the hooks left it out: the
    # compaction rollouts cost $0.153 and $0.119 in the hooks, $0.227 and $0.145 in check)
    session = read_session(log)
    report = check_session(session, registry=ModelRegistry.default(), profile=default_profile())
    _hooks(log, tmp_path, session.session_id, session.format.value)
    counters = load_counters(str(tmp_path / "home"), str(tmp_path / log.parent.name / log.name))
    assert counters is not None and counters.cost_usd is not None and report["cost_usd"] is not None
    assert (counters.turns, round(counters.cost_usd, 6)) == (report["turns"], round(report["cost_usd"], 6))


CLAUDE_LOGS = [p for p in LOGS if p.parent.name.startswith("claude-code")]


@pytest.mark.parametrize("log", CLAUDE_LOGS, ids=lambda p: p.name)
def test_a_claude_code_watch_scores_risk_with_checks_model(log: Path) -> None:
    # the watch's own monitor took the profile's risk model (fitted on mini-swe-agent runs) where
    # check scores a Claude Code log with the fill fallback: risk 0.1431 for check's 0.2218
    report = check_session(read_session(log), registry=ModelRegistry.default(), profile=default_profile())
    watch = open_watch(log)
    assert watch.poll() > 0 and watch.assessment is not None and watch.assessment.risk is not None
    assert watch.monitor.risk_model == report["risk_model"]
    assert round(watch.assessment.risk, 4) == report["risk"]
