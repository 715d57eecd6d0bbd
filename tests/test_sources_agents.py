"""Readers for SWE-agent, OpenHands and tau-bench logs: our fixtures (written from the formats'
documentation and source) and the real samples, checked against plain JSON computations."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from conftest import FIXTURES
from ctxhealth.errors import TranscriptError
from ctxhealth.model import CompactionSummary, Format, Role, Session, TextBlock, ToolResult
from ctxhealth.sources import read_session, read_sessions
from ctxhealth.sources.reader import detect_format

AGENTS = FIXTURES / "agents"


def _calls(session: Session) -> list[Any]:
    return [c for m in session.messages for c in m.tool_calls]


def _results(session: Session) -> list[ToolResult]:
    return [r for m in session.messages for r in m.tool_results]


# --- SWE-agent ------------------------------------------------------------------------------------


def test_swe_agent_0x_actions_become_tool_calls_and_observations_their_results() -> None:
    session = read_session(AGENTS / "swe-agent-0.x.traj")
    assert session.format is Format.SWE_AGENT
    assert session.session_id == "swe-agent-0.x"
    assert session.warnings == ()
    assert [c.name for c in _calls(session)] == ["find_file", "open", "edit", "python", "submit"]
    results = _results(session)
    # The submission is never shown to the model, so the last call has no result.
    assert len(results) == 4
    assert [r.is_error for r in results] == [False, False, True, True]
    ids = {c.id for c in _calls(session)}
    assert {r.tool_call_id for r in results} <= ids
    # The demonstration is part of what the model saw: kept as a user message.
    users = [m.text for m in session.messages if m.role is Role.USER]
    assert users[0].startswith("Here is a demonstration")
    assert session.instruction.startswith("Here is a demonstration")


def test_swe_agent_1x_function_calls_pair_by_id_and_other_agents_are_sidechains() -> None:
    session = read_session(AGENTS / "swe-agent-1.x-function-calling.traj")
    assert session.model == "claude-3-7-sonnet-20250219"
    calls = _calls(session)
    assert [c.name for c in calls] == ["str_replace_editor"] * 2 + ["bash", "str_replace_editor", "bash"]
    assert calls[2].input == {"command": "cd /testbed && python -m pytest tests/test_csv.py -q"}
    results = _results(session)
    assert [r.tool_call_id for r in results] == [c.id for c in calls]
    assert [r.is_error for r in results] == [False, False, True, False, False]
    assert not results[0].text.startswith("OBSERVATION")
    assert session.assistant_turns == 5
    (reviewer,) = session.sidechains
    assert reviewer.session_id.endswith(":reviewer")
    assert [m.role for m in reviewer.messages] == [Role.SYSTEM, Role.USER, Role.ASSISTANT]


def test_swe_agent_without_history_reads_the_steps(tmp_path: Path) -> None:
    doc = json.loads((AGENTS / "swe-agent-0.x.traj").read_text())
    del doc["history"]
    path = tmp_path / "steps-only.traj"
    path.write_text(json.dumps(doc))
    session = read_session(path)
    assert session.format is Format.SWE_AGENT
    assert len(_calls(session)) == len(doc["trajectory"])
    assert len(_results(session)) == len(doc["trajectory"])
    assert sum(r.is_error for r in _results(session)) == 2


# --- tau-bench ------------------------------------------------------------------------------------


def test_tau_bench_file_is_one_session_per_run_with_reward_as_outcome() -> None:
    sessions = list(read_sessions([AGENTS / "tau-bench-results.json"]))
    assert [s.session_id for s in sessions] == ["task-7-trial-0", "task-7-trial-1"]
    assert [s.outcome for s in sessions] == [1.0, 0.0]
    assert {s.task_id for s in sessions} == {"7"}
    assert [[r.is_error for r in _results(s)] for s in sessions] == [[False, False], [False, True]]


def test_tau_bench_real_runs_match_the_json(tau_bench_data: Path) -> None:
    path = tau_bench_data / "gpt-4o-airline.json"
    runs = json.loads(path.read_text())
    sessions = list(read_sessions([path]))
    assert len(sessions) == len(runs) == 200
    for run, session in zip(runs, sessions, strict=True):
        assert session.session_id == f"task-{run['task_id']}-trial-{run['trial']}"
        assert session.outcome == run["reward"]
        traj = run["traj"]
        assert len(_calls(session)) == sum(len(m.get("tool_calls") or []) for m in traj)
        errors = sum(1 for m in traj if m["role"] == "tool" and re.match(r"\s*error\b", m["content"], re.I))
        assert sum(r.is_error for r in _results(session)) == errors
        assert session.assistant_turns == sum(1 for m in traj if m["role"] == "assistant")
    assert sum(s.outcome == 1.0 for s in sessions) == 84


# --- OpenHands ------------------------------------------------------------------------------------


def _plain_calls(folder: Path) -> list[dict[str, Any]]:
    docs = [json.loads(f.read_text()) for f in folder.glob("*.json")]
    return sorted(docs, key=lambda d: d["timestamp"])


def test_openhands_completion_folders_report_fill_per_call(openhands_data: Path) -> None:
    root = openhands_data / "llm_completions"
    sessions = {s.session_id: s for s in read_sessions([root])}
    labels = (openhands_data / "labels.csv").read_text().split()[1:]
    assert sorted(sessions) == sorted(line.split(",")[0] for line in labels)
    for instance, session in sessions.items():
        calls = _plain_calls(root / instance)
        assert session.format is Format.OPENHANDS
        assert session.assistant_turns == len(calls)
        reported = [m.usage.context_tokens for m in session.messages if m.usage is not None]
        assert reported == [c["response"]["usage"]["prompt_tokens"] for c in calls]
        writes = [m.usage.cache_creation_tokens for m in session.messages if m.usage is not None]
        assert writes == [c["response"]["usage"].get("cache_creation_input_tokens") or 0 for c in calls]
        called = sum(len(c["response"]["choices"][0]["message"].get("tool_calls") or []) for c in calls)
        assert len(_calls(session)) == called


def test_openhands_tool_failures_come_from_exit_codes_and_editor_errors(openhands_data: Path) -> None:
    folder = openhands_data / "llm_completions" / "django__django-11149"
    session = read_session(folder)
    last = _plain_calls(folder)[-1]["messages"]
    failed = 0
    for m in last:
        if m["role"] != "tool":
            continue
        text = m["content"][0]["text"] if isinstance(m["content"], list) else m["content"]
        code = re.search(r"\[Command finished with exit code (-?\d+)\]\s*$", text)
        failed += bool(code and int(code.group(1)) > 0) or text.lstrip().startswith("ERROR:")
    # The session's results are those of the last call's context (no rewrite in this run) ...
    assert not any(m.compaction for m in session.messages)
    assert sum(r.is_error for r in _results(session)) == failed > 0


def test_openhands_restarted_context_is_a_new_live_context(openhands_data: Path) -> None:
    folder = openhands_data / "llm_completions" / "astropy__astropy-13453"
    session = read_session(folder)
    marks = [m for m in session.messages if m.compaction is not None]
    assert len(marks) == 1
    assert isinstance(marks[0].blocks[0], CompactionSummary)
    # Every call is one turn; the re-sent system prompt is not read twice.
    assert session.assistant_turns == len(_plain_calls(folder))
    assert sum(m.role is Role.SYSTEM for m in session.messages) == 1


def test_a_completion_file_larger_than_the_head_is_detected_by_its_tail(tmp_path: Path) -> None:
    doc = {
        "messages": [
            {"role": "system", "content": "x" * 100_000},
            {
                "role": "user",
                "content": [{"type": "text", "text": "fix it", "cache_control": {"type": "ephemeral"}}],
            },
        ],
        "response": {
            "id": "chatcmpl-1",
            "model": "litellm_proxy/claude-3-5-sonnet-20241022",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}],
            "usage": {"prompt_tokens": 25_010, "completion_tokens": 3},
        },
        "args": [],
        "kwargs": {"tools": []},
        "timestamp": 1733343821.0,
        "cost": 0.07,
    }
    folder = tmp_path / "llm_completions" / "repo__repo-1"
    folder.mkdir(parents=True)
    raw = json.dumps(doc).encode()
    assert detect_format(raw[:65536]) is not Format.OPENHANDS
    (folder / "model-1733343821.0.json").write_bytes(raw)
    (session,) = read_sessions([tmp_path])
    assert session.format is Format.OPENHANDS
    assert session.session_id == "repo__repo-1"
    assert [m.usage.context_tokens for m in session.messages if m.usage] == [25_010]


def test_openhands_output_jsonl_events_with_outcomes() -> None:
    first, second = read_sessions([AGENTS / "openhands-output.jsonl"])
    assert (first.session_id, first.outcome) == ("django__django-00001", 1.0)
    assert (second.session_id, second.outcome) == ("django__django-00002", 0.0)
    assert first.model == "claude-3-5-sonnet-20241022"
    # The edit and the view asked for in one response are one assistant message with its usage.
    merged = [m for m in first.messages if m.role is Role.ASSISTANT and len(m.tool_calls) == 2]
    assert len(merged) == 1 and merged[0].usage is not None
    assert merged[0].usage.context_tokens == 5600
    assert [r.is_error for r in _results(first)] == [False, True, False, False]
    assert [r.is_error for r in _results(second)] == [False, True, True, False, False]
    calls = {c.id for c in _calls(first)}
    assert {r.tool_call_id for r in _results(first)} <= calls
    assert isinstance(first.messages[0].blocks[0], TextBlock)
    assert first.instruction.startswith("<uploaded_files>")


_AGENT_LOGS = sorted(
    str(p.relative_to(AGENTS))
    for p in AGENTS.rglob("*")
    if p.is_file()
    and p.name not in ("truth.json", "projects.json", "events.jsonl")
    and not p.name.endswith((".truth.json", ".meta.json"))
)
"""Every agent fixture, and every log a real agent CLI wrote in the conformance suite (``<agent>-<ver>/``),
but the event streams a CLI prints (``events.jsonl``: no transcripts, refused as such in
``test_bad_input.py``)."""


@pytest.mark.parametrize("name", _AGENT_LOGS)
def test_every_agent_fixture_survives_a_cut_and_reads_leniently(name: str, tmp_path: Path) -> None:
    raw = (AGENTS / name).read_bytes()
    for cut in (len(raw) // 3, len(raw) // 2, len(raw) - 7):
        target = tmp_path / f"cut-{cut}-{Path(name).name}"
        target.write_bytes(raw[:cut])
        fmt = detect_format(raw[:65536])
        assert fmt is not None
        try:
            sessions = list(read_sessions([target], format=fmt))
        except TranscriptError as exc:
            # a cut that leaves no whole message is bad input, said as such
            assert f"no readable message as {fmt.value}" in exc.message, exc.message
            continue
        assert sessions, name
        assert all(s.format is fmt for s in sessions)
        assert any(s.messages for s in sessions)


def test_check_reads_every_agent_fixture_from_a_folder(tmp_path: Path) -> None:
    for item in AGENTS.iterdir():
        if item.is_file():  # folders hold the recorded transcripts of a real CLI (tests/conformance)
            shutil.copy(item, tmp_path / item.name)
    sessions = list(read_sessions([tmp_path]))
    assert sorted({s.format.value for s in sessions}) == ["openhands", "swe-agent", "tau-bench"]
    assert len(sessions) == 2 + 2 + 2
