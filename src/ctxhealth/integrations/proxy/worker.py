"""The guard in a process of its own (``ctxhealth proxy --workers 2``, observe mode): two cores serve.

One process relays bytes (uvicorn, the event loop); the other holds the one :class:`Guard` with every
session, its ledger and its periodic saving. Session state stays correct because there is still one
guard: the relay hands it each request and each response's facts in arrival order over a pipe, as
:class:`~ctxhealth.integrations.proxy.background.Background` does inside one process, and asks it
for the status page and the metrics.

Two uvicorn workers on one socket would each hold a guard of their own, and the kernel spreads
connections over them, so a session's requests would land in both: its prefix would reset at every
switch. That split is not offered.

On the relay side the event loop only puts tuples on a queue; a thread pickles and writes them, so
a slow guard never blocks the loop (the pipe's buffer does the waiting, in that thread). The guard
process runs at a lower priority (:data:`GUARD_NICENESS`): on a busy machine the relay gets a core
first. A guard that falls behind by more than :data:`MAX_BEHIND_BYTES` of requests has the next
ones relayed without assessment (counted as its errors, said once in the log) until it catches up. A guard
process that dies costs its assessments, never the traffic: the relay goes on alone and says so once
in the log. At shutdown the guard runs everything queued, saves every session and exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import itertools
import logging
import multiprocessing
import os
import queue
import signal
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from multiprocessing.connection import Connection
from typing import Any

from ctxhealth.integrations.guard import Guard, LedgerStore, Plan, SessionStore
from ctxhealth.integrations.proxy.background import Ticket
from ctxhealth.integrations.proxy.config import ProxyConfig
from ctxhealth.integrations.wire import ApiStyle, ResponseFacts

log = logging.getLogger("ctxhealth.proxy")

ASK_TIMEOUT = 5.0
MAX_BEHIND_BYTES = 64 * 1024 * 1024
"""Request bodies queued for the guard process and not yet sent to it, at most: beyond (the guard
cannot keep up), requests are relayed without assessment, counted as its errors, so a guard that
falls behind never holds the relay's memory without bound."""
SEND_BATCH = 256
"""Messages sent to the guard process in one write, at most."""
MAX_OPEN_PLANS = 10_000
"""Plans waiting for their response's facts, at most (a request whose upstream failed has none)."""
FLUSH_IDLE = 60.0
FLUSH_MAX_AGE = 300.0
FLUSH_BATCH = 8


class GuardProcess:
    """The relay's handle on the guard process (see the module docstring)."""

    def __init__(self, config: ProxyConfig) -> None:
        context = multiprocessing.get_context("spawn")
        self._conn, child = context.Pipe()
        verbose = log.isEnabledFor(logging.INFO)
        self._process = context.Process(
            target=serve_guard, args=(child, config, verbose), name="ctxhealth-guard", daemon=True
        )
        self._process.start()
        child.close()
        self._outbox: queue.SimpleQueue[tuple[Any, ...] | None] = queue.SimpleQueue()
        self._seq = itertools.count(1)
        self._asks: dict[int, tuple[asyncio.AbstractEventLoop, asyncio.Future[Any]]] = {}
        self._lock = threading.Lock()
        # request bodies queued (by the loop) and sent (by the sender): the guard's lag, bounded
        self._queued_bytes = 0
        self._sent_bytes = 0
        self._unassessed = 0
        self.alive = True
        self._closing = False
        self._sender = threading.Thread(target=self._send_all, name="ctxhealth-guard-send", daemon=True)
        self._reader = threading.Thread(target=self._read_all, name="ctxhealth-guard-read", daemon=True)
        self._sender.start()
        self._reader.start()

    # the relay's calls (from the event loop): each only queues a message

    def plan(
        self, style: ApiStyle, body: bytes, headers: Mapping[str, str], where: str, path: str | None = None
    ) -> Ticket:
        """Queue a request for the guard (``where``: its method and path, for the log line; ``path``:
        the request's path, as :meth:`Guard.plan` takes it)."""
        if self._queued_bytes - self._sent_bytes > MAX_BEHIND_BYTES:
            if not self._unassessed:
                log.warning(
                    "the guard process is %d MiB of requests behind: requests are relayed without "
                    "assessment until it catches up",
                    MAX_BEHIND_BYTES >> 20,
                )
            self._unassessed += 1
            return Ticket()  # (number 0: nothing queued, its response's facts are not sent either)
        if self._unassessed:  # counted as the guard's errors (each request went on unassessed)
            self._outbox.put(("unassessed", self._unassessed))
            self._unassessed = 0
        ticket = Ticket(next(self._seq))
        self._queued_bytes += len(body)
        self._outbox.put(("plan", ticket.seq, style.value, body, dict(headers), where, path))
        return ticket

    def finish(self, ticket: Ticket, status: int, facts: ResponseFacts) -> None:
        if ticket.seq:
            self._outbox.put(("finish", ticket.seq, status, facts))

    def forwarded(self) -> None:
        """A request on a path the guard does not read: counted."""
        self._outbox.put(("forwarded",))

    def latency(self, seconds: float) -> None:
        """How long the upstream took over a request, for the latency histogram."""
        self._outbox.put(("latency", seconds))

    async def ask(self, what: str) -> Any:
        """The guard's ``status()`` or ``metrics_text()``, after everything queued before it."""
        if not self.alive:
            raise RuntimeError("the guard process has stopped")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        number = next(self._seq)
        with self._lock:
            self._asks[number] = (loop, future)
        self._outbox.put(("ask", number, what))
        try:
            return await asyncio.wait_for(future, ASK_TIMEOUT)
        finally:
            with self._lock:
                self._asks.pop(number, None)

    async def aclose(self) -> None:
        """Let the guard run what is queued, save every session and exit."""
        self._closing = True
        self._outbox.put(("close",))
        self._outbox.put(None)
        await asyncio.get_running_loop().run_in_executor(None, self._join)

    def _join(self) -> None:
        self._sender.join(timeout=30)
        self._process.join(timeout=30)
        if self._process.is_alive():
            self._process.kill()
            self._process.join()

    # threads

    def _send_all(self) -> None:
        """Send what is queued, everything waiting at once (one pickle and one write per batch, so
        under load the loop's messages cost fewer thread switches and system calls)."""
        while True:
            batch: list[tuple[Any, ...]] = []
            item = self._outbox.get()
            while item is not None:
                batch.append(item)
                if len(batch) >= SEND_BATCH:
                    break
                try:
                    item = self._outbox.get_nowait()
                except queue.Empty:
                    break
            if batch and self.alive:
                try:
                    self._conn.send(batch)
                except (OSError, EOFError, ValueError):
                    self._stopped()
            self._sent_bytes += sum(len(m[3]) for m in batch if m[0] == "plan")
            if item is None:  # the end (what came before it was sent)
                return

    def _read_all(self) -> None:
        while True:
            try:
                number, value = self._conn.recv()
            except (OSError, EOFError):
                self._stopped()
                return
            with self._lock:
                waiting = self._asks.pop(number, None)
            if waiting is not None:
                loop, future = waiting
                loop.call_soon_threadsafe(_resolve, future, value)

    def _stopped(self) -> None:
        if self.alive:
            self.alive = False
            if not self._closing:
                log.warning("the guard process stopped: requests are relayed without assessment")


def _resolve(future: asyncio.Future[Any], value: Any) -> None:
    if not future.done():
        future.set_result(value)


GUARD_NICENESS = 10
"""How much lower the guard process's scheduling priority is than the relay's: on a busy machine
the relay, which every byte waits for, gets a core first; the guard's work waits (it is queued)."""


def serve_guard(conn: Connection, config: ProxyConfig, verbose: bool) -> None:
    """The guard process: run the messages in order until ``close`` (or the relay is gone)."""
    with contextlib.suppress(OSError, AttributeError):  # (not offered everywhere: then as the relay)
        os.nice(GUARD_NICENESS)
    # Ctrl-C in a terminal reaches the whole process group, a service manager's stop signal every
    # process of the service: the relay stops the guard itself (after what is queued), or the guard
    # stops when the relay is gone (the pipe closes)
    for stop in (signal.SIGINT, signal.SIGTERM):
        signal.signal(stop, signal.SIG_IGN)
    if verbose:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("ctxhealth proxy: %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
    store: SessionStore | None = None
    if config.home is not None:
        store = LedgerStore(config.home, on_error=lambda exc: log.warning("ledger: %s", exc))
    guard = config.guard(store)
    gc.collect()  # start-up's objects out of the collector's scans (as in the relay, see .server)
    gc.freeze()
    plans: OrderedDict[int, Plan] = OrderedDict()
    flushed = time.monotonic()
    try:
        running = True
        while running:
            try:
                batch = conn.recv() if conn.poll(config.flush_interval) else []
            except (OSError, EOFError):
                break
            if time.monotonic() - flushed >= config.flush_interval:
                guard.flush(idle=FLUSH_IDLE, max_age=FLUSH_MAX_AGE, limit=FLUSH_BATCH)
                flushed = time.monotonic()
            for message in batch:
                if not _handle(guard, plans, conn, message):
                    running = False
                    break
    finally:
        guard.flush()
        guard.store.close()
        conn.close()


def _handle(guard: Guard, plans: OrderedDict[int, Plan], conn: Connection, message: tuple[Any, ...]) -> bool:
    """Run one message from the relay; False for ``close``."""
    kind = message[0]
    if kind == "plan":
        _, seq, style, body, headers, where, path = message
        plan = guard.plan(ApiStyle(style), body, headers, path=path)
        if plan.key is not None:
            plans[seq] = plan
            while len(plans) > MAX_OPEN_PLANS:
                plans.popitem(last=False)
        if log.isEnabledFor(logging.INFO):
            log.info(
                "%s session=%s action=%s applied=%s reset=%s observed=%d",
                where,
                plan.key,
                plan.action.value,
                plan.applied.value,
                plan.reset,
                plan.observed,
            )
    elif kind == "finish":
        _, seq, status, facts = message
        done = plans.pop(seq, None)
        if done is not None:
            guard.finish(done, status, facts)
    elif kind == "forwarded":
        guard.metrics.forwarded += 1
    elif kind == "latency":
        guard.metrics.observe_latency(message[1])
    elif kind == "unassessed":
        guard.metrics.errors += message[1]
    elif kind == "ask":
        _, number, what = message
        answer = guard.status() if what == "status" else guard.metrics_text()
        conn.send((number, answer))
    elif kind == "close":
        return False
    return True
