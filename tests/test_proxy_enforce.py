"""Advise and enforce modes through a real proxy process: the forwarded request is what the recovery
code produced, keeps every tool call paired and validates against the official SDKs' request types;
halt answers with an API-shaped error and calls no model."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from ctxhealth.model import Session
from ctxhealth.recovery.pairing import find_orphans
from ctxhealth.recovery.restart import restart
from ctxhealth.recovery.truncate import truncate
from ctxhealth.sources import anthropic_messages, openai_chat
from ctxhealth.sources.writers import to_anthropic_request, to_openai_messages
from lazy_import import lazy
from proxy_process import ProxyProcess
from wire_conversations import (
    ANTHROPIC_REQUEST,
    CHAT_REQUEST,
    RESPONSES_REQUEST,
    SYSTEM,
    anthropic_history,
    chat_history,
    with_reply,
)
from wire_upstream import Upstream

anthropic = lazy("anthropic")  # the SDKs load when a test uses them, not at collection
openai = lazy("openai")


@pytest.fixture(scope="module")
def upstream() -> Iterator[Upstream]:
    server = Upstream().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def enforce(upstream: Upstream) -> Iterator[ProxyProcess]:
    proxy = ProxyProcess(upstream.url, "--mode", "enforce")
    yield proxy
    proxy.stop()


def post(proxy: ProxyProcess, path: str, body: dict[str, Any], session: str) -> httpx.Response:
    return httpx.post(proxy.url + path, json=body, headers={"x-ctxhealth-session": session}, timeout=30)


def anthropic_read(body: dict[str, Any]) -> Session:
    return anthropic_messages.parse(json.dumps(body).encode(), "request")


def test_enforce_truncates_with_the_recovery_code(enforce: ProxyProcess, upstream: Upstream) -> None:
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 256,
        "system": SYSTEM,
        "messages": anthropic_history(6),
    }
    upstream.fill = None
    assert post(enforce, "/v1/messages", body, "trunc").status_code == 200
    assert upstream.last("/v1/messages").json() == body  # healthy: unchanged
    upstream.fill = 125_000  # the reply reports a prompt in the compact zone
    assert post(enforce, "/v1/messages", body, "trunc").status_code == 200
    grown = {**body, "messages": with_reply(body["messages"], 1)}
    upstream.fill = 30_000  # what the model reports for the truncated prompt
    assert post(enforce, "/v1/messages", grown, "trunc").status_code == 200
    forwarded = upstream.last("/v1/messages").json()

    expected, report = truncate(anthropic_read(grown))
    assert report.messages_after < report.messages_before
    assert forwarded["system"] == SYSTEM and forwarded["model"] == "claude-sonnet-4-5"
    assert to_anthropic_request(anthropic_read(forwarded)) == to_anthropic_request(expected)
    assert find_orphans(anthropic_read(forwarded).messages) == ()
    ANTHROPIC_REQUEST.validate_python(forwarded)

    # the agent goes on with its whole history: the truncated prefix stays in place of it
    later = {**grown, "messages": with_reply(grown["messages"], 2)}
    assert post(enforce, "/v1/messages", later, "trunc").status_code == 200
    again = upstream.last("/v1/messages").json()
    assert again["messages"][: len(forwarded["messages"])] == forwarded["messages"]
    assert again["messages"][len(forwarded["messages"]) :] == later["messages"][len(grown["messages"]) :]
    assert find_orphans(anthropic_read(again).messages) == ()
    ANTHROPIC_REQUEST.validate_python(again)


def test_enforce_halts_with_an_api_error_and_calls_no_model(
    enforce: ProxyProcess, upstream: Upstream
) -> None:
    body = {"model": "claude-sonnet-4-5", "max_tokens": 256, "messages": anthropic_history(2)}
    upstream.fill = 145_000  # pressure 0.87 of 167K usable, zone orange: halt
    post(enforce, "/v1/messages", body, "halt").raise_for_status()
    calls = upstream.count("/v1/messages")
    client = anthropic.Anthropic(base_url=enforce.url, api_key="k", max_retries=2)
    with pytest.raises(anthropic.BadRequestError) as caught:
        client.messages.create(
            model="claude-sonnet-4-5",
            max_tokens=256,
            messages=with_reply(body["messages"], 1),  # type: ignore[arg-type]
            extra_headers={"x-ctxhealth-session": "halt"},
        )
    assert "halted this session" in str(caught.value) and "checkpoint" in str(caught.value)
    assert caught.value.response.headers["x-ctxhealth-action"] == "halt"
    assert upstream.count("/v1/messages") == calls  # no model was called, and no retry either


def test_enforce_restart_on_chat_completions(enforce: ProxyProcess, upstream: Upstream) -> None:
    body = {"model": "gpt-4o", "messages": chat_history(4)}
    upstream.fill = 110_000
    post(enforce, "/v1/chat/completions", body, "restart").raise_for_status()
    upstream.fill = 20_000
    call = {
        "id": "call_r1",
        "type": "function",
        "function": {"name": "read_file", "arguments": '{"path": "src/parser.py"}'},
    }
    grown = {
        **body,
        "messages": [
            *body["messages"],
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_r1", "content": "def parse(text): ..."},
        ],
    }
    client = openai.OpenAI(base_url=enforce.url + "/v1", api_key="k", max_retries=0)
    client.chat.completions.create(**grown, extra_headers={"x-ctxhealth-session": "restart"})  # type: ignore[call-overload]
    forwarded = upstream.last("/v1/chat/completions").json()
    expected, report = restart(openai_chat.parse(json.dumps(grown).encode(), "request"))
    assert report.messages_after == 2  # system prompt + one user message
    read = openai_chat.parse(json.dumps(forwarded).encode(), "request")
    assert to_openai_messages(read) == to_openai_messages(expected)
    assert forwarded["messages"][0] == body["messages"][0]  # the system message, as the client sent it
    assert find_orphans(read.messages) == ()
    CHAT_REQUEST.validate_python(forwarded)


def test_enforce_on_responses_keeps_items_valid(enforce: ProxyProcess, upstream: Upstream) -> None:
    items: list[dict[str, Any]] = [
        {"role": "user", "content": "Fix the failing parser test in src/parser.py."}
    ]
    for i in range(5):
        items.append(
            {
                "type": "function_call",
                "call_id": f"fc_{i}",
                "name": "read_file",
                "arguments": '{"path": "src/parser.py"}',
            }
        )
        items.append(
            {"type": "function_call_output", "call_id": f"fc_{i}", "output": f"def parse_{i}(): ..."}
        )
    body = {"model": "gpt-5", "instructions": SYSTEM, "input": items}
    upstream.fill = 175_000  # gpt-5 (400K): the full tier's compact zone scaled x1.41 starts at 170K
    post(enforce, "/v1/responses", body, "resp").raise_for_status()
    grown = {
        **body,
        "input": [
            *items,
            {"type": "function_call", "call_id": "fc_x", "name": "read_file", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "fc_x", "output": "ok"},
        ],
    }
    post(enforce, "/v1/responses", grown, "resp").raise_for_status()
    forwarded = upstream.last("/v1/responses").json()
    assert len(forwarded["input"]) < len(grown["input"])
    assert forwarded["instructions"] == SYSTEM
    calls = {i["call_id"] for i in forwarded["input"] if i.get("type") == "function_call"}
    outputs = {i["call_id"] for i in forwarded["input"] if i.get("type") == "function_call_output"}
    assert calls == outputs and "fc_x" in calls  # paired, and the newest pair kept
    RESPONSES_REQUEST.validate_python(forwarded)


def test_advise_adds_one_note_per_episode(upstream: Upstream) -> None:
    proxy = ProxyProcess(upstream.url, "--mode", "advise")
    try:
        body = {"model": "claude-sonnet-4-5", "max_tokens": 256, "messages": anthropic_history(2)}
        upstream.fill = 100_000  # pressure 0.56: warn
        post(proxy, "/v1/messages", body, "adv").raise_for_status()
        grown = {**body, "messages": with_reply(body["messages"], 1)}
        post(proxy, "/v1/messages", grown, "adv").raise_for_status()
        noted = upstream.last("/v1/messages").json()
        last = noted["messages"][-1]
        assert last["role"] == "user" and last["content"][0]["type"] == "tool_result"
        assert last["content"][-1]["text"].startswith("[CTXHEALTH -- WARN]")
        assert "pressure" in last["content"][-1]["text"]
        assert noted["messages"][:-1] == grown["messages"][:-1]  # nothing else changed
        ANTHROPIC_REQUEST.validate_python(noted)
        later = {**grown, "messages": with_reply(grown["messages"], 2)}
        post(proxy, "/v1/messages", later, "adv").raise_for_status()
        assert upstream.last("/v1/messages").json() == later  # the same episode: no second note
    finally:
        proxy.stop()
