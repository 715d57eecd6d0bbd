"""The proxy's HTTP protocol: the bounds on each request head hold over both of uvicorn's protocols
(httptools, the default when installed, and h11, the fallback), and neither bound touches a request
whose head is complete (bodies, kept-alive and pipelined requests)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn

from ctxhealth.integrations.proxy import server as proxy_server
from ctxhealth.integrations.proxy.server import MAX_HEAD_BYTES, head_timeout_protocol

IMPLEMENTATIONS = ["h11", "httptools"]


async def echo_length(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Answers the length of the request body it read."""
    if scope["type"] != "http":
        return
    size, more = 0, True
    while more:
        message = await receive()
        size += len(message.get("body", b""))
        more = message.get("more_body", False)
    body = str(size).encode()
    headers = [(b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def answer_early(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Answers 413 after the first part of a body, the rest unread (as the proxy refuses a body
    over its bound)."""
    if scope["type"] != "http":
        return
    await receive()
    headers = [(b"content-length", b"0")]
    await send({"type": "http.response.start", "status": 413, "headers": headers})
    await send({"type": "http.response.body", "body": b""})


@pytest.fixture(params=IMPLEMENTATIONS)
def port(request: pytest.FixtureRequest) -> Iterator[int]:
    yield from served(echo_length, request.param)


@pytest.fixture(params=IMPLEMENTATIONS)
def early_port(request: pytest.FixtureRequest) -> Iterator[int]:
    yield from served(answer_early, request.param)


def served(app: Any, implementation: str) -> Iterator[int]:
    if implementation == "httptools":
        pytest.importorskip("httptools")
    protocol = head_timeout_protocol(0.5, implementation)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(app, http=protocol, log_level="error", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "server did not start"
        time.sleep(0.01)
    yield sock.getsockname()[1]
    server.should_exit = True
    thread.join(timeout=5)
    sock.close()


def connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=5)


def read_all(sock: socket.socket) -> bytes:
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except (ConnectionResetError, TimeoutError):
        pass
    return data


def request(body: bytes, *, close: bool = False) -> bytes:
    head = f"POST /x HTTP/1.1\r\nhost: a\r\ncontent-length: {len(body)}\r\n"
    return (head + ("connection: close\r\n" if close else "") + "\r\n").encode() + body


def test_the_protocol_is_httptools_when_installed() -> None:
    pytest.importorskip("httptools")
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    assert issubclass(head_timeout_protocol(1.0), HttpToolsProtocol)


def test_without_httptools_the_protocol_is_h11(monkeypatch: pytest.MonkeyPatch) -> None:
    from uvicorn.protocols.http.h11_impl import H11Protocol

    monkeypatch.setattr(proxy_server, "_has_httptools", lambda: False)
    assert issubclass(head_timeout_protocol(1.0), H11Protocol)


def test_a_head_never_finished_is_answered_408_and_closed(port: int) -> None:
    sock = connect(port)
    sock.sendall(b"POST /x HTTP/1.1\r\nhost: a\r\nx-slow: ")
    started = time.monotonic()
    answer = read_all(sock)
    assert answer.startswith(b"HTTP/1.1 408") and time.monotonic() - started < 4


def test_a_head_over_the_bound_is_refused_before_its_timeout(
    port: int, request: pytest.FixtureRequest
) -> None:
    sock = connect(port)
    line = b"x-big: " + b"a" * 1000 + b"\r\n"
    sock.sendall(b"POST /x HTTP/1.1\r\nhost: a\r\n" + line * (MAX_HEAD_BYTES // len(line) + 8))
    answer = read_all(sock)
    if request.node.callspec.params["port"] == "httptools":  # httptools has no bound of its own
        assert answer.startswith(b"HTTP/1.1 431")
    else:  # h11's own bound (16 KiB) comes first: 400, or a reset over the bytes it left unread
        assert not answer.startswith(b"HTTP/1.1 408")


@pytest.mark.parametrize("size", [0, 10, MAX_HEAD_BYTES + 1, 3 * MAX_HEAD_BYTES])
def test_bodies_of_any_size_in_one_write_with_their_head_are_served(port: int, size: int) -> None:
    sock = connect(port)
    sock.sendall(request(b"b" * size, close=True))
    answer = read_all(sock)
    assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"\r\n\r\n" + str(size).encode())


def test_kept_alive_and_pipelined_requests_are_served_past_the_head_timeout(port: int) -> None:
    sock = connect(port)
    big = b"c" * (2 * MAX_HEAD_BYTES)
    for body in (b"one", big):
        sock.sendall(request(body))
        answer = b""
        while not answer.endswith(str(len(body)).encode()):
            answer += sock.recv(65536)
        time.sleep(0.3)  # under the head timeout between requests, over it in all
    sock.sendall(request(b"x" * 5) + request(big) + request(b"", close=True))  # pipelined
    answers = read_all(sock)
    assert answers.count(b"HTTP/1.1 200") == 3
    assert answers.endswith(b"\r\n\r\n0") and b"\r\n\r\n5HTTP" in answers


def test_serving_freezes_what_start_up_made(monkeypatch: pytest.MonkeyPatch) -> None:
    import gc

    from ctxhealth.integrations.proxy.config import ProxyConfig

    frozen: list[int] = []
    monkeypatch.setattr(uvicorn.Server, "run", lambda self: frozen.append(gc.get_freeze_count()))
    try:
        proxy_server.serve(ProxyConfig(upstream="http://127.0.0.1:9"))
    finally:
        gc.unfreeze()
    assert frozen and frozen[0] > 1000


def test_the_rest_of_a_body_answered_early_is_no_request_head(early_port: int) -> None:
    # the body's bytes after the 413 were counted as the next request's head: past 64 KiB the
    # connection was answered 431 and closed under the client's upload (a reset)
    body = b"x" * (4 * MAX_HEAD_BYTES)
    with connect(early_port) as sock:
        sock.sendall(f"POST /x HTTP/1.1\r\nhost: a\r\ncontent-length: {len(body)}\r\n\r\n".encode())
        for start in range(0, len(body), 16384):
            sock.sendall(body[start : start + 16384])
            time.sleep(0.002)
        sock.shutdown(socket.SHUT_WR)
        answer = read_all(sock)
    assert answer.startswith(b"HTTP/1.1 413 ")
    assert b" 431 " not in answer
