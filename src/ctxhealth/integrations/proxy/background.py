"""The guard's work in observe mode, done beside the byte path instead of in front of it.

In observe mode the body goes upstream as the client sent it whatever the guard decides, so no
request waits for its assessment: :meth:`Background.plan` queues the request for the guard and
returns at once, :meth:`Background.finish` queues what its response reported. One task runs the
queue in arrival order (a request's plan always before its finish, requests of one session in the
order they came), yielding to the event loop between two items so relays keep flowing. The
status page and the metrics run what is queued first (:meth:`Background.drain`), so they never
show a state behind the traffic already answered; so does shutdown. At most ``limit`` items wait:
beyond, the oldest runs at once (the guard can fall behind only so far).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
from collections.abc import Callable, Mapping

from ctxhealth.integrations.guard import Guard, Plan
from ctxhealth.integrations.wire import ApiStyle, ResponseFacts

log = logging.getLogger("ctxhealth.proxy")

MAX_PENDING = 4096


class Ticket:
    """One queued request: its plan once the guard has made it (in this process), or its number
    (for the guard process, :mod:`.worker`)."""

    __slots__ = ("plan", "seq")

    def __init__(self, seq: int = 0) -> None:
        self.plan: Plan | None = None
        self.seq = seq


class Background:
    def __init__(self, guard: Guard, limit: int = MAX_PENDING) -> None:
        self.guard = guard
        self.limit = limit
        self._queue: collections.deque[Callable[[], None]] = collections.deque()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def plan(
        self,
        style: ApiStyle,
        body: bytes,
        headers: Mapping[str, str],
        then: Callable[[Plan], None] | None = None,
    ) -> Ticket:
        """Queue ``body`` for :meth:`Guard.plan`; ``then`` runs with its plan (logging)."""
        ticket = Ticket()
        kept = dict(headers)

        def run() -> None:
            ticket.plan = self.guard.plan(style, body, kept)
            if then is not None:
                then(ticket.plan)

        self._put(run)
        return ticket

    def finish(self, ticket: Ticket, status: int, facts: ResponseFacts) -> None:
        """Queue the response's facts for :meth:`Guard.finish` (after its request's plan)."""

        def run() -> None:
            if ticket.plan is not None:
                self.guard.finish(ticket.plan, status, facts)

        self._put(run)

    def _put(self, item: Callable[[], None]) -> None:
        self._queue.append(item)
        while len(self._queue) > self.limit:
            self._next()
        self._wake.set()
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    def drain(self) -> None:
        """Run everything queued, now."""
        while self._queue:
            self._next()

    def _next(self) -> None:
        try:
            self._queue.popleft()()
        except Exception as exc:  # the guard fails open itself; this keeps the queue going whatever
            self.guard.metrics.errors += 1
            log.warning("guard: %s: %s", type(exc).__name__, exc)

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._queue:
                await asyncio.sleep(0)  # requests and chunks that are ready go first
                if self._queue:
                    self._next()

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self.drain()
