"""The proxy's ASGI app: model API routes through the guard, everything else passed through.

* ``POST /v1/messages``, ``/v1/chat/completions``, ``/v1/responses``, Gemini's
  ``/v1beta/models/{model}:generateContent`` and ``:streamGenerateContent`` (also under a path prefix):
  the body (at most ``max_body_bytes``) goes through :meth:`Guard.plan`; the planned body is sent
  upstream, or the guard's API-shaped error is answered without calling upstream; the response is
  relayed as it arrives while its usage is read (:class:`~ctxhealth.integrations.wire.UsageTap`).
  In observe mode the body goes upstream first and the guard reads it beside the relay
  (:mod:`.background`), or in a process of its own with ``workers=2`` (:mod:`.worker`).
* ``GET /ctxhealth/status`` (JSON) and ``GET /metrics`` (Prometheus text).

starlette provides the request and response types; the app itself dispatches on the path. The
upstream calls go through aiohttp (see :mod:`.relay` for why).
* Any other method and path: forwarded unchanged, response relayed.

Upstream errors and status codes reach the client as the upstream sent them; an upstream that
cannot be reached is a 502 (a timeout a 504) in the API's error shape. Logs never carry
headers (``authorization``, ``x-api-key``, ``x-goog-api-key``) nor the query (Gemini's ``key=``), and
bodies only with ``log_bodies``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

import aiohttp
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.types import Receive, Scope, Send

from ctxhealth.integrations.guard import Guard, LedgerStore, Mode, Plan, SessionStore
from ctxhealth.integrations.proxy.background import Background, Ticket
from ctxhealth.integrations.proxy.config import ProxyConfig
from ctxhealth.integrations.proxy.relay import Relay, request_headers, upstream_url
from ctxhealth.integrations.proxy.worker import GuardProcess
from ctxhealth.integrations.wire import UsageTap, adapter_for_path
from ctxhealth.integrations.wire.base import ErrorKind, WireAdapter

log = logging.getLogger("ctxhealth.proxy")

METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]
ACTION_HEADER = "x-ctxhealth-action"
KEEPALIVE = 4.0
"""Seconds an idle upstream connection is kept: under the common 5 s server keep-alive, so a request
is not sent on a connection the server is closing."""
FLUSH_IDLE = 60.0
"""Seconds without traffic after which a session's state is saved. Saving takes the monitor's
snapshot (about a millisecond), so it waits for a pause; a stale save costs little: after a crash
the session resumes from it and re-observes the messages since (its prefix still matches)."""
FLUSH_MAX_AGE = 300.0
"""A busy session is saved at least this often; every changed session is saved at shutdown."""
FLUSH_BATCH = 8
"""Sessions saved per tick at most, so saving never holds the event loop for long."""


class BodyTooLarge(Exception):
    pass


async def read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge
        chunks.append(chunk)
    return b"".join(chunks)


class ProxyApp:
    """State shared by the routes: config, guard, the upstream client session."""

    def __init__(self, config: ProxyConfig, guard: Guard) -> None:
        self.config = config
        self.guard = guard
        self._session: aiohttp.ClientSession | None = None
        self.worker: GuardProcess | None = None  # ``workers=2``: started with the app (lifespan)
        # observe mode forwards the body as sent: the guard works beside the relay, not before it
        self.background = (
            Background(guard) if guard.mode is Mode.OBSERVE and not config.guard_inline else None
        )

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            cfg = self.config
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0, keepalive_timeout=KEEPALIVE),
                timeout=aiohttp.ClientTimeout(
                    total=None, sock_connect=cfg.connect_timeout, sock_read=cfg.read_timeout
                ),
                auto_decompress=False,
                skip_auto_headers=("User-Agent", "Accept", "Content-Type"),
            )
        return self._session

    def start(self) -> None:
        if self.config.workers == 2 and self.worker is None:
            self.worker = GuardProcess(self.config)
            self.background = None

    async def aclose(self) -> None:
        if self.background is not None:
            await self.background.aclose()
        if self.worker is not None:
            await self.worker.aclose()
        if self._session is not None:
            await self._session.close()

    # ------------------------------------------------------------------ routes

    async def _ask_guard(self, what: str) -> Any:
        """The guard's ``status()`` or ``metrics_text()``, after the work queued before it (beside
        the relay, or in the guard's own process)."""
        if self.background is not None:
            self.background.drain()
        if self.worker is not None:
            return await self.worker.ask(what)
        return self.guard.status() if what == "status" else self.guard.metrics_text()

    async def status(self, request: Request) -> Response:
        try:
            doc = await self._ask_guard("status")
        except (RuntimeError, TimeoutError) as exc:
            return PlainTextResponse(f"ctxhealth proxy: no status: {exc}", status_code=503)
        return JSONResponse({"schema_version": 1, "upstream": self.config.shown_upstream, **doc})

    async def metrics(self, request: Request) -> Response:
        try:
            text = await self._ask_guard("metrics")
        except (RuntimeError, TimeoutError) as exc:
            return PlainTextResponse(f"ctxhealth proxy: no metrics: {exc}", status_code=503)
        return PlainTextResponse(text, media_type="text/plain; version=0.0.4")

    async def forward(self, request: Request) -> Response | Relay:
        adapter = adapter_for_path(request.url.path) if request.method == "POST" else None
        try:
            async with asyncio.timeout(self.config.body_timeout):
                body = await read_body(request, self.config.max_body_bytes)
        except TimeoutError:
            message = f"ctxhealth proxy: request body not received within {self.config.body_timeout:g} s"
            return _error(adapter, ErrorKind.BAD_REQUEST, message, 408)
        except BodyTooLarge:
            message = f"ctxhealth proxy: request body over {self.config.max_body_bytes:,} bytes"
            return _error(adapter, ErrorKind.TOO_LARGE, message, 413)
        except ClientDisconnect:
            return Response(status_code=499)
        plan: Plan | None = None
        ticket: Ticket | None = None
        worker = self.worker
        if adapter is None:
            if worker is not None:
                worker.forwarded()
            else:
                self.guard.metrics.forwarded += 1
        elif worker is not None:
            ticket = worker.plan(
                adapter.style, body, request.headers, f"{request.method} {request.url.path}", request.url.path
            )
            if self.config.log_bodies:
                log.info("request body: %s", body.decode("utf-8", "replace"))
        elif self.background is not None:
            pass  # assessed once the upstream has the request (below)
        else:
            plan = self.guard.plan(adapter.style, body, request.headers, path=request.url.path)
            self._log_plan(request, plan, body)
            if plan.error is not None:
                return JSONResponse(
                    plan.error.body,
                    status_code=plan.error.status,
                    headers={**plan.error.headers, ACTION_HEADER: plan.action.value},
                )
            if plan.body is not None:
                body = plan.body
        started = time.perf_counter()
        headers = request_headers(request.headers)
        auth = self.config.upstream_auth
        if auth is not None and not any(k.lower() == "authorization" for k in headers):
            headers["authorization"] = auth
        try:
            upstream = await self.session.request(
                request.method,
                upstream_url(self.config.upstream_base, request.scope),
                headers=headers,
                data=body,
                allow_redirects=False,
            )
        except TimeoutError:
            after = self.config.read_timeout
            message = f"ctxhealth proxy: upstream {self.config.upstream} did not answer within {after:g} s"
            return _error(adapter, ErrorKind.BAD_REQUEST, message, 504)
        except aiohttp.ClientError as exc:
            message = f"ctxhealth proxy: upstream {self.config.upstream} unreachable: {upstream_problem(exc)}"
            return _error(adapter, ErrorKind.BAD_REQUEST, message, 502)
        finally:
            if adapter is not None and self.background is not None:
                # observe mode: queued only now, so the guard's work never runs before the request
                # is sent; its response's first bytes are relayed before the queue runs
                ticket = self.background.plan(
                    adapter.style,
                    body,
                    request.headers,
                    lambda plan: self._log_plan(request, plan, body),
                    path=request.url.path,
                )
        tap = UsageTap(adapter.style, upstream.headers.get("content-type")) if adapter is not None else None

        def done(status: int, tap: UsageTap | None, seconds: float, complete: bool) -> None:
            if worker is not None:
                worker.latency(seconds)
                if tap is not None and ticket is not None:
                    worker.finish(ticket, status if complete else 499, tap.facts())
                return
            self.guard.metrics.observe_latency(seconds)
            if tap is not None and ticket is not None and self.background is not None:
                self.background.finish(ticket, status if complete else 499, tap.facts())
            elif plan is not None and tap is not None:
                self.guard.finish(plan, status if complete else 499, tap.facts())

        return Relay(upstream, tap, done, started)

    def _log_plan(self, request: Request, plan: Plan, body: bytes) -> None:
        if log.isEnabledFor(logging.INFO):
            log.info(
                "%s %s session=%s action=%s applied=%s reset=%s observed=%d",
                request.method,
                request.url.path,
                plan.key,
                plan.action.value,
                plan.applied.value,
                plan.reset,
                plan.observed,
            )
        if self.config.log_bodies:
            log.info("request body: %s", body.decode("utf-8", "replace"))
            if plan.body is not None:
                log.info("forwarded body: %s", plan.body.decode("utf-8", "replace"))


def upstream_problem(exc: aiohttp.ClientError) -> str:
    """What went wrong reaching the upstream, in words (aiohttp's reprs name its connection key
    objects, not the problem)."""
    if isinstance(exc, aiohttp.ClientConnectorError):
        reason = exc.os_error.strerror or str(exc.os_error) if exc.os_error is not None else ""
        return f"cannot connect to {exc.host}:{exc.port}" + (f" ({reason})" if reason else "")
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return "the server closed the connection before answering"
    if isinstance(exc, aiohttp.ClientResponseError):
        return f"{exc.status} {exc.message}".strip()
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _error(adapter: WireAdapter | None, kind: ErrorKind, message: str, status: int) -> Response:
    if adapter is None:
        return PlainTextResponse(message, status_code=status)
    return JSONResponse(adapter.error(kind, message).body, status_code=status)


class ProxyASGI:
    """The ASGI app: a direct dispatch on the path (no routing table or middleware stack between the
    server and the relay, since every response chunk passes through whatever wraps ``send``), and
    the lifespan (periodic saving of sessions; everything saved and closed at shutdown)."""

    def __init__(self, proxy: ProxyApp) -> None:
        self.proxy = proxy
        self._flusher: asyncio.Task[None] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            path, method = scope["path"], scope["method"]
            request = Request(scope, receive)
            response: Response | Relay
            if path == "/ctxhealth/status" and method == "GET":
                response = await self.proxy.status(request)
            elif path == "/metrics" and method == "GET":
                response = await self.proxy.metrics(request)
            else:
                response = await self.proxy.forward(request)
            await response(scope, receive, send)
        elif kind == "lifespan":
            await self._lifespan(receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        guard, config = self.proxy.guard, self.proxy.config
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self.proxy.start()
                self._flusher = asyncio.create_task(self._flush_periodically(config.flush_interval))
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self._flusher is not None:
                    self._flusher.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await self._flusher
                await self.proxy.aclose()  # (runs what the guard still has queued)
                guard.flush()
                guard.store.close()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _flush_periodically(self, interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            self.proxy.guard.flush(idle=FLUSH_IDLE, max_age=FLUSH_MAX_AGE, limit=FLUSH_BATCH)


def create_app(
    config: ProxyConfig, *, guard: Guard | None = None, store: SessionStore | None = None
) -> ProxyASGI:
    """The proxy as an ASGI app. Without ``guard``, one is made in ``config.mode`` over ``store``
    (default: the ledger under ``config.home`` when set)."""
    if guard is None and config.workers == 2:
        guard = Guard(config.mode)  # counts nothing: the guard process holds the sessions and the ledger
    if guard is None:
        if store is None and config.home is not None:
            store = LedgerStore(config.home, on_error=lambda exc: log.warning("ledger: %s", exc))
        guard = config.guard(store)
    return ProxyASGI(ProxyApp(config, guard))
