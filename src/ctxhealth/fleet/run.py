"""A fleet run: find the files, analyse the new and changed ones on an engine, write their rows.

:func:`run_fleet` is the one entry point (``ctxhealth fleet`` calls it). Engines:

* ``local`` — a process pool on this machine (``jobs`` workers; one process does the work
  in-line when ``jobs == 1`` or there is a single batch).
* ``dask`` — the same batches as tasks on a Dask cluster: the one at ``scheduler`` when given,
  else a ``LocalCluster`` started for the run (``dask`` / ``distributed``, the ``fleet`` extra).

Batches come back as they finish; their rows are written once :data:`WRITE_BYTES` of transcripts
have been gathered (bounded memory: a few batches' rows, never the corpus's). Progress is
reported through ``progress(done_files, total_files, done_bytes, total_bytes)``; the library
never prints.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxhealth.accounting.catalog import Catalog, set_default_catalog
from ctxhealth.errors import UsageError
from ctxhealth.fleet.files import FileEntry, discover
from ctxhealth.fleet.jobs import Batch, JobOptions, analyse_batch
from ctxhealth.fleet.store import open_store, require

Progress = Callable[[int, int, int, int], None]

ENGINES = ("local", "dask")
BATCH_BYTES = 8 * 1024 * 1024
"""Target bytes of transcripts per task: large enough that sending rows back is a small share of
the work, small enough that every worker gets several tasks."""
MAX_BATCH_FILES = 64
DASK_BATCH_BYTES = 4 * BATCH_BYTES
"""The Dask engine's target per task: each Dask task costs a few milliseconds of the scheduler's,
the client's and its worker's event loops (4.6 ms CPU in all, measured on 1 GB at the accounting
level, where an 8 MB task is 40 ms of work), four times a process pool's, so its tasks are larger."""
DASK_MAX_BATCH_FILES = 4 * MAX_BATCH_FILES
PRELOAD = ("ctxhealth.fleet.jobs",)
"""Modules the local engine's fork server imports before it forks the workers (a worker never needs
NumPy: see :mod:`ctxhealth.fleet.columns`)."""
STARTED_CLUSTER: dict[str, Any] = {
    "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None,
    "distributed.worker.profile.enabled": False,
    # the periodic work of every server of the cluster, for a run that lasts seconds and has no
    # dashboard: the event-loop latency metric (every 20 ms by default; a loop blocked for longer
    # than ``distributed.admin.tick.limit`` is still reported), the host metrics sampled for the
    # dashboard (every 500 ms) and each worker's reading of its own memory (every 100 ms; spilling,
    # pausing and the nanny's limit still act on it, a second apart at most)
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.system-monitor.interval": "2s",
    "distributed.worker.memory.monitor-interval": "1s",
}
"""The Dask settings of a ``LocalCluster`` a run starts (see :func:`_dask`); a cluster given with
``--scheduler`` is the caller's and keeps its own."""
WRITE_BYTES = 128 * 1024 * 1024
"""Transcript bytes whose rows are written to the store in one step: every write has a fixed cost
(an insert per table, a Parquet part per table), so finished batches are gathered up to this (about
3 MB of rows) before they are written."""


@dataclass(slots=True)
class FleetResult:
    """What a run did: files seen / analysed / unchanged, what was skipped and why, rows per table;
    and the store's totals after it (unhealthy sessions by action, cost)."""

    out: str
    engine: str
    files: int = 0
    analysed: int = 0
    unchanged: int = 0
    sessions: int = 0
    bytes_read: int = 0
    seconds: float = 0.0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    unhealthy: dict[str, int] = field(default_factory=dict)
    cost_usd: float = 0.0
    unpriced: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "out": self.out,
            "engine": self.engine,
            "files": self.files,
            "analysed": self.analysed,
            "unchanged": self.unchanged,
            "sessions": self.sessions,
            "bytes_read": self.bytes_read,
            "seconds": round(self.seconds, 3),
            "skipped": [{"path": p, "reason": r} for p, r in self.skipped],
            "rows": self.counts,
            "store": {
                "sessions": self.counts.get("sessions", 0),
                "unhealthy_by_action": self.unhealthy,
                "cost_usd": round(self.cost_usd, 6),
                "unpriced_sessions": self.unpriced,
            },
        }


def batches(
    entries: Sequence[FileEntry],
    workers: int,
    batch_bytes: int = BATCH_BYTES,
    max_files: int = MAX_BATCH_FILES,
) -> list[list[FileEntry]]:
    """Files grouped into tasks of about ``batch_bytes`` and at most ``max_files`` (smaller when that
    would leave a worker idle), keeping the discovery order."""
    total = sum(e.size for e in entries)
    target = max(1, min(batch_bytes, total // max(1, 4 * workers)))
    out: list[list[FileEntry]] = []
    current: list[FileEntry] = []
    size = 0
    for e in entries:
        current.append(e)
        size += e.size
        if size >= target or len(current) >= max_files:
            out.append(current)
            current, size = [], 0
    if current:
        out.append(current)
    return out


def start_worker(catalog: Catalog, freeze: bool = True) -> None:
    """What every worker of either engine runs first: the parent's model catalog (loaded once
    there, not derived per worker); then, in a worker process the run started (``freeze``; never
    in the caller's process or in a cluster's long-lived workers), what the process holds so far
    (the imported analysis, the catalog) is moved out of the garbage collector's reach, so each
    collection the analysis triggers scans only its own objects (the collections took 7% of an
    accounting-level worker)."""
    set_default_catalog(catalog)
    if freeze:
        gc.freeze()


def _local(tasks: list[list[FileEntry]], options: JobOptions, jobs: int) -> Iterator[Batch]:
    if jobs <= 1 or len(tasks) <= 1:
        for task in tasks:
            yield analyse_batch(task, options)
        return
    # forkserver, not fork: a parent that has threads (DuckDB, Dask, a notebook) cannot be forked safely
    context = multiprocessing.get_context("forkserver")
    # the fork server imports the analysis once and every worker is forked with it loaded, instead
    # of each worker importing it again (no effect when this process's fork server already runs)
    context.set_forkserver_preload(["__main__", *PRELOAD])
    with ProcessPoolExecutor(
        max_workers=min(jobs, len(tasks)),
        mp_context=context,
        initializer=start_worker,
        initargs=(options.registry.catalog,),
    ) as pool:
        pending: set[Future[Batch]] = set()
        queue = iter(tasks)
        # keep two tasks per worker in flight: results stream back in bounded memory
        for task in queue:
            pending.add(pool.submit(analyse_batch, task, options))
            if len(pending) >= 2 * jobs:
                break
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                yield future.result()
                nxt = next(queue, None)
                if nxt is not None:
                    pending.add(pool.submit(analyse_batch, nxt, options))


def _dask(
    tasks: list[list[FileEntry]], options: JobOptions, jobs: int, scheduler: str | None, processes: bool
) -> Iterator[Batch]:
    distributed = require("distributed")
    cluster = None
    if scheduler:
        client = distributed.Client(scheduler)
    else:
        # a cluster started here leaves glibc's memory trimming as it is: Dask's default worker
        # environment sets MALLOC_TRIM_THRESHOLD_, which also fixes glibc's mmap threshold, so
        # every file read and large buffer is a fresh mapping (10x the page faults of a local
        # engine's worker, measured on the same batches; an environment variable still wins); and
        # its workers do not sample their own stacks every 10 ms for a dashboard it does not have
        # (a fifth of each worker's event-loop CPU), nor run the periodic checks above as often
        # (idle, the cluster's processes used 0.09–0.12 CPU-seconds per second with Dask's defaults,
        # 0.02 with these)
        with require("dask").config.set(STARTED_CLUSTER):
            cluster = distributed.LocalCluster(
                n_workers=jobs, threads_per_worker=1, processes=processes, dashboard_address=None
            )
        client = distributed.Client(cluster)
    try:
        # as the local engine's workers; only the processes of a cluster started here are frozen
        client.run(start_worker, options.registry.catalog, cluster is not None and processes)
        scattered = client.scatter(options, broadcast=True)
        futures = [client.submit(analyse_batch, task, scattered, pure=False) for task in tasks]
        for future in distributed.as_completed(futures):
            yield future.result()
            future.release()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def run_fleet(
    paths: Sequence[str | Path],
    out: str | Path,
    options: JobOptions,
    *,
    engine: str = "local",
    jobs: int | None = None,
    scheduler: str | None = None,
    dask_processes: bool = True,
    full: bool = False,
    progress: Progress | None = None,
) -> FleetResult:
    """Analyse every new or changed transcript under ``paths`` into the tables at ``out``.

    ``full`` re-reads every file. ``dask_processes=False`` runs a started LocalCluster's workers as
    threads of this process (tests; a real run wants processes). Raises :class:`UsageError` for an
    unknown engine, or ``scheduler`` without the dask engine.
    """
    if engine not in ENGINES:
        raise UsageError(f"unknown engine {engine!r}", hint=f"use one of: {', '.join(ENGINES)}")
    if scheduler and engine != "dask":
        raise UsageError("--scheduler needs --engine dask", hint="add --engine dask")
    started = time.perf_counter()
    entries = discover(paths)
    store = open_store(out)
    result = FleetResult(str(out), engine, files=len(entries))
    try:
        if options.health and not full and any(action is None for action, _, _ in store.verdicts()):
            full = True  # rows of an accounting-level run are there: every file is assessed again
        known = store.known()
        todo = entries if full else [e for e in entries if known.get(e.path) != e.fingerprint]
        result.unchanged = len(entries) - len(todo)
        # one step removes every row of the files about to be read again (every file analysed has
        # its row in ``files``, so those are the only ones with rows to remove); batches then only append
        store.forget([e.path for e in todo if e.path in known])
        workers = jobs or os.cpu_count() or 1
        tasks = (
            batches(todo, workers, BATCH_BYTES, MAX_BATCH_FILES)
            if engine == "local"
            else batches(todo, workers, DASK_BATCH_BYTES, DASK_MAX_BATCH_FILES)
        )
        total_bytes = sum(e.size for e in todo)
        if progress is not None:
            progress(0, len(todo), 0, total_bytes)
        stream = (
            _local(tasks, options, workers)
            if engine == "local"
            else _dask(tasks, options, workers, scheduler, dask_processes)
        )
        gathered: list[Batch] = []
        gathered_bytes = 0
        for batch in stream:
            gathered.append(batch)
            for o in batch.outcomes:
                gathered_bytes += o.entry.size
                result.analysed += 1
                result.bytes_read += o.entry.size
                if o.ok:
                    result.sessions += o.sessions
                else:
                    result.skipped.append((o.entry.path, o.reason))
            if gathered_bytes >= WRITE_BYTES:
                store.append(gathered)
                gathered, gathered_bytes = [], 0
            if progress is not None:
                progress(result.analysed, len(todo), result.bytes_read, total_bytes)
        store.append(gathered)
        store.commit()
        result.counts = store.counts()
        for action, healthy, cost in store.verdicts():
            if healthy is False:
                result.unhealthy[action] = result.unhealthy.get(action, 0) + 1
            if cost is None:
                result.unpriced += 1
            else:
                result.cost_usd += cost
        result.unhealthy = dict(sorted(result.unhealthy.items()))
    finally:
        store.close()
    result.seconds = time.perf_counter() - started
    return result
