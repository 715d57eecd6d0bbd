"""Bad input is a clear error (or a warning naming file:line), never a silent "healthy".

Each test feeds one kind of damage that real files show (unreadable content, a wrong --format, a
skipped file in a folder, invalid UTF-8, a first line longer than the detection head, a line
written twice, usage fields of the wrong type, a FIFO where a file belongs, a state field of the
wrong type) and checks what the reader or command says about it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import FIXTURES, REPO_ROOT, SHARED_DATA, invoke
from ctxhealth.errors import EnvironmentProblem, TranscriptError
from ctxhealth.model import Format, Role
from ctxhealth.sources import read_session
from ctxhealth.sources.reader import read_data
from ctxhealth.state.startup import inspect
from ctxhealth.state.status import Status
from ctxhealth.state.store import StateStore

EXAMPLE = REPO_ROOT / "examples" / "claude-code-session.jsonl"


def _run(*args: str, input: bytes | None = None) -> Any:
    return invoke(list(args), input=input)


# --------------------------------------------------------------------------- nothing readable


def test_a_file_with_no_readable_message_is_bad_input_with_the_readers_reason(tmp_path: Path) -> None:
    runs = tmp_path / "runs.json"  # a chat list in which no entry has a role a reader knows
    runs.write_text(json.dumps([{"role": "narrator", "content": f"scene {i}"} for i in range(3)]))
    result = _run("check", str(runs))
    assert result.exit_code == 3
    assert "no readable message as openai-chat" in result.output and "unknown role" in result.output
    junk = tmp_path / "junk.bin"
    junk.write_bytes(bytes(range(256)) * 8)
    forced = _run("check", "--format", "mini-swe-agent", str(junk))
    assert forced.exit_code == 3 and "no readable message as mini-swe-agent: invalid JSON" in forced.output


def test_skipped_files_in_a_folder_are_listed_and_counted(tmp_path: Path) -> None:
    (tmp_path / "session.jsonl").write_bytes(EXAMPLE.read_bytes())
    (tmp_path / "runs.json").write_text(json.dumps([{"role": "narrator", "content": "scene"}]))
    (tmp_path / "notes.txt").write_text("not a transcript\n")
    (tmp_path / "empty.jsonl").write_text("")
    result = _run("check", "--json", str(tmp_path))
    # runs.json looked like a chat list but has nothing readable: bad input, so exit 3 once the
    # rest of the folder was checked
    assert result.exit_code == 3, result.output
    skipped = [
        json.loads(line)["skipped"]
        for line in result.stdout.splitlines()
        if line.startswith("{") and "skipped" in json.loads(line)
    ]
    assert sorted(Path(s["path"]).name for s in skipped) == ["empty.jsonl", "notes.txt", "runs.json"]
    assert {Path(s["path"]).name: s["reason"] for s in skipped}["runs.json"].startswith("no readable message")
    for s in skipped:
        assert f"skipped {s['path']}: {s['reason']}" in result.stderr
    sessions = [line for line in result.stdout.splitlines() if '"fill"' in line]
    assert len(sessions) == 1


def test_check_text_names_each_skipped_file_once(tmp_path: Path) -> None:
    """The text output's summary lists the skipped files; they are not also printed as they happen."""
    (tmp_path / "session.jsonl").write_bytes(EXAMPLE.read_bytes())
    (tmp_path / "notes.txt").write_text("not a transcript\n")
    result = _run("check", str(tmp_path))
    everything = result.stdout + result.stderr
    assert everything.count("notes.txt") == 1, everything
    assert "skipped      1 file" in result.stdout


# --------------------------------------------------------------------------- warnings on stderr


def test_recover_checkpoint_and_retention_print_the_readers_warnings(tmp_path: Path) -> None:
    broken = tmp_path / "s.jsonl"
    lines = EXAMPLE.read_bytes().splitlines()
    broken.write_bytes(b"\n".join([*lines[:5], b"{not json", *lines[5:]]) + b"\n")
    expected = f"{broken}:6: invalid JSON"
    for args in (
        ["recover", str(broken), "--strategy", "truncate"],
        ["retention", str(broken)],
        ["checkpoint", str(broken), "--root", str(tmp_path / "root"), "--no-ledger"],
    ):
        result = _run(*args)
        assert result.exit_code == 0, result.output
        assert expected in result.stderr, args
        assert expected not in result.stdout


# --------------------------------------------------------------------------- bytes and JSON


def test_one_invalid_utf8_byte_loses_only_that_byte(tmp_path: Path) -> None:
    clean = read_session(EXAMPLE)
    lines = EXAMPLE.read_bytes().splitlines()
    marker = b'"type":"text","text":"'
    target = next(i for i, line in enumerate(lines) if marker in line)
    damaged = lines[target].replace(marker, marker + b"ab\xffcd", 1)
    data = b"\n".join([*lines[:target], damaged, *lines[target + 1 :]])
    session = read_data(data, "s.jsonl")
    assert len(session.messages) == len(clean.messages)
    (warning,) = session.warnings
    assert warning.line == target + 1 and "invalid UTF-8" in warning.reason
    assert str(warning).startswith(f"s.jsonl:{target + 1}: ")
    assert any("ab\ufffdcd" in m.text for m in session.messages)


def test_detection_reads_a_first_line_longer_than_the_head(tmp_path: Path) -> None:
    # the message before the ids: the first 64 KB hold no key that names the format
    row = {"type": "user", "message": {"role": "user", "content": "x" * 100_000}}
    row |= {"uuid": "u1", "parentUuid": None, "sessionId": "s1"}
    path = tmp_path / "long.jsonl"
    path.write_text(json.dumps(row) + "\n")
    assert read_session(path).format is Format.CLAUDE_CODE
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "long.jsonl").write_text(json.dumps(row) + "\n")
    assert [s.format for s in _sessions(folder)] == [Format.CLAUDE_CODE]
    # a whole chat document of 50 MB on one line, its one long message first
    doc = {
        "messages": [{"content": "y" * 50_000_000, "role": "user"}, {"role": "assistant", "content": "ok"}]
    }
    big = tmp_path / "big.json"
    big.write_text(json.dumps(doc))
    session = read_session(big)
    assert session.format in (Format.OPENAI_CHAT, Format.ANTHROPIC_MESSAGES)
    assert [m.role for m in session.messages] == [Role.USER, Role.ASSISTANT]


def _sessions(folder: Path) -> list[Any]:
    from ctxhealth.sources import read_sessions

    return list(read_sessions([folder]))


def test_a_line_written_again_does_not_cut_the_thread() -> None:
    lines = EXAMPLE.read_bytes().splitlines()
    clean = read_data(EXAMPLE.read_bytes(), "s.jsonl")
    early = next(i for i, line in enumerate(lines) if b'"type":"assistant"' in line)
    session = read_data(b"\n".join([*lines, lines[early]]), "s.jsonl")
    assert [m.text for m in session.messages] == [m.text for m in clean.messages]
    assert session.assistant_turns == clean.assistant_turns
    (warning,) = session.warnings
    assert warning.line == len(lines) + 1 and "repeat the uuid of an earlier line" in warning.reason


def test_a_line_written_again_in_a_long_real_session_keeps_every_turn() -> None:
    path = SHARED_DATA / "claude-code"
    found = sorted(path.glob("*/f67ab274-*.jsonl")) if path.is_dir() else []
    if not found:
        pytest.skip(f"real Claude Code transcripts not found at {path}")
    raw = found[0].read_bytes()
    lines = raw.splitlines()
    clean = read_data(raw, "s.jsonl")
    assert clean.assistant_turns > 200
    again = b"\n".join([*lines, lines[40]])
    session = read_data(again, "s.jsonl")
    assert session.assistant_turns == clean.assistant_turns
    assert len(session.messages) == len(clean.messages)


# --------------------------------------------------------------------------- usage fields


_BAD_VALUES: list[tuple[Any, str]] = [
    ("1200", "a string"),
    (-5, "negative"),
    (2**64 + 1, "out of range"),
    (None, "null"),
    ([1, 2], "a array"),
]


@pytest.mark.parametrize(("value", "described"), _BAD_VALUES)
def test_claude_code_usage_of_the_wrong_type_is_ignored_with_a_warning(value: Any, described: str) -> None:
    usage = {"input_tokens": value, "cache_read_input_tokens": 900, "output_tokens": 3}
    row = {
        "type": "assistant",
        "uuid": "a1",
        "parentUuid": None,
        "sessionId": "s",
        "message": {
            "id": "m1",
            "role": "assistant",
            "model": "claude-sonnet-4",
            "content": "ok",
            "usage": usage,
        },
    }
    session = read_data(json.dumps(row).encode(), "s.jsonl")
    (message,) = session.messages
    assert message.usage is not None and message.usage.context_tokens == 900
    (warning,) = session.warnings
    assert warning.line == 1 and "message.usage.input_tokens is " + described in warning.reason


@pytest.mark.parametrize(("value", "described"), _BAD_VALUES)
def test_codex_and_chat_usage_of_the_wrong_type_is_ignored_with_a_warning(value: Any, described: str) -> None:
    rows = [json.loads(line) for line in (FIXTURES / "codex-rollout.jsonl").read_text().splitlines()]
    count = next(r for r in rows if r["type"] == "event_msg" and (r["payload"].get("info") or {}))
    count["payload"]["info"]["last_token_usage"]["output_tokens"] = value
    session = read_data("\n".join(json.dumps(r) for r in rows).encode(), "r.jsonl")
    assert any("last_token_usage.output_tokens is " + described in w.reason for w in session.warnings)
    chat = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "ok", "usage": {"prompt_tokens": value, "completion_tokens": 2}},
    ]
    session = read_data(json.dumps(chat).encode(), "c.json", format=Format.OPENAI_CHAT)
    (warning,) = session.warnings
    assert warning.line == 2 and "usage.prompt_tokens is " + described in warning.reason


def test_mini_swe_agent_usage_of_the_wrong_type_is_ignored_with_a_warning() -> None:
    doc = {
        "trajectory_format": "mini-swe-agent-1",
        "messages": [
            {"role": "user", "content": "fix it"},
            {
                "role": "assistant",
                "content": "```bash\nls\n```",
                "extra": {"response": {"usage": {"prompt_tokens": 100, "completion_tokens": "7"}}},
            },
        ],
    }
    session = read_data(json.dumps(doc).encode(), "t.traj.json")
    assert session.messages[-1].usage is not None and session.messages[-1].usage.context_tokens == 100
    assert any("usage.completion_tokens is a string" in w.reason for w in session.warnings)


# --------------------------------------------------------------------------- FIFOs and state


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes on this system")
def test_a_fifo_is_refused_at_once_as_transcript_state_file_or_root(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    done = subprocess.run(
        [sys.executable, "-c", "from ctxhealth.cli.main import main; main()", "check", str(fifo)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 3 and "FIFO" in done.stderr, done.stderr
    with pytest.raises(TranscriptError, match="FIFO"):
        read_session(fifo)
    folder = tmp_path / "folder"
    folder.mkdir()
    os.mkfifo(folder / "live.jsonl")
    (folder / "s.jsonl").write_bytes(EXAMPLE.read_bytes())
    skipped: list[tuple[str, str]] = []
    from ctxhealth.sources import read_sessions

    assert len(list(read_sessions([folder], on_skip=lambda s: skipped.append((s.path, s.reason))))) == 1
    assert [Path(p).name for p, _ in skipped] == ["live.jsonl"] and "FIFO" in skipped[0][1]
    root = tmp_path / "root"
    root.mkdir()
    os.mkfifo(root / "task-state.json")
    result = inspect(StateStore(root))
    assert result.status is Status.INVALID_STATE and "FIFO" in result.detail
    with pytest.raises(EnvironmentProblem, match="FIFO") as problem:
        StateStore(fifo)
    assert problem.value.exit_code == 4
    status = _run("state", "status", "--root", str(fifo))
    assert status.exit_code == 4 and "FIFO" in status.output


def test_a_state_field_of_the_wrong_type_is_invalid_state_naming_it(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    document = {
        "schema": "ctxhealth/task-state",
        "schema_version": 1,
        "goal": "ship it",
        "current_phase": "build",
        "next_action": 5,
    }
    (root / "task-state.json").write_text(json.dumps(document))
    result = inspect(StateStore(root))
    assert result.status is Status.INVALID_STATE, result
    assert "next_action" in result.detail and "must be a string" in result.detail
    document["next_action"] = ""
    (root / "task-state.json").write_text(json.dumps(document))
    assert inspect(StateStore(root)).status is Status.MISSING_STATE  # empty is still missing


EVENT_STREAMS = {
    "codex-0.171.0/exec-json": ("thread_id", "a Codex CLI `exec --json` event stream", "rollout-*-{}.jsonl"),
    "gemini-0.61.0/stream-json": (
        "session_id",
        "a Gemini CLI `--output-format stream-json` event stream",
        "chats/session-*-{:.8}.jsonl",
    ),
}
"""Recorded event streams -> the key of the session's id in their first line, what the error calls
them, and the log it names to read instead (by that id)."""


@pytest.mark.parametrize("name", sorted(EVENT_STREAMS))
def test_an_agents_event_stream_names_the_log_to_read(name: str, tmp_path: Path) -> None:
    """``codex exec --json`` (0.171) and ``gemini -p --output-format stream-json`` (0.61) print events:
    no prompt, usage summed over a turn or the run. They are no transcripts: the error says what they
    are and names the session's rollout or chat by its id; in a folder they are skipped with that
    reason and the rest is checked."""
    key, what, log = EVENT_STREAMS[name]
    events = FIXTURES / "agents" / name / "events.jsonl"
    session = json.loads(events.read_text("utf-8").splitlines()[0])[key]
    result = _run("check", str(events))
    assert result.exit_code == 3
    assert f"{what}, not a transcript" in result.output
    assert log.format(session) in result.output
    (tmp_path / "events.jsonl").write_bytes(events.read_bytes())
    (tmp_path / "session.jsonl").write_bytes(EXAMPLE.read_bytes())
    folder = _run("check", "--json", str(tmp_path))
    assert f"skipped {tmp_path / 'events.jsonl'}: {what}" in folder.stderr
    assert sum('"fill"' in line for line in folder.stdout.splitlines()) == 1
