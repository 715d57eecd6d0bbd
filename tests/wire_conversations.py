"""Conversations for the proxy, guard and SDK tests: request bodies in each API's shape, and the
official SDKs' request types to validate rewritten bodies against."""

from __future__ import annotations

from typing import Any

from lazy_import import LazyAdapter

INSTRUCTION = "Fix the failing parser test in src/parser.py and run the parser test suite."
SYSTEM = "You are a careful coding agent. Use the tools to read and edit files."

# built on first use: the SDKs are imported by the tests that validate, not while collecting
ANTHROPIC_REQUEST = LazyAdapter("anthropic.types.message_create_params:MessageCreateParamsNonStreaming")
CHAT_REQUEST = LazyAdapter("openai.types.chat.completion_create_params:CompletionCreateParamsNonStreaming")
RESPONSES_REQUEST = LazyAdapter(
    "openai.types.responses.response_create_params:ResponseCreateParamsNonStreaming"
)


def anthropic_history(turns: int, *, start: int = 0) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": INSTRUCTION}]
    for i in range(start, start + turns):
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"Reading the parser module, step {i}."},
                    {
                        "type": "tool_use",
                        "id": f"toolu_{i:04d}",
                        "name": "Read",
                        "input": {"file_path": "src/parser.py"},
                    },
                ],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": f"toolu_{i:04d}",
                        "content": f"def parse_{i}(text): ...",
                    }
                ],
            }
        )
    return messages


def chat_history(turns: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": INSTRUCTION},
    ]
    for i in range(turns):
        call = {
            "id": f"call_{i:04d}",
            "type": "function",
            "function": {"name": "read_file", "arguments": '{"path": "src/parser.py"}'},
        }
        messages.append(
            {"role": "assistant", "content": f"Reading the parser, step {i}.", "tool_calls": [call]}
        )
        messages.append(
            {"role": "tool", "tool_call_id": f"call_{i:04d}", "content": f"def parse_{i}(text): ..."}
        )
    return messages


def with_reply(messages: list[dict[str, Any]], i: int) -> list[dict[str, Any]]:
    """The conversation after the fixture's reply (text + a Read call) and its tool result."""
    return [
        *messages,
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "I'll read the parser module to find the failing case."},
                {
                    "type": "tool_use",
                    "id": f"toolu_r{i}",
                    "name": "Read",
                    "input": {"file_path": "src/parser.py"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": f"toolu_r{i}", "content": "def parse(text): ..."}
            ],
        },
    ]
