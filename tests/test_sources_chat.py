"""OpenAI Chat Completions and Anthropic Messages readers: fixtures, detection apart, odd shapes."""

from __future__ import annotations

import json
from pathlib import Path

from ctxhealth.model import Format, Role, ThinkingBlock, ToolCall, ToolResult
from ctxhealth.sources import anthropic_messages, detect_format, openai_chat, read_session

FIXTURES = Path(__file__).resolve().parent / "fixtures"
OPENAI = FIXTURES / "openai-chat.json"
ANTHROPIC = FIXTURES / "anthropic-messages.json"


def test_openai_fixture() -> None:
    session = read_session(OPENAI)
    raw = json.loads(OPENAI.read_text())["messages"]
    assert session.format is Format.OPENAI_CHAT and session.warnings == ()
    assert session.model == "gpt-4o-2024-08-06"
    assert session.assistant_turns == sum(m["role"] == "assistant" for m in raw)
    calls = [c for m in session.messages for c in m.tool_calls]
    assert [c.id for c in calls] == [c["id"] for m in raw for c in m.get("tool_calls", [])]
    assert calls[0].input == {"cmd": "make test"}
    results = [r for m in session.messages for r in m.tool_results]
    assert [r.tool_call_id for r in results] == [m["tool_call_id"] for m in raw if m["role"] == "tool"]
    assert results[2].text.startswith("# demo")
    usage = session.messages[4].usage
    assert usage is not None and (usage.input_tokens, usage.cache_read_tokens) == (501 - 384, 384)
    assert session.system_prompt.startswith("You are a coding assistant")
    assert session.instruction.startswith("Why does")


def test_anthropic_fixture() -> None:
    session = read_session(ANTHROPIC)
    raw = json.loads(ANTHROPIC.read_text())["messages"]
    assert session.format is Format.ANTHROPIC_MESSAGES and session.warnings == ()
    assert session.messages[0].role is Role.SYSTEM
    assert session.assistant_turns == sum(m["role"] == "assistant" for m in raw)
    first = session.messages[2]
    assert isinstance(first.blocks[0], ThinkingBlock)
    assert first.tool_calls == (ToolCall("toolu_01A", "bash", {"command": "git describe --tags --abbrev=0"}),)
    errors = [r for m in session.messages for r in m.tool_results if r.is_error]
    assert errors == [ToolResult("toolu_01B", errors[0].text, is_error=True)]
    assert "No such file" in errors[0].text
    fills = [m.usage.context_tokens for m in session.messages if m.usage is not None]
    assert fills == [25 + 1180, 12 + 96 + 1180, 9 + 88 + 1276]


def test_detection_tells_the_two_apart() -> None:
    assert detect_format(OPENAI.read_bytes(), "x") is Format.OPENAI_CHAT
    assert detect_format(ANTHROPIC.read_bytes(), "x") is Format.ANTHROPIC_MESSAGES
    bare_anthropic = json.dumps(json.loads(ANTHROPIC.read_text())["messages"]).encode()
    assert detect_format(bare_anthropic, "x") is Format.ANTHROPIC_MESSAGES
    plain = json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]).encode()
    assert detect_format(plain, "x") is Format.OPENAI_CHAT
    assert detect_format(b'{"system": "be brief", "messages": [{"role": "user", "content": "x"}]}', "x") is (
        Format.ANTHROPIC_MESSAGES
    )


def test_invalid_arguments_are_kept_raw_with_a_warning() -> None:
    doc = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": '{"a": '}}, {"id": "c2"}],
        },
        {"role": "tool", "content": "r"},
        "junk",
    ]
    session = openai_chat.parse(json.dumps(doc).encode(), "d.json")
    assert session.messages[0].tool_calls == (ToolCall("c1", "f", '{"a": '),)
    reasons = [(w.line, w.reason.split(" ")[0]) for w in session.warnings]
    assert [line for line, _ in reasons] == [1, 1, 2, 3]


def test_wrong_top_level_shapes_are_warnings() -> None:
    for reader in (openai_chat.parse, anthropic_messages.parse):
        for data in (b"42", b'{"messages": 3}', b'"s"', b"{", b"[null, 1, []]"):
            session = reader(data, "x.json")
            assert session.warnings, (reader, data)
