"""The Codex and Gemini hooks read only what they must and answer as a full read does.

A Codex rollout is read from the last cut its reader could resume at (:func:`codex.resume`): at every
line boundary of every recorded rollout, resuming gives exactly the messages a full parse gives, and
the hooks fed the rollout line by line give the same output, assessment and monitor snapshot as
hooks that read the whole file on every call. A truncated or replaced rollout is read afresh. A
Gemini chat is read whole, but not again while it is unchanged; its records are upserts (a response
is written again with its tool calls), and fed record by record the session's monitor ends each step
exactly as one read of the chat so far leaves it (its snapshot and assessment)."""

from __future__ import annotations

import itertools
import json
import os
import shutil
from pathlib import Path

import pytest

from ctxhealth.integrations.claude_code import tail
from ctxhealth.integrations.claude_code.agents import Agent
from ctxhealth.integrations.claude_code.hooks import run_hook
from ctxhealth.integrations.claude_code.tailstate import SessionCounters, load_counters, save_counters
from ctxhealth.sources import codex

FIXTURES = Path(__file__).parent / "fixtures"


def _version(rollout: Path) -> tuple[int, ...]:
    return tuple(int(part) for part in rollout.parent.parent.name.removeprefix("codex-").split("."))


RECORDED = sorted(
    FIXTURES.glob("agents/codex-*/*/rollout.jsonl"), key=lambda p: ([-n for n in _version(p)], p)
)
"""The recorded runs, the newest version first."""
ROLLOUTS = [*RECORDED, FIXTURES / "codex-rollout.jsonl", FIXTURES / "codex-rollout-0.60.jsonl"]
LEGACY_COMPACTION = FIXTURES / "agents" / "codex-0.142.4" / "compaction-custom-provider" / "rollout.jsonl"
"""A local compaction before usage records (0.171): its reply is an ordinary assistant message."""
CHATS = sorted(FIXTURES.glob("agents/gemini-*/*/chat.jsonl"))


def _line_ends(data: bytes) -> list[int]:
    return [0] + [i + 1 for i, byte in enumerate(data) if byte == 0x0A]


@pytest.mark.parametrize("rollout", ROLLOUTS, ids=lambda p: p.parent.name)
def test_resuming_at_any_cut_gives_a_full_parses_messages(rollout: Path) -> None:
    data = rollout.read_bytes()
    full = list(codex.parse(data, str(rollout)).messages)
    resumed_somewhere = False
    for end in _line_ends(data):
        prefix = data[:end]
        first = codex.resume(prefix, str(rollout))
        assert first is not None
        assert first.messages == list(codex.parse(prefix, str(rollout)).messages)
        cut = first.carry
        assert cut["offset"] <= end and data[cut["offset"] - 1 : cut["offset"]] in (b"", b"\n")
        rest = codex.resume(data[cut["offset"] :], str(rollout), cut)
        if rest is None:  # only before the rollout's first usage record (it changes how counts read)
            assert not cut["records"] and b'"token_usage_record"' in data[cut["offset"] :]
            continue
        resumed_somewhere = resumed_somewhere or cut["offset"] > 0
        assert first.messages[: cut["messages"]] + rest.messages == full, end
    assert resumed_somewhere


def test_a_cut_is_never_made_inside_a_partial_line() -> None:
    data = ROLLOUTS[0].read_bytes()
    middle = data.index(b"\n", len(data) // 2) + 20  # 20 bytes into a line
    cut = codex.resume(data[:middle], "r")
    assert cut is not None and cut.carry["offset"] <= data.rfind(b"\n", 0, middle) + 1


def test_a_carry_of_another_version_is_not_resumed() -> None:
    data = ROLLOUTS[0].read_bytes()
    first = codex.resume(data, "r")
    assert first is not None
    assert codex.resume(b"", "r", {**first.carry, "version": codex.RESUME_VERSION + 1}) is None


def _payload(event: str, transcript: Path, step: int) -> dict[str, object]:
    payload: dict[str, object] = {
        "session_id": "s-1",
        "transcript_path": str(transcript),
        "cwd": "/home/dev/proj",
        "hook_event_name": event,
        "model": "gpt-5-codex",
    }
    if event == "PostToolUse":
        payload.update(
            tool_name="Bash", tool_input={"command": "ls"}, tool_response="", tool_use_id=f"h{step}"
        )
    if event == "UserPromptSubmit":
        payload["prompt"] = "go on"
    return payload


def _hook(home: Path, event: str, transcript: Path, step: int, agent: Agent = Agent.CODEX) -> str:
    result = run_hook(
        event, json.dumps(_payload(event, transcript, step)).encode(), home=str(home), agent=agent
    )
    assert result.stderr == "", result.stderr
    return result.stdout


def _forget_the_cut(home: Path, transcript: Path) -> None:
    """Make the next hook read the whole file, as before the reader could resume."""
    counters = load_counters(str(home), str(transcript))
    if counters is not None and counters.reader is not None:
        counters.reader = None
        save_counters(str(home), counters)


def _state(home: Path, transcript: Path) -> dict[str, object]:
    counters = load_counters(str(home), str(transcript))
    assert counters is not None
    data = counters.to_dict()
    data.pop("reader")
    return data


def _halves(line: bytes, split: bool) -> list[bytes]:
    return [line[: len(line) // 2], line[len(line) // 2 :]] if split else [line]


EVENTS = ("PostToolUse", "UserPromptSubmit", "Stop", "PostToolUse")


@pytest.mark.parametrize(
    "rollout",
    [*ROLLOUTS[:2], LEGACY_COMPACTION, ROLLOUTS[-1]],
    ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}",
)
def test_codex_hooks_fed_line_by_line_answer_as_a_full_read(
    rollout: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = rollout.read_bytes()
    lines = data.splitlines(keepends=True)
    incremental, whole = tmp_path / "inc", tmp_path / "whole"
    live = {home: tmp_path / home.name / "rollout.jsonl" for home in (incremental, whole)}
    full_reads: list[str] = []
    real_full = tail._read_full

    def counting(counters: SessionCounters, transcript: str, size: int, identity: list[int]) -> object:
        full_reads.append(transcript)
        return real_full(counters, transcript, size, identity)

    monkeypatch.setattr(tail, "_read_full", counting)
    for path in live.values():
        path.parent.mkdir(parents=True)
        path.write_bytes(b"")
    # every 5th line is written in two halves with a hook between (a line still being written)
    writes = [piece for n, line in enumerate(lines) for piece in _halves(line, n % 5 == 4)]
    for step, piece in enumerate(writes):
        event = EVENTS[step % len(EVENTS)]
        outs = []
        for home, path in live.items():
            with path.open("ab") as f:
                f.write(piece)
            if home is whole:
                _forget_the_cut(home, path)
            outs.append(_hook(home, event, path, step))
        assert outs[0] == outs[1], (step, event)
        assert _state(incremental, live[incremental]) == _state(whole, live[whole]) | {
            "path": str(live[incremental])
        }, step
    by_home = [sum(p == str(path) for p in full_reads) for path in live.values()]
    assert by_home[1] >= len(writes) - 1  # the reference read the whole file (nearly) every time
    # the incremental one only until its first resumable cut: the first usage record, or in a
    # rollout without them (before 0.171) the first count stating the window (a new window starts
    # the reading afresh)
    records_at = next((n for n, line in enumerate(lines) if b'"token_usage_record"' in line), None)
    if records_at is None:
        records_at = next((n for n, line in enumerate(lines) if b'"model_context_window"' in line), 0)
    assert by_home[0] <= records_at + 2


def _fed(home: Path, rollout: Path) -> dict[str, object]:
    _hook(home, "Stop", rollout, 0)
    return _state(home, rollout)


def test_a_truncated_rollout_is_read_afresh(tmp_path: Path) -> None:
    data = ROLLOUTS[0].read_bytes()
    lines = data.splitlines(keepends=True)
    rollout, home = tmp_path / "rollout.jsonl", tmp_path / "home"
    rollout.write_bytes(data)
    _hook(home, "Stop", rollout, 0)
    rollout.write_bytes(b"".join(lines[: len(lines) // 2]))  # shrank: rewritten
    got = _fed(home, rollout)
    fresh = tmp_path / "fresh"
    shutil.copytree(tmp_path, fresh, ignore=shutil.ignore_patterns("home", "fresh"))
    expected = _fed(fresh / "home", fresh / "rollout.jsonl")
    for key in ("line", "offset", "turns", "fill", "assessment", "monitor", "compactions"):
        assert got[key] == expected[key], key


@pytest.mark.parametrize("in_place", [True, False], ids=["rewritten-in-place", "renamed-over"])
def test_a_replaced_rollout_is_read_afresh(tmp_path: Path, in_place: bool) -> None:
    # another rollout at least as long takes the place of the one read: the old cut is no part of it
    small, large = sorted(ROLLOUTS[:4], key=lambda p: p.stat().st_size)[0::3]
    rollout, home = tmp_path / "rollout.jsonl", tmp_path / "home"
    rollout.write_bytes(small.read_bytes())
    _hook(home, "Stop", rollout, 0)
    if in_place:
        with rollout.open("r+b") as f:
            f.write(large.read_bytes())
    else:
        other = tmp_path / "other.jsonl"
        other.write_bytes(large.read_bytes())
        os.replace(other, rollout)
    got = _fed(home, rollout)
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    shutil.copy(large, fresh / "rollout.jsonl")
    expected = _fed(fresh / "home", fresh / "rollout.jsonl")
    for key in ("line", "offset", "turns", "fill", "assessment", "monitor", "instruction"):
        assert got[key] == expected[key], key


@pytest.mark.parametrize("chat", CHATS, ids=lambda p: p.parent.name)
def test_a_gemini_chat_is_read_when_it_changed_and_only_then(chat: Path, tmp_path: Path) -> None:
    # the chat is read whole at every change (its records are upserts); an unchanged one not again
    lines = chat.read_bytes().splitlines(keepends=True)
    path, home = tmp_path / "chat.jsonl", tmp_path / "home"
    path.write_bytes(b"")
    events = ("AfterTool", "BeforeAgent", "AfterAgent")
    for step, line in enumerate(lines):
        with path.open("ab") as f:
            f.write(line)
        _hook(home, events[step % 3], path, step, Agent.GEMINI)
        counters = load_counters(str(home), str(path))
        assert counters is not None and counters.offset == path.stat().st_size
    reads: list[str] = []
    real = tail._read_full
    try:
        tail._read_full = lambda *a: reads.append("x") or real(*a)  # type: ignore[assignment,func-returns-value]
        _hook(home, "AfterAgent", path, 99, Agent.GEMINI)
        assert reads == []  # unchanged: not read again
        os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
        _hook(home, "AfterAgent", path, 100, Agent.GEMINI)
        assert reads == ["x"]  # same size, but written again: read
    finally:
        tail._read_full = real  # type: ignore[method-assign]


@pytest.mark.parametrize("chat", CHATS, ids=lambda p: p.parent.name)
def test_gemini_hooks_fed_record_by_record_assess_as_one_read(chat: Path, tmp_path: Path) -> None:
    # a response is written again with its tool calls once they ran: the monitor sees its latest form
    path, home = tmp_path / "chat.jsonl", tmp_path / "home"
    path.write_bytes(b"")
    events = ("AfterTool", "BeforeAgent", "AfterAgent")
    for step, line in enumerate(chat.read_bytes().splitlines(keepends=True)):
        with path.open("ab") as f:
            f.write(line)
        _hook(home, events[step % 3], path, step, Agent.GEMINI)
        once, fresh = tmp_path / f"once{step}.jsonl", tmp_path / f"once{step}"
        once.write_bytes(path.read_bytes())
        _hook(fresh, "AfterAgent", once, step, Agent.GEMINI)
        fed, read = load_counters(str(home), str(path)), load_counters(str(fresh), str(once))
        assert fed is not None and read is not None
        assert fed.assessment == read.assessment and fed.monitor == read.monitor, step


FOLDED = ("assessment", "monitor", "turns", "output_tokens", "cost_usd", "compactions", "fill", "peak")


def _pieces(data: bytes) -> list[int]:
    """Where a writer may have stopped: every line's end, and halfway through every line."""
    ends = _line_ends(data)
    return sorted({*ends[1:], *(a + (b - a) // 2 for a, b in itertools.pairwise(ends))})


@pytest.mark.parametrize("log", [*ROLLOUTS, *CHATS], ids=lambda p: str(p.relative_to(FIXTURES)))
def test_hooks_on_a_growing_log_read_at_every_step_as_a_fresh_read_of_it(log: Path, tmp_path: Path) -> None:
    # a response is settled by lines written after it (a Codex response gets its usage from the
    # record after its items; a Gemini response is written again with its tool calls): what the
    # hooks folded in and observed of it before is taken back, so their turns, output tokens, cost,
    # fill and monitor are those of one read of the log as it is at each step
    agent, event = (Agent.CODEX, "Stop") if log.name == "rollout.jsonl" else (Agent.GEMINI, "AfterAgent")
    data = log.read_bytes()
    grown, home = tmp_path / log.name, tmp_path / "home"
    grown.write_bytes(b"")
    written = 0
    for step, end in enumerate(_pieces(data)):
        with grown.open("ab") as f:
            f.write(data[written:end])
        written = end
        _hook(home, event, grown, step, agent)
        once = tmp_path / f"once-{step}" / log.name
        once.parent.mkdir()
        once.write_bytes(data[:end])
        _hook(once.parent / "home", event, once, step, agent)
        fed, read = load_counters(str(home), str(grown)), load_counters(str(once.parent / "home"), str(once))
        assert (fed is None) == (read is None), step
        if fed is not None and read is not None:
            assert {k: getattr(fed, k) for k in FOLDED} == {k: getattr(read, k) for k in FOLDED}, (step, end)
