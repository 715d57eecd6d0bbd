"""The fake Anthropic API streams what the official SDK parses; its usage is the documented cache arithmetic.

These run without any agent CLI: the anthropic SDK is the client.
"""

from __future__ import annotations

from typing import Any

from lazy_import import lazy

from .fake_anthropic import FakeAnthropic, Reply, Text, Thinking, ToolUse, input_tokens

anthropic = lazy("anthropic")  # the SDK loads when a test uses it, not at collection

SYSTEM: list[Any] = [
    {"type": "text", "text": "x-anthropic-billing-header: cc_version=1.2.3.abc;"},
    {"type": "text", "text": "You are a test model. " * 50, "cache_control": {"type": "ephemeral"}},
]


def scripted(body: dict[str, Any], headers: dict[str, str]) -> Reply:
    return Reply([Thinking("hmm " * 10), Text("hello " * 20), ToolUse("Bash", {"command": "ls -la " * 5})])


def client(fake: FakeAnthropic) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=fake.url, api_key="sk-fake", max_retries=0)


def test_the_sdk_accumulates_the_stream_into_the_scripted_message() -> None:
    with FakeAnthropic(scripted) as fake:
        messages: list[Any] = [{"role": "user", "content": "hi"}]
        with client(fake).messages.stream(
            model="claude-test", max_tokens=100, system=SYSTEM, messages=messages
        ) as stream:
            kinds = [event.type for event in stream]
            final = stream.get_final_message()
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    assert [block.type for block in final.content] == ["thinking", "text", "tool_use"]
    assert final.content[1].text == "hello " * 20  # type: ignore[union-attr]
    assert final.content[2].input == {"command": "ls -la " * 5}  # type: ignore[union-attr]
    assert final.content[0].signature  # type: ignore[union-attr]
    assert final.stop_reason == "tool_use"
    (exchange,) = fake.log
    assert final.usage.output_tokens == exchange.usage["output_tokens"]
    assert final.usage.cache_creation_input_tokens == exchange.usage["cache_creation_input_tokens"]


def test_cache_is_written_once_then_read_and_the_fill_is_the_whole_prompt() -> None:
    with FakeAnthropic(scripted) as fake:
        api = client(fake)
        first: list[Any] = [{"role": "user", "content": [{"type": "text", "text": "one " * 100}]}]
        api.messages.create(model="m", max_tokens=10, system=SYSTEM, messages=first)
        # the billing line changes per request and is not part of the cached prompt
        system = [{"type": "text", "text": "x-anthropic-billing-header: cc_version=1.2.3.def;"}, SYSTEM[1]]
        second: list[Any] = [
            *first,
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": "two"},
        ]
        api.messages.create(model="m", max_tokens=10, system=system, messages=second)
        one, two = fake.log
    assert one.usage["cache_read_input_tokens"] == 0
    assert one.usage["cache_creation_input_tokens"] > 0
    assert two.usage["cache_read_input_tokens"] == one.usage["cache_creation_input_tokens"]
    assert one.fill == input_tokens(one.body)
    assert two.fill == input_tokens(two.body) > one.fill


def test_count_tokens_answers_what_a_message_would_count() -> None:
    with FakeAnthropic(scripted) as fake:
        messages: list[Any] = [{"role": "user", "content": "count me " * 30}]
        counted = client(fake).messages.count_tokens(model="m", system=SYSTEM, messages=messages)
        created = client(fake).messages.create(model="m", max_tokens=5, system=SYSTEM, messages=messages)
    usage = created.usage
    total = (
        usage.input_tokens + (usage.cache_creation_input_tokens or 0) + (usage.cache_read_input_tokens or 0)
    )
    assert counted.input_tokens == total
