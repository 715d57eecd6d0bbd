"""Audit benchmark: ``ctxhealth audit`` over the whole corpus against ``ctxhealth check`` in the same run.

Both contenders do their command's library work on every transcript under ``--data`` (Claude
Code, mini-swe-agent, OpenHands, tau-bench ...), in this process, output discarded:

* ``check`` — what ``ctxhealth check`` does per session: ``read_sessions`` + ``account_session`` +
  a ``Monitor`` assessment + the check report;
* ``audit`` — ``run_audit`` with every check: priced responses, cache hit rates and breaks,
  cost ledger, waste, usage, and the walk for pack manifests and instruction files.

Runs alternate and the best of ``--repeat`` is kept, for wall time and CPU time (the steadier one
on a shared machine). A table goes to stderr; the last line on stdout is one JSON object with
both figures and ``ratio_cpu`` / ``ratio_wall`` (audit time / check time).

    python benchmarks/bench_audit.py [--data ../shared/data] [--repeat 3]
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

from ctxhealth.accounting.fill import account_session
from ctxhealth.audit import run_audit
from ctxhealth.monitor import Monitor
from ctxhealth.policy.profile import Profile
from ctxhealth.report.check_report import build_check_report
from ctxhealth.sources import read_sessions

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def run_check(data: Path) -> int:
    profile = Profile()
    sessions = 0
    for session in read_sessions([data]):
        account = account_session(session)
        assessment = Monitor(session.model, profile).observe_session(session).check_fields()
        build_check_report(session, account, assessment)
        sessions += 1
    return sessions


def run_audit_all(data: Path) -> int:
    return sum(1 for doc in run_audit([str(data)]) if doc["kind"] == "session")


def timed(fn: Callable[[Path], int], data: Path) -> tuple[float, float, int]:
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    sessions = fn(data)
    return time.perf_counter() - wall, time.process_time() - cpu, sessions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if not args.data.is_dir():
        sys.exit(f"no corpus at {args.data}: pass --data")
    contenders = {"check": run_check, "audit": run_audit_all}
    best: dict[str, dict[str, float]] = {}
    for _ in range(args.repeat):
        for name, fn in contenders.items():
            wall, cpu, sessions = timed(fn, args.data)
            entry = best.setdefault(name, {"wall_s": wall, "cpu_s": cpu, "sessions": sessions})
            entry["wall_s"] = min(entry["wall_s"], wall)
            entry["cpu_s"] = min(entry["cpu_s"], cpu)
    for name, entry in best.items():
        print(
            f"{name:6s} {entry['sessions']:5.0f} sessions  "
            f"wall {entry['wall_s']:6.2f} s  cpu {entry['cpu_s']:6.2f} s",
            file=sys.stderr,
        )
    result = {
        "data": str(args.data),
        "repeat": args.repeat,
        **best,
        "ratio_wall": best["audit"]["wall_s"] / best["check"]["wall_s"],
        "ratio_cpu": best["audit"]["cpu_s"] / best["check"]["cpu_s"],
    }
    print(f"audit / check: wall {result['ratio_wall']:.2f}x, cpu {result['ratio_cpu']:.2f}x", file=sys.stderr)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
