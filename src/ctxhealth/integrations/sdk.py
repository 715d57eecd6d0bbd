"""The guard inside an SDK client's HTTP layer: what the ``anthropic`` and ``openai`` wrappers share.

:func:`wrap_client` gives a copy of an official SDK client (sync or async) whose HTTP client sends
every request through a transport that runs :meth:`Guard.plan` on model API requests (rewriting
the body, or answering a halt with the API-shaped error the SDK raises as ``BadRequestError``) and
reads the response's usage as the SDK consumes it, streamed or not; it then hands the session's
state to the guard's store. The original transport (connection pool, proxies, limits) does the
sending. Every SDK method that posts to ``/v1/messages``, ``/v1/chat/completions`` or
``/v1/responses`` goes through it: ``create``, ``stream``, ``parse``, raw responses.

The SDKs build on ``httpx`` (or a compatible fork); the transport and stream classes are made for
the module the client's HTTP client comes from, so the wrapper follows whichever one is installed.
"""

from __future__ import annotations

import atexit
import functools
import importlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, TypeVar

from ctxhealth.errors import UsageError
from ctxhealth.integrations.guard import Guard, LedgerStore, MemoryStore, Mode, Plan
from ctxhealth.integrations.wire import UsageTap, adapter_for_path

ClientT = TypeVar("ClientT")
ACTION_HEADER = "x-ctxhealth-action"


def make_guard(mode: Mode | str, home: Path | None, model: str | None) -> Guard:
    """A guard in ``mode``; with ``home``, sessions and records go to the ledger there."""
    try:
        chosen = Mode(mode)
    except ValueError:
        raise UsageError(f"unknown mode {mode!r}", hint="use observe, advise or enforce") from None
    store = None
    if home is not None:
        store = LedgerStore(home)
        atexit.register(store.close)  # the writes still queued reach the ledger before the process ends
    return Guard(chosen, store=store, model=model)


def _http_module(http_client: Any) -> Any:
    for cls in type(http_client).__mro__:
        if cls.__name__ in ("Client", "AsyncClient"):
            return importlib.import_module(cls.__module__.split(".")[0])
    raise UsageError(
        f"cannot wrap an SDK client whose HTTP client is a {type(http_client).__name__}",
        hint="pass an official anthropic or openai client",
    )


def _outgoing(mod: Any, request: Any, body: bytes | None) -> Any:
    """``request`` asking for an uncompressed body (so usage can be read), without ctxhealth's
    headers, with ``body`` when it was rewritten."""
    headers = [
        (k, v)
        for k, v in request.headers.raw
        if not k.lower().startswith(b"x-ctxhealth-")
        and k.lower() != b"accept-encoding"
        and (body is None or k.lower() != b"content-length")
    ]
    headers.append((b"accept-encoding", b"identity"))
    content = request.content if body is None else body
    return mod.Request(
        request.method, request.url, headers=headers, content=content, extensions=request.extensions
    )


def _halt_response(mod: Any, plan: Plan) -> Any:
    assert plan.error is not None
    headers = {**plan.error.headers, ACTION_HEADER: plan.action.value}
    return mod.Response(plan.error.status, json=plan.error.body, headers=headers)


@functools.cache
def _classes(mod: Any) -> tuple[type, type, type, type]:
    """Transport and stream classes for one httpx-compatible module."""

    class TapStream(mod.SyncByteStream):  # type: ignore[misc]
        def __init__(self, inner: Any, tap: UsageTap, done: Any) -> None:
            self.inner, self.tap, self.done = inner, tap, done

        def __iter__(self) -> Iterator[bytes]:
            for chunk in self.inner:
                self.tap.feed(chunk)
                yield chunk

        def close(self) -> None:
            try:
                self.inner.close()
            finally:
                self.done(self.tap)

    class AsyncTapStream(mod.AsyncByteStream):  # type: ignore[misc]
        def __init__(self, inner: Any, tap: UsageTap, done: Any) -> None:
            self.inner, self.tap, self.done = inner, tap, done

        async def __aiter__(self) -> AsyncIterator[bytes]:
            async for chunk in self.inner:
                self.tap.feed(chunk)
                yield chunk

        async def aclose(self) -> None:
            try:
                await self.inner.aclose()
            finally:
                self.done(self.tap)

    class GuardTransport(mod.BaseTransport):  # type: ignore[misc]
        def __init__(self, inner: Any, guard: Guard) -> None:
            self.inner, self.guard = inner, guard

        def handle_request(self, request: Any) -> Any:
            adapter = adapter_for_path(request.url.path) if request.method == "POST" else None
            if adapter is None:
                return self.inner.handle_request(request)
            plan = self.guard.plan(adapter.style, request.read(), request.headers)
            if plan.error is not None:
                return _halt_response(mod, plan)
            response = self.inner.handle_request(_outgoing(mod, request, plan.body))
            tap = UsageTap(adapter.style, response.headers.get("content-type"))
            stream = TapStream(response.stream, tap, _finisher(self.guard, plan, response.status_code))
            return mod.Response(
                response.status_code, headers=response.headers, stream=stream, extensions=response.extensions
            )

        def close(self) -> None:
            self.inner.close()

    class AsyncGuardTransport(mod.AsyncBaseTransport):  # type: ignore[misc]
        def __init__(self, inner: Any, guard: Guard) -> None:
            self.inner, self.guard = inner, guard

        async def handle_async_request(self, request: Any) -> Any:
            adapter = adapter_for_path(request.url.path) if request.method == "POST" else None
            if adapter is None:
                return await self.inner.handle_async_request(request)
            plan = self.guard.plan(adapter.style, await request.aread(), request.headers)
            if plan.error is not None:
                return _halt_response(mod, plan)
            response = await self.inner.handle_async_request(_outgoing(mod, request, plan.body))
            tap = UsageTap(adapter.style, response.headers.get("content-type"))
            stream = AsyncTapStream(response.stream, tap, _finisher(self.guard, plan, response.status_code))
            return mod.Response(
                response.status_code, headers=response.headers, stream=stream, extensions=response.extensions
            )

        async def aclose(self) -> None:
            await self.inner.aclose()

    return GuardTransport, AsyncGuardTransport, TapStream, AsyncTapStream


def _finisher(guard: Guard, plan: Plan, status: int) -> Any:
    done = False

    def finish(tap: UsageTap) -> None:
        nonlocal done
        if not done:
            done = True
            guard.finish(plan, status, tap.facts())
            if not isinstance(guard.store, MemoryStore):
                guard.flush()  # a host process may end any time: keep the session on disk

    return finish


def wrap_client(client: ClientT, guard: Guard) -> ClientT:
    """A copy of the SDK ``client`` whose requests go through ``guard`` (see the module docstring)."""
    http_client = getattr(client, "_client", None)
    copy = getattr(client, "with_options", None)
    if http_client is None or copy is None:
        raise UsageError(
            f"cannot wrap a {type(client).__name__}", hint="pass an official anthropic or openai client"
        )
    mod = _http_module(http_client)
    sync_transport, async_transport, _, _ = _classes(mod)
    inner = getattr(http_client, "_transport", None)
    if isinstance(http_client, mod.AsyncClient):
        transport = async_transport(inner or mod.AsyncHTTPTransport(), guard)
        wrapped_http = mod.AsyncClient(transport=transport, timeout=http_client.timeout)
    else:
        transport = sync_transport(inner or mod.HTTPTransport(), guard)
        wrapped_http = mod.Client(transport=transport, timeout=http_client.timeout)
    result: ClientT = copy(http_client=wrapped_http)
    return result
