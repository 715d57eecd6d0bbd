"""The proxy against clients and upstreams that misbehave, every server a real process on loopback.

Sessions told apart by their conversation (two agents with the same first message; a session name
used by another client), slow request heads (slowloris), an upstream that dies or stalls in the
middle of a stream, and credentials in ``--upstream`` (sent upstream, never shown).
"""

from __future__ import annotations

import base64
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from proxy_process import ProxyProcess
from wire_conversations import INSTRUCTION, SYSTEM

pytest.importorskip("aiohttp")

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def upstream() -> Iterator[str]:
    process = subprocess.Popen(
        [sys.executable, str(HERE / "fault_upstream.py")], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    port = process.stdout.readline().strip()
    yield f"http://127.0.0.1:{port}"
    process.kill()
    process.wait()


@pytest.fixture(scope="module")
def proxy(upstream: str) -> Iterator[ProxyProcess]:
    server = ProxyProcess(upstream, "--read-timeout", "0.5")
    yield server
    server.stop()


def conversation(agent: str, turns: int, system: str = SYSTEM) -> dict[str, Any]:
    """An Anthropic request: the same system prompt and first message for every agent, then turns
    of the agent's own."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": INSTRUCTION}]
    for i in range(turns):
        messages.append({"role": "assistant", "content": f"{agent}: step {i}, reading the parser."})
        messages.append({"role": "user", "content": f"{agent}: result {i}"})
    return {"model": "claude-sonnet-4-5", "max_tokens": 64, "system": system, "messages": messages}


def post(proxy: ProxyProcess, body: dict[str, Any], **headers: str) -> httpx.Response:
    response = httpx.post(proxy.url + "/v1/messages", json=body, headers=headers, timeout=10)
    response.raise_for_status()
    return response


def sessions(proxy: ProxyProcess, contains: str) -> list[dict[str, Any]]:
    return [s for s in proxy.status()["sessions"] if contains in s["session"]]  # type: ignore[attr-defined]


# ------------------------------------------------------------------------------------- sessions


@pytest.mark.parametrize("workers", ["1", "2"])
def test_two_agents_with_the_same_first_message_stay_two_sessions(upstream: str, workers: str) -> None:
    proxy = ProxyProcess(upstream, "--workers", workers)
    try:
        for turn in range(5):  # interleaved: A, B, A, B ... (10 requests, no agent headers)
            post(proxy, conversation("agent A", turn))
            post(proxy, conversation("agent B", turn))
        found = sessions(proxy, "anthropic-messages:")
    finally:
        proxy.stop()
    assert len(found) == 2, found
    assert [s["resets"] for s in found] == [0, 0]
    # each observed its own conversation once: system + instruction + 4 turns of 2 messages
    assert sorted(s["observed_messages"] for s in found) == [1 + 1 + 8, 1 + 1 + 8]


def test_a_session_name_never_lets_another_conversation_wipe_it(proxy: ProxyProcess) -> None:
    for turn in range(3):
        post(proxy, conversation("owner", turn), **{"x-ctxhealth-session": "shared"})
    (before,) = sessions(proxy, ":shared")
    # another program uses the same name with its own system prompt: a session of its own
    post(
        proxy,
        conversation("intruder", 2, system="You are a different tool."),
        **{"x-ctxhealth-session": "shared"},
    )
    owner = next(s for s in sessions(proxy, ":shared") if s["session"].endswith(":shared"))
    other = next(s for s in sessions(proxy, ":shared") if s["session"].endswith(":shared#2"))
    assert owner["resets"] == 0 and owner["observed_messages"] == before["observed_messages"]
    assert other["requests"] == 1 and other["resets"] == 0
    # the owner goes on where it was
    post(proxy, conversation("owner", 3), **{"x-ctxhealth-session": "shared"})
    owner = next(s for s in sessions(proxy, ":shared") if s["session"].endswith(":shared"))
    assert owner["resets"] == 0 and owner["observed_messages"] == before["observed_messages"] + 2
    # the owner compacts (same system prompt, the history replaced): a reset of its own session
    compacted = {
        **conversation("owner", 0),
        "messages": [{"role": "user", "content": "Summary: parser fixed."}],
    }
    post(proxy, compacted, **{"x-ctxhealth-session": "shared"})
    owner = next(s for s in sessions(proxy, ":shared") if s["session"].endswith(":shared"))
    assert owner["resets"] == 1 and len(sessions(proxy, ":shared")) == 2


# ------------------------------------------------------------------------------------- slowloris


def slow_connection(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(b"POST /v1/messages HTTP/1.1\r\nhost: 127.0.0.1\r\nx-slow: ")  # the head never ends
    return sock


def closed(sock: socket.socket) -> bool:
    try:
        sock.settimeout(5)
        while data := sock.recv(4096):
            if b"408" not in data:
                return False
        return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def test_connections_that_never_finish_their_head_are_closed(upstream: str) -> None:
    proxy = ProxyProcess(upstream, "--header-timeout", "1")
    socks: list[socket.socket] = []
    try:
        socks = [slow_connection(proxy.port) for _ in range(150)]
        idle = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)  # sends nothing at all
        socks.append(idle)
        trickle = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
        trickle.sendall(b"GET /ctxhealth/status HTTP/1.1\r\n")
        # a normal client is served while they hang
        assert post(proxy, conversation("normal", 0)).status_code == 200
        started = time.monotonic()
        for _ in range(8):  # one header byte every 0.25 s: each read is quick, the head never ends
            time.sleep(0.25)
            try:
                trickle.sendall(b"x")
            except OSError:
                break
        socks.append(trickle)
        assert all(closed(s) for s in socks)
        assert time.monotonic() - started < 8
        # and more slow ones than the connection limit (256) cost nothing once they are closed
        socks += [slow_connection(proxy.port) for _ in range(300)]
        time.sleep(1.5)
        assert post(proxy, conversation("normal", 1)).status_code == 200
        assert all(closed(s) for s in socks[-300:])
    finally:
        for s in socks:
            s.close()
        log = proxy.stop()
    assert "Exception in ASGI application" not in log


# --------------------------------------------------------------------------- upstream faults


def test_an_upstream_that_fails_mid_stream_drops_one_stream_only(upstream: str) -> None:
    proxy = ProxyProcess(upstream, "--read-timeout", "0.5")
    try:
        body = {**conversation("faulty", 1), "stream": True}
        for fault in ("die", "stall"):  # closes after a third of the stream; sends nothing more
            received = b""
            # a truncated chunked body: the client sees that it was cut
            with (
                pytest.raises(httpx.HTTPError),
                httpx.stream(
                    "POST", proxy.url + "/v1/messages", json=body, headers={"x-fault": fault}, timeout=10
                ) as response,
            ):
                assert response.status_code == 200
                for chunk in response.iter_raw():
                    received += chunk
            assert received.startswith(b"event: message_start") and b"message_stop" not in received
            # the proxy serves the next request as usual
            with httpx.stream("POST", proxy.url + "/v1/messages", json=body, timeout=10) as response:
                assert b"message_stop" in b"".join(response.iter_raw())
        assert proxy.status()["sessions"]
    finally:
        log = proxy.stop()
    assert "Exception in ASGI application" not in log and "Traceback" not in log
    assert "ASGI callable returned without completing response" not in log  # said in our words:
    assert "the upstream closed the connection mid-response" in log
    assert "the upstream stalled mid-response" in log


# ----------------------------------------------------------------------------- upstream credentials


def test_credentials_in_the_upstream_url_are_sent_only_where_the_client_sends_none(upstream: str) -> None:
    password = "pw-Zq81-" + "never-shown"
    with_credentials = upstream.replace("http://", f"http://ctx:{password}@")
    proxy = ProxyProcess(with_credentials, "-v")
    try:
        plain = post(proxy, conversation("auth", 0))
        own = post(proxy, conversation("auth", 1), authorization="Bearer client-own-token")
        status = httpx.get(proxy.url + "/ctxhealth/status", timeout=5).text
    finally:
        log = proxy.stop()
    expected = "Basic " + base64.b64encode(f"ctx:{password}".encode()).decode()
    assert plain.headers["x-seen-authorization"] == expected
    assert own.headers["x-seen-authorization"] == "Bearer client-own-token"
    assert "ctx:***@127.0.0.1" in log  # the start-up line names the user, never the password
    for shown in (log, status):
        assert password not in shown and expected.split()[1] not in shown


# ----------------------------------------------------------------------------- the guard process


def test_the_guard_process_keeps_sessions_and_the_ledger_through_a_restart(
    upstream: str, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    headers = {"x-ctxhealth-session": "two-cores"}
    proxy = ProxyProcess(upstream, "--workers", "2", "-v", home=home)
    try:
        for turn in range(3):
            post(proxy, conversation("worker", turn), **headers)
        (before,) = sessions(proxy, ":two-cores")
        metrics = httpx.get(proxy.url + "/metrics", timeout=5).text
    finally:
        log = proxy.stop()
    assert before["requests"] == 3 and before["resets"] == 0 and before["reported_fill"] is not None
    assert 'ctxhealth_proxy_requests_total{api="anthropic-messages",mode="observe"} 3' in metrics
    assert "ctxhealth_upstream_latency_seconds_count 3" in metrics
    assert log.count("POST /v1/messages session=anthropic-messages:two-cores") == 3
    assert "Traceback" not in log
    proxy = ProxyProcess(upstream, "--workers", "2", home=home)  # saved at shutdown by the guard process
    try:
        post(proxy, conversation("worker", 3), **headers)
        (after,) = sessions(proxy, ":two-cores")
    finally:
        proxy.stop()
    assert after["requests"] == 4 and after["resets"] == 0
    assert after["observed_messages"] == before["observed_messages"] + 2


def guard_processes(pid: int) -> list[int]:
    """The children of ``pid`` that multiprocessing spawned to run a target (not its resource tracker)."""
    found = [
        int(c) for t in Path(f"/proc/{pid}/task").iterdir() for c in (t / "children").read_text().split()
    ]
    return [c for c in found if b"spawn_main" in Path(f"/proc/{c}/cmdline").read_bytes()]


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads the process tree from /proc")
def test_by_default_observe_mode_has_its_guard_in_a_lower_priority_process_and_enforce_in_the_relay(
    upstream: str,
) -> None:
    import os

    from ctxhealth.integrations.guard import Mode
    from ctxhealth.integrations.proxy.config import default_workers
    from ctxhealth.integrations.proxy.worker import GUARD_NICENESS

    expected = default_workers(Mode.OBSERVE)
    for mode in ("observe", "enforce"):
        proxy = ProxyProcess(upstream, "--mode", mode)
        try:
            post(proxy, conversation(mode, 1), **{"x-ctxhealth-session": f"default-{mode}"})
            (session,) = sessions(proxy, f":default-{mode}")  # assessed, wherever the guard is
            guards = guard_processes(proxy.process.pid)
            relay_nice = os.getpriority(os.PRIO_PROCESS, proxy.process.pid)
            guard_nice = [os.getpriority(os.PRIO_PROCESS, g) for g in guards]
        finally:
            log = proxy.stop()
        assert session["requests"] == 1
        if mode == "observe" and expected == 2:
            assert len(guards) == 1 and guard_nice == [min(19, relay_nice + GUARD_NICENESS)]
            assert "observe mode, the guard in a second process, http://" in log
        else:
            assert guards == [] and f"{mode} mode, http://" in log


def test_the_default_number_of_processes() -> None:
    from ctxhealth.integrations.guard import Mode
    from ctxhealth.integrations.proxy.config import default_workers

    assert default_workers(Mode.OBSERVE, cpus=2) == default_workers(Mode.OBSERVE, cpus=64) == 2
    assert default_workers(Mode.OBSERVE, cpus=1) == 1
    assert default_workers(Mode.ADVISE, cpus=8) == default_workers(Mode.ENFORCE, cpus=8) == 1


def test_two_workers_are_refused_outside_observe_mode() -> None:
    from conftest import invoke

    result = invoke(["proxy", "--upstream", "http://127.0.0.1:9", "--workers", "2", "--mode", "enforce"])
    assert result.exit_code == 2 and "--workers 2 needs --mode observe" in result.output


def test_observe_mode_sends_the_request_before_the_guard_reads_it() -> None:
    """In observe mode the guard's work is off the byte path: when it reads a request, the upstream
    has it already (in-process, so the guard can be watched)."""
    import anyio

    from ctxhealth.integrations.guard import Guard, Plan
    from ctxhealth.integrations.proxy.app import create_app
    from ctxhealth.integrations.proxy.config import ProxyConfig
    from ctxhealth.integrations.wire import ApiStyle
    from wire_upstream import Upstream

    upstream = Upstream().start()
    seen: list[int] = []

    class Watched(Guard):
        def plan(self, style: ApiStyle, raw: bytes, headers: Any, *, path: str | None = None) -> Plan:
            seen.append(upstream.count("/v1/messages"))
            return super().plan(style, raw, headers, path=path)

    async def run() -> dict[str, Any]:
        app = create_app(ProxyConfig(upstream=upstream.url), guard=Watched())
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://proxy") as client:
            for turn in range(3):
                body = {**conversation("watched", turn), "stream": True}
                (await client.post("/v1/messages", json=body)).raise_for_status()
            doc: dict[str, Any] = (await client.get("/ctxhealth/status")).json()
            return doc

    try:
        status = anyio.run(run)
    finally:
        upstream.stop()
    assert seen == [1, 2, 3]  # each request had reached the upstream before the guard read it
    (session,) = status["sessions"]
    assert session["requests"] == 3 and session["resets"] == 0 and session["reported_fill"] is not None


@pytest.mark.parametrize("stop", ["SIGINT", "SIGTERM"])
def test_a_stop_signal_to_the_process_group_stops_both_cleanly_and_keeps_every_assessment(
    upstream: str, tmp_path: Path, stop: str
) -> None:
    """Ctrl-C signals a terminal's whole process group, a service manager every process of the
    service: the guard process leaves its stopping to the relay, which runs what is queued and
    saves every session first."""
    import os
    import signal

    from wire_upstream import free_port

    home = tmp_path / "home"
    port = free_port()
    command = [sys.executable, "-c", "from ctxhealth.cli.main import main; main()", "proxy"]
    command += ["--upstream", upstream, "--port", str(port), "--workers", "2"]
    process = subprocess.Popen(
        command,
        env={**os.environ, "CTXHEALTH_HOME": str(home)},
        stderr=subprocess.PIPE,
        start_new_session=True,  # a process group of its own, as a terminal gives it
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                httpx.get(url + "/ctxhealth/status", timeout=1).raise_for_status()
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline and process.poll() is None
                time.sleep(0.05)
        for turn in range(5):
            body = conversation("ctrl-c", turn)
            httpx.post(url + "/v1/messages", json=body, headers={"x-ctxhealth-session": "ctrl-c"}, timeout=10)
        os.killpg(process.pid, getattr(signal, stop))
        # (uvicorn raises the signal again once it has shut down: SIGTERM's status is its own)
        assert process.wait(timeout=20) in (0, -getattr(signal, stop))
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    err = process.stderr.read().decode() if process.stderr else ""
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    proxy = ProxyProcess(upstream, "--workers", "2", home=home)  # every request was saved
    try:
        post(proxy, conversation("ctrl-c", 5), **{"x-ctxhealth-session": "ctrl-c"})
        (after,) = sessions(proxy, ":ctrl-c")
    finally:
        proxy.stop()
    assert after["requests"] == 6 and after["resets"] == 0


@pytest.mark.parametrize("workers", ["1", "2"])
def test_the_window_the_proxy_is_told_is_the_one_its_sessions_are_read_against(
    upstream: str, workers: str
) -> None:
    """``--window N --window-is-usable``: no request says what window the agent works with (Codex CLI
    compacts within its own), so the proxy is told; its sessions' zones use it, in the relay's
    process or the guard's second one."""
    told = ProxyProcess(upstream, "--workers", workers, "--window", "100000", "--window-is-usable")
    plain = ProxyProcess(upstream, "--workers", workers)
    try:
        for proxy in (told, plain):
            for turn in range(3):
                post(proxy, conversation("agent W", turn))
        deadline = time.monotonic() + 10  # the second process assesses beside the relay
        while time.monotonic() < deadline and not all(
            sessions(p, "anthropic-messages:") and "usable_window" in sessions(p, "anthropic-messages:")[0]
            for p in (told, plain)
        ):
            time.sleep(0.1)
        windows = [sessions(p, "anthropic-messages:")[0]["usable_window"] for p in (told, plain)]
    finally:
        told.stop()
        plain.stop()
    assert windows[0] == 100_000
    assert windows[1] != 100_000  # the model's own (claude-sonnet-4-5: 167,000 usable)
