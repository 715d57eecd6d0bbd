"""Benchmark: what ``ctxhealth mcp`` costs to start and to answer, beside the baselines of the same run.

Run: ``python benchmarks/bench_mcp.py [--runs N] [--session FILE] [--json-only]``

Measured as processes, medians over ``--runs`` (wall clock and the child's CPU time):

* ``python -c pass`` (bare interpreter start-up) and ``ctxhealth --version`` (the CLI entry): baselines;
* ``import mcp SDK``: ``python -c "import ctxhealth.mcpserver.server"`` (the SDK's import, which only
  this command pays; the hooks never import it);
* ``hook import``: ``python -c "import ctxhealth.cli.hook"``, the hooks' entry, which must not grow;
* ``start to tools/list``: spawn ``python -m ctxhealth.cli.mcp``, initialize and list the tools with the
  SDK's stdio client, then close (what a host pays before its first request);

and in one running server (``--runs`` calls each, the first of each timed apart: it also imports the
pipeline): ``context_health`` and ``recovery_plan`` on ``--session`` (default: the longest real Claude
Code session in ``../shared/data/claude-code``), next to ``ctxhealth check --json`` on the same file as
a process.
Prints one JSON document and a table (milliseconds).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "claude-code"
PY = sys.executable


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall ms, child CPU ms) of one run of ``argv``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, check=False, capture_output=True)
    if done.returncode not in (0, 1):  # check exits 1 for an unhealthy session
        raise RuntimeError(f"{argv} exited {done.returncode}: {done.stderr.decode()[-500:]}")
    wall = (time.perf_counter() - started) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return wall, cpu


def summary(samples: list[tuple[float, float]]) -> dict[str, float]:
    walls = sorted(s[0] for s in samples)
    return {
        "wall_ms": round(statistics.median(walls), 1),
        "p90_ms": round(walls[int(0.9 * (len(walls) - 1))], 1),
        "cpu_ms": round(statistics.median(s[1] for s in samples), 1),
    }


def server_rounds(session: Path, runs: int, env: dict[str, str], home: Path) -> dict[str, Any]:
    import anyio
    from mcp.client.client import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(command=PY, args=["-m", "ctxhealth.cli.mcp"], cwd=str(home), env=env)
    out: dict[str, Any] = {}

    async def start_only() -> None:
        async with Client(params) as client:
            await client.list_tools()

    starts = []
    for _ in range(runs):
        started = time.perf_counter()
        anyio.run(start_only)
        starts.append(((time.perf_counter() - started) * 1000, 0.0))
    out["start to tools/list"] = {k: v for k, v in summary(starts).items() if k != "cpu_ms"}

    async def calls() -> None:
        async with Client(params) as client:
            for name, args in (
                ("context_health", {"path": str(session)}),
                ("recovery_plan", {"path": str(session)}),
            ):
                started = time.perf_counter()
                await client.call_tool(name, args)  # the first call also imports the pipeline
                out[f"first call {name}"] = {"wall_ms": round((time.perf_counter() - started) * 1000, 1)}
                samples = []
                for _ in range(runs):
                    started = time.perf_counter()
                    result = await client.call_tool(name, args)
                    samples.append(((time.perf_counter() - started) * 1000, 0.0))
                    assert not result.is_error, result.content
                out[f"call {name}"] = {k: v for k, v in summary(samples).items() if k != "cpu_ms"}

    anyio.run(calls)
    return out


def longest_session(data: Path) -> Path:
    files = sorted(data.glob("*/*.jsonl"), key=lambda p: p.stat().st_size)
    if not files:
        sys.exit(f"no Claude Code transcripts under {data}; pass --session FILE")
    return files[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--session", type=Path)
    parser.add_argument("--json-only", action="store_true")
    args = parser.parse_args()
    session = (args.session or longest_session(DEFAULT_DATA)).resolve()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            "CTXHEALTH_HOME": str(home / ".ctxhealth"),
            "CTXHEALTH_HELPER": "off",
        }
        commands = {
            "python -c pass": [PY, "-c", "pass"],
            "ctxhealth --version": [PY, "-c", "from ctxhealth.cli.main import main; main()", "--version"],
            "hook import": [PY, "-c", "import ctxhealth.cli.hook"],
            "import mcp SDK": [PY, "-c", "import ctxhealth.mcpserver.server"],
            "check --json (process)": [
                PY, "-c", "from ctxhealth.cli.main import main; main()", "check", "--json", str(session),
            ],
        }  # fmt: skip
        results: dict[str, Any] = {}
        for name, argv in commands.items():
            results[name] = summary([timed(argv, env) for _ in range(args.runs)])
        results.update(server_rounds(session, args.runs, env, home))
    doc = {"benchmark": "mcp", "runs": args.runs, "session": session.name, "results": results}
    print(json.dumps(doc))
    if not args.json_only:
        print(f"\n{'':28}{'median ms':>10}{'p90 ms':>10}{'cpu ms':>10}", file=sys.stderr)
        for name, figures in results.items():
            cpu = figures.get("cpu_ms", "")
            p90 = figures.get("p90_ms", "")
            print(f"{name:28}{figures['wall_ms']:>10}{p90!s:>10}{cpu!s:>10}", file=sys.stderr)


if __name__ == "__main__":
    main()
