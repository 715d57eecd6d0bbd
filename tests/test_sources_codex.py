"""Codex rollout reader: our fixture, checked against a plain json walk, and exit-code parsing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from builders import reader_counts
from ctxhealth.model import Format, Role, ThinkingBlock
from ctxhealth.sources import read_session
from ctxhealth.sources.codex import parse, tool_result

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "codex-rollout.jsonl"


def _plain(path: Path) -> dict[str, Any]:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    usages = []
    previous_total = None
    calls = 0
    errors = 0
    for row in rows:
        payload = row["payload"]
        if row["type"] == "event_msg" and payload["type"] == "token_count" and payload["info"]:
            info = payload["info"]
            if info["total_token_usage"] != previous_total:
                usages.append(info["last_token_usage"])
            previous_total = info["total_token_usage"]
        if row["type"] == "response_item" and payload["type"] in ("function_call", "custom_tool_call"):
            calls += 1
        if row["type"] == "response_item" and payload["type"].endswith("call_output"):
            out = payload["output"]
            if out.startswith("{"):
                errors += json.loads(out)["metadata"]["exit_code"] != 0
            else:
                errors += not out.startswith("Exit code: 0\n")
    return {
        "turns": len(usages),
        "fills": [u["input_tokens"] for u in usages],
        "tool_calls": calls,
        "tool_errors": errors,
        "compactions": sum(r["type"] == "compacted" for r in rows),
    }


def test_fixture_matches_a_plain_json_walk() -> None:
    session = read_session(FIXTURE)
    assert session.format is Format.CODEX
    assert session.warnings == ()
    fills = [m.usage.context_tokens for m in session.messages if m.usage is not None]
    numbers = {
        **reader_counts(session),
        "fills": fills,
        "compactions": sum(m.compaction is not None for m in session.messages),
    }
    assert numbers == _plain(FIXTURE)
    assert sorted(session.reported_fill.values()) == sorted(fills)
    for index, fill in session.reported_fill.items():
        usage = session.messages[index].usage
        assert usage is not None and usage.context_tokens == fill


def test_fixture_metadata() -> None:
    session = read_session(FIXTURE)
    assert session.session_id == "0199f3c2-7a41-7d10-b2e5-93c0d8a61f27"
    assert session.model == "gpt-5-codex"
    assert session.context_window == 272_000
    first = next(m for m in session.messages if m.role is Role.ASSISTANT)
    assert isinstance(first.blocks[0], ThinkingBlock)
    assert first.tool_calls[0].input["command"][-1].startswith("rg -n")
    usage = [m.usage for m in session.messages if m.usage is not None][1]
    assert (usage.input_tokens, usage.cache_read_tokens) == (6538 - 6144, 6144)
    assert "precipitation" in session.instruction


def test_exit_codes_from_every_output_shape() -> None:
    assert tool_result("c", "Exit code: 0\nWall time: 1s\nOutput:\nok").exit_code == 0
    failed = tool_result("c", "Exit code: 2\nWall time: 1s\nOutput:\nboom")
    assert failed.exit_code == 2 and failed.is_error
    unified = tool_result("c", "Chunk ID: 1\nWall time: 0.1 seconds\nProcess exited with code 127\nOutput:\n")
    assert unified.exit_code == 127 and unified.is_error
    as_json = tool_result("c", json.dumps({"output": "x", "metadata": {"exit_code": 1}}))
    assert (as_json.text, as_json.exit_code, as_json.is_error) == ("x", 1, True)
    as_object = tool_result("c", {"content": "denied", "success": False})
    assert as_object.is_error and as_object.exit_code is None
    plain = tool_result("c", "no code here")
    assert not plain.is_error and plain.exit_code is None
    assert tool_result("c", None).text == ""


def test_bad_lines_are_warnings_and_the_rest_is_read() -> None:
    lines = FIXTURE.read_bytes().splitlines()
    broken = [*lines[:10], b'{"type": "event_msg", "payload": 7}', b"garbage", *lines[10:]]
    session = parse(b"\n".join(broken), "r.jsonl")
    clean = read_session(FIXTURE)
    assert session.assistant_turns == clean.assistant_turns
    assert [w.line for w in session.warnings] == [11, 12]
