"""Claude Code reader: the shipped example, the real corpus (against a plain json walk), edge cases."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from builders import reader_counts
from ctxhealth.model import CompactionSummary, Format, ImageBlock, Role, Session, ToolResult
from ctxhealth.sources import read_session, read_sessions
from ctxhealth.sources.claude_code import ClaudeCodeTail, parse

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "claude-code-session.jsonl"
F67 = "f67ab274-e83b-41ac-ac85-77488d6b5c28"


# --- an independent, plain computation over the raw JSON lines --------------------------------


def _plain_main_chain(path: Path) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    main = [r for r in rows if r.get("uuid") and not r.get("isSidechain")]
    if not main:
        return []
    index = {r["uuid"]: i for i, r in enumerate(main)}
    chain = []
    i: int | None = len(main) - 1
    while i is not None:
        row = main[i]
        chain.append(row)
        parent = row.get("parentUuid")
        if parent is None:
            parent = row.get("logicalParentUuid")  # newer compact_boundary lines
        if parent is not None:
            i = index[parent]
        elif row.get("isCompactSummary") and i > 0:
            i = i - 1
        else:
            i = None
    chain.reverse()
    return chain


def _fill(usage: dict[str, Any]) -> int:
    return (
        usage.get("input_tokens", 0)
        + usage.get("cache_creation_input_tokens", 0)
        + usage.get("cache_read_input_tokens", 0)
    )


def _plain_numbers(path: Path) -> dict[str, Any]:
    chain = _plain_main_chain(path)
    ids: list[str] = []
    tool_calls = set()
    errors = 0
    compactions = 0
    fills: list[int] = []
    for row in chain:
        msg = row.get("message") or {}
        content = msg.get("content")
        blocks = content if isinstance(content, list) else []
        if row["type"] == "assistant":
            if msg["id"] not in ids:
                ids.append(msg["id"])
                if msg.get("usage") and msg.get("model") != "<synthetic>":
                    fills.append(_fill(msg["usage"]))
            tool_calls.update(b["id"] for b in blocks if b.get("type") == "tool_use")
        if row["type"] == "user":
            errors += sum(1 for b in blocks if b.get("type") == "tool_result" and b.get("is_error"))
            compactions += bool(row.get("isCompactSummary"))
    return {
        "turns": len(ids),
        "tool_calls": len(tool_calls),
        "tool_errors": errors,
        "compactions": compactions,
        "first_fill": fills[0] if fills else None,
        "last_fill": fills[-1] if fills else None,
    }


def _numbers(session: Session) -> dict[str, Any]:
    fills = [m.usage.context_tokens for m in session.messages if m.usage is not None]
    return {
        **reader_counts(session),
        "compactions": sum(m.compaction is not None for m in session.messages),
        "first_fill": fills[0] if fills else None,
        "last_fill": fills[-1] if fills else None,
    }


def _fills_around_compactions(session: Session) -> list[tuple[int, int]]:
    pairs = []
    before: int | None = None
    waiting = False
    for m in session.messages:
        if m.compaction is not None:
            waiting = True
        elif m.usage is not None:
            if waiting and before is not None:
                pairs.append((before, m.usage.context_tokens))
                waiting = False
            before = m.usage.context_tokens
    return pairs


# --- the real corpus ---------------------------------------------------------------------------


def test_every_real_session_matches_a_plain_json_walk(claude_code_data: Path) -> None:
    files = sorted(claude_code_data.rglob("*.jsonl"))
    assert len(files) == 11
    for file in files:
        session = read_session(file)
        assert session.format is Format.CLAUDE_CODE
        assert _numbers(session) == _plain_numbers(file), file.name


def test_f67_has_two_compactions_with_the_known_fills(claude_code_data: Path) -> None:
    session = read_session(next(claude_code_data.rglob(f"{F67}.jsonl")))
    assert session.session_id == F67
    compactions = [m.compaction for m in session.messages if m.compaction is not None]
    assert len(compactions) == 2
    assert all(c.text.startswith("This session is being continued") for c in compactions)
    assert _fills_around_compactions(session) == [(150_286, 102_368), (155_283, 43_421)]
    assert session.warnings == ()


def test_sidechain_lines_become_a_separate_thread(claude_code_data: Path) -> None:
    file = next(claude_code_data.rglob("0a725fb5-*.jsonl"))
    session = read_session(file)
    rows = [json.loads(line) for line in file.read_text().splitlines()]
    side_ids = {r["message"]["id"] for r in rows if r.get("isSidechain") and r["type"] == "assistant"}
    assert len(session.sidechains) == 1
    side = session.sidechains[0]
    assert side.assistant_turns == len(side_ids) > 0
    assert all(m.sidechain for m in side.messages)
    assert not any(m.sidechain for m in session.messages)
    main_ids = {m.response_id for m in session.messages}
    assert main_ids.isdisjoint(side_ids)


def test_user_only_and_summary_only_files(claude_code_data: Path) -> None:
    users = read_session(next(claude_code_data.rglob("9b92ce83-*.jsonl")))
    assert users.assistant_turns == 0
    assert [m.role for m in users.messages] == [Role.USER] * 3
    # lines 2-3 are a branch abandoned by /clear: dropped with one warning naming the first
    assert len(users.warnings) == 1 and users.warnings[0].line == 2
    assert "2 lines" in users.warnings[0].reason
    summaries = read_session(next(claude_code_data.rglob("c001d2c0-*.jsonl")))
    assert summaries.messages == () and summaries.warnings == ()


def test_real_models_and_session_ids(claude_code_data: Path) -> None:
    for session in read_sessions([claude_code_data]):
        for m in session.messages:
            assert m.model is None or m.model.startswith("claude-")
        if session.messages:
            assert session.session_id is not None and session.session_id in session.path


# --- the example shipped in the repository -----------------------------------------------------


def test_example_session_reads_cleanly() -> None:
    session = read_session(EXAMPLE)
    assert session.warnings == ()
    assert session.model == "claude-sonnet-4-5-20250929"
    assert _numbers(session) == _plain_numbers(EXAMPLE)
    assert session.assistant_turns == 15
    summary = next(m.compaction for m in session.messages if m.compaction is not None)
    assert summary.trigger == "manual" and summary.pre_tokens is not None
    assert summary.text.startswith("This session is being continued")
    assert session.instruction.startswith("test_discount_applies_before_tax")


def test_example_merges_a_response_split_over_lines() -> None:
    rows = [json.loads(line) for line in EXAMPLE.read_text().splitlines()]
    per_id: dict[str, list[int]] = {}
    for r in rows:
        if r["type"] == "assistant":
            per_id.setdefault(r["message"]["id"], []).append(r["message"]["usage"]["output_tokens"])
    split = {k: v for k, v in per_id.items() if len(v) > 1}
    assert split, "the example must split a response over lines"
    session = read_session(EXAMPLE)
    by_id = {m.response_id: m for m in session.messages if m.role is Role.ASSISTANT}
    assert len(by_id) == session.assistant_turns == len(per_id)
    for response_id, outputs in split.items():
        message = by_id[response_id]
        assert message.usage is not None and message.usage.output_tokens == max(outputs)
        assert len(message.blocks) >= len(outputs)


# --- synthetic edge cases -------------------------------------------------------------------


def _line(uuid: str, parent: str | None, kind: str, **extra: Any) -> str:
    row: dict[str, Any] = {"uuid": uuid, "parentUuid": parent, "type": kind, "sessionId": "s1"}
    row.update(extra)
    return json.dumps(row)


def _user(uuid: str, parent: str | None, content: Any, **extra: Any) -> str:
    return _line(uuid, parent, "user", message={"role": "user", "content": content}, **extra)


def _assistant(uuid: str, parent: str | None, mid: str, blocks: list[Any], out: int = 5, **extra: Any) -> str:
    usage = {
        "input_tokens": 10,
        "cache_creation_input_tokens": 20,
        "cache_read_input_tokens": 30,
        "output_tokens": out,
    }
    message = {"id": mid, "role": "assistant", "model": "claude-opus-4-1", "content": blocks, "usage": usage}
    return _line(uuid, parent, "assistant", message=message, **extra)


def _read(lines: list[str]) -> Session:
    return parse(("\n".join(lines) + "\n").encode(), "t.jsonl")


def test_rewound_branch_is_dropped_with_one_warning() -> None:
    session = _read(
        [
            _user("u1", None, "first"),
            _assistant("a1", "u1", "m1", [{"type": "text", "text": "old answer"}]),
            _user("u2", "a1", "abandoned follow-up"),
            _assistant("a2", "u2", "m2", [{"type": "text", "text": "abandoned"}]),
            _user("u3", "a1", "rewritten follow-up"),
            _assistant("a3", "u3", "m3", [{"type": "text", "text": "kept"}]),
        ]
    )
    assert [m.text for m in session.messages] == ["first", "old answer", "rewritten follow-up", "kept"]
    assert len(session.warnings) == 1
    assert session.warnings[0].line == 3 and "2 lines" in session.warnings[0].reason


def test_compact_boundary_with_logical_parent() -> None:
    boundary = _line(
        "b1", None, "system", subtype="compact_boundary", logicalParentUuid="a1",
        compactMetadata={"trigger": "auto", "preTokens": 155_000},
    )  # fmt: skip
    session = _read(
        [
            _user("u1", None, "task"),
            _assistant("a1", "u1", "m1", [{"type": "text", "text": "working"}]),
            boundary,
            _user("s1", "b1", "This session is being continued ...", isCompactSummary=True),
            _assistant("a2", "s1", "m2", [{"type": "text", "text": "resumed"}]),
        ]
    )
    assert session.warnings == ()
    assert [m.role for m in session.messages] == [Role.USER, Role.ASSISTANT, Role.USER, Role.ASSISTANT]
    summary = session.messages[2].compaction
    assert summary == CompactionSummary("This session is being continued ...", "auto", 155_000)


def test_boundary_without_summary_still_counts_as_compaction() -> None:
    boundary = _line("b1", "a1", "system", subtype="compact_boundary", compactMetadata={"trigger": "manual"})
    session = _read([_user("u1", None, "task"), _assistant("a1", "u1", "m1", []), boundary])
    assert session.messages[-1].compaction == CompactionSummary("", "manual", None)


def test_response_interleaved_with_its_tool_results_is_one_turn() -> None:
    call1 = {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "a"}}
    call2 = {"type": "tool_use", "id": "t2", "name": "Read", "input": {"file_path": "b"}}
    session = _read(
        [
            _user("u1", None, "read both"),
            _assistant("a1", "u1", "m1", [call1], out=1),
            _user("r1", "a1", [{"type": "tool_result", "tool_use_id": "t1", "content": "A"}]),
            _assistant("a2", "r1", "m1", [call2], out=40),
            _user(
                "r2", "a2", [{"type": "tool_result", "tool_use_id": "t2", "content": "B", "is_error": True}]
            ),
        ]
    )
    assert session.assistant_turns == 1
    turn = session.messages[1]
    assert [c.id for c in turn.tool_calls] == ["t1", "t2"]
    assert turn.usage is not None and turn.usage.output_tokens == 40 and turn.usage.context_tokens == 60
    results = [r for m in session.messages for r in m.tool_results]
    assert [(r.tool_call_id, r.is_error) for r in results] == [("t1", False), ("t2", True)]


def test_tool_result_list_content_and_images() -> None:
    content = [
        {
            "type": "tool_result",
            "tool_use_id": "t1",
            "content": [{"type": "text", "text": "line"}, {"type": "image", "source": {"data": "AAAA"}}],
        }
    ]
    session = _read([_user("u1", None, content)])
    blocks = session.messages[0].blocks
    assert blocks[0] == ToolResult("t1", "line")
    assert isinstance(blocks[1], ImageBlock) and blocks[1].approx_bytes == 3


def test_synthetic_response_has_no_usage_or_model() -> None:
    line = _assistant("a1", "u1", "m1", [{"type": "text", "text": "API Error"}])
    line = line.replace('"claude-opus-4-1"', '"<synthetic>"')
    session = _read([_user("u1", None, "hi"), line])
    assert session.messages[1].usage is None and session.messages[1].model is None
    assert session.model is None
    # the reader, which knows Claude Code reports usage on every real response, marks the stand-in
    assert session.messages[1].synthetic and not session.messages[0].synthetic


def test_only_stand_ins_are_marked_synthetic() -> None:
    real = _assistant("a1", "u1", "m1", [{"type": "text", "text": "done"}])
    session = _read([_user("u1", None, "hi"), real])
    assert [m.synthetic for m in session.messages] == [False, False]


def test_subagent_files_become_sidechains(tmp_path: Path) -> None:
    main = tmp_path / "proj" / "abc.jsonl"
    sub = tmp_path / "proj" / "abc" / "subagents" / "agent-1.jsonl"
    sub.parent.mkdir(parents=True)
    main.write_text(_user("u1", None, "go") + "\n" + _assistant("a1", "u1", "m1", []) + "\n")
    sub.write_text(
        _user("x1", None, "sub task", isSidechain=True)
        + "\n"
        + _assistant("x2", "x1", "m9", [], isSidechain=True)
        + "\n"
    )
    sessions = list(read_sessions([tmp_path]))
    assert len(sessions) == 1  # subagents/ is not walked on its own
    (session,) = sessions
    assert session.assistant_turns == 1
    assert len(session.sidechains) == 1 and session.sidechains[0].assistant_turns == 1
    assert session.sidechains[0].path == str(sub)
    alone = read_session(sub)  # read on its own, the sub-agent file is its own thread
    assert alone.assistant_turns == 1


def test_missing_parent_and_cycles_do_not_lose_lines() -> None:
    session = _read(
        [
            _user("u1", None, "one"),
            _assistant("a1", "zz-missing", "m1", [{"type": "text", "text": "two"}]),
            _user("u2", "a1", "three"),
        ]
    )
    assert [m.text for m in session.messages] == ["one", "two", "three"]
    assert any("not found" in w.reason for w in session.warnings)
    looped = _read([_user("u1", "u2", "a"), _user("u2", "u1", "b")])
    assert [m.text for m in looped.messages] == ["a", "b"]
    assert any("cycle" in w.reason for w in looped.warnings)


# --- incremental tail ----------------------------------------------------------------------


def test_tail_feeds_partial_lines_and_matches_full_read() -> None:
    data = EXAMPLE.read_bytes()
    tail = ClaudeCodeTail()
    got = []
    for start in range(0, len(data), 997):
        got.extend(tail.feed(data[start : start + 997]))
    assert tail.pending == b"" and tail.consumed == len(data)
    full = read_session(EXAMPLE)
    # responses cut by a feed boundary come out in pieces: dedupe by response_id
    assert len({m.response_id for m in got if m.role is Role.ASSISTANT}) == full.assistant_turns
    assert sum(len(m.tool_calls) for m in got) == sum(len(m.tool_calls) for m in full.messages)
    assert tail.state.compactions == 1
    assert tail.state.last_compaction is not None and tail.state.last_compaction.trigger == "manual"
    assert tail.state.session_id == full.session_id
    assert tail.state.model == full.model


def test_tail_line_numbers_and_sidechain_count() -> None:
    lines = [
        _user("u1", None, "go"),
        _user("x1", None, "side", isSidechain=True),
        _assistant("a1", "u1", "m1", [{"type": "text", "text": "ok"}]),
    ]
    tail = ClaudeCodeTail()
    first = tail.feed((lines[0] + "\n" + lines[1] + "\n").encode(), start_line=10)
    second = tail.feed((lines[2] + "\n").encode())
    assert [m.line for m in first + second] == [10, 12]
    assert tail.state.sidechain_lines == 1
    assert tail.next_line == 13


def test_tail_never_raises_on_junk() -> None:
    tail = ClaudeCodeTail()
    assert tail.feed(b'\x00\xff{not json\n[1,2]\n"str"\n{}\n') == []
    assert len(tail.state.warnings) == 4


@pytest.mark.parametrize("content", [None, 5, {"a": 1}, [1, None, {"type": 3}], "plain"])
def test_odd_content_types_are_warnings_not_crashes(content: Any) -> None:
    session = _read([_user("u1", None, content), _assistant("a1", "u1", "m1", content)])
    assert len(session.messages) == 2


def test_sidechain_rooted_on_a_main_line_is_not_a_broken_link() -> None:
    session = _read(
        [
            _user("u1", None, "go"),
            _assistant("a1", "u1", "m1", [{"type": "tool_use", "id": "t1", "name": "Task", "input": {}}]),
            _user("x1", "a1", "sub task", isSidechain=True),
            _assistant("x2", "x1", "m2", [{"type": "text", "text": "sub done"}], isSidechain=True),
            _user("r1", "a1", [{"type": "tool_result", "tool_use_id": "t1", "content": "done"}]),
        ]
    )
    assert session.warnings == ()
    assert session.assistant_turns == 1
    assert [m.text for m in session.sidechains[0].messages] == ["sub task", "sub done"]


def test_late_progress_line_does_not_choose_the_thread() -> None:
    session = _read(
        [
            _user("u1", None, "go"),
            _assistant("a1", "u1", "m1", [{"type": "text", "text": "one"}]),
            _user("u2", "a1", "more"),
            _assistant("a2", "u2", "m2", [{"type": "text", "text": "two"}]),
            _line("p1", "a1", "progress", data={"type": "hook_progress"}),
        ]
    )
    assert session.warnings == ()
    assert [m.text for m in session.messages] == ["go", "one", "more", "two"]
