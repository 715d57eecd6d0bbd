"""Fleet benchmark: `ctxhealth fleet` throughput on a corpus of at least 1 GB, side by side with contextrot.

The corpus is the shared Claude Code sessions (``claude-code/*/*.jsonl`` under ``--data``)
replicated under new session ids (the id is replaced in the file name and in every line; the size
stays the same) into a temporary folder until it holds ``--size-gb``. Then, in one run, on the same
files (page cache warmed first):

* ``fleet_local`` — ``run_fleet(engine="local")``: a process pool of ``--workers`` processes, every
  session read, accounted, assessed turn by turn and written to a DuckDB file;
* ``fleet_dask`` — the same job on a Dask ``LocalCluster`` of ``--workers`` single-threaded worker
  processes, started inside the timing (its start-up is part of the cost of the engine);
* ``fleet_dask_running`` — the same job on a cluster that outlives the run, as Dask is used when the
  work outgrows one machine (``--scheduler``): a scheduler and ``--workers`` single-threaded workers
  started with the ``dask`` command before the timing and warmed up by one small run (their imports
  done), the CPU of all of them during the run counted with the client's;
* ``contextrot`` — the ``contextrot`` package's Claude Code adapter (``ClaudeCodeAdapter().parse``)
  on every file, in one process, and ``contextrot_pool`` over a pool of ``--workers`` processes.
  It parses only: no accounting, no per-turn assessment, nothing written;
* ``contextrot_analysis`` — contextrot's own analysis of each file, in one process, as its
  ``analyze`` does per session: the parse, the session's window, then its per-step signals
  (``extract_signals``: fill, cost and the degradation signals of every step), the anchor of the
  full level (its per-turn assessment). Nothing is written and no cross-session curves are built.

Wall time and CPU time of every process the run used are reported (``cpu_tree.CpuMeter``: the
fork server of the local engine is stopped and reaped after its run, so its workers count, and
the process tree is sampled as a cross-check: ``cpu_rusage_s``, ``cpu_tree_s``, ``cpu_s`` the
larger); MB/s and sessions/s are per
wall-clock second, ``cpu_mb_per_s`` per CPU second (the steadier figure on a shared machine; the
load average at the end is printed with the results). Human lines go to stderr; the last line on
stdout is one JSON object.

``--engine-level accounting`` runs the engines (and so the Dask-over-local ratio) at the
accounting level instead of the full one.

``--baseline SRC`` measures instead the two levels of the local engine (``accounting``: no per-turn
health; ``health``: all of it) of this tree and of another checkout's ``src`` folder, on the same
corpus in the same run: each run a fresh process (``PYTHONPATH`` picks the tree), the contenders
alternating ``--repeat`` times, medians of CPU seconds (the whole process tree) printed with the
load average.

    pip install -e '.[fleet,bench]'
    python benchmarks/bench_fleet.py [--data ../shared/data] [--size-gb 1.0] [--workers 2] [--skip-dask]
        [--engine-level accounting]
    python benchmarks/bench_fleet.py --baseline ../main/src [--levels accounting health] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from cpu_tree import CpuMeter

from ctxhealth.accounting.registry import ModelRegistry
from ctxhealth.fleet import JobOptions, run_fleet
from ctxhealth.policy.profile import default_profile

TARGET_MB_S = 100.0
"""The aim for the local engine on the benchmark machine."""


def build_corpus(data: Path, root: Path, size_bytes: int) -> tuple[list[Path], int]:
    """Copies of the Claude Code sessions under new ids until ``size_bytes``; (files, bytes)."""
    sources = sorted((data / "claude-code").glob("*/*.jsonl"))
    if not sources:
        raise SystemExit(f"no Claude Code sessions under {data / 'claude-code'}")
    blobs = [(p.parent.name, p.stem, p.read_bytes()) for p in sources]
    files: list[Path] = []
    total = 0
    copy = 0
    while total < size_bytes:
        for project, old_id, blob in blobs:
            new_id = str(uuid.UUID(int=(copy << 64) | len(files)))
            folder = root / f"{project}-{copy:04d}"
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"{new_id}.jsonl"
            path.write_bytes(blob.replace(old_id.encode(), new_id.encode()))
            files.append(path)
            total += len(blob)
        copy += 1
    return files, total


def measure(name: str, run: Callable[[], int], total_bytes: int) -> dict[str, Any]:
    with CpuMeter() as meter:
        sessions = run()
    wall, cpu = meter.wall_s, meter.cpu_s
    mb = total_bytes / 1e6
    result = {
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "cpu_rusage_s": round(meter.rusage_s, 2),
        "cpu_tree_s": round(meter.tree_s, 2),
        "cpu_unreaped_s": round(meter.unreaped_s, 2),  # the old figure: getrusage, fork server not reaped
        "mb_per_s": round(mb / wall, 1),
        "sessions_per_s": round(sessions / wall, 1),
        "cpu_mb_per_s": round(mb / cpu, 1) if cpu > 0 else None,
        "sessions": sessions,
    }
    print(
        f"{name:<18} {wall:8.1f} s wall {cpu:8.1f} s cpu {result['mb_per_s']:8.1f} MB/s "
        f"{result['sessions_per_s']:8.1f} sessions/s",
        file=sys.stderr,
        flush=True,
    )
    return result


@contextmanager
def running_cluster(workers: int, work: Path) -> Iterator[str]:
    """A Dask cluster of its own processes (``dask scheduler`` and ``dask worker``, nannies and all),
    started before the timing and stopped after it, with the settings a cluster the engine starts
    has (``STARTED_CLUSTER``, given as a Dask config file); yields the scheduler's address."""
    import yaml
    from distributed import Client

    from ctxhealth.fleet.run import STARTED_CLUSTER

    config_dir = work / "dask-config"
    config_dir.mkdir(exist_ok=True)
    nested: dict[str, Any] = {}
    for key, value in STARTED_CLUSTER.items():
        *parents, leaf = key.split(".")
        node = nested
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    (config_dir / "cluster.yaml").write_text(yaml.safe_dump(nested))
    dask_cli = str(Path(sys.executable).with_name("dask"))
    info = work / "scheduler.json"
    quiet: dict[str, Any] = {
        "stdout": subprocess.DEVNULL,
        "stderr": subprocess.DEVNULL,
        "env": {**os.environ, "DASK_CONFIG": str(config_dir)},
    }
    worker_args = ["--nworkers", str(workers), "--nthreads", "1"]
    procs = [
        subprocess.Popen(
            [dask_cli, "scheduler", "--host", "127.0.0.1", "--no-dashboard", "--scheduler-file", str(info)],
            **quiet,
        )
    ]
    try:
        while not info.exists():
            time.sleep(0.1)
        procs.append(
            subprocess.Popen(
                [dask_cli, "worker", "--scheduler-file", str(info), *worker_args],
                **quiet,
            )
        )
        with Client(scheduler_file=str(info)) as client:
            client.wait_for_workers(workers, timeout=120)
            address = client.scheduler.address
        yield address
    finally:
        for proc in reversed(procs):
            proc.terminate()
            proc.wait(timeout=60)


def _contextrot_parse(paths: list[str]) -> int:
    from contextrot.adapters.claude_code import ClaudeCodeAdapter

    adapter = ClaudeCodeAdapter()
    return sum(adapter.parse(Path(p)) is not None for p in paths)


def _contextrot_analysis(paths: list[str]) -> int:
    """contextrot's per-session analysis (what its ``analyze`` does for each session it loads):
    the parse, the session's window and every step's signals; the sessions analysed."""
    from contextrot.adapters.claude_code import ClaudeCodeAdapter
    from contextrot.analysis import _session_window
    from contextrot.signals import extract_signals

    adapter = ClaudeCodeAdapter()
    sessions = 0
    for p in paths:
        session = adapter.parse(Path(p))
        if session is not None:
            extract_signals(session, _session_window(session, None))
            sessions += 1
    return sessions


HERE = Path(__file__).resolve().parent


def _one_level(corpus: Path, out: Path, level: str, workers: int) -> None:
    """One fleet run of ``level`` in this process (the ``--baseline`` child); its figures as JSON."""
    options = JobOptions(ModelRegistry.default(), default_profile(), health=level == "health")
    with CpuMeter() as meter:
        result = run_fleet([corpus], out, options, jobs=workers)
    print(json.dumps({"cpu_s": meter.cpu_s, "wall_s": meter.wall_s, "rows": result.counts}))


def _side_by_side(args: argparse.Namespace, corpus: Path, total: int, work: Path) -> None:
    """Both trees' levels on ``corpus``, alternating; medians and the ratio, with the load."""
    trees = {"this": HERE.parent / "src", "baseline": args.baseline.resolve()}
    runs: dict[str, dict[str, list[float]]] = {level: {name: [] for name in trees} for level in args.levels}
    rows: dict[str, dict[str, Any]] = {}
    for level in args.levels:
        for _ in range(args.repeat):
            for name, src in trees.items():
                out = work / f"{name}-{level}.duckdb"
                for file in (out, out.with_name(out.name + ".wal")):
                    file.unlink(missing_ok=True)
                env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{HERE}"}
                cmd = [sys.executable, str(HERE / "bench_fleet.py"), "--one-level", level]
                cmd += ["--corpus", str(corpus), "--out", str(out), "--workers", str(args.workers)]
                done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
                figures = json.loads(done.stdout.splitlines()[-1])
                runs[level][name].append(figures["cpu_s"])
                rows[name] = figures["rows"]
                print(
                    f"{level:<10} {name:<8} {figures['cpu_s']:6.2f} s CPU "
                    f"{total / 1e6 / figures['cpu_s']:7.1f} MB/CPU-s; load {os.getloadavg()[0]:.2f}",
                    file=sys.stderr,
                    flush=True,
                )
        if rows["this"] != rows["baseline"]:
            raise SystemExit(f"{level}: rows differ: {rows['this']} vs {rows['baseline']}")
    summary: dict[str, Any] = {"mb": round(total / 1e6, 1), "workers": args.workers, "levels": {}}
    for level, by_tree in runs.items():
        medians = {name: statistics.median(cpu) for name, cpu in by_tree.items()}
        summary["levels"][level] = {
            **{f"{name}_cpu_s": round(cpu, 2) for name, cpu in medians.items()},
            **{f"{name}_mb_per_cpu_s": round(total / 1e6 / cpu, 1) for name, cpu in medians.items()},
            "baseline_cpu_over_this": round(medians["baseline"] / medians["this"], 2),
        }
    summary["load_average_1min_at_end"] = round(os.getloadavg()[0], 2)
    print(json.dumps(summary))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data")
    parser.add_argument("--size-gb", type=float, default=1.0)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--skip-dask", action="store_true")
    parser.add_argument("--keep", type=Path, help="build (or reuse) the corpus here instead of a temp folder")
    parser.add_argument(
        "--baseline", type=Path, help="another checkout's src folder: both levels side by side"
    )
    parser.add_argument(
        "--levels", nargs="+", choices=["accounting", "health"], default=["accounting", "health"]
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--engine-level",
        choices=["accounting", "health"],
        default="health",
        help="the level the engines (local, Dask) run at side by side",
    )
    parser.add_argument("--one-level", choices=["accounting", "health"], help=argparse.SUPPRESS)
    parser.add_argument("--corpus", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one_level:
        _one_level(args.corpus, args.out, args.one_level, args.workers)
        return

    work = Path(tempfile.mkdtemp(prefix="ctxhealth-bench-fleet-"))
    corpus = args.keep or work / "corpus"
    try:
        if args.keep and any(args.keep.glob("*/*.jsonl")):
            files = sorted(args.keep.glob("*/*.jsonl"))
            total = sum(f.stat().st_size for f in files)
        else:
            files, total = build_corpus(args.data, corpus, int(args.size_gb * 1e9))
        for f in files:  # warm the page cache: every contender reads from memory
            f.read_bytes()
        if args.baseline:
            _side_by_side(args, corpus, total, work)
            return
        print(
            f"corpus: {len(files):,} Claude Code sessions, {total / 1e6:,.0f} MB, {args.workers} workers, "
            f"{os.cpu_count()} CPUs",
            file=sys.stderr,
        )
        options = JobOptions(ModelRegistry.default(), default_profile(), health=args.engine_level == "health")
        results: dict[str, Any] = {}
        counts: dict[str, dict[str, int]] = {}

        def fleet(engine: str, scheduler: str | None = None, name: str = "") -> Callable[[], int]:
            def run() -> int:
                out = work / f"{name or engine}.duckdb"
                result = run_fleet(
                    [corpus], out, options, engine=engine, jobs=args.workers, scheduler=scheduler
                )
                counts[name or engine] = result.counts
                return result.sessions

            return run

        results["fleet_local"] = measure("fleet local", fleet("local"), total)
        if not args.skip_dask:
            results["fleet_dask"] = measure("fleet dask", fleet("dask"), total)
            with running_cluster(args.workers, work) as address:
                # a cluster that outlives runs has the analysis imported: one small run first
                warm_up = files[: 4 * args.workers]
                run_fleet(warm_up, work / "warm.duckdb", options, engine="dask", scheduler=address)
                results["fleet_dask_running"] = measure(
                    "fleet dask running", fleet("dask", address, "dask_running"), total
                )
        try:
            import contextrot  # noqa: F401

            names = [str(f) for f in files]
            results["contextrot"] = measure("contextrot", lambda: _contextrot_parse(names), total)
            chunks = [names[i :: args.workers * 8] for i in range(args.workers * 8)]

            def pooled() -> int:
                with ProcessPoolExecutor(max_workers=args.workers) as pool:
                    return sum(pool.map(_contextrot_parse, chunks))

            results["contextrot_pool"] = measure("contextrot pool", pooled, total)
            results["contextrot_analysis"] = measure(
                "contextrot analysis", lambda: _contextrot_analysis(names), total
            )
        except ImportError:
            print("contextrot not installed (pip install -e '.[bench]'): not measured", file=sys.stderr)
        for name in ("dask", "dask_running"):
            if name in counts and counts[name] != counts.get("local"):
                raise SystemExit(f"engines disagree: local {counts.get('local')} vs {name} {counts[name]}")
        local = results["fleet_local"]["mb_per_s"]
        summary = {
            "corpus": {"files": len(files), "bytes": total, "workers": args.workers, "cpus": os.cpu_count()},
            # other work on the machine: wall-clock figures only mean something next to this
            "load_average_1min_at_end": round(os.getloadavg()[0], 2),
            "rows": counts.get("local"),
            "results": results,
            "target_mb_per_s": TARGET_MB_S,
            "local_meets_target": local >= TARGET_MB_S,
            "ratios": {
                name: round(r["mb_per_s"] / local, 2) for name, r in results.items() if name != "fleet_local"
            },
            # the aim: the Dask engine costs at most 1.2x the local engine's CPU (on a cluster started
            # for the run, and on one that outlives it)
            **{
                f"{name.removeprefix('fleet_')}_cpu_over_local": (
                    round(results[name]["cpu_s"] / results["fleet_local"]["cpu_s"], 2)
                    if name in results
                    else None
                )
                for name in ("fleet_dask", "fleet_dask_running")
            },
            # the aim of the full level: no more CPU than contextrot's own per-session analysis
            "local_cpu_over_contextrot_analysis": (
                round(results["fleet_local"]["cpu_s"] / results["contextrot_analysis"]["cpu_s"], 2)
                if "contextrot_analysis" in results and args.engine_level == "health"
                else None
            ),
        }
        print(
            f"local engine {local} MB/s: target {TARGET_MB_S:.0f} MB/s "
            f"{'met' if local >= TARGET_MB_S else 'not met'}",
            file=sys.stderr,
        )
        print(json.dumps(summary))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
