"""Benchmark ``Monitor.observe``: microseconds per message and memory as the history grows.

Run: ``python benchmarks/bench_observe.py [--data ../shared/data] [--turns 4000]``; prints one JSON document.

* ``real``: the largest real transcript found under ``--data`` (skipped when absent);
* ``generated``: a synthetic session whose reported fill climbs to 1M tokens (``gpt-4.1``, 1M window);
* per session: p50 / p99 / mean microseconds per ``observe`` over all observations; the same per
  message as the fastest of the repeats (``observe_best_of``: steadier on a busy machine, since a
  message's cost does not change between repeats, only the interference does) with the mean CPU time
  per message; ``observe``'s two steps apart (``update_then_assess_best_of``, best of the repeats):
  ``update`` on every message and ``assess`` at each assistant turn, as fleet, the hooks and the
  proxy now call them; ``observe`` plus reading every signal of each assessment (``observe_plus_all_signals``:
  ``observe`` returns the decision, zone, pressure, risk and features and defers the per-signal
  snapshots and explanations until they are read, so this is the cost for a caller who reads them
  all); the retained memory (tracemalloc) of a monitor after 10% / 50% / 100% of the history,
  to show it stays flat; the size of ``Monitor.snapshot()`` as JSON at those points and the time to
  save and restore it; and in the same run two baselines: a bare Python call per message (the floor)
  and a naive assessment that rebuilds a fresh monitor over the whole prefix (what a non-incremental
  checker pays per turn, measured on a few turns).

The session is built (and the garbage collector frozen) before timing, so only ``observe`` is measured.

Before and after in the same run: with ``--baseline REV`` (default ``main``; ``''`` to skip) the same
benchmark is first run on the code of that revision, exported with ``git archive`` and run in a child
process (``PYTHONPATH``), and the document holds both (``before``, ``after``) with the ratios of
the per-message figures (``after_vs_before``: below 1 is faster).

Native against pure Python in the same run: with ``--pure`` this tree is also measured with the C
text kernels switched off (``CTXHEALTH_NATIVE=0``, in a child process), and the document holds
both (``native``, ``pure``) with the ratios (``native_vs_pure``; the ``kernels`` field of each
says which ran).
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

from baseline_tree import export

from ctxhealth.model import Format, Message, Role, Session, TextBlock, ToolCall, ToolResult, Usage
from ctxhealth.monitor import Monitor


def generated_session(turns: int, target_tokens: int = 1_000_000) -> Session:
    """A synthetic agent run: each turn a bash call with a reported prompt size, then its result."""
    msgs: list[Message] = [
        Message(Role.SYSTEM, (TextBlock("You are a coding agent."),)),
        Message(
            Role.USER, (TextBlock("Fix the date parser so ISO offsets round-trip; keep the tests green."),)
        ),
    ]
    step = target_tokens // turns
    for t in range(turns):
        command = [
            "cat src/parser.py",
            f"sed -i 's/a{t}/b{t}/' src/parser.py",
            "python -m pytest -q",
            f"ls d{t}",
        ][t % 4]
        text = (
            f"Turn {t}: checking the parser offsets; next I run the tests and compare outputs for case {t}."
        )
        msgs.append(
            Message(
                Role.ASSISTANT,
                (TextBlock(text), ToolCall(f"c{t}", "bash", {"command": command})),
                usage=Usage(input_tokens=2_000 + step * t, output_tokens=120),
            )
        )
        code = 1 if t % 7 == 0 else 0
        out = ("Traceback (most recent call last):\nValueError: bad offset" if code else "ok\n") * 20
        msgs.append(Message(Role.USER, (ToolResult(f"c{t}", out, is_error=bool(code), exit_code=code),)))
    return Session(path="generated", format=Format.OPENAI_CHAT, messages=tuple(msgs), model="gpt-4.1")


def largest_real(data: Path) -> Session | None:
    if not data.is_dir():
        return None
    from ctxhealth.sources import read_sessions

    best: Session | None = None
    for s in read_sessions([str(data)]):
        if best is None or len(s.messages) > len(best.messages):
            best = s
    return best


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def time_observe(session: Session, repeats: int) -> tuple[dict[str, float], dict[str, float]]:
    """All observations, and per message the fastest of the repeats (with the mean CPU time)."""
    samples: list[float] = []
    best = [math.inf] * len(session.messages)
    clock = time.perf_counter_ns
    cpu0 = time.process_time_ns()
    for _ in range(repeats):
        m = Monitor(session.model)
        for i, msg in enumerate(session.messages):
            t0 = clock()
            m.observe(msg)
            us = (clock() - t0) / 1000.0
            samples.append(us)
            if us < best[i]:
                best[i] = us
    cpu_us = (time.process_time_ns() - cpu0) / 1000.0 / max(1, len(samples))
    return (
        {
            "p50_us": round(_percentile(samples, 0.50), 2),
            "p99_us": round(_percentile(samples, 0.99), 2),
            "mean_us": round(statistics.fmean(samples), 2),
            "observations": len(samples),
        },
        {
            "p50_us": round(_percentile(best, 0.50), 2),
            "p99_us": round(_percentile(best, 0.99), 2),
            "max_us": round(max(best), 2),
            "cpu_mean_us": round(cpu_us, 2),
            "repeats": repeats,
        },
    )


def time_update_assess(session: Session, repeats: int) -> dict[str, Any] | None:
    """The two steps ``observe`` is made of, per message the fastest of the repeats: ``update`` on
    every message (the per-message step) and ``assess`` at each assistant turn (where fleet, the
    hooks and the proxy ask for an answer; ``check`` asks once per session). None on code without
    the split (a baseline from before it)."""
    if not hasattr(Monitor, "update"):
        return None
    n = len(session.messages)
    update = [math.inf] * n
    assess = [math.inf] * n
    clock = time.perf_counter_ns
    turns = [i for i, msg in enumerate(session.messages) if msg.role is Role.ASSISTANT]
    wanted = set(turns)
    for _ in range(repeats):
        m = Monitor(session.model)
        for i, msg in enumerate(session.messages):
            t0 = clock()
            m.update(msg)
            t1 = clock()
            if i in wanted:
                m.assess()
                assess[i] = min(assess[i], (clock() - t1) / 1000.0)
            update[i] = min(update[i], (t1 - t0) / 1000.0)
    at_turns = [assess[i] for i in turns] or [0.0]
    return {
        "update_p50_us": round(_percentile(update, 0.50), 2),
        "update_p99_us": round(_percentile(update, 0.99), 2),
        "update_max_us": round(max(update), 2),
        "assess_p50_us": round(_percentile(at_turns, 0.50), 2),
        "assess_p99_us": round(_percentile(at_turns, 0.99), 2),
        "assessed_turns": len(turns),
        "repeats": repeats,
    }


def time_observe_and_signals(session: Session, repeats: int) -> dict[str, float]:
    """``observe`` plus reading every signal of its assessment (value, evidence, detail) per message.

    ``observe`` computes what a caller acts on (zone, pressure, risk, action, reasons, features) and
    defers the per-signal explanations until they are read; this is the cost when they all are.
    """
    samples: list[float] = []
    clock = time.perf_counter_ns
    for _ in range(repeats):
        m = Monitor(session.model)
        for msg in session.messages:
            t0 = clock()
            a = m.observe(msg)
            read = [(sig.value, sig.evidence, sig.detail) for sig in a.signals.values()]
            samples.append((clock() - t0) / 1000.0)
    assert read, "every assessment has signals"
    return {
        "p50_us": round(_percentile(samples, 0.50), 2),
        "p99_us": round(_percentile(samples, 0.99), 2),
        "mean_us": round(statistics.fmean(samples), 2),
        "observations": len(samples),
    }


def snapshot_profile(session: Session) -> dict[str, Any]:
    """``Monitor.snapshot()`` as JSON after 10% / 50% / 100% of the history: bytes, save and restore ms."""
    n = len(session.messages)
    out = {}
    m = Monitor(session.model)
    done = 0
    for frac in (0.1, 0.5, 1.0):
        stop = max(1, int(n * frac))
        for msg in session.messages[done:stop]:
            m.observe(msg)
        done = stop
        t0 = time.perf_counter_ns()
        blob = json.dumps(m.snapshot(), separators=(",", ":"))
        t1 = time.perf_counter_ns()
        Monitor.restore(json.loads(blob))
        t2 = time.perf_counter_ns()
        out[f"{int(frac * 100)}%"] = {
            "bytes": len(blob),
            "save_ms": round((t1 - t0) / 1e6, 2),
            "restore_ms": round((t2 - t1) / 1e6, 2),
        }
    return out


def _noop(message: Message) -> Message:
    return message


def time_bare_call(session: Session, repeats: int) -> dict[str, float]:
    samples: list[float] = []
    clock = time.perf_counter_ns
    for _ in range(repeats):
        for msg in session.messages:
            t0 = clock()
            _noop(msg)
            samples.append((clock() - t0) / 1000.0)
    return {"p50_us": round(_percentile(samples, 0.5), 3), "p99_us": round(_percentile(samples, 0.99), 3)}


def machine_calibration() -> dict[str, float]:
    """How fast this interpreter is right now: an empty loop iteration and a bare call, in ns."""
    rounds = 200_000
    t0 = time.perf_counter_ns()
    for _ in range(rounds):
        pass
    loop = (time.perf_counter_ns() - t0) / rounds
    t0 = time.perf_counter_ns()
    for _ in range(rounds):
        _noop(None)  # type: ignore[arg-type]
    call = (time.perf_counter_ns() - t0) / rounds
    return {"empty_loop_ns": round(loop, 1), "bare_call_ns": round(call, 1)}


def time_naive(session: Session, points: int = 5) -> dict[str, Any]:
    """Rebuild a fresh monitor over the whole prefix at a few turns (the non-incremental way)."""
    n = len(session.messages)
    out = {}
    for frac in (0.1, 0.5, 1.0):
        stop = max(1, int(n * frac))
        prefix = session.messages[:stop]
        t0 = time.perf_counter_ns()
        for _ in range(points):
            m = Monitor(session.model)
            for msg in prefix:
                m.observe(msg)
        out[f"{int(frac * 100)}%"] = round((time.perf_counter_ns() - t0) / points / 1000.0, 1)
    return {"us_per_assessment_at": out}


def memory_profile(session: Session) -> dict[str, Any]:
    """Memory a monitor retains after a prefix; process-wide caches are warmed first so they are not
    charged to the monitor (they are bounded too: stems, parsed commands)."""
    warm = Monitor(session.model)
    for msg in session.messages:
        warm.observe(msg)
    del warm
    n = len(session.messages)
    out = {}
    for frac in (0.1, 0.5, 1.0):
        stop = max(1, int(n * frac))
        gc.collect()
        tracemalloc.start()
        m = Monitor(session.model)
        for msg in session.messages[:stop]:
            m.observe(msg)
        current, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        out[f"{int(frac * 100)}%"] = {
            "messages": stop,
            "retained_kib": round(current / 1024, 1),
            "peak_kib": round(peak / 1024, 1),
        }
        del m
    return out


def bench(session: Session, repeats: int) -> dict[str, Any]:
    gc.collect()
    gc.freeze()
    try:
        observed, best_of = time_observe(session, repeats)
        result = {
            "path": session.path,
            "messages": len(session.messages),
            "turns": session.assistant_turns,
            "observe": observed,
            "observe_best_of": best_of,
            "update_then_assess_best_of": time_update_assess(session, repeats),
            "observe_plus_all_signals": time_observe_and_signals(session, repeats),
            "baseline_bare_call": time_bare_call(session, repeats),
            "baseline_naive_recompute": time_naive(session),
        }
    finally:
        gc.unfreeze()
    result["memory"] = memory_profile(session)
    result["snapshot"] = snapshot_profile(session)
    m = Monitor(session.model)
    for msg in session.messages:
        last = m.observe(msg)
    result["final"] = {"fill": last.fill, "zone": last.zone.value, "action": last.action.value}
    return result


def run_pure(argv: list[str]) -> dict[str, Any]:
    """This benchmark on this tree with the C text kernels switched off, in a child process."""
    from ctxhealth.native import SWITCH

    env = {**os.environ, SWITCH: "0"}
    command = [sys.executable, __file__, *argv, "--baseline", ""]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def kernels() -> str:
    """Which text kernels this process runs: "native" (the C extension) or "python"."""
    try:
        from ctxhealth.native import KERNELS
    except ImportError:  # a baseline from before the switch
        return "python"
    return "python" if KERNELS is None else "native"


def run_baseline(rev: str, argv: list[str]) -> dict[str, Any]:
    """This benchmark on the code of git revision ``rev`` (its ``src`` tree, with its C kernels
    built when it has them and this tree's are in use), in a child process."""
    with tempfile.TemporaryDirectory(prefix="ctxhealth-observe-") as tmp:
        src = export(rev, Path(tmp), native=kernels() == "native")
        env = {**os.environ, "PYTHONPATH": str(src)}
        command = [sys.executable, __file__, *argv, "--baseline", ""]
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def _ratios(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for session in ("real", "generated"):
        if not before.get(session) or not after.get(session):
            continue
        out[session] = {
            f"{part}_{key}": round(after[session][part][key] / before[session][part][key], 3)
            for part in ("observe", "observe_best_of")
            for key in ("p50_us", "p99_us")
            if before[session][part][key]
        }
        split_before = before[session].get("update_then_assess_best_of")
        split_after = after[session].get("update_then_assess_best_of")
        if split_before and split_after:
            for key in ("update_p50_us", "update_p99_us", "update_max_us"):
                if split_before[key]:
                    out[session][key] = round(split_after[key] / split_before[key], 3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    parser.add_argument("--turns", type=int, default=4_000, help="turns of the generated 1M-token session")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--baseline", default="main", help="git revision measured as 'before' ('' to skip)")
    parser.add_argument(
        "--pure", action="store_true", help="also measure with the C text kernels off (CTXHEALTH_NATIVE=0)"
    )
    args = parser.parse_args()
    before = None
    argv = ["--data", args.data, "--turns", str(args.turns), "--repeats", str(args.repeats)]
    if args.baseline:
        before = run_baseline(args.baseline, argv)
    pure = run_pure(argv) if args.pure else None
    report: dict[str, Any] = {"benchmark": "observe", "kernels": kernels(), "machine": machine_calibration()}
    real = largest_real(Path(args.data))
    report["real"] = bench(real, args.repeats) if real is not None else None
    report["generated"] = bench(generated_session(args.turns), max(1, args.repeats - 1))
    measured = report
    if pure is not None:
        report = {
            "benchmark": "observe",
            "native": report,
            "pure": pure,
            "native_vs_pure": _ratios(pure, report),
        }
    if before is not None:
        report = {
            "benchmark": "observe",
            "baseline": args.baseline,
            "before": before,
            "after": report,
            "after_vs_before": _ratios(before, measured),
        }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
