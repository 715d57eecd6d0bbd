"""Benchmark the failure verdict's text test, ``failures.text_looks_failed``, per tool result of the
real sessions: this tree with the C gate (``_native.error_gate``), this tree with the Python gate
(its definition, ``_error_gate_py``), and a baseline tree's ``text_looks_failed`` (``--baseline
SRC``, e.g. main's ``src``), all in the same process on the same texts.

Run: ``python benchmarks/bench_failure_gate.py [--data ../shared/data] [--baseline PATH/TO/src]
[--repeat 5]``; prints one JSON document: CPU nanoseconds per result (best of the repeats; each
repeat judges every result once), how many results and how many read failed (the three sides must
agree), and the load average.

With ``--worker`` and ``--baseline``, also a fleet worker's accounting level (``analyse_batch`` on
every file of ``--data``, no per-turn assessment) with this tree's ``text_looks_failed`` and with
the baseline's swapped in, alternating in this process (CPU milliseconds, median and best of the
repeats): the gate's share of a worker in place.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import os
import time
from collections.abc import Callable
from pathlib import Path

from ctxhealth import failures
from ctxhealth.model import ToolResult
from ctxhealth.sources import read_sessions

ROOT = Path(__file__).resolve().parents[1]


def _baseline(src: Path) -> Callable[[str], bool]:
    """``text_looks_failed`` of another tree's ``failures.py`` (it imports only ``ctxhealth.lazy``
    and, in newer trees, ``ctxhealth.native``, taken from this tree)."""
    spec = importlib.util.spec_from_file_location("baseline_failures", src / "ctxhealth" / "failures.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    found: Callable[[str], bool] = module.text_looks_failed
    return found


def _python_gate(text: str) -> bool:
    return failures.text_looks_failed(text)


def _time(judge: Callable[[str], bool], texts: list[str], repeat: int) -> tuple[float, int]:
    best = float("inf")
    failed = 0
    for _ in range(repeat):
        start = time.process_time_ns()
        failed = sum(1 for text in texts if judge(text))
        best = min(best, time.process_time_ns() - start)
    return best / len(texts), failed


def _worker(data: Path, baseline: Callable[[str], bool], repeat: int) -> dict[str, float]:
    """CPU ms of ``analyse_batch`` at the accounting level, this tree's gate against the baseline's
    (``output_failed`` looks ``text_looks_failed`` up in its module, so swapping it swaps the gate)."""
    import statistics

    from ctxhealth.accounting.registry import ModelRegistry
    from ctxhealth.fleet.files import discover
    from ctxhealth.fleet.jobs import JobOptions, analyse_batch
    from ctxhealth.policy.profile import default_profile

    entries = discover([data])
    options = JobOptions(ModelRegistry.default(), default_profile(), health=False)
    ours = failures.text_looks_failed
    analyse_batch(entries, options)
    took: dict[str, list[float]] = {"this": [], "baseline": []}
    try:
        for r in range(repeat):
            for side in ("baseline", "this") if r % 2 else ("this", "baseline"):
                failures.text_looks_failed = ours if side == "this" else baseline
                gc.collect()
                start = time.process_time()
                analyse_batch(entries, options)
                took[side].append((time.process_time() - start) * 1000)
    finally:
        failures.text_looks_failed = ours
    return {
        "this_median": round(statistics.median(took["this"]), 2),
        "baseline_median": round(statistics.median(took["baseline"]), 2),
        "this_best": round(min(took["this"]), 2),
        "baseline_best": round(min(took["baseline"]), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--baseline", default="", help="a baseline tree's src directory")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--worker", action="store_true", help="also a fleet worker's accounting level")
    args = parser.parse_args()
    texts = [
        b.text
        for s in read_sessions([args.data])
        for m in s.messages
        for b in m.blocks
        if isinstance(b, ToolResult)
    ]
    gc.collect()
    gc.freeze()
    doc: dict[str, object] = {"results": len(texts), "chars_mean": sum(map(len, texts)) / max(1, len(texts))}
    if failures._error_gate is not failures._error_gate_py:
        doc["c_gate_ns"], doc["c_failed"] = _time(failures.text_looks_failed, texts, args.repeat)
    kept = failures._error_gate
    failures._error_gate = failures._error_gate_py
    try:
        doc["python_gate_ns"], doc["python_failed"] = _time(_python_gate, texts, args.repeat)
    finally:
        failures._error_gate = kept
    if args.baseline:
        doc["baseline_ns"], doc["baseline_failed"] = _time(_baseline(Path(args.baseline)), texts, args.repeat)
        if "c_gate_ns" in doc:
            doc["c_vs_baseline"] = round(float(doc["c_gate_ns"]) / float(doc["baseline_ns"]), 3)  # type: ignore[arg-type]
        if args.worker:
            doc["worker_ms"] = _worker(Path(args.data), _baseline(Path(args.baseline)), max(args.repeat, 5))
    doc["loadavg"] = os.getloadavg()
    print(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
