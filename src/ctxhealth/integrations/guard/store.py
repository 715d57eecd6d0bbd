"""Where guard sessions and their records go: nowhere (:class:`MemoryStore`) or the ledger.

:class:`LedgerStore` keeps each session's state in the ledger's ``sessions`` table (as the tail
state of the pseudo path ``guard:<key>``) and writes one assessment row per request and one decision
row per intervention. Writes go through one background thread and its own connection, so a request
never waits for SQLite; loads (once per session per process) are synchronous on a second
connection (WAL: a reader does not wait for the writer). :meth:`LedgerStore.close` drains the queue.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from ctxhealth.errors import LedgerError
from ctxhealth.state.ledger import Ledger, TailState

PATH_PREFIX = "guard:"


class SessionStore(Protocol):
    def load(self, key: str) -> dict[str, Any] | None: ...

    def save(self, key: str, state: dict[str, Any]) -> None: ...

    def record(self, key: str, turn: int, row: dict[str, Any], decision: tuple[str, str] | None) -> None:
        """One assessment row (``row``: tokens, pressure, zone, details) and, for an intervention,
        a decision ``(action, reason)``."""
        ...

    def record_error(self, where: str, message: str) -> None: ...

    def close(self) -> None: ...


class MemoryStore:
    """Keeps nothing: sessions live as long as the process (internal errors: the latest few, in
    ``errors``)."""

    def __init__(self) -> None:
        self.errors: list[tuple[str, str]] = []

    def load(self, key: str) -> dict[str, Any] | None:
        return None

    def save(self, key: str, state: dict[str, Any]) -> None:
        return None

    def record(self, key: str, turn: int, row: dict[str, Any], decision: tuple[str, str] | None) -> None:
        return None

    def record_error(self, where: str, message: str) -> None:
        self.errors = [*self.errors[-99:], (where, message)]

    def close(self) -> None:
        return None


class LedgerStore:
    """Sessions and records in the ledger at ``home/ledger.db`` (see the module docstring).

    ``on_error`` is told about a write that failed (the store goes on: the proxy must not stop
    serving because its ledger is full or locked).
    """

    def __init__(self, home: Path, *, on_error: Callable[[Exception], None] | None = None) -> None:
        self._ledger = Ledger.open(home)
        self._reader = Ledger.open(home)
        self._lock = threading.Lock()
        self._queue: queue.Queue[Callable[[Ledger], None] | None] = queue.Queue()
        self._on_error = on_error
        self._thread = threading.Thread(target=self._run, name="ctxhealth-ledger", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                return
            try:
                with self._lock:
                    job(self._ledger)
            except LedgerError as exc:
                if self._on_error is not None:
                    self._on_error(exc)

    def load(self, key: str) -> dict[str, Any] | None:
        tail = self._reader.get_tail(PATH_PREFIX + key)
        return tail.state if tail is not None and tail.state else None

    def save(self, key: str, state: dict[str, Any]) -> None:
        path = PATH_PREFIX + key
        self._queue.put(lambda ledger: ledger.set_tail(path, TailState(state=state, session_id=key)))

    def record(self, key: str, turn: int, row: dict[str, Any], decision: tuple[str, str] | None) -> None:
        def write(ledger: Ledger) -> None:
            ledger.record_assessment(
                key,
                turn,
                tokens=row.get("tokens"),
                pressure=row.get("pressure"),
                zone=row.get("zone"),
                details=row.get("details"),
            )
            if decision is not None:
                ledger.record_decision(key, turn, decision[0], decision[1])

        self._queue.put(write)

    def record_error(self, where: str, message: str) -> None:
        def write(ledger: Ledger) -> None:
            ledger.record_error(where, message)

        self._queue.put(write)

    def drain(self) -> None:
        """Wait until every queued write is done."""
        done = threading.Event()
        self._queue.put(lambda ledger: done.set())
        done.wait()

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join()
        with self._lock:
            self._ledger.close()
        self._reader.close()
