"""The performance table: each path of ctxhealth beside its anchor, measured in the same run.

Rows (``--rows``, default all but ``proxy``):

* ``check_mini_swe_agent`` — ``ctxhealth check --json`` as a fresh process on the 249 mini-swe-agent
  trajectories, MB per CPU-second; anchor: orjson decoding the same bytes (in this process);
* ``check_claude_code`` — ``ctxhealth check --json`` on the Claude Code sessions (and, as for the
  mini-swe-agent row, again with the C text kernels off: ``ctxhealth_pure_python``); anchors: the
  ``contextrot`` CLI (``--json``, every day) and ``ccusage session --json --offline`` (a
  ``CLAUDE_CONFIG_DIR`` whose ``projects`` is the sessions' folder), each as a fresh process, and
  bare ``python -c pass``;
* ``observe`` — ``benchmarks/bench_observe.py`` (p99 and max µs per ``Monitor.observe`` on the
  largest real session); anchor: the spec's "sub-millisecond", the aim p99 < 50 µs;
* ``fleet`` — the sessions replicated to ``--fleet-gb``; ``run_fleet`` (local engine, every
  process's CPU counted, see ``cpu_tree.py``) at the accounting level and with ``--health``,
  ``--fleet-repeat`` rounds of every contender in turn (medians; the accounting aim also says in how
  many rounds it was met);
  anchors: DuckDB pulling the usage fields of every line (``read_ndjson``, sum per file),
  contextrot's Claude Code adapter on the same files (the parse alone) and contextrot's own analysis
  of each of them (the parse and its per-step signals, ``bench_fleet._contextrot_analysis``: the
  full level's anchor);
* ``pack`` — ``ctxhealth pack`` warm (index cached) as a fresh process on ``--pack-tree`` (or a
  generated tree of 6,900 files); anchor: a fresh Python process listing the same tree. With
  ``--pack-tasks [FILE]`` every task of the file (default: the data's django packing tasks) is
  timed warm in turn, and the row gives the worst task, the spread and the tasks at or over 0.5 s;
* ``hook_turn`` — ``benchmarks/bench_hooks.py --only stop`` (a realistic turn); anchor: bare
  ``python -c pass`` measured by that script in the same run;
* ``proxy`` — ``benchmarks/bench_proxy.py --streams 1 10 100`` (direct and proxied streams side by
  side at each level, in one run; slow: opt-in).

CPU figures are medians of ``--repeat`` runs (user + system of the process and its children),
after one unmeasured run, with bytecode cached for every contender (``child_env``).
The load average is printed with every row: on a shared machine wall times mean little without
it. Human lines go to stderr; the last line on stdout is one JSON object.

    python benchmarks/bench_table.py [--data ../shared/data] [--rows check_claude_code fleet ...]
        [--repeat 5] [--fleet-gb 1.0] [--pack-tree DIR] [--pack-tasks [FILE]] [--pack-limit N]
        [--pack-budget 32000] [--ccusage PATH]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parents[1] / "shared" / "data"
PURE_ENV = {**os.environ, "CTXHEALTH_NATIVE": "0"}
"""The environment of a ``check`` with the C text kernels off (``ctxhealth_pure_python``)."""
ROWS = ("check_mini_swe_agent", "check_claude_code", "observe", "fleet", "pack", "hook_turn", "proxy")


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def load() -> float:
    return round(os.getloadavg()[0], 2)


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


PYCACHE = Path(tempfile.mkdtemp(prefix="ctxhealth-bench-pycache-"))


def child_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a measured process: bytecode cached (in a temporary prefix), as an
    installed package has it. With ``PYTHONDONTWRITEBYTECODE`` set and nothing cached, every start
    compiles each module from source (for ``check``: 129 modules, about 0.45 s of CPU)."""
    out = dict(os.environ if env is None else env)
    out.pop("PYTHONDONTWRITEBYTECODE", None)
    out["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
    return out


def run_cpu(
    cmd: list[str], env: dict[str, str] | None = None, ok: tuple[int, ...] = (0,)
) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one run of ``cmd`` as a child process."""
    cpu, start = children_cpu(), time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, env=child_env(env), timeout=1800, check=False)
    wall = time.perf_counter() - start
    if done.returncode not in ok:
        raise RuntimeError(f"{' '.join(cmd[:3])} exited {done.returncode}: {done.stderr.decode()[-300:]}")
    return children_cpu() - cpu, wall


def median_cpu(
    cmd: list[str], repeat: int, env: dict[str, str] | None = None, ok: tuple[int, ...] = (0,)
) -> dict[str, float]:
    run_cpu(cmd, env, ok)  # unmeasured: fills the bytecode cache and the page cache
    runs = [run_cpu(cmd, env, ok) for _ in range(repeat)]
    return {
        "cpu_s": round(statistics.median(c for c, _ in runs), 3),
        "wall_s": round(statistics.median(w for _, w in runs), 3),
        "load": load(),
    }


def ctxhealth_bin() -> str:
    return shutil.which("ctxhealth") or str(Path(sys.executable).with_name("ctxhealth"))


def files_bytes(root: Path, pattern: str) -> tuple[list[Path], int]:
    files = sorted(p for p in root.glob(pattern) if p.is_file())
    return files, sum(p.stat().st_size for p in files)


def row_check_mini(data: Path, repeat: int) -> dict[str, Any]:
    root = data / "mini-swe-agent"
    files, total = files_bytes(root / "trajs", "**/*.json")
    ours = median_cpu([ctxhealth_bin(), "check", str(root / "trajs"), "--json"], repeat, ok=(0, 1, 2))
    pure = median_cpu([ctxhealth_bin(), "check", str(root / "trajs"), "--json"], repeat, PURE_ENV, (0, 1, 2))
    import orjson

    blobs = [f.read_bytes() for f in files]
    times = []
    for _ in range(repeat):
        t0 = time.process_time()
        for b in blobs:
            orjson.loads(b)
        times.append(time.process_time() - t0)
    floor = statistics.median(times)
    mb = total / 1e6
    out = {
        "files": len(files),
        "mb": round(mb, 1),
        "ctxhealth": {**ours, "mb_per_cpu_s": round(mb / ours["cpu_s"], 1)},
        "ctxhealth_pure_python": {**pure, "mb_per_cpu_s": round(mb / pure["cpu_s"], 1)},
        "orjson_decode": {"cpu_s": round(floor, 3), "mb_per_cpu_s": round(mb / floor, 1), "load": load()},
    }
    out["gap"] = round(out["orjson_decode"]["mb_per_cpu_s"] / out["ctxhealth"]["mb_per_cpu_s"], 1)
    log(
        f"check mini-swe-agent ({len(files)} files, {mb:.1f} MB): "
        f"{out['ctxhealth']['mb_per_cpu_s']} MB/CPU-s; "
        f"orjson decode {out['orjson_decode']['mb_per_cpu_s']} MB/CPU-s; gap {out['gap']}x; load {load()}"
    )
    return out


def row_check_claude(data: Path, repeat: int, ccusage: str | None) -> dict[str, Any]:
    root = data / "claude-code"
    out: dict[str, Any] = {"sessions": len(list(root.glob("*/*.jsonl")))}
    out["ctxhealth"] = median_cpu([ctxhealth_bin(), "check", str(root), "--json"], repeat, ok=(0, 1, 2))
    out["ctxhealth_pure_python"] = median_cpu(
        [ctxhealth_bin(), "check", str(root), "--json"], repeat, PURE_ENV, (0, 1, 2)
    )
    out["python_pass"] = median_cpu([sys.executable, "-c", "pass"], repeat)
    if importlib.util.find_spec("contextrot") is not None:
        out["contextrot"] = median_cpu(
            [
                sys.executable,
                "-m",
                "contextrot",
                "--data-dir",
                str(root),
                "--days",
                "100000",
                "--json",
                "--no-animate",
            ],
            repeat,
        )
        out["x_contextrot"] = round(out["contextrot"]["cpu_s"] / out["ctxhealth"]["cpu_s"], 2)
    else:
        out["contextrot"] = None
        log("contextrot: not installed (pip install contextrot): skipped")
    ccusage = ccusage or shutil.which("ccusage")
    if ccusage:
        with tempfile.TemporaryDirectory() as home:
            (Path(home) / "projects").symlink_to(root.resolve())
            env = {**os.environ, "CLAUDE_CONFIG_DIR": home}
            try:
                out["ccusage"] = median_cpu([ccusage, "session", "--json", "--offline"], repeat, env)
                out["x_ccusage"] = round(out["ccusage"]["cpu_s"] / out["ctxhealth"]["cpu_s"], 2)
            except RuntimeError as exc:
                out["ccusage"] = None
                log(f"ccusage: failed ({exc}): skipped")
    else:
        out["ccusage"] = None
        log(
            "ccusage: not found (npm install --prefix DIR ccusage@15, "
            "then --ccusage DIR/node_modules/.bin/ccusage): skipped"
        )
    log(
        f"check Claude Code ({out['sessions']} sessions): ctxhealth {out['ctxhealth']['cpu_s']} s CPU "
        f"(pure Python kernels {out['ctxhealth_pure_python']['cpu_s']}); "
        f"contextrot {(out['contextrot'] or {}).get('cpu_s')}; "
        f"ccusage {(out['ccusage'] or {}).get('cpu_s')}; "
        f"python -c pass {out['python_pass']['cpu_s']}; load {load()}"
    )
    return out


def last_json(cmd: list[str]) -> dict[str, Any]:
    done = subprocess.run(cmd, capture_output=True, env=child_env(), timeout=3600, check=False, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:3])} exited {done.returncode}: {done.stderr[-400:]}")
    text = done.stdout.strip()
    try:
        return dict(json.loads(text))
    except ValueError:
        return dict(json.loads(text.splitlines()[-1]))


def row_observe(data: Path) -> dict[str, Any]:
    doc = last_json(
        [
            sys.executable,
            str(HERE / "bench_observe.py"),
            "--data",
            str(data),
            "--baseline",
            "",
            "--repeats",
            "3",
        ]
    )
    real = doc.get("after", doc).get("real") or doc.get("real") or {}
    out = {"bench_observe": real, "aim_p99_us": 50, "load": load()}
    best = real.get("observe_best_of") or {}
    split = real.get("update_then_assess_best_of") or {}
    log(
        f"observe (largest real session, {real.get('messages')} messages, best of repeats): "
        f"p50 {best.get('p50_us')} µs, p99 {best.get('p99_us')} µs, max {best.get('max_us')} µs; "
        f"update p50 {split.get('update_p50_us')} / p99 {split.get('update_p99_us')} µs, "
        f"assess per turn p50 {split.get('assess_p50_us')} / p99 {split.get('assess_p99_us')} µs "
        f"(aim: p99 < 50 µs); load {load()}"
    )
    return out


def _duckdb_usage(files: list[Path]) -> int:
    import duckdb

    columns = (
        "{'type': 'VARCHAR', 'message': 'STRUCT(id VARCHAR, model VARCHAR, usage STRUCT(input_tokens BIGINT, "
        "cache_creation_input_tokens BIGINT, cache_read_input_tokens BIGINT, output_tokens BIGINT))'}"
    )
    con = duckdb.connect()
    con.execute("SET threads = 1")
    listing = "[" + ", ".join("'" + str(f).replace("'", "''") + "'" for f in files) + "]"
    rows = con.execute(
        f"SELECT filename, sum(message.usage.input_tokens), sum(message.usage.output_tokens), "
        f"sum(message.usage.cache_read_input_tokens), sum(message.usage.cache_creation_input_tokens) "
        f"FROM read_ndjson({listing}, columns={columns}, filename=true, ignore_errors=true, "
        f"maximum_object_size=134217728) WHERE type = 'assistant' GROUP BY filename"
    ).fetchall()
    con.close()
    return len(rows)


def row_fleet(
    data: Path, size_gb: float, workers: int, levels: list[str], anchors: bool, repeat: int = 3
) -> dict[str, Any]:
    from bench_fleet import _contextrot_analysis, _contextrot_parse, build_corpus
    from cpu_tree import CpuMeter

    from ctxhealth.accounting.registry import ModelRegistry
    from ctxhealth.fleet import JobOptions, run_fleet
    from ctxhealth.policy.profile import default_profile

    work = Path(tempfile.mkdtemp(prefix="ctxhealth-bench-table-"))
    try:
        files, total = build_corpus(data, work / "corpus", int(size_gb * 1e9))
        for f in files:
            f.read_bytes()
        mb = total / 1e6
        rounds = max(1, repeat)
        out: dict[str, Any] = {"files": len(files), "mb": round(mb, 1), "workers": workers, "repeat": rounds}

        registry, profile = ModelRegistry.default(), default_profile()

        def level_run(name: str, options: JobOptions) -> Callable[[], object]:
            def run() -> object:
                store = work / f"{name}.duckdb"
                # a fresh store: a run over the last one's would skip every file
                for path in (store, store.with_name(store.name + ".wal")):
                    path.unlink(missing_ok=True)
                return run_fleet([work / "corpus"], store, options, jobs=workers)

            return run

        contenders: dict[str, Callable[[], object]] = {}
        for level, health in (("fleet_accounting", False), ("fleet_health", True)):
            if level.removeprefix("fleet_") in levels:
                contenders[level] = level_run(level, JobOptions(registry, profile, health=health))
        if anchors:
            contenders["duckdb_usage_fields"] = lambda: _duckdb_usage(files)
            try:
                import contextrot  # noqa: F401

                names = [str(f) for f in files]
                contenders["contextrot_parse"] = lambda: _contextrot_parse(names)
                contenders["contextrot_analysis"] = lambda: _contextrot_analysis(names)
            except ImportError:
                log("contextrot: not installed: skipped")
        # every contender once per round, the rounds one after the other: a machine whose speed
        # drifts during the run (10% and more here) slows them alike, and the medians compare
        runs: dict[str, list[tuple[float, float, float]]] = {name: [] for name in contenders}
        for round_number in range(rounds):
            for name, fn in contenders.items():
                with CpuMeter() as m:
                    fn()
                runs[name].append((m.cpu_s, m.wall_s, load()))
                log(
                    f"fleet {name} (round {round_number + 1}): {m.cpu_s:.2f} s CPU, {m.wall_s:.2f} s wall, "
                    f"{mb / m.cpu_s:.1f} MB/CPU-s; load {load()}"
                )
        for name, measured in runs.items():
            cpu = statistics.median(c for c, _, _ in measured)
            out[name] = {
                "cpu_s": round(cpu, 2),
                "cpu_s_runs": [round(c, 2) for c, _, _ in measured],
                "wall_s": round(statistics.median(w for _, w, _ in measured), 2),
                "mb_per_cpu_s": round(mb / cpu, 1),
                "load": [x for _, _, x in measured],
            }
        if not anchors:
            return out
        aims: dict[str, Any] = {}
        if "fleet_accounting" in out:
            rate = out["fleet_accounting"]["mb_per_cpu_s"]
            aims["accounting_mb_per_cpu_s_at_least_200"] = rate >= 200.0
            aims["accounting_runs_at_least_200"] = (
                f"{sum(mb / c >= 200.0 for c in out['fleet_accounting']['cpu_s_runs'])} of {rounds}"
            )
            aims["accounting_gap_to_duckdb"] = round(out["duckdb_usage_fields"]["mb_per_cpu_s"] / rate, 1)
        if "fleet_health" in out and "contextrot_analysis" in out:
            # the full level against contextrot's own analysis of the same files (its parse alone
            # is the floor under it: ``full_cpu_over_contextrot_parse``)
            full = out["fleet_health"]["mb_per_cpu_s"]
            peer = out["contextrot_analysis"]["mb_per_cpu_s"]
            aims["full_at_least_contextrot"] = full >= peer
            aims["full_cpu_over_contextrot"] = round(peer / full, 2)
            aims["full_cpu_over_contextrot_parse"] = round(out["contextrot_parse"]["mb_per_cpu_s"] / full, 2)
        out["aims"] = aims
        log(f"fleet aims (medians of {rounds} rounds): {json.dumps(aims)}")
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


def generated_tree(root: Path, files: int = 6_900) -> Path:
    """A source tree of ``files`` Python modules in nested packages (about django's shape)."""
    for i in range(files):
        folder = root / f"pkg{i % 40}" / f"sub{(i // 40) % 12}"
        folder.mkdir(parents=True, exist_ok=True)
        body = "\n".join(
            f"def function_{i}_{j}(value_{j}, other):\n    '''Handle case {j} of module {i}.'''\n"
            f"    return value_{j} * {j} + len(str(other))\n"
            for j in range(12)
        )
        (folder / f"module_{i}.py").write_text(f'"""Module {i}."""\n\nimport os\n\n{body}\n')
    return root


LIST_TREE = (
    "import os, sys\n"
    "n = 0\n"
    "for d, dirs, files in os.walk(sys.argv[1]):\n"
    "    dirs[:] = [x for x in dirs if not x.startswith('.')]\n"
    "    for f in files:\n"
    "        os.stat(os.path.join(d, f)); n += 1\n"
    "print(n)\n"
)


def _spread(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "min": ordered[0],
        "median": round(statistics.median(ordered), 3),
        "p90": ordered[min(len(ordered) - 1, (9 * len(ordered)) // 10)],
        "max": ordered[-1],
    }


def row_pack(
    tree: Path | None,
    repeat: int,
    tasks_file: Path | None = None,
    limit: int | None = None,
    budget: int = 32000,
) -> dict[str, Any]:
    """One task (the default), or with ``tasks_file`` (JSON lines with a ``task``) every task: each
    packed warm as a fresh process (one unmeasured run first, which also counts that task's new
    texts), median CPU per task, then the worst task, the spread and the tasks over the aim."""
    tasks: list[tuple[str, str]] = [("fix the form validation of dates", "fix the form validation of dates")]
    if tasks_file is not None:
        rows = [json.loads(line) for line in tasks_file.read_text().splitlines() if line.strip()]
        tasks = [(str(r.get("instance_id", n)), str(r["task"])) for n, r in enumerate(rows)][:limit]
    with tempfile.TemporaryDirectory() as tmp:
        if tree is None:
            tree = generated_tree(Path(tmp) / "tree")
        home = Path(tmp) / "home"
        home.mkdir()
        env = {**os.environ, "CTXHEALTH_HOME": str(home)}

        def command(task: str) -> list[str]:
            return [
                ctxhealth_bin(),
                "pack",
                str(tree),
                "--task",
                task,
                "--budget",
                str(budget),
                "-o",
                os.devnull,
            ]

        cold = run_cpu(command(tasks[0][1]), env)
        per_task: dict[str, dict[str, float]] = {}
        for name, text in tasks:
            per_task[name] = median_cpu(command(text), repeat, env)
            if len(tasks) > 1:
                log(f"  pack {name}: warm {per_task[name]['cpu_s']} s CPU (load {load()})")
        listing = median_cpu([sys.executable, "-c", LIST_TREE, str(tree)], repeat)
        files = sum(1 for p in tree.rglob("*") if p.is_file())
    first = per_task[tasks[0][0]]
    out: dict[str, Any] = {
        "tree": str(tree),
        "files": files,
        "budget": budget,
        "ctxhealth_cold": {"cpu_s": round(cold[0], 3), "wall_s": round(cold[1], 3)},
        "ctxhealth_warm": first,
        "python_list_tree": listing,
        "aim_warm_s": 0.5,
    }
    text = f"warm {first['wall_s']} s wall / {first['cpu_s']} s CPU"
    if len(tasks) > 1:
        cpu = {name: got["cpu_s"] for name, got in per_task.items()}
        worst = max(cpu, key=lambda name: cpu[name])
        over = sorted(name for name, value in cpu.items() if value >= 0.5)
        out["tasks"] = len(tasks)
        out["warm_cpu_s_per_task"] = cpu
        out["warm_cpu_s_spread"] = _spread(list(cpu.values()))
        out["worst_task"] = {"task": worst, "cpu_s": cpu[worst]}
        out["tasks_at_or_over_aim"] = over
        spread = out["warm_cpu_s_spread"]
        text = (
            f"{len(tasks)} tasks warm, CPU s: median {spread['median']}, p90 {spread['p90']}, "
            f"max {spread['max']} ({worst}), min {spread['min']}; {len(over)} at or over 0.5 s"
        )
    log(
        f"pack ({files} files, budget {budget}): {text} (cold {cold[0]:.2f} s CPU); "
        f"start-up + listing {listing['wall_s']} s wall / {listing['cpu_s']} s CPU; load {load()}"
    )
    return out


def row_hook_turn(data: Path) -> dict[str, Any]:
    doc = last_json(
        [
            sys.executable,
            str(HERE / "bench_hooks.py"),
            "--data",
            str(data),
            "--only",
            "Stop",
            "--baseline",
            "",
            "--runs",
            "7",
            "--json-only",
        ]
    )
    log(f"hook turn: {json.dumps(doc)[:600]}; load {load()}")
    return {"bench_hooks": doc, "aim": "turn <= 2x python -c pass", "load": load()}


def row_proxy() -> dict[str, Any]:
    command = [sys.executable, str(HERE / "bench_proxy.py"), "--streams", "1", "10", "100", "--gap", "20"]
    doc = last_json(command)
    for streams, level in doc.get("levels", {}).items():
        log(f"proxy {streams} streams: {json.dumps(level)}")
    return {"bench_proxy": doc, "aim": "added first-byte p99 < 5 ms at 10 streams", "load": load()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--rows", nargs="*", choices=ROWS, default=[r for r in ROWS if r != "proxy"])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--fleet-gb", type=float, default=1.0)
    parser.add_argument(
        "--fleet-levels", nargs="*", choices=["accounting", "health"], default=["accounting", "health"]
    )
    parser.add_argument("--no-anchors", action="store_true", help="fleet: only ctxhealth's levels")
    parser.add_argument(
        "--fleet-repeat", type=int, default=3, help="fleet: rounds of every contender, alternating (medians)"
    )
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument(
        "--pack-tree", type=Path, help="a large source tree (default: a generated one of 6,900 files)"
    )
    parser.add_argument(
        "--pack-tasks",
        nargs="?",
        type=Path,
        const=Path("-"),
        help="pack: time every task of this JSON-lines file (bare: packing/django_dev_tasks.jsonl of --data)",
    )
    parser.add_argument("--pack-limit", type=int, help="pack: only the first N tasks")
    parser.add_argument("--pack-budget", type=int, default=32000)
    parser.add_argument("--ccusage", help="the ccusage executable (default: on PATH)")
    args = parser.parse_args()
    results: dict[str, Any] = {"cpus": os.cpu_count(), "load_average_1min_at_start": load()}
    runners: dict[str, Callable[[], dict[str, Any]]] = {
        "check_mini_swe_agent": lambda: row_check_mini(args.data, args.repeat),
        "check_claude_code": lambda: row_check_claude(args.data, args.repeat, args.ccusage),
        "observe": lambda: row_observe(args.data),
        "fleet": lambda: row_fleet(
            args.data, args.fleet_gb, args.workers, args.fleet_levels, not args.no_anchors, args.fleet_repeat
        ),
        "pack": lambda: row_pack(
            args.pack_tree,
            args.repeat,
            args.data / "packing" / "django_dev_tasks.jsonl"
            if args.pack_tasks == Path("-")
            else args.pack_tasks,
            args.pack_limit,
            args.pack_budget,
        ),
        "hook_turn": lambda: row_hook_turn(args.data),
        "proxy": row_proxy,
    }
    for row in args.rows:
        try:
            results[row] = runners[row]()
        except (RuntimeError, OSError, ValueError) as exc:  # one row failing keeps the others
            log(f"{row}: failed: {exc}")
            results[row] = {"error": str(exc)[-600:]}
    results["load_average_1min_at_end"] = load()
    shutil.rmtree(PYCACHE, ignore_errors=True)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
