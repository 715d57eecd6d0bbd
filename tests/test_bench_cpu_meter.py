"""The benchmarks' CPU meter counts the CPU of a forkserver pool's workers (children of a fork
server nobody waits for), which ``getrusage(RUSAGE_CHILDREN)`` alone misses."""

from __future__ import annotations

import multiprocessing
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

pytest.importorskip("psutil")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from cpu_tree import CpuMeter

WORK_S = 0.15


def burn(_: int) -> float:
    """Spend ``WORK_S`` of this process's CPU and say how much it spent."""
    start = time.process_time()
    x = 0
    while time.process_time() - start < WORK_S:
        x += 1
    return time.process_time() - start


def test_the_workers_of_a_forkserver_pool_are_counted() -> None:
    context = multiprocessing.get_context("forkserver")
    with CpuMeter() as meter, ProcessPoolExecutor(max_workers=2, mp_context=context) as pool:
        spent = sum(pool.map(burn, range(4)))
    assert spent >= 4 * WORK_S
    assert meter.rusage_s >= spent  # reaped: the fork server's tree is in RUSAGE_CHILDREN
    assert meter.tree_s >= 0.8 * spent  # sampled: at most an interval per worker is lost
    assert meter.cpu_s >= spent
    assert meter.unreaped_s < 0.5 * spent  # what getrusage alone said: the workers were missing
