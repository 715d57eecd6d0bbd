"""``ctxhealth.integrations.anthropic.wrap`` and ``ctxhealth.integrations.openai.wrap``: the official
clients, sync and async, streamed and not, against the local upstream that replays recorded responses."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from ctxhealth.integrations import anthropic as ch_anthropic
from ctxhealth.integrations import openai as ch_openai
from ctxhealth.integrations.guard import Guard, LedgerStore, Mode
from ctxhealth.state.ledger import Ledger
from lazy_import import lazy
from wire_conversations import (
    ANTHROPIC_REQUEST,
    INSTRUCTION,
    SYSTEM,
    anthropic_history,
    chat_history,
    with_reply,
)
from wire_upstream import Upstream

anthropic = lazy("anthropic")  # the SDKs load when a test uses them, not at collection
openai = lazy("openai")

SESSION = {"x-ctxhealth-session": "sdk"}


@pytest.fixture(scope="module")
def upstream() -> Iterator[Upstream]:
    server = Upstream().start()
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def _reset(upstream: Upstream) -> None:
    upstream.fill = None
    upstream.status = None


def test_observe_sends_what_the_plain_client_sends(upstream: Upstream) -> None:
    plain = anthropic.Anthropic(base_url=upstream.url, api_key="k", max_retries=0)
    guard = Guard(Mode.OBSERVE)
    wrapped = ch_anthropic.wrap(plain, guard=guard)
    kwargs = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 64,
        "system": SYSTEM,
        "messages": anthropic_history(2),
    }
    a = plain.messages.create(**kwargs)  # type: ignore[call-overload]
    sent_plain = upstream.last("/v1/messages").body
    b = wrapped.messages.create(**kwargs)  # type: ignore[call-overload]
    assert upstream.last("/v1/messages").body == sent_plain
    assert a == b
    (session,) = guard.status()["sessions"]
    assert session["reported_fill"] == 20152 and session["requests"] == 1


def test_sync_anthropic_stream_and_enforce(upstream: Upstream) -> None:
    guard = Guard(Mode.ENFORCE)
    client = ch_anthropic.wrap(
        anthropic.Anthropic(base_url=upstream.url, api_key="k", max_retries=0), guard=guard
    )
    messages = anthropic_history(6)
    upstream.fill = 125_000
    with client.messages.stream(
        model="claude-sonnet-4-5", max_tokens=64, messages=messages, extra_headers=SESSION
    ) as s:
        assert s.get_final_message().usage.cache_read_input_tokens == 125_000 - 412 - 1536
    upstream.fill = 30_000
    client.messages.create(
        model="claude-sonnet-4-5", max_tokens=64, messages=with_reply(messages, 1), extra_headers=SESSION
    )  # type: ignore[arg-type]
    sent = upstream.last("/v1/messages")
    assert len(sent.json()["messages"]) < len(messages)  # truncated
    assert "x-ctxhealth-session" not in sent.headers
    ANTHROPIC_REQUEST.validate_python(sent.json())
    assert guard.status()["sessions"][0]["last_action"] == "truncate"


def test_async_anthropic_halt_raises_bad_request(upstream: Upstream) -> None:
    guard = Guard(Mode.ENFORCE)
    client = ch_anthropic.wrap(
        anthropic.AsyncAnthropic(base_url=upstream.url, api_key="k", max_retries=2), guard=guard
    )

    async def run() -> None:
        upstream.fill = 145_000  # pressure 0.87 of 167K usable, zone orange: halt
        stream = await client.messages.create(
            model="claude-sonnet-4-5",
            max_tokens=64,
            messages=anthropic_history(2),
            stream=True,
            extra_headers=SESSION,
        )
        async for _ in stream:
            pass
        calls = upstream.count("/v1/messages")
        with pytest.raises(anthropic.BadRequestError, match="halted this session"):
            await client.messages.create(
                model="claude-sonnet-4-5",
                max_tokens=64,
                messages=with_reply(anthropic_history(2), 1),  # type: ignore[arg-type]
                extra_headers=SESSION,
            )
        assert upstream.count("/v1/messages") == calls

    asyncio.run(run())
    assert guard.status()["sessions"][0]["halted"] is True


def test_openai_sync_chat_stream_and_async_responses(upstream: Upstream, tmp_path: Path) -> None:
    store = LedgerStore(tmp_path)
    guard = Guard(Mode.ADVISE, store=store)
    client = ch_openai.wrap(
        openai.OpenAI(base_url=upstream.url + "/v1", api_key="k", max_retries=0), guard=guard
    )
    upstream.fill = 70_000  # gpt-4o: pressure 0.63, approaching the compact zone (74,411): a warning
    chunks = list(
        client.chat.completions.create(
            model="gpt-4o",
            messages=chat_history(2),
            stream=True,
            stream_options={"include_usage": True},  # type: ignore[arg-type]
            extra_headers=SESSION,
        )
    )
    assert chunks[-1].usage is not None and chunks[-1].usage.prompt_tokens == 70_000
    messages = chat_history(3)
    client.chat.completions.create(model="gpt-4o", messages=messages, extra_headers=SESSION)  # type: ignore[arg-type]
    sent = upstream.last("/v1/chat/completions").json()
    note = sent["messages"][-1]
    assert sent["messages"][:-1] == messages and note["role"] == "user"
    action = note["content"].split("]")[0].removeprefix("[CTXHEALTH -- ").lower()
    assert action in ("warn", "reanchor") and "pressure 0.63" in note["content"]

    aclient = ch_openai.wrap(openai.AsyncOpenAI(base_url=upstream.url + "/v1", api_key="k", max_retries=0))

    async def run() -> str:
        reply = await aclient.responses.create(model="gpt-5", input=INSTRUCTION)
        return reply.output_text

    assert asyncio.run(run()) == "The failing case is the empty input."
    store.drain()  # the ledger is written by a background thread
    with Ledger.open(tmp_path) as ledger:  # the wrapped client kept its session on disk
        assert ledger.get_tail("guard:openai-chat:sdk") is not None
        assert [d.action for d in ledger.decisions("openai-chat:sdk")] == [action]


def test_wrap_refuses_an_unknown_mode_and_a_foreign_client() -> None:
    from ctxhealth.errors import UsageError

    with pytest.raises(UsageError, match="unknown mode"):
        ch_anthropic.wrap(anthropic.Anthropic(api_key="k"), mode="enforcing")
    with pytest.raises(UsageError, match="cannot wrap"):
        ch_openai.wrap(object(), mode="observe")


def test_the_wrapper_fails_open(upstream: Upstream, monkeypatch: pytest.MonkeyPatch) -> None:
    from ctxhealth.monitor import Monitor

    def broken(self: Monitor, message: object, *, fill: int | None = None) -> object:
        raise RuntimeError("detector exploded")

    monkeypatch.setattr(Monitor, "update", broken)  # what the guard feeds each message to
    guard = Guard(Mode.ENFORCE)
    client = ch_openai.wrap(
        openai.OpenAI(base_url=upstream.url + "/v1", api_key="k", max_retries=0), guard=guard
    )
    messages = chat_history(3)
    reply = client.chat.completions.create(model="gpt-4o", messages=messages)  # type: ignore[arg-type]
    assert reply.choices  # the request went through
    assert upstream.last("/v1/chat/completions").json()["messages"] == messages  # unchanged
    assert guard.metrics.errors == 1
