"""``ctxhealth watch`` on every format that grows on disk; its default is the latest session of any agent."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import FIXTURES, invoke
from ctxhealth.errors import InputError
from ctxhealth.integrations.watch import (
    AgentDirs,
    LogWatch,
    check_followable,
    find_latest_session,
    open_watch,
    render,
)
from ctxhealth.model import Format

CODEX = FIXTURES / "agents" / "codex-0.171.0" / "compaction-default-provider" / "rollout.jsonl"
GEMINI = FIXTURES / "agents" / "gemini-0.61.0" / "compression-resume" / "chat.jsonl"


def _grow(target: Path, lines: list[bytes], upto: int) -> None:
    with target.open("ab") as out:
        out.write(b"".join(lines[:upto]))


def test_a_codex_rollout_is_followed_as_it_grows(tmp_path: Path) -> None:
    lines = CODEX.read_bytes().splitlines(keepends=True)
    target = tmp_path / "rollout-2026-12-01T00-00-00-x.jsonl"
    target.write_bytes(b"")
    watch = open_watch(target)
    assert isinstance(watch, LogWatch)
    assert watch.poll() == 0 and "nothing yet" in render(watch)
    half = next(i for i, line in enumerate(lines) if b'"compacted"' in line)
    _grow(target, lines, half)
    assert watch.poll() > 0
    assert watch.turns == 3 and watch.compactions == 0  # the compaction's own record is not a turn
    assert watch.poll() == 0  # unchanged: nothing read
    target.write_bytes(b"".join(lines))
    assert watch.poll() > 0
    assert (watch.turns, watch.compactions, watch.tool_errors) == (5, 1, 1)
    frame = render(watch, width=100)
    truth = json.loads((CODEX.parent / "truth.json").read_text("utf-8"))
    pre = truth["compaction_fills"][0]
    assert "(codex)" in frame and f"compaction from {pre:,} tokens (summary encrypted)" in frame


def test_a_gemini_chat_and_an_openhands_folder_are_followed(tmp_path: Path) -> None:
    watch = open_watch(GEMINI)
    watch.poll()
    assert isinstance(watch, LogWatch) and (watch.turns, watch.compactions) == (6, 1)
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "output.jsonl").write_bytes((FIXTURES / "agents" / "openhands-output.jsonl").read_bytes())
    watch = open_watch(folder)
    assert watch.poll() > 0 and "(openhands)" in render(watch)


def test_watch_cli_follows_a_file_that_grows_while_it_runs(tmp_path: Path) -> None:
    lines = CODEX.read_bytes().splitlines(keepends=True)
    target = tmp_path / "rollout.jsonl"
    _grow(target, lines, 12)
    exe = Path(sys.executable).with_name("ctxhealth")
    command = [str(exe)] if exe.exists() else [sys.executable, "-m", "ctxhealth.cli.main"]
    env = {**os.environ, "HOME": str(tmp_path), "NO_COLOR": "1", "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [*command, "watch", "--frames", "12", "--interval", "0.25", str(target)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        assert process.stdout is not None
        first = b""
        while b"recent events:" not in first:  # the first frame is out: the file grows only now
            line = process.stdout.readline()
            assert line, process.stderr.read() if process.stderr else ""
            first += line
        time.sleep(0.3)
        target.write_bytes(b"".join(lines))
        rest, err = process.communicate(timeout=60)
        out = first + rest
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    frames = out.decode().split("ctxhealth watch — ")
    assert "turns 1 " in frames[1] and "compactions 0" in frames[1]
    assert "turns 5 " in frames[-1] and "compactions 1" in frames[-1]


def test_the_default_is_the_latest_session_of_any_agent(tmp_path: Path) -> None:
    claude = tmp_path / ".claude" / "projects" / "p"
    claude.mkdir(parents=True)
    (claude / "old.jsonl").write_text('{"type":"user","message":{"role":"user","content":"hi"}}\n')
    os.utime(claude / "old.jsonl", (1, 1))
    codex = tmp_path / ".codex" / "sessions" / "2026" / "12" / "01"
    codex.mkdir(parents=True)
    (codex / "rollout-a.jsonl").write_bytes(CODEX.read_bytes())
    os.utime(codex / "rollout-a.jsonl", (2, 2))
    gemini = tmp_path / ".gemini" / "tmp" / "proj" / "chats"
    gemini.mkdir(parents=True)
    (gemini / "session-2026-12-01T10-00-abcdef12.jsonl").write_bytes(GEMINI.read_bytes())
    dirs = AgentDirs.under(tmp_path)
    assert find_latest_session(dirs) == gemini / "session-2026-12-01T10-00-abcdef12.jsonl"
    os.utime(gemini / "session-2026-12-01T10-00-abcdef12.jsonl", (0, 0))
    assert find_latest_session(dirs) == codex / "rollout-a.jsonl"
    done = invoke(
        [
            "watch",
            "--once",
            "--codex-home",
            str(tmp_path / ".codex"),
            "--gemini-dir",
            str(tmp_path / ".gemini"),
        ],
    )
    assert done.exit_code == 0, done.output
    assert "rollout-a.jsonl (codex)" in done.output
    other = tmp_path / "elsewhere"
    other.mkdir()
    done = invoke(["watch", "--once", "--codex-home", str(other), "--gemini-dir", str(other)])
    assert done.exit_code in (0, 3)  # this machine's own Claude Code sessions may be the latest


def _chat_line(role: str, text: str, fill: int | None = None) -> bytes:
    message: dict[str, object] = {"role": role, "content": text}
    if fill is not None:
        message["usage"] = {"prompt_tokens": fill, "completion_tokens": 5}
    return (json.dumps(message) + "\n").encode()


def test_a_jsonl_a_home_made_agent_appends_to_is_read_and_followed(tmp_path: Path) -> None:
    target = tmp_path / "my-agent.jsonl"
    target.write_bytes(_chat_line("user", "fix the parser") + _chat_line("assistant", "looking", 1200))
    watch = open_watch(target)
    assert watch.poll() == 2 and isinstance(watch, LogWatch) and watch.fill == 1200
    with target.open("ab") as out:
        out.write(_chat_line("assistant", "fixed", 2400) + b'{"role": "user", "cont')  # a line being written
    assert watch.poll() == 1
    assert (watch.turns, watch.fill, watch.peak) == (2, 2400, 2400)
    assert "(openai-chat)" in render(watch)
    done = invoke(["check", "--json", str(target)])
    figures = json.loads(done.stdout)
    assert figures["turns"] == 2 and figures["format"] == "openai-chat"
    assert [w.split(": ", 1)[0].rsplit(":", 1)[-1] for w in figures["warnings"]] == ["4"]  # its own line


def test_watch_looks_where_the_no_argument_commands_look(tmp_path: Path) -> None:
    """The agents' folders come from the one table (``sources.homes``): ``CLAUDE_CONFIG_DIR`` and
    ``CODEX_HOME`` are honoured by ``watch`` as by ``check`` with no path."""
    config, codex = tmp_path / "claude-config", tmp_path / "codex-home"
    dirs = AgentDirs.under(tmp_path, {"CLAUDE_CONFIG_DIR": str(config), "CODEX_HOME": str(codex)})
    assert dirs.claude_projects == config / "projects"
    assert dirs.codex_sessions == codex / "sessions"
    assert dirs.gemini_tmp == tmp_path / ".gemini" / "tmp"
    xdg = tmp_path / ".config" / "claude" / "projects"
    xdg.mkdir(parents=True)
    assert AgentDirs.under(tmp_path).claude_projects == xdg  # the place that exists


def test_the_default_session_is_a_file_the_one_walk_lists(tmp_path: Path) -> None:
    """What a session file looks like is said once (``sources.homes.session_files`` over
    ``sources.discover``): a writer's hidden temporary file, a sub-agent's file and a Gemini
    project's logs are never the session ``watch`` follows, however new."""
    claude = tmp_path / ".claude" / "projects" / "p"
    (claude / "s1" / "subagents").mkdir(parents=True)
    (claude / "s1.jsonl").write_text('{"type":"user","message":{"role":"user","content":"hi"}}\n')
    os.utime(claude / "s1.jsonl", (5, 5))
    (claude / ".s1.partial.jsonl").write_text("{}\n")
    (claude / "s1" / "subagents" / "agent-1.jsonl").write_text("{}\n")
    gemini = tmp_path / ".gemini" / "tmp" / "proj"
    (gemini / "chats").mkdir(parents=True)
    (gemini / "chats" / "session-2026-12-01T10-00-abcdef12.jsonl").write_bytes(GEMINI.read_bytes())
    os.utime(gemini / "chats" / "session-2026-12-01T10-00-abcdef12.jsonl", (4, 4))
    (gemini / "logs.json").write_text("[]")
    dirs = AgentDirs.under(tmp_path)
    found = sorted(str(p.relative_to(tmp_path)) for p in dirs.candidates())
    assert found == [
        ".claude/projects/p/s1.jsonl",
        ".gemini/tmp/proj/chats/session-2026-12-01T10-00-abcdef12.jsonl",
    ]
    assert find_latest_session(dirs) == claude / "s1.jsonl"


def test_a_codex_rollouts_watch_reads_its_window_as_check_does() -> None:
    """The watch's assessment takes the window the rollout states, the session's one ModelInfo (its
    monitor took the registry's window of the model: 1M for gpt-5.5, where Codex states 258,400)."""
    from ctxhealth.accounting.registry import ModelRegistry
    from ctxhealth.policy.profile import default_profile
    from ctxhealth.report.assessed import check_session
    from ctxhealth.sources import read_session

    watch = open_watch(CODEX)
    assert isinstance(watch, LogWatch) and watch.poll() > 0
    session = read_session(CODEX)
    assert session.context_window is not None
    assert watch.monitor.info.window == session.context_window == watch.usable
    report = check_session(session, registry=ModelRegistry.default(), profile=default_profile())
    assert watch.assessment is not None
    assert (watch.assessment.zone.value, round(watch.assessment.pressure, 4)) == (
        report["zone"],
        report["pressure"],
    )


GROWN = sorted(
    [*FIXTURES.glob("agents/codex-*/*/rollout.jsonl"), *FIXTURES.glob("agents/gemini-*/*/chat.jsonl")]
)


@pytest.mark.parametrize(
    "log",
    GROWN,
    ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}",
)
def test_a_log_watched_as_it_grows_reads_as_check_reads_the_whole_log(log: Path, tmp_path: Path) -> None:
    """A reader settles a message only once later lines arrive (a Codex response gets its usage from
    the record after its items, a Gemini response is written again with its tool calls): polled at
    every line (and halfway through each), the watch ends with check's reading of the whole log (its
    monitor had counted such a message again, as another one: one more turn per response)."""
    from ctxhealth.accounting.registry import ModelRegistry
    from ctxhealth.policy.profile import default_profile
    from ctxhealth.report.assessed import check_session
    from ctxhealth.sources import read_session

    target = tmp_path / log.name
    target.write_bytes(b"")
    watch = open_watch(target)
    assert isinstance(watch, LogWatch)
    for line in log.read_bytes().splitlines(keepends=True):
        with target.open("ab") as out:  # a line written in two pieces, polled between
            out.write(line[: len(line) // 2])
            out.flush()
            watch.poll()
            out.write(line[len(line) // 2 :])
        watch.poll()
    report = check_session(read_session(log), registry=ModelRegistry.default(), profile=default_profile())
    fresh = open_watch(log)
    assert fresh.poll() > 0 and fresh.assessment is not None and watch.assessment is not None
    got, whole = watch.assessment, fresh.assessment
    assert (got.zone.value, got.action.value, round(got.pressure, 4), got.fill, round(got.risk or 0, 4)) == (
        report["zone"],
        report["action"],
        report["pressure"],
        report["fill"]["current"],
        report["risk"],
    )
    assert (got.turn, got.index, got.rule) == (whole.turn, whole.index, whole.rule)
    assert got.reasons == whole.reasons
    assert got.turn == report["turns"]
    assert (watch.tool_calls, watch.tool_errors) == (report["tool_calls"], report["tool_errors"])


def test_a_session_just_started_is_followed_from_its_first_bytes(tmp_path: Path) -> None:
    """``watch`` on the newest session may meet it at its first bytes: Claude Code 2.1 starts an
    interactive transcript with four bookkeeping lines (``mode``, ``permission-mode``, ``atis-latch``,
    ``tools-used``), and any writer may be half-way through its first line. Both were "unrecognised
    content" (exit 3); they are followed, and read as check reads the whole log."""
    interactive = FIXTURES / "agents" / "claude-code-2.1.332" / "interactive.jsonl"
    first = tmp_path / "interactive.jsonl"
    first.write_bytes(b"".join(interactive.read_bytes().splitlines(keepends=True)[:4]))
    assert check_followable(first) is Format.CLAUDE_CODE
    assert not isinstance(open_watch(first), LogWatch)
    for log in (CODEX, interactive):
        data = log.read_bytes()
        target = tmp_path / "half" / log.name
        target.parent.mkdir(exist_ok=True)
        target.write_bytes(data[:30])  # half of the first line
        watch = open_watch(target)
        watch.poll()
        target.write_bytes(data)
        assert watch.poll() > 0 and watch.assessment is not None
        report = invoke(["check", "--json", str(log)])
        figures = json.loads(report.stdout)
        reading = (watch.assessment.zone.value, watch.assessment.action.value, watch.assessment.fill)
        assert reading == (figures["zone"], figures["action"], figures["fill"]["current"])
    (tmp_path / "notes.txt").write_bytes(b"half a line of notes")
    with pytest.raises(InputError, match="unrecognised content"):
        open_watch(tmp_path / "notes.txt")
