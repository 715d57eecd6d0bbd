"""Check: the hooks give the same answers and assessments before and after, turn by turn, on the
real Claude Code sessions.

Run: ``python benchmarks/same_turns.py [--data DIR] [--baseline REV] [--step LINES]``

Every real session (``../shared/data/claude-code`` or ``--data``) is replayed as it was written:
the transcript grows by ``--step`` lines at a time and after each step a hook runs on it
(UserPromptSubmit and Stop in turn, with a fresh ctxhealth home per session). Recorded per step:
the hook's stdout and stderr and, from the saved counters, the monitor's last assessment (action,
rule, reasons, zone, pressure, risk, fill, drift, signals fired), the fill, turns, tool calls and
failures (the counters' own before the hooks' second engine was retired, the monitor's after), doom
loops (before) or the monitor's repeated calls (after) and drift. Three runs, each in a child process:

* ``before``: the code at ``--baseline`` (default ``main``), exported with ``git archive``;
* ``after``: this tree, each hook run in the process (as without a helper);
* ``after_helper``: this tree, each hook answered by the per-turn helper (a helper serving in a
  thread of the child, asked over its socket exactly as the commands ask it).

Prints one JSON line: steps, sessions, and per run a digest of everything recorded, with
``identical`` true when all three agree (and the first differing step when they do not, and per
run and recorded field how many steps differ: ``differing_steps_by_field``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from baseline_tree import export

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "claude-code"

CHILD = r"""
import json, os, shutil, sys, threading, time
from ctxhealth.integrations.claude_code.hooks import run_hook
from ctxhealth.integrations.claude_code.tailstate import SessionLock, load_counters

sessions, work, step, helped = json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
ask = None
if helped:
    from ctxhealth.integrations.claude_code.helper import ask, helper_paths, serve
    served = os.path.join(work, "served")
    threading.Thread(target=serve, args=(served,), kwargs={"tick": 0.05}, daemon=True).start()
    while not os.path.exists(helper_paths(served)[2]):
        time.sleep(0.01)
out = []
COUNTS = ("tool_calls", "tool_errors", "streak", "max_streak", "repeats")
for n, source in enumerate(sessions):
    lines = open(source, "rb").read().splitlines(keepends=True)
    transcript = os.path.join(work, f"s{n}.jsonl")
    home = served if helped else os.path.join(work, f"home{n}")
    open(transcript, "wb").close()
    for k, i in enumerate(range(0, len(lines), step)):
        with open(transcript, "ab") as sink:
            sink.writelines(lines[i : i + step])
        event = ("UserPromptSubmit", "Stop")[k % 2]
        payload = json.dumps({"session_id": f"s{n}", "transcript_path": transcript, "hook_event_name": event})
        if helped:
            answer = ask(home, "hook", event, payload.encode())
            assert answer is not None, "the helper did not answer"
            stdout, stderr = answer
        else:
            result = run_hook(event, payload.encode(), home=home)
            stdout, stderr = result.stdout, result.stderr
        with SessionLock(home, transcript, timeout=30):  # the helper answers before it saves
            c = load_counters(home, transcript)
        # the tool counts: the counters' own before the hooks' second engine was retired, the
        # monitor's (in its stored assessment) after; recorded apart so the assessment compares alike
        a = dict(c.assessment) if c.assessment else c.assessment
        counts = {k: a.pop(k) for k in COUNTS if k in a} if a else {}
        calls = getattr(c, "tool_calls", counts.get("tool_calls", 0))
        errors = getattr(c, "tool_errors", counts.get("tool_errors", 0))
        repeats = getattr(c, "doom_loops", counts.get("repeats", 0))
        kept = [a, c.fill, c.turns, calls, errors, repeats, c.drift]
        out.append([n, k, stdout, stderr, kept])
if helped:
    os.unlink(helper_paths(served)[0])
print(json.dumps(out))
"""


def replay(sessions: list[Path], work: Path, step: int, helped: bool, src: Path | None) -> list[list[object]]:
    work.mkdir(parents=True)
    env = {**os.environ, "PYTHONPATH": str(src)} if src is not None else dict(os.environ)
    args = [sys.executable, "-c", CHILD, json.dumps([str(p) for p in sessions]), str(work), str(step)]
    args.append("1" if helped else "0")
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=True)
    rows: list[list[object]] = json.loads(done.stdout.strip().splitlines()[-1])
    return rows


FIELDS = (
    "stdout",
    "stderr",
    "assessment",
    "fill",
    "turns",
    "tool_calls",
    "tool_errors",
    "doom_loops_or_repeats",
    "drift",
)
"""What each recorded step holds after its session and step numbers (stdout, stderr, then ``kept``)."""


def _fields_differing(a: list[object], b: list[object], normal: Any) -> list[str]:
    """The names of the recorded fields that differ between two steps (normalised as the digest is)."""
    flat_a = [a[2], a[3], *a[4]] if isinstance(a[4], list) else a[2:]
    flat_b = [b[2], b[3], *b[4]] if isinstance(b[4], list) else b[2:]
    return [
        FIELDS[i] if i < len(FIELDS) else str(i)
        for i, (x, y) in enumerate(zip(flat_a, flat_b, strict=False))
        if normal([0, 0, x]) != normal([0, 0, y])
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--baseline", default="main")
    parser.add_argument("--step", type=int, default=10, help="transcript lines added before each hook")
    args = parser.parse_args()
    sessions = sorted(args.data.rglob("*.jsonl"))
    if not sessions:
        raise SystemExit(f"no Claude Code sessions under {args.data}")
    with tempfile.TemporaryDirectory(prefix="ctxhealth-same-") as name:
        tmp = Path(name)
        src = export(args.baseline, tmp / "baseline")
        runs = {
            "before": replay(sessions, tmp / "before", args.step, False, src),
            "after": replay(sessions, tmp / "after", args.step, False, None),
            "after_helper": replay(sessions, tmp / "after-helper", args.step, True, None),
        }

    def normal(row: list[object]) -> str:
        # what differs by construction: each run's own directory and home, and checkpoint times
        text = json.dumps(row[2:], sort_keys=True)
        text = re.sub(r"/[^\"\\]*?/(?:before|after|after-helper)/(?:home\d+|served)", "<home>", text)
        return re.sub(r"\d{8}T\d{6}\.\d+Z", "<time>", text)

    def digest(rows: list[list[object]]) -> str:
        return hashlib.sha256("\n".join(normal(row) for row in rows).encode()).hexdigest()[:16]

    first_difference = None
    differing: dict[str, int] = {}
    for i, row in enumerate(runs["before"]):
        if any(normal(other[i]) != normal(row) for other in (runs["after"], runs["after_helper"])):
            first_difference = first_difference or {"session": row[0], "step": row[1]}
            for label, other in (("after", runs["after"]), ("after_helper", runs["after_helper"])):
                for field in _fields_differing(row, other[i], normal):
                    differing[f"{label}:{field}"] = differing.get(f"{label}:{field}", 0) + 1
    report = {
        "sessions": len(sessions),
        "steps": len(runs["before"]),
        "step_lines": args.step,
        "baseline": args.baseline,
        "digests": {label: digest(rows) for label, rows in runs.items()},
        "fired_steps": sum(1 for row in runs["before"] if isinstance(row[4], list) and row[4][0]),
        "notices": sum(1 for row in runs["before"] if row[2]),
        "identical": first_difference is None and all(len(r) == len(runs["before"]) for r in runs.values()),
        "first_difference": first_difference,
        "differing_steps_by_field": differing,
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
