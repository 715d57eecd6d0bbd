"""CPU time of everything a measured piece of work ran: this process and every process below it.

``getrusage(RUSAGE_CHILDREN)`` only counts children that were waited for, and their waited-for
children. A ``forkserver`` pool breaks that chain: the workers are children of the fork server,
which lives until the interpreter exits and is never waited for during the run, so their CPU is
missing. :class:`CpuMeter` therefore counts two ways at once:

* ``rusage`` — this process plus its reaped children, after stopping the fork server (the
  server then reaps its workers and is reaped here, so its whole tree is counted);
* ``tree`` — this process plus every descendant found by sampling the process tree with
  ``psutil`` (each process's own user + system time, last value seen before it ended; up to one
  sampling interval per short-lived process is lost, so this is a lower bound).

``cpu_s`` is the larger of the two. Used by ``bench_fleet.py`` and ``bench_table.py``.
"""

from __future__ import annotations

import os
import resource
import threading
import time
from types import TracebackType

try:
    import psutil
except ImportError:  # pragma: no cover - the bench extra has it
    psutil = None


def _rusage_total() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def stop_forkserver() -> None:
    """Stop multiprocessing's fork server (if one runs) and wait for it, so its CPU and its
    workers' CPU land in this process's ``RUSAGE_CHILDREN``. The next pool starts a new one."""
    import multiprocessing.forkserver as forkserver

    server = getattr(forkserver, "_forkserver", None)
    stop = getattr(server, "_stop", None)
    if stop is not None:
        stop()


class CpuMeter:
    """``with CpuMeter() as m: work()`` then ``m.cpu_s``, ``m.rusage_s``, ``m.tree_s``, ``m.wall_s``."""

    def __init__(self, interval: float = 0.1) -> None:
        self.interval = interval
        self.wall_s = 0.0
        self.rusage_s = 0.0
        self.tree_s = 0.0
        self.unreaped_s = 0.0
        self._seen: dict[tuple[int, float], float] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._sampler_s = 0.0

    def _sample(self) -> None:
        if psutil is None:
            return
        try:
            kids = psutil.Process(os.getpid()).children(recursive=True)
        except psutil.Error:
            return
        for p in kids:
            try:
                with p.oneshot():
                    t = p.cpu_times()
                    key = (p.pid, p.create_time())
            except psutil.Error:
                continue
            self._seen[key] = max(self._seen.get(key, 0.0), t.user + t.system)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()
        self._sampler_s = time.thread_time()  # the sampling's own cost, taken off below

    def __enter__(self) -> CpuMeter:
        self._sample()
        self._before = dict(self._seen)  # processes alive before the work: count only their growth
        self._r0 = _rusage_total()
        self._self0 = time.process_time()
        self._t0 = time.perf_counter()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._sample()
        self.unreaped_s = _rusage_total() - self._r0  # what getrusage alone said before the reaping
        stop_forkserver()
        self.wall_s = time.perf_counter() - self._t0
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.rusage_s = _rusage_total() - self._r0
        own = time.process_time() - self._self0 - self._sampler_s
        self.rusage_s -= self._sampler_s
        self.unreaped_s -= self._sampler_s
        self.tree_s = own + sum(v - self._before.get(k, 0.0) for k, v in self._seen.items())

    @property
    def cpu_s(self) -> float:
        return max(self.rusage_s, self.tree_s)
