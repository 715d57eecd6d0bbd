"""The guard's own process (:mod:`ctxhealth.integrations.proxy.worker`): what the relay queues
reaches it whole and in order however it is batched, and a guard that falls behind costs
assessments (counted), never the relay's memory without bound."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from typing import Any

import pytest

from ctxhealth.integrations.proxy import worker
from ctxhealth.integrations.proxy.config import ProxyConfig
from ctxhealth.integrations.proxy.worker import GuardProcess
from ctxhealth.integrations.wire import ApiStyle, ResponseFacts

STYLE = ApiStyle.ANTHROPIC_MESSAGES
HEADERS = {"x-ctxhealth-session": "batched", "content-type": "application/json"}


def body(turns: int, pad: int = 0) -> bytes:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Fix the parser test." + " " * pad}]
    for i in range(turns):
        messages.append({"role": "assistant", "content": f"step {i}: reading the parser"})
        messages.append({"role": "user", "content": f"result {i}"})
    return json.dumps({"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": messages}).encode()


def status(guard: GuardProcess) -> dict[str, Any]:
    async def ask() -> dict[str, Any]:
        answer: dict[str, Any] = await guard.ask("status")
        return answer

    return asyncio.run(ask())


def metrics(guard: GuardProcess) -> str:
    async def ask() -> str:
        answer: str = await guard.ask("metrics")
        return answer

    return asyncio.run(ask())


def close(guard: GuardProcess) -> None:
    asyncio.run(guard.aclose())


def test_messages_queued_faster_than_sent_arrive_whole_and_in_order() -> None:
    guard = GuardProcess(ProxyConfig(upstream="http://127.0.0.1:9", workers=2))
    try:
        for turn in range(200):  # queued at once: the sender sends them in batches
            ticket = guard.plan(STYLE, body(turn), HEADERS, "POST /v1/messages")
            guard.latency(0.001)
            guard.finish(ticket, 200, ResponseFacts())
        (session,) = status(guard)["sessions"]
        text = metrics(guard)
    finally:
        close(guard)
    # in order: each request extends the one before, so no prefix ever reset
    assert session["requests"] == 200 and session["resets"] == 0
    assert session["observed_messages"] == 1 + 2 * 199
    assert "ctxhealth_upstream_latency_seconds_count 200" in text


@pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="stops the guard process with SIGSTOP")
def test_a_guard_that_falls_behind_costs_assessments_counted_not_memory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(worker, "MAX_BEHIND_BYTES", 256 * 1024)
    guard = GuardProcess(ProxyConfig(upstream="http://127.0.0.1:9", workers=2))
    pid = guard._process.pid
    assert pid is not None
    try:
        status(guard)  # started
        os.kill(pid, signal.SIGSTOP)  # the guard gets no CPU: the pipe fills, the queue grows
        queued = skipped = 0
        for turn in range(150):  # ~20 KiB each: 3 MiB, far more than the pipe holds
            ticket = guard.plan(STYLE, body(turn, pad=20_000), HEADERS, "POST /v1/messages")
            guard.finish(ticket, 200, ResponseFacts())
            queued += ticket.seq != 0
            skipped += ticket.seq == 0
            time.sleep(0.002)
        assert skipped and guard._queued_bytes - guard._sent_bytes <= 256 * 1024 + 30_000
        os.kill(pid, signal.SIGCONT)
        deadline = time.monotonic() + 20
        while guard._sent_bytes < guard._queued_bytes:  # the guard catches up
            assert time.monotonic() < deadline
            time.sleep(0.02)
        guard.plan(STYLE, body(150, pad=20_000), HEADERS, "POST /v1/messages")
        (session,) = status(guard)["sessions"]
        text = metrics(guard)
    finally:
        os.kill(pid, signal.SIGCONT)
        close(guard)
    assert session["requests"] == queued + 1
    assert f"ctxhealth_proxy_errors_total {skipped}" in text
