"""The HTTP plumbing every fake model server of the conformance suite shares.

A :class:`FakeServer` is a real HTTP server on ``127.0.0.1`` (port 0: the OS picks a free one), served by a
thread, that hands each request to the subclass's ``answer(request)`` and logs it. The log (one
:class:`Exchange` per request: path, decoded JSON body, what was answered, the usage reported) is the truth a
conformance test asserts against. Answers are computed from the request, never from the server's own state
other than the scenario it was given, so the same request always gets the same answer.

Token counts the fakes report are computed from the request text the way a provider would count it (about 4
characters a token): the count is ours, but each test compares ctxhealth's reading against what the server
said it charged.
"""

from __future__ import annotations

import base64
import hashlib
import json
import struct
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Exchange:
    """One request the fake served, and what it answered."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any
    status: int = 200
    kind: str = ""
    """What the server took the request for (``turn``, ``compaction``, ``router``, ``other``)."""
    usage: dict[str, int] = field(default_factory=dict)
    """The usage it reported: ``input`` (the prompt, cached included), ``cached``, ``output``, ``reasoning``
    (in ``output``)."""
    answer: Any = None
    model: str = ""
    """The model the request named (empty: the server's default)."""


def estimate_tokens(value: Any) -> int:
    """Tokens of a JSON value or text, as the fakes count them (4 characters a token, at least 1)."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    return max(1, len(text) // 4)


class FakeServer:
    """A loopback HTTP server whose subclass answers requests; every request is logged in ``log``."""

    def __init__(self) -> None:
        self.log: list[Exchange] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body: Any = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                parts = urlsplit(self.path)
                exchange = Exchange(
                    method=self.command,
                    path=parts.path,
                    query=parse_qs(parts.query),
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=body,
                )
                with outer._lock:
                    outer.log.append(exchange)
                try:
                    outer.answer(exchange, self)
                except BrokenPipeError:
                    return

            do_GET = _handle
            do_POST = _handle

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> FakeServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def answer(self, exchange: Exchange, handler: BaseHTTPRequestHandler) -> None:
        raise NotImplementedError

    def exchanges(self, kind: str) -> list[Exchange]:
        """The logged requests the server took for ``kind``."""
        with self._lock:
            return [e for e in self.log if e.kind == kind]

    # --- responses -------------------------------------------------------------------------------

    @staticmethod
    def send_json(handler: BaseHTTPRequestHandler, value: Any, status: int = 200) -> None:
        data = json.dumps(value).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    @staticmethod
    def send_sse(handler: BaseHTTPRequestHandler, events: Iterator[tuple[str | None, Any]]) -> None:
        """Stream ``(event name or None, data)`` pairs as server-sent events, then close."""
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Cache-Control", "no-cache")
        handler.send_header("Connection", "close")
        handler.end_headers()
        for name, data in events:
            chunk = (f"event: {name}\n" if name else "") + f"data: {json.dumps(data)}\n\n"
            handler.wfile.write(chunk.encode())
            handler.wfile.flush()
        handler.close_connection = True


# --- a minimal WebSocket server side (RFC 6455: text messages, ping, close; no extensions) ------------

_WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def serve_websocket(handler: BaseHTTPRequestHandler, headers: Mapping[str, str]) -> Iterator[Any]:
    """Accept the upgrade, then yield each text message the client sends (decoded JSON, or the text)
    until it closes."""
    key = headers.get("sec-websocket-key", "")
    accept = base64.b64encode(hashlib.sha1((key + _WS_GUID).encode()).digest()).decode()
    handler.send_response(101, "Switching Protocols")
    handler.send_header("Upgrade", "websocket")
    handler.send_header("Connection", "Upgrade")
    handler.send_header("Sec-WebSocket-Accept", accept)
    handler.end_headers()
    handler.wfile.flush()
    handler.close_connection = True
    pieces: list[bytes] = []
    while True:
        frame = _read_frame(handler)
        if frame is None:
            return
        fin, opcode, payload = frame
        if opcode == 0x8:  # close
            _send_frame(handler, 0x8, payload[:2])
            return
        if opcode == 0x9:  # ping
            _send_frame(handler, 0xA, payload)
            continue
        if opcode in (0x1, 0x0):
            pieces.append(payload)
            if fin:
                text = b"".join(pieces).decode("utf-8", "replace")
                pieces = []
                try:
                    yield json.loads(text)
                except ValueError:
                    yield text


def send_websocket_text(handler: BaseHTTPRequestHandler, text: str) -> None:
    _send_frame(handler, 0x1, text.encode())


def _read_exact(handler: BaseHTTPRequestHandler, n: int) -> bytes | None:
    data = b""
    while len(data) < n:
        chunk = handler.rfile.read(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _read_frame(handler: BaseHTTPRequestHandler) -> tuple[bool, int, bytes] | None:
    head = _read_exact(handler, 2)
    if head is None:
        return None
    fin, opcode = bool(head[0] & 0x80), head[0] & 0x0F
    masked, length = bool(head[1] & 0x80), head[1] & 0x7F
    if length == 126:
        raw = _read_exact(handler, 2)
        if raw is None:
            return None
        (length,) = struct.unpack("!H", raw)
    elif length == 127:
        raw = _read_exact(handler, 8)
        if raw is None:
            return None
        (length,) = struct.unpack("!Q", raw)
    mask = _read_exact(handler, 4) if masked else b""
    payload = _read_exact(handler, length) if length else b""
    if payload is None or mask is None:
        return None
    if masked:
        payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return fin, opcode, payload


def _send_frame(handler: BaseHTTPRequestHandler, opcode: int, payload: bytes) -> None:
    length = len(payload)
    if length < 126:
        head = struct.pack("!BB", 0x80 | opcode, length)
    elif length < 1 << 16:
        head = struct.pack("!BBH", 0x80 | opcode, 126, length)
    else:
        head = struct.pack("!BBQ", 0x80 | opcode, 127, length)
    handler.wfile.write(head + payload)
    handler.wfile.flush()
