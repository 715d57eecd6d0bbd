"""``read_messages``: in-memory OpenAI / Anthropic message lists read by the same readers as files,
SDK response objects included, without a JSON round trip."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from ctxhealth import Format, Monitor, Role, StrictModeError, ToolCall, ToolResult, UsageError, read_messages
from ctxhealth.sources import read_session
from lazy_import import lazy

anthropic = lazy("anthropic")  # the SDKs load when a test uses them, not at collection
openai = lazy("openai")

FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.mark.parametrize(
    ("fixture", "format"),
    [("openai-chat.json", "openai"), ("anthropic-messages.json", "anthropic")],
)
def test_same_session_as_reading_the_file(fixture: str, format: str) -> None:
    doc = json.loads((FIXTURES / fixture).read_text())
    before = copy.deepcopy(doc)
    from_file = read_session(FIXTURES / fixture)
    in_memory = read_messages(doc["messages"], format=format, system=doc.get("system"), model=doc["model"])
    assert in_memory.messages == from_file.messages
    assert (in_memory.format, in_memory.model, in_memory.warnings) == (from_file.format, from_file.model, ())
    assert doc == before  # nothing passed in is modified


def test_anthropic_sdk_objects_inside_the_list() -> None:
    response = anthropic.types.Message(
        id="msg_1",
        type="message",
        role="assistant",
        model="claude-sonnet-4-5",
        content=[
            anthropic.types.TextBlock(type="text", text="Running the tests."),
            anthropic.types.ToolUseBlock(
                type="tool_use", id="toolu_1", name="bash", input={"command": "pytest -q"}
            ),
        ],
        stop_reason="tool_use",
        usage=anthropic.types.Usage(input_tokens=12, output_tokens=30, cache_read_input_tokens=4_000),
    )
    messages = [
        {"role": "user", "content": "make the tests pass"},
        response,  # the SDK's response object as it came back
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "2 failed", "is_error": True}
            ],
        },
        {"role": "assistant", "content": response.content},  # the common pattern: its content blocks
    ]
    session = read_messages(messages, format=Format.ANTHROPIC_MESSAGES, system="You fix tests.")
    assert session.warnings == ()
    assert [m.role for m in session.messages] == [
        Role.SYSTEM,
        Role.USER,
        Role.ASSISTANT,
        Role.USER,
        Role.ASSISTANT,
    ]
    reply = session.messages[2]
    assert reply.tool_calls == (ToolCall("toolu_1", "bash", {"command": "pytest -q"}),)
    assert reply.usage is not None and reply.usage.context_tokens == 4_012
    assert session.model == "claude-sonnet-4-5"
    assert session.messages[3].tool_results == (ToolResult("toolu_1", "2 failed", is_error=True),)
    assert session.messages[4].tool_calls == reply.tool_calls
    monitor = Monitor()
    assert monitor.observe_session(session).fill >= 4_012


def test_openai_sdk_message_and_system_prompt_keep_list_positions() -> None:
    reply = openai.types.chat.ChatCompletionMessage(
        role="assistant",
        content=None,
        tool_calls=[
            openai.types.chat.ChatCompletionMessageToolCall(
                id="call_1", type="function", function={"name": "run", "arguments": '{"cmd": "make"}'}
            )
        ],
    )
    messages = [
        {"role": "user", "content": "build it"},
        reply,
        {"role": "tool", "tool_call_id": "call_1", "content": "ok"},
        {"role": "wizard", "content": "?"},
    ]
    session = read_messages(messages, format="openai", system="Be brief.", model="gpt-4o")
    assert [(m.role, m.line) for m in session.messages] == [
        (Role.SYSTEM, 0),
        (Role.USER, 1),
        (Role.ASSISTANT, 2),
        (Role.TOOL, 3),
    ]
    assert session.messages[2].tool_calls == (ToolCall("call_1", "run", {"cmd": "make"}),)
    assert session.model == "gpt-4o"
    [warning] = session.warnings
    assert (warning.path, warning.line) == ("<messages>", 4) and "wizard" in warning.reason
    with pytest.raises(StrictModeError, match="wizard"):
        read_messages(messages, format="openai", strict=True)


def test_a_file_format_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="claude-code"):
        read_messages([], format="claude-code")


def _nested(levels: int) -> object:
    value: object = "x"
    for _ in range(levels):
        value = {"a": value}
    return value


def test_a_message_nested_past_the_limit_is_a_clear_error_and_the_monitor_goes_on() -> None:
    from ctxhealth.sources.messages import MAX_DEPTH, plain

    assert plain(_nested(MAX_DEPTH - 1)) == _nested(MAX_DEPTH - 1)
    looped: dict[str, object] = {}
    looped["me"] = looped
    for bad in (_nested(MAX_DEPTH + 1), _nested(5_000), looped):
        with pytest.raises(UsageError, match="levels deep"):
            plain(bad)

    request = {"role": "user", "content": "fix the failing test in parser.py"}
    call = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {"p": 1}}],
    }
    refused = Monitor()
    refused.observe(request)
    with pytest.raises(UsageError, match="levels deep"):
        refused.observe(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t0", "name": "Edit", "input": _nested(900)}],
            }
        )
    clean = Monitor()
    clean.observe(request)
    assert refused.observe(call) == clean.observe(call)
