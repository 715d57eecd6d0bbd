"""Benchmark: a Codex CLI hook's CPU per call on a long rollout, read from the last cut or whole.

Run: ``python benchmarks/bench_agent_hooks.py [--mb 4] [--turns 40]``

A rollout of ``--mb`` megabytes is built (:mod:`codex_rollout`, Codex 0.60's order; no real log is
copied) and all but its last ``--turns`` model requests are written to a file the hooks read once
(priming). Then, one request at a time, the rest is appended and a PostToolUse hook runs in this
process (:func:`ctxhealth.integrations.claude_code.hooks.run_hook`, as ``ctxhealth hook --agent
codex`` runs it, without the interpreter's start-up) in two homes side by side:

* ``incremental``: the hooks as they are, reading from the cut the last call left
  (``counters.reader``);
* ``whole``: the same hooks with that cut forgotten before each call, so the rollout is read whole,
  as every call did before the reader could resume.

Prints the CPU time per call (median and p90, ms; ``time.process_time``) of each, and checks that
both gave the same output and the same assessment at every call.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from codex_rollout import synthetic_rollout

from ctxhealth.integrations.claude_code.agents import Agent
from ctxhealth.integrations.claude_code.hooks import run_hook
from ctxhealth.integrations.claude_code.tailstate import load_counters, save_counters


def _requests(data: bytes) -> list[bytes]:
    """The rollout cut before each ``turn_context`` (one model request per piece)."""
    pieces: list[bytes] = []
    current: list[bytes] = []
    for line in data.splitlines(keepends=True):
        if b'"type":"turn_context"' in line.replace(b" ", b"") and current:
            pieces.append(b"".join(current))
            current = []
        current.append(line)
    pieces.append(b"".join(current))
    return pieces


def _call(home: Path, rollout: Path, step: int) -> tuple[str, float]:
    payload = {
        "session_id": "bench",
        "transcript_path": str(rollout),
        "cwd": "/home/dev/proj",
        "hook_event_name": "PostToolUse",
        "model": "gpt-5-codex",
        "tool_name": "Bash",
        "tool_input": {"command": "ls"},
        "tool_response": "",
        "tool_use_id": f"bench-{step}",
    }
    start = time.process_time()
    result = run_hook("PostToolUse", json.dumps(payload).encode(), home=str(home), agent=Agent.CODEX)
    return result.stdout, (time.process_time() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=4.0, help="rollout size in MB (default 4)")
    parser.add_argument("--turns", type=int, default=40, help="requests appended one by one (default 40)")
    args = parser.parse_args()
    pieces = _requests(synthetic_rollout(int(args.mb * 1024 * 1024)))
    turns = min(args.turns, len(pieces) - 1)
    head, rest = b"".join(pieces[:-turns]), pieces[-turns:]
    with tempfile.TemporaryDirectory() as tmp:
        homes = {name: Path(tmp) / name for name in ("incremental", "whole")}
        files = {name: home / "rollout.jsonl" for name, home in homes.items()}
        cpu: dict[str, list[float]] = {name: [] for name in homes}
        for name, path in files.items():
            path.parent.mkdir(parents=True)
            path.write_bytes(head)
            _call(homes[name], path, -1)
        for step, piece in enumerate(rest):
            outs = []
            for name, path in files.items():
                with path.open("ab") as f:
                    f.write(piece)
                if name == "whole":
                    counters = load_counters(str(homes[name]), str(path))
                    if counters is not None:
                        counters.reader = None
                        save_counters(str(homes[name]), counters)
                out, ms = _call(homes[name], path, step)
                outs.append(out)
                cpu[name].append(ms)
            assessments = [
                getattr(load_counters(str(homes[n]), str(files[n])), "assessment", None) for n in homes
            ]
            if outs[0] != outs[1] or assessments[0] != assessments[1]:
                raise SystemExit(f"request {step}: the two homes answered differently")
    size = len(head) + sum(len(p) for p in rest)
    report = {
        "rollout_bytes": size,
        "calls": turns,
        **{
            name: {
                "cpu_ms_median": round(statistics.median(v), 2),
                "cpu_ms_p90": round(sorted(v)[int(len(v) * 0.9) - 1], 2),
            }
            for name, v in cpu.items()
        },
    }
    print(json.dumps(report, indent=2))
    print(f"\nCodex PostToolUse on a {size / 1e6:.1f} MB rollout, {turns} calls, same answers:")
    for name in cpu:
        median, p90 = report[name]["cpu_ms_median"], report[name]["cpu_ms_p90"]
        print(f"  {name:<12} CPU/call median {median:8.2f} ms   p90 {p90:8.2f} ms")


if __name__ == "__main__":
    main()
