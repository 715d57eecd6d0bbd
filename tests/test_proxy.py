"""The proxy as a real process (uvicorn on a free loopback port) in front of a local upstream that
replays recorded wire-format responses; the official ``anthropic`` and ``openai`` clients talk to it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from conftest import invoke
from lazy_import import lazy
from proxy_process import ProxyProcess
from wire_conversations import INSTRUCTION, SYSTEM, anthropic_history, chat_history
from wire_upstream import WIRE, Upstream, fixture_bytes, free_port

anthropic = lazy("anthropic")  # the SDKs load when a test uses them, not at collection
openai = lazy("openai")


@pytest.fixture(scope="module")
def upstream() -> Iterator[Upstream]:
    server = Upstream().start()
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def _reset_upstream(upstream: Upstream) -> None:
    upstream.fill = None
    upstream.status = None


@pytest.fixture(scope="module")
def observe(upstream: Upstream) -> Iterator[ProxyProcess]:
    proxy = ProxyProcess(upstream.url)
    yield proxy
    proxy.stop()


def session_status(proxy: ProxyProcess, session: str) -> dict[str, Any]:
    for s in proxy.status()["sessions"]:  # type: ignore[attr-defined]
        if s["session"].endswith(session):
            return dict(s)
    raise AssertionError(f"no session {session}")


# ---------------------------------------------------------------------------------- observe mode


@pytest.mark.parametrize(
    ("path", "body"),
    [
        (
            "/v1/messages",
            {
                "model": "claude-sonnet-4-5",
                "max_tokens": 256,
                "system": SYSTEM,
                "messages": anthropic_history(1),
                "stream": True,
            },
        ),
        (
            "/v1/chat/completions",
            {
                "model": "gpt-4o",
                "messages": chat_history(1),
                "stream": True,
                "stream_options": {"include_usage": True},
            },
        ),
        ("/v1/responses", {"model": "gpt-5", "instructions": SYSTEM, "input": INSTRUCTION, "stream": True}),
        ("/v1/messages", {"model": "claude-sonnet-4-5", "max_tokens": 256, "messages": anthropic_history(0)}),
        ("/v1/chat/completions", {"model": "gpt-4o", "messages": chat_history(0)}),
        ("/v1/responses", {"model": "gpt-5", "input": INSTRUCTION}),
    ],
)
def test_observe_passes_bytes_through_both_ways(
    observe: ProxyProcess, upstream: Upstream, path: str, body: dict[str, Any]
) -> None:
    raw = json.dumps(body).encode()
    headers = {
        "x-api-key": "sk-ant-test-secret",
        "authorization": "Bearer sk-test",
        "content-type": "application/json",
    }
    with httpx.stream("POST", observe.url + path, content=raw, headers=headers, timeout=10) as response:
        got = b"".join(response.iter_raw())
        assert response.status_code == 200
    assert got == fixture_bytes(path, bool(body.get("stream")))
    sent = upstream.last(path)
    assert sent.body == raw  # the request went out byte for byte
    assert sent.headers["x-api-key"] == "sk-ant-test-secret"
    assert sent.headers["authorization"] == "Bearer sk-test"


def test_anthropic_client_streams_through_the_proxy(observe: ProxyProcess, upstream: Upstream) -> None:
    client = anthropic.Anthropic(base_url=observe.url, api_key="sk-ant-test", max_retries=0)
    messages = anthropic_history(2)
    with client.messages.stream(
        model="claude-sonnet-4-5",
        max_tokens=256,
        system=SYSTEM,
        messages=messages,
        extra_headers={"x-ctxhealth-session": "sdk-a"},
    ) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == "I'll read the parser module to find the failing case."
    assert final.usage.cache_read_input_tokens == 18204
    assert final.content[1].type == "tool_use"
    status = session_status(observe, "sdk-a")
    assert status["reported_fill"] == 412 + 1536 + 18204
    assert status["observed_messages"] == 1 + 5  # system + instruction + 2 turns
    # the next request carries the whole conversation again: only the new messages are observed
    messages += [
        {"role": "assistant", "content": [c.model_dump(exclude_none=True) for c in final.content]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": final.content[1].id, "content": "ok"}],
        },
    ]
    reply = client.messages.create(
        model="claude-sonnet-4-5",
        max_tokens=256,
        system=SYSTEM,
        messages=messages,
        extra_headers={"x-ctxhealth-session": "sdk-a"},
    )
    assert reply.id == "msg_01Kx8p3JnWqYF3a9bHc2Vd7T"
    assert "x-ctxhealth-session" not in upstream.last("/v1/messages").headers  # ours, not the provider's
    status = session_status(observe, "sdk-a")
    assert status["observed_messages"] == 6 + 2
    assert status["requests"] == 2 and status["resets"] == 0
    # the one fill account: the fill is the latest prompt the provider reported
    assert status["fill_source"] == "reported" and status["fill"] >= 20152


def test_openai_clients_stream_through_the_proxy(observe: ProxyProcess) -> None:
    client = openai.OpenAI(base_url=observe.url + "/v1", api_key="sk-test", max_retries=0)
    chunks = list(
        client.chat.completions.create(
            model="gpt-4o",
            messages=chat_history(1),
            stream=True,
            stream_options={"include_usage": True},  # type: ignore[arg-type]
            extra_headers={"x-ctxhealth-session": "sdk-c"},
        )
    )
    assert chunks[-1].usage is not None and chunks[-1].usage.prompt_tokens == 20152
    assert chunks[0].choices[0].delta.tool_calls[0].function.name == "read_file"  # type: ignore[index,union-attr]
    events = list(
        client.responses.create(
            model="gpt-5", input=INSTRUCTION, stream=True, extra_headers={"x-ctxhealth-session": "sdk-r"}
        )
    )
    assert events[-1].type == "response.completed"
    reply = client.responses.create(
        model="gpt-5", input=INSTRUCTION, extra_headers={"x-ctxhealth-session": "sdk-r2"}
    )
    assert reply.output_text == "The failing case is the empty input."
    assert session_status(observe, "sdk-c")["reported_fill"] == 20152
    assert session_status(observe, "sdk-r")["reported_fill"] == 20152
    assert session_status(observe, "sdk-r2")["reported_fill"] == 20152


def test_edited_history_is_recognised_and_counted_as_a_reset(observe: ProxyProcess) -> None:
    headers = {"x-ctxhealth-session": "edit"}
    body = {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": anthropic_history(3)}
    httpx.post(observe.url + "/v1/messages", json=body, headers=headers, timeout=10).raise_for_status()
    # cache breakpoints moved to the newest message: not an edit
    moved = anthropic_history(3)
    moved[-1]["content"][0]["cache_control"] = {"type": "ephemeral"}
    httpx.post(
        observe.url + "/v1/messages", json={**body, "messages": moved}, headers=headers, timeout=10
    ).raise_for_status()
    assert session_status(observe, "edit")["resets"] == 0
    # the agent compacted: a summary replaces the old turns
    compacted = [{"role": "user", "content": "Summary of the work so far: the parser fails on empty input."}]
    httpx.post(
        observe.url + "/v1/messages", json={**body, "messages": compacted}, headers=headers, timeout=10
    ).raise_for_status()
    status = session_status(observe, "edit")
    assert status["resets"] == 1
    assert status["observed_messages"] == 7 + 1  # re-observed from the start


def test_status_and_metrics(observe: ProxyProcess) -> None:
    httpx.post(
        observe.url + "/v1/messages",
        json={"model": "claude-sonnet-4-5", "max_tokens": 8, "messages": anthropic_history(0)},
        timeout=10,
    )
    status = observe.status()
    assert status["mode"] == "observe"
    session = status["sessions"][0]  # type: ignore[index]
    assert {"session", "fill", "zone", "pressure", "last_action", "requests", "resets"} <= set(session)
    text = httpx.get(observe.url + "/metrics", timeout=5).text
    assert 'ctxhealth_proxy_requests_total{api="anthropic-messages",mode="observe"}' in text
    assert 'ctxhealth_proxy_tokens_total{kind="cache_read"}' in text
    assert "ctxhealth_upstream_latency_seconds_count" in text
    assert "# TYPE ctxhealth_session_fill_tokens gauge" in text


def test_other_paths_and_upstream_errors_pass_through(observe: ProxyProcess, upstream: Upstream) -> None:
    models = httpx.get(observe.url + "/v1/models?limit=5", headers={"x-api-key": "k"}, timeout=5)
    assert models.json()["data"][0]["id"] == "claude-sonnet-4-5"
    upstream.status = 429
    client = anthropic.Anthropic(base_url=observe.url, api_key="k", max_retries=0)
    with pytest.raises(anthropic.RateLimitError) as caught:
        client.messages.create(model="claude-sonnet-4-5", max_tokens=8, messages=anthropic_history(0))
    assert caught.value.status_code == 429
    assert caught.value.response.headers["retry-after"] == "0"


def test_client_disconnect_ends_the_upstream_call(upstream: Upstream) -> None:
    proxy = ProxyProcess(upstream.url)
    try:
        for _ in range(3):  # the relay's own cancellation ends each one; nothing else is cancelled
            upstream.abandoned.clear()
            with httpx.stream("POST", proxy.url + "/v1/slow", content=b"{}", timeout=10) as response:
                first = next(response.iter_raw())
                assert first.startswith(b"data:")
            assert upstream.abandoned.wait(timeout=5)
        # the proxy serves on: a whole stream after the abandoned ones
        body = {
            "model": "claude-sonnet-4-5",
            "max_tokens": 8,
            "stream": True,
            "messages": anthropic_history(0),
        }
        with httpx.stream("POST", proxy.url + "/v1/messages", json=body, timeout=10) as response:
            assert b"message_stop" in b"".join(response.iter_raw())
    finally:
        log = proxy.stop()
    assert "Traceback" not in log and "Exception in ASGI application" not in log


def test_request_size_limit(upstream: Upstream) -> None:
    proxy = ProxyProcess(upstream.url, "--max-body-mb", "0.01")
    try:
        big = {
            "model": "claude-sonnet-4-5",
            "max_tokens": 8,
            "messages": [{"role": "user", "content": "x" * 20_000}],
        }
        response = httpx.post(proxy.url + "/v1/messages", json=big, timeout=5)
        assert response.status_code == 413
        assert response.json()["error"]["type"] == "request_too_large"
    finally:
        proxy.stop()


def test_fixtures_are_what_the_sdks_parse() -> None:
    """The recorded responses are valid for the official SDKs' response types."""
    anthropic.types.Message.model_validate_json((WIRE / "anthropic-messages.json").read_bytes())
    openai.types.chat.ChatCompletion.model_validate_json((WIRE / "openai-chat.json").read_bytes())
    openai.types.responses.Response.model_validate_json((WIRE / "openai-responses.json").read_bytes())


def test_state_survives_a_restart(upstream: Upstream, tmp_path: Path) -> None:
    home = tmp_path / "home"
    headers = {"x-ctxhealth-session": "durable"}
    proxy = ProxyProcess(upstream.url, home=home)
    try:
        body = {"model": "claude-sonnet-4-5", "max_tokens": 8, "messages": anthropic_history(2)}
        httpx.post(proxy.url + "/v1/messages", json=body, headers=headers, timeout=5).raise_for_status()
        before = session_status(proxy, "durable")
    finally:
        proxy.stop()
    proxy = ProxyProcess(upstream.url, home=home)
    try:
        body = {"model": "claude-sonnet-4-5", "max_tokens": 8, "messages": anthropic_history(3)}
        httpx.post(proxy.url + "/v1/messages", json=body, headers=headers, timeout=5).raise_for_status()
        after = session_status(proxy, "durable")
    finally:
        proxy.stop()
    assert before["turn"] == 2 and after["turn"] == 3
    assert after["requests"] == 2 and after["resets"] == 0
    assert after["observed_messages"] == before["observed_messages"] + 2  # only the new turn was observed
    assert after["reported_fill"] == before["reported_fill"]


def test_unreachable_upstream_is_an_api_error_and_logs_carry_no_secrets(tmp_path: Path) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    proxy = ProxyProcess(dead, "-v", "--log-bodies")
    try:
        headers = {
            "x-api-key": "sk-ant-api03-very-secret-key",
            "authorization": "Bearer sk-proj-secret-token",
        }
        body = {"model": "claude-sonnet-4-5", "max_tokens": 8, "messages": anthropic_history(0)}
        response = httpx.post(proxy.url + "/v1/messages", json=body, headers=headers, timeout=10)
    finally:
        log = proxy.stop()
    assert response.status_code == 502
    message = response.json()["error"]["message"]
    assert response.json()["type"] == "error" and "unreachable" in message
    # what happened, in words: no aiohttp object repr (ConnectionKey(...), <...>)
    assert f"cannot connect to 127.0.0.1:{dead.rsplit(':', 1)[1]}" in message
    assert "ConnectionKey" not in message and "<" not in message
    assert "POST /v1/messages session=" in log and "request body:" in log  # bodies only with --log-bodies
    assert "very-secret-key" not in log and "sk-proj-secret-token" not in log


def test_cli_refuses_an_upstream_that_is_not_http() -> None:

    result = invoke(["proxy", "--upstream", "ftp://example.com"])
    assert result.exit_code == 2
    assert "not an http(s) URL" in result.output
