"""Running the proxy: uvicorn on the configured host and port until interrupted.

uvicorn bounds the time between two requests on a kept-alive connection, not the time a client
takes to send a request's head: a connection that sends its headers slowly, or nothing at all,
stays open for good (slowloris). The protocol here closes a connection whose request head is not
complete ``config.header_timeout`` seconds after the connection opened, or after the first byte
of its next request (answered ``408`` first); the body has its own bound (``config.body_timeout``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from ctxhealth.integrations.proxy.app import create_app
from ctxhealth.integrations.proxy.config import ProxyConfig

TIMED_OUT = b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"


def head_timeout_protocol(seconds: float) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol with a bound on the time to receive each request head."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeadTimeoutProtocol(H11Protocol):
        _head_timer: asyncio.TimerHandle | None = None

        def _waiting(self) -> bool:
            """No request is being served: the next head is (or will be) on its way."""
            return self.cycle is None or self.cycle.response_complete

        def _arm(self) -> None:
            self._head_timer = self.loop.call_later(seconds, self._expired)

        def _disarm(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _expired(self) -> None:
            self._head_timer = None
            if self._waiting() and not self.transport.is_closing():
                self.transport.write(TIMED_OUT)
                self.transport.close()

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            if self._head_timer is None and self._waiting():
                self._arm()  # the first bytes of the next request on a kept-alive connection
            super().data_received(data)
            if not self._waiting():
                self._disarm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

    return HeadTimeoutProtocol


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
    )
    # (after uvicorn set its logging up) a relay cut short by its upstream is logged by the relay
    logging.getLogger("uvicorn.error").addFilter(_not_cut_short)
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C: a clean stop (as ``uvicorn.run``)
        uvicorn.Server(settings).run()  # (a port in use: uvicorn says so and exits 3)


def _not_cut_short(record: logging.LogRecord) -> bool:
    """uvicorn's error line for a response the app left unfinished: the relay does that on purpose
    when its upstream dies or stalls mid-body, and says so in its own words."""
    return record.getMessage() != "ASGI callable returned without completing response."
