"""Logs the real agent CLIs wrote in the conformance suite (``tests/fixtures/agents/<agent>-<version>/``),
read without the CLIs: ``check`` gives what the fake server saw (its ``truth.json``), and the 0.171 / 2.x
details each reader owns."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.truth import FIXTURES, Truth, assert_matches, check_json
from conftest import invoke
from ctxhealth.model import Role
from ctxhealth.sources import read_session

LOGS = ("rollout.jsonl", "chat.jsonl", "chat.json", "traj.json")
RUNS = sorted(p.parent for p in FIXTURES.glob("*-*/*/truth.json"))


def _log(folder: Path) -> Path:
    return next(folder / name for name in LOGS if (folder / name).exists())


@pytest.mark.parametrize("folder", RUNS, ids=[f"{p.parent.name}/{p.name}" for p in RUNS])
def test_recorded_run_reads_as_the_server_saw_it(folder: Path) -> None:
    truth = Truth(**json.loads((folder / "truth.json").read_text("utf-8"))).priced()
    figures = check_json(_log(folder), "--strict")
    assert_matches(figures, truth)
    assert figures["warnings"] == []


def test_every_agent_has_recorded_runs() -> None:
    agents = {p.parent.name.rsplit("-", 1)[0] for p in RUNS}
    assert {"codex", "gemini", "mini-swe-agent"} <= agents


CODEX = FIXTURES / "codex-0.171.0"


def test_codex_remote_compaction_is_encrypted_billed_and_not_a_turn() -> None:
    session = read_session(CODEX / "compaction-default-provider" / "rollout.jsonl")
    summaries = [m.compaction for m in session.messages if m.compaction is not None]
    assert len(summaries) == 1
    summary = summaries[0]
    assert summary.encrypted and summary.text == ""
    truth = json.loads((CODEX / "compaction-default-provider" / "truth.json").read_text("utf-8"))
    assert summary.usage is not None and summary.pre_tokens == truth["compaction_fills"][0]
    assert sum(1 for m in session.messages if m.role is Role.ASSISTANT) == truth["turns"]


def test_codex_local_compaction_keeps_its_summary_text() -> None:
    session = read_session(CODEX / "compaction-custom-provider" / "rollout.jsonl")
    summary = next(m.compaction for m in session.messages if m.compaction is not None)
    assert summary is not None and not summary.encrypted
    assert "SUMMARY:" in summary.text


def test_codex_local_compaction_before_usage_records_is_billed_and_not_a_turn() -> None:
    """0.142 writes a local compaction's reply as an ordinary assistant message with its count (no
    ``compaction_output`` mark, no usage record): it is the summary the ``compacted`` line repeats."""
    folder = FIXTURES / "codex-0.142.4" / "compaction-custom-provider"
    session = read_session(folder / "rollout.jsonl")
    truth = json.loads((folder / "truth.json").read_text("utf-8"))
    summary = next(m.compaction for m in session.messages if m.compaction is not None)
    assert summary is not None and not summary.encrypted and "SUMMARY:" in summary.text
    assert summary.usage is not None and summary.pre_tokens == truth["compaction_fills"][0]
    replies = [m for m in session.messages if m.role is Role.ASSISTANT]
    assert len(replies) == truth["turns"]
    assert all("SUMMARY:" not in m.text for m in replies)


def test_codex_session_meta_gives_system_prompt_and_cwd() -> None:
    session = read_session(CODEX / "tools-resume" / "rollout.jsonl")
    assert session.messages[0].role is Role.SYSTEM
    assert session.messages[0].text.startswith("You are Codex")
    assert session.cwd == "/tmp/conformance/project"
    assert session.instruction.startswith("Fix it.")


def test_mini_swe_agent_2x_tool_messages_are_results() -> None:
    session = read_session(FIXTURES / "mini-swe-agent-2.4.6" / "toolcall" / "traj.json")
    results = [b for m in session.messages for b in m.tool_results]
    assert [r.exit_code for r in results] == [1, 1, 1, 1]
    calls = [c for m in session.messages for c in m.tool_calls]
    assert {r.tool_call_id for r in results} <= {c.id for c in calls}
    assert calls[-1].input == {"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}


GEMINI = FIXTURES / "gemini-0.61.0"


def test_gemini_exit_code_in_output_marks_a_successful_status_failed() -> None:
    session = read_session(GEMINI / "tools" / "chat.jsonl")
    chat = json.loads(
        next(
            line
            for line in (GEMINI / "tools" / "chat.jsonl").open()
            if '"toolCalls"' in line and "ls /non" in line
        )
    )
    assert chat["toolCalls"][0]["status"] == "success"  # what the CLI wrote for a command that exited 2
    results = [r for m in session.messages for r in m.tool_results]
    assert [(r.exit_code, r.is_error) for r in results] == [(2, True), (None, False)]


def test_gemini_harness_context_is_not_the_request() -> None:
    session = read_session(GEMINI / "tools" / "chat.jsonl")
    assert session.messages[0].role is Role.SYSTEM
    assert "<session_context>" in session.messages[0].text
    assert session.instruction.startswith("Fix it.")


def test_gemini_resume_restates_history_without_new_turns_and_compression_is_a_compaction() -> None:
    session = read_session(GEMINI / "compression-resume" / "chat.jsonl")
    compactions = [m.compaction for m in session.messages if m.compaction is not None]
    assert len(compactions) == 1 and "<state_snapshot>" in compactions[0].text
    turns = [m for m in session.messages if m.role is Role.ASSISTANT]
    assert all(m.usage is not None for m in turns)  # the restated, usage-less copies are not turns
    truth = json.loads((GEMINI / "compression-resume" / "truth.json").read_text("utf-8"))
    assert [m.usage.context_tokens for m in turns if m.usage] == truth["fills"]


def test_gemini_older_single_document_format_reads_the_same(tmp_path: Path) -> None:
    """Older CLIs wrote the conversation as one JSON document (``chats/session-*.json``)."""
    source = GEMINI / "tools" / "chat.jsonl"
    lines = [json.loads(line) for line in source.open()]
    header = lines[0]
    records: dict[str, dict[str, object]] = {}
    for obj in lines[1:]:
        if "$set" in obj:
            for message in obj["$set"].get("messages", []):
                records.setdefault(message["id"], message)
        elif "id" in obj:
            records.setdefault(obj["id"], {}).update(obj)
    document = {**header, "messages": list(records.values())}
    path = tmp_path / "session-2025-06-01T10-00-abcdef12.json"
    path.write_text(json.dumps(document, indent=2), "utf-8")
    assert check_json(path, "--strict")["turns"] == check_json(source, "--strict")["turns"] == 3
    assert check_json(path)["fill"] == check_json(source)["fill"]


def test_gemini_project_path_from_projects_json() -> None:
    from ctxhealth.sources.gemini_cli import project_path

    projects = json.dumps({"projects": {"/home/ana/shop": "shop", "/home/ana/blog": "blog"}}).encode()
    assert project_path("/home/ana/.gemini/tmp/shop/chats/session-x.jsonl", projects) == "/home/ana/shop"
    assert project_path("/home/ana/.gemini/tmp/other/chats/session-x.jsonl", projects) is None


def test_audit_names_a_codex_session_by_the_directory_it_ran_in() -> None:

    done = invoke(["audit", "--json", str(CODEX / "tools-resume" / "rollout.jsonl")])
    totals = json.loads(done.stdout.splitlines()[-1])
    projects = next(v for k, v in _walk(totals) if k == "by_project")
    assert list(projects) == ["project"]  # session_meta.cwd, not the rollout's date folder


def _walk(value: object) -> list[tuple[str, object]]:
    found: list[tuple[str, object]] = []
    if isinstance(value, dict):
        for key, item in value.items():
            found.append((key, item))
            found.extend(_walk(item))
    return found


def test_check_says_a_compaction_summary_is_encrypted_not_empty() -> None:
    figures = check_json(CODEX / "compaction-default-provider" / "rollout.jsonl")
    assert [c.get("summary") for c in figures["compactions"]] == ["encrypted"]
    local = check_json(CODEX / "compaction-custom-provider" / "rollout.jsonl")
    assert [c.get("summary") for c in local["compactions"]] == [None]


def test_a_recovered_codex_request_keeps_the_system_prompt() -> None:

    rollout = CODEX / "tools-resume" / "rollout.jsonl"
    done = invoke(["recover", "--strategy", "restart", "--format", "openai", "--json", str(rollout)])
    assert done.exit_code == 0, done.output
    first = json.loads(done.stdout)["messages"][0]
    meta = json.loads(rollout.open().readline())["payload"]["base_instructions"]["text"]
    assert first["role"] == "system" and first["content"].startswith(meta[:200])


def test_gemini_error_and_cancelled_statuses_are_failures(tmp_path: Path) -> None:
    header = {"sessionId": "s", "projectHash": "h", "startTime": "t", "lastUpdated": "t", "kind": "main"}
    calls = [
        {"id": f"c{k}", "name": "run_shell_command", "args": {"command": "make"}, "status": status}
        for k, status in enumerate(("error", "cancelled", "success"))
    ]
    calls[0]["result"] = [
        {"functionResponse": {"id": "c0", "name": "run_shell_command", "response": {"error": "x"}}}
    ]
    calls[2]["result"] = [
        {"functionResponse": {"id": "c2", "name": "run_shell_command", "response": {"output": "ok"}}}
    ]
    records = [
        header,
        {"id": "u1", "timestamp": "t", "type": "user", "content": [{"text": "build it"}]},
        {
            "id": "g1",
            "timestamp": "t",
            "type": "gemini",
            "content": "",
            "model": "gemini-2.5-pro",
            "toolCalls": calls,
        },
    ]
    path = tmp_path / "session-2026-01-01T00-00-abcdef12.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
    session = read_session(path)
    assert [r.is_error for m in session.messages for r in m.tool_results] == [True, True, False]
