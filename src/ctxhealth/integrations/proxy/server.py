"""Running the proxy: uvicorn on the configured host and port until interrupted.

The HTTP protocol is uvicorn's httptools one (C, ``uvicorn[standard]``, the proxy extra) when
httptools is installed, else its pure-Python h11 one; the event loop uvloop when installed (uvicorn's
``auto``). Parsing every request head and framing every relayed chunk is on the byte path: at 10
streams the h11 protocol was a third of the proxy's CPU per request (``benchmarks/bench_proxy.py``,
see ``docs/proxy.md``).

uvicorn bounds the time between two requests on a kept-alive connection, not the time a client
takes to send a request's head: a connection that sends its headers slowly, or nothing at all,
stays open for good (slowloris). The protocol here closes a connection whose request head is not
complete ``config.header_timeout`` seconds after the connection opened, or after the first byte
of its next request (answered ``408`` first), and one whose head grows past :data:`MAX_HEAD_BYTES`
(answered ``431``: httptools itself sets no bound); the body has its own bound
(``config.body_timeout``).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
from typing import Any

from ctxhealth.integrations.proxy.app import create_app
from ctxhealth.integrations.proxy.config import ProxyConfig

TIMED_OUT = b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
TOO_LARGE = b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
MAX_HEAD_BYTES = 64 * 1024
"""The longest request head (request line and headers) taken: model clients send a few KiB."""


class _HeadBound(asyncio.Protocol):
    """The bounds on each request head, over either uvicorn protocol (they share ``cycle``,
    ``loop`` and ``transport``; a request's ``cycle`` is made once its head is complete)."""

    seconds: float = 5.0
    cycle: Any
    loop: asyncio.AbstractEventLoop
    transport: asyncio.Transport
    _head_timer: asyncio.TimerHandle | None = None
    _head_bytes: int = 0
    _body_open: bool = False  # httptools: between a request's head and the end of its body

    def _waiting(self) -> bool:
        """No request is being served: the next head is (or will be) on its way."""
        return self.cycle is None or bool(self.cycle.response_complete)

    def _arm(self) -> None:
        self._head_bytes = 0
        self._head_timer = self.loop.call_later(self.seconds, self._expired)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _refuse(self, answer: bytes) -> None:
        if not self.transport.is_closing():
            self.transport.write(answer)
            self.transport.close()

    def _expired(self) -> None:
        self._head_timer = None
        if self._waiting():
            self._refuse(TIMED_OUT)

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        waiting = self._waiting()
        if self._head_timer is None and waiting:
            self._arm()  # the first bytes of the next request on a kept-alive connection
        super().data_received(data)
        if not self._waiting():
            self._disarm()
        elif waiting and not self._body_unread():
            # every byte since the timer was armed belongs to the head still incomplete (not to the
            # rest of a body the app answered before reading it all: a 413 is no reason for a 431)
            self._head_bytes += len(data)
            if self._head_bytes > MAX_HEAD_BYTES:
                self._disarm()
                self._refuse(TOO_LARGE)

    def _body_unread(self) -> bool:
        """A request's body is still arriving (after its response, when the app answered early)."""
        conn = getattr(self, "conn", None)
        if conn is not None:  # h11
            import h11

            return bool(conn.their_state is h11.SEND_BODY)
        return self._body_open

    # httptools' parser callbacks (it calls the protocol's methods by name; h11 has none)

    def on_headers_complete(self) -> None:
        self._body_open = True
        super().on_headers_complete()  # type: ignore[misc]

    def on_message_complete(self) -> None:
        self._body_open = False
        super().on_message_complete()  # type: ignore[misc]

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)


def head_timeout_protocol(seconds: float, implementation: str | None = None) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol (``"httptools"`` when installed, else ``"h11"``; or the one named)
    with the bounds on each request head (see the module docstring)."""
    base: type[asyncio.Protocol]
    if implementation is None:
        implementation = "httptools" if _has_httptools() else "h11"
    if implementation == "httptools":
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

        base = HttpToolsProtocol
    elif implementation == "h11":
        from uvicorn.protocols.http.h11_impl import H11Protocol

        base = H11Protocol
    else:
        raise ValueError(f"unknown HTTP implementation {implementation!r}: httptools or h11")
    return type(f"HeadBound{base.__name__}", (_HeadBound, base), {"seconds": seconds})


def _has_httptools() -> bool:
    import importlib.util

    return importlib.util.find_spec("httptools") is not None


def serve(config: ProxyConfig, *, log_level: str = "warning") -> None:
    """Serve the proxy (blocks). Binds ``config.host`` (loopback by default)."""
    import uvicorn

    settings = uvicorn.Config(
        create_app(config),
        host=config.host,
        port=config.port,
        log_level=log_level,
        access_log=False,
        lifespan="on",
        http=head_timeout_protocol(config.header_timeout),
        timeout_graceful_shutdown=5,
        timeout_keep_alive=5,
        limit_concurrency=config.max_connections,
        proxy_headers=False,  # (no middleware around each request: the app reads no client address)
    )
    # (after uvicorn set its logging up) a relay cut short by its upstream is logged by the relay
    logging.getLogger("uvicorn.error").addFilter(_not_cut_short)
    server = uvicorn.Server(settings)
    # what start-up made (modules, classes, the app: tens of thousands of objects) lives as long as
    # the process: out of the collector's reach, a full collection scans only what serving made,
    # instead of holding the loop (and every relayed byte) for milliseconds each time
    gc.collect()
    gc.freeze()
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C: a clean stop (as ``uvicorn.run``)
        server.run()  # (a port in use: uvicorn says so and exits 3)


def _not_cut_short(record: logging.LogRecord) -> bool:
    """uvicorn's error line for a response the app left unfinished: the relay does that on purpose
    when its upstream dies or stalls mid-body, and says so in its own words."""
    return record.getMessage() != "ASGI callable returned without completing response."
