"""Benchmark: finding the sessions under a folder (the one directory walk), before and after in the same run.

Run: ``python benchmarks/bench_discover.py [--root DIR ...] [--baseline REV] [--repeat 7]``

Every command that takes a folder (``check``, ``report``, ``audit``, ``insights``, ``fleet``) starts
with :func:`ctxhealth.sources.discover`; an incremental ``fleet`` run over unchanged files is little
else (the walk, then one query of the store's ``files`` table). For each ``--root`` (default: the
real sessions of ``../shared/data`` and, when present, the generated fleet corpus that
``bench_fleet.py --keep DIR`` leaves) two things are timed, in CPU seconds, the best of ``--repeat``:

* ``discover``: ``discover([root], absolute=True)`` (as ``fleet`` names its sources), per source;
* ``fleet_unchanged``: ``ctxhealth fleet ROOT --out STORE --accounting`` a second time, with every
  file already in the store (the whole process: start-up, the walk, the store's check), in a child
  process; only for roots with at least 100 sources.

``before`` is the code at ``--baseline`` (default ``HEAD``; ``''`` to skip), exported with
``git archive`` with its own C kernels built (``baseline_tree.export``) and run in child processes
(``PYTHONPATH``); ``after`` is this tree, in child processes alike: ``discover`` once per variant (the
best of ``--repeat`` inside the child), the fleet re-runs alternating ``before`` and ``after``. Both
must list the same sources (the benchmark stops otherwise). Prints a line per root to stderr and one
JSON line to stdout:
per root its sources, per variant the figures, and ``after_vs_before`` (below 1 is faster), with the
load average at the end.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from baseline_tree import export

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"

DISCOVER = r"""
import hashlib, json, sys, time
import msgspec
from ctxhealth.sources import discover
root, repeat = sys.argv[1], int(sys.argv[2])
found = discover([root], absolute=True)
best = min(
    (lambda t: (discover([root], absolute=True), time.process_time() - t)[1])(time.process_time())
    for _ in range(repeat)
)
digest = hashlib.sha256(msgspec.json.encode(found)).hexdigest()
print(json.dumps({"sources": len(found), "cpu_s": best, "digest": digest}))
"""

FLEET = r"""
import os, resource, sys
from ctxhealth.cli.main import main
sys.argv = ["ctxhealth", "fleet", sys.argv[1], "--out", sys.argv[2], "--accounting", "--json"]
try:
    main()
finally:
    me = resource.getrusage(resource.RUSAGE_SELF)
    sys.stderr.write(f"CPU {me.ru_utime + me.ru_stime}\n")
"""


def _env(src: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if src is not None:
        env["PYTHONPATH"] = str(src)
    return env


def _discover(root: Path, src: Path | None, repeat: int) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-c", DISCOVER, str(root), str(repeat)],
        env=_env(src),
        capture_output=True,
        text=True,
        check=True,
    )
    found: dict[str, Any] = json.loads(out.stdout)
    return found


def _fleet_unchanged(root: Path, store: Path, src: Path | None) -> float:
    """CPU seconds of a fleet run that finds every file unchanged (the store filled first)."""
    cmd = [sys.executable, "-c", FLEET, str(root), str(store)]
    if not store.exists():
        subprocess.run(cmd, env=_env(src), capture_output=True, check=True)
    out = subprocess.run(cmd, env=_env(src), capture_output=True, text=True, check=True)
    if json.loads(out.stdout)["analysed"]:
        raise SystemExit(f"the second fleet run over {root} analysed files again")
    return float(out.stderr.rsplit("CPU ", 1)[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, action="append", help="a folder of sessions (repeatable)")
    parser.add_argument("--baseline", default="HEAD", help="git revision to compare with ('' to skip)")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    roots = args.root or [p for p in (DATA, Path(tempfile.gettempdir()) / "fleet1g") if p.is_dir()]
    if not roots:
        raise SystemExit("no folder to walk: pass --root DIR")
    work = Path(tempfile.mkdtemp(prefix="bench-discover-"))
    try:
        variants: dict[str, Path | None] = {"after": None}
        if args.baseline:
            variants = {"before": export(args.baseline, work, native=True), "after": None}
        results: dict[str, dict[str, Any]] = {}
        for root in roots:
            row: dict[str, Any] = {}
            digests = set()
            for name, src in variants.items():
                found = _discover(root, src, args.repeat)
                digests.add(found["digest"])
                row["sources"] = found["sources"]
                row[name] = {
                    "discover_cpu_s": round(float(found["cpu_s"]), 4),
                    "discover_us_per_source": round(
                        float(found["cpu_s"]) * 1e6 / max(1, int(found["sources"])), 1
                    ),
                }
            if len(digests) > 1:
                raise SystemExit(f"before and after list different sources under {root}")
            if int(row["sources"]) >= 100:
                stores = {
                    name: work / f"{name}-{hashlib.sha1(str(root).encode()).hexdigest()[:8]}.duckdb"
                    for name in variants
                }
                best: dict[str, float] = {}
                for _ in range(max(1, args.repeat // 2)):
                    for name, src in variants.items():  # alternating
                        cpu = _fleet_unchanged(root, stores[name], src)
                        best[name] = min(best.get(name, cpu), cpu)
                for name in variants:
                    row[name]["fleet_unchanged_cpu_s"] = round(best[name], 3)
            if "before" in row:
                before, after = row["before"], row["after"]
                row["after_vs_before"] = {k: round(after[k] / before[k], 2) for k in after if before.get(k)}
            results[str(root)] = row
            print(f"{root}: {json.dumps(row)}", file=sys.stderr)
        print(json.dumps({"roots": results, "load_average_1min_at_end": round(os.getloadavg()[0], 2)}))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
