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


# --- Codex 0.60: each response's token_count is written before its items ----------------------------

FIXTURE_060 = Path(__file__).resolve().parent / "fixtures" / "codex-rollout-0.60.jsonl"
_MODEL_ITEMS = ("reasoning", "function_call", "custom_tool_call", "message")


def _is_count(row: dict[str, Any]) -> bool:
    payload = row["payload"]
    return row["type"] == "event_msg" and payload["type"] == "token_count" and payload["info"] is not None


def _is_model_item(row: dict[str, Any]) -> bool:
    payload = row["payload"]
    if row["type"] != "response_item" or payload["type"] not in _MODEL_ITEMS:
        return False
    return payload["type"] != "message" or payload["role"] == "assistant"


def _plain_060(rows: list[dict[str, Any]]) -> list[tuple[int, list[str]]]:
    """Per response, the plain way for a log whose counts come first: (fill, item types)."""
    responses: list[tuple[int, list[str]]] = []
    previous = None
    for row in rows:
        if _is_count(row):
            info = row["payload"]["info"]
            if info["total_token_usage"] != previous:
                responses.append((info["last_token_usage"]["input_tokens"], []))
            previous = info["total_token_usage"]
        elif _is_model_item(row):
            responses[-1][1].append(row["payload"]["type"])
    return responses


def _responses(session: Any) -> list[tuple[int, list[str]]]:
    kinds = {"ThinkingBlock": "reasoning", "TextBlock": "message"}
    out = []
    for m in session.messages:
        if m.role is Role.ASSISTANT:
            assert m.usage is not None, f"response at line {m.line} has no usage"
            types = []
            for b in m.blocks:
                name = type(b).__name__
                if name == "ToolCall":
                    types.append("custom_tool_call" if b.name == "apply_patch" else "function_call")
                else:
                    types.append(kinds[name])
            out.append((m.usage.context_tokens, types))
    return out


def test_codex_060_counts_written_before_their_response_pair_with_it() -> None:
    rows = [json.loads(line) for line in FIXTURE_060.read_text().splitlines()]
    session = read_session(FIXTURE_060)
    assert session.warnings == ()
    expected = _plain_060(rows)
    assert _responses(session) == expected
    assert len(expected) == 8 and all(items for _, items in expected)  # no empty first turn
    last = [m for m in session.messages if m.role is Role.ASSISTANT][-1]
    assert last.text.startswith("No: the CSV export") and last.usage is not None
    assert last.usage.context_tokens == 7420

    from ctxhealth.accounting.fill import account_session
    from ctxhealth.accounting.types import FillSource

    account = account_session(session)
    assert account.source is FillSource.REPORTED
    assert [t.tokens for t in account.turns] == [fill for fill, _ in expected]
    assert account.current == 7420 and account.window == 258_400
    # the failed apply_patch and the failed pytest run
    assert account.tool_errors == 2 and account.tool_calls == 7


def _counts_after_their_items(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same log as older versions order it: each response's model items, then its count, then
    its tool outputs; a turn_context only where a user turn starts; no repeated count."""
    out: list[dict[str, Any]] = []
    segment: list[dict[str, Any]] = []  # a count and the rows after it, up to the next boundary
    previous = None

    def flush() -> None:
        if segment:
            out.extend(r for r in segment[1:] if _is_model_item(r))
            out.append(segment[0])
            out.extend(r for r in segment[1:] if not _is_model_item(r))
            segment.clear()

    for row in rows:
        if _is_count(row):
            total = row["payload"]["info"]["total_token_usage"]
            if total != previous:
                flush()
                segment.append(row)
            previous = total
        elif row["type"] == "turn_context" or row["payload"].get("type") in ("user_message", "message"):
            if _is_model_item(row):
                (segment or out).append(row)
                continue
            flush()
            if row["type"] != "turn_context" or out[-1]["payload"].get("type") == "user_message":
                out.append(row)
        else:
            (segment or out).append(row)
    flush()
    return out


def test_codex_counts_pair_the_same_in_both_orders() -> None:
    rows = [json.loads(line) for line in FIXTURE_060.read_text().splitlines()]
    after = _counts_after_their_items(rows)
    assert [r["type"] for r in after] != [r["type"] for r in rows]
    data = "\n".join(json.dumps(r) for r in after).encode()
    first, second = read_session(FIXTURE_060), parse(data, "after.jsonl")
    assert second.warnings == ()
    assert _responses(second) == _responses(first)
    assert second.reported_fill == first.reported_fill or sorted(second.reported_fill.values()) == sorted(
        first.reported_fill.values()
    )


def test_failed_patches_and_success_false_are_failed_results() -> None:
    patch = tool_result("c", "apply_patch verification failed: Failed to find expected lines in a.py:\nx = 1")
    assert patch.is_error and patch.exit_code is None
    meta = tool_result("c", json.dumps({"output": "patch rejected", "metadata": {"exit_code": 1}}))
    assert meta.is_error and meta.exit_code == 1
    in_metadata = tool_result("c", json.dumps({"output": "x", "metadata": {"success": False}}))
    assert in_metadata.is_error
    as_string = tool_result("c", json.dumps({"content": "denied by policy", "success": False}))
    assert as_string.is_error and as_string.text == "denied by policy"
    item_flag = tool_result("c", "sandbox denied", success=False)
    assert item_flag.is_error
    ok = tool_result("c", json.dumps({"output": "Success. Updated the following files:\nM a.py\n"}))
    assert not ok.is_error
    # a line of a rollout: function_call_output with "success": false on the item
    line = {
        "timestamp": "t",
        "type": "response_item",
        "payload": {"type": "function_call_output", "call_id": "c1", "output": "rejected", "success": False},
    }
    session = parse(json.dumps(line).encode(), "r.jsonl")
    assert session.messages[0].tool_results[0].is_error
