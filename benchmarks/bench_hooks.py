"""Benchmark: the status line and each Claude Code hook as a whole process, cold and warm.

Run: ``python benchmarks/bench_hooks.py [--runs N] [--data DIR] [--json-only]``

A ~2 MB transcript is built in a temporary directory by repeating real Claude Code sessions (from
``../shared/data/claude-code`` or ``--data``) until it reaches 2 MB. Each command is run as Claude Code
runs it (``python -m ctxhealth.cli.statusline`` / ``python -m ctxhealth.cli.hook EVENT`` with the JSON
payload on stdin), side by side in the same run with bare ``python -c pass``:

* cold: a fresh ``CTXHEALTH_HOME`` for every run (nothing cached: the whole transcript is read);
* warm: the tail is cached (a priming run first), so only new bytes (none here) are read.

Prints one JSON document (figures in milliseconds, medians and p90 over ``--runs``) and a table.
The aim: warm under 3x bare Python start-up.
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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "claude-code"
TARGET_BYTES = 2 * 1024 * 1024
PY = sys.executable

EVENTS = {
    "statusline": None,
    "PostToolUse": {
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "make test"},
        "tool_response": {"stdout": "ok", "stderr": ""},
        "tool_use_id": "toolu_bench_1",
    },
    "PostToolUseFailure": {
        "hook_event_name": "PostToolUseFailure",
        "tool_name": "Bash",
        "tool_input": {"command": "make build"},
        "tool_use_id": "toolu_bench_2",
        "error": "exit 2",
    },
    "UserPromptSubmit": {"hook_event_name": "UserPromptSubmit", "prompt": "carry on"},
    "Stop": {"hook_event_name": "Stop", "stop_hook_active": False},
    "PreCompact": {"hook_event_name": "PreCompact", "trigger": "auto"},
    "SessionStart": {"hook_event_name": "SessionStart", "source": "compact"},
}


def build_transcript(data: Path, out: Path) -> Path:
    sessions = sorted(data.rglob("*.jsonl"), key=lambda p: p.stat().st_size, reverse=True)
    if not sessions:
        raise SystemExit(f"no Claude Code sessions under {data}")
    target = out / "bench-session.jsonl"
    with target.open("wb") as sink:
        while target.stat().st_size < TARGET_BYTES:
            for source in sessions:
                sink.write(source.read_bytes())
                sink.flush()
                if target.stat().st_size >= TARGET_BYTES:
                    break
    return target


def payload_for(name: str, transcript: Path) -> bytes:
    common = {
        "session_id": "bench-session",
        "transcript_path": str(transcript),
        "cwd": str(transcript.parent),
    }
    if name == "statusline":
        body = {
            **common,
            "model": {"id": "claude-opus-4-20250514", "display_name": "Opus 4"},
            "cost": {"total_cost_usd": 1.0},
            "context_window": {
                "context_window_size": 200000,
                "current_usage": {
                    "input_tokens": 10,
                    "cache_creation_input_tokens": 500,
                    "cache_read_input_tokens": 90000,
                },
            },
        }
    else:
        body = {**common, **(EVENTS[name] or {})}
    return json.dumps(body).encode()


def command_for(name: str) -> list[str]:
    if name == "statusline":
        return [PY, "-m", "ctxhealth.cli.statusline", "--no-color"]
    return [PY, "-m", "ctxhealth.cli.hook", name]


def run_once(cmd: list[str], stdin: bytes, env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, input=stdin, capture_output=True, env=env, timeout=60, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0 or done.stderr.strip():
        raise SystemExit(f"{' '.join(cmd)} failed: rc={done.returncode} {done.stderr.decode()[-500:]}")
    return elapsed * 1000


def summarise(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median_ms": round(statistics.median(ordered), 1),
        "p90_ms": round(ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))], 1),
        "min_ms": round(ordered[0], 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--json-only", action="store_true")
    parser.add_argument("--only", nargs="*", choices=sorted(EVENTS), help="benchmark only these commands")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="ctxhealth-bench-") as tmp_name:
        tmp = Path(tmp_name)
        transcript = build_transcript(args.data, tmp)
        env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
        bare: list[float] = []
        results: dict[str, dict[str, dict[str, float]]] = {}
        for name in args.only or EVENTS:
            cmd, stdin = command_for(name), payload_for(name, transcript)
            cold: list[float] = []
            warm: list[float] = []
            warm_home = tmp / f"home-warm-{name}"
            run_once(cmd, stdin, {**env, "CTXHEALTH_HOME": str(warm_home)})  # prime the cache
            for i in range(args.runs):
                cold_home = tmp / f"home-cold-{name}-{i}"
                bare.append(run_once([PY, "-c", "pass"], b"", env))
                cold.append(run_once(cmd, stdin, {**env, "CTXHEALTH_HOME": str(cold_home)}))
                warm.append(run_once(cmd, stdin, {**env, "CTXHEALTH_HOME": str(warm_home)}))
                shutil.rmtree(cold_home, ignore_errors=True)
            results[name] = {"cold": summarise(cold), "warm": summarise(warm)}
        bare_summary = summarise(bare)
        base = bare_summary["median_ms"]
        for figures in results.values():
            for mode in ("cold", "warm"):
                figures[mode]["x_bare"] = round(figures[mode]["median_ms"] / base, 2)
        report = {
            "schema_version": 1,
            "python": sys.version.split()[0],
            "transcript_bytes": transcript.stat().st_size,
            "runs": args.runs,
            "load_average": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
            "cpus": os.cpu_count(),
            "bare_python": bare_summary,
            "commands": results,
        }
    print(json.dumps(report))
    if args.json_only:
        return
    print(
        f"\ntranscript {report['transcript_bytes'] / 1e6:.2f} MB, {args.runs} runs, bare python {base} ms (median)"
    )
    print(f"{'command':<20} {'cold ms':>9} {'cold x':>7} {'warm ms':>9} {'warm p90':>9} {'warm x':>7}")
    for name, figures in results.items():
        c, w = figures["cold"], figures["warm"]
        print(
            f"{name:<20} {c['median_ms']:>9} {c['x_bare']:>7} {w['median_ms']:>9} {w['p90_ms']:>9} {w['x_bare']:>7}"
        )


if __name__ == "__main__":
    main()
