"""Benchmark: checkpoint building, seconds per MB of transcript, before and after in the same run.

Run: ``python benchmarks/bench_checkpoint.py [--data DIR] [--mb 50] [--baseline REV] [--repeat 3]``

Inputs: every real Claude Code session of the corpus (``../shared/data/claude-code`` or ``--data``,
one figure for all of them together) and a generated transcript of ``--mb`` MB (default 50; a
deterministic Claude Code session of short-line assistant text, Read / Edit / Bash calls and their
results, a fifth of them failing, half of the commands run once so their failures stay unresolved:
the shape that made checkpoint building slow). For each input the
session is read once per process and only the checkpoint build (``build_checkpoint``, the digest
and the budget fitting) is timed, in CPU seconds (steadier than wall time on a busy machine):

* ``before``: the code at ``--baseline`` (default ``main``), exported with ``git archive`` into a
  temporary directory and run in a child process: the old algorithm is measured, not copied;
* ``after``: this tree, in a child process alike;
* ``after_bounded``: this tree with ``max_chars=4_000_000`` (the bound a hook with a time budget
  uses: only the latest 4M characters of text and tool payload are read).

Prints a table to stderr and one JSON line to stdout: per input its MB, then per variant the best
of ``--repeat`` runs in CPU seconds and seconds per MB, and ``speedup`` = before / after.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

from baseline_tree import export

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "claude-code"
BOUND = 4_000_000

CHILD = r"""
import json, resource, sys
from ctxhealth.sources import read_session
from ctxhealth.recovery.checkpoint import build_checkpoint
paths, bounded = json.loads(sys.argv[1]), sys.argv[2] == "1"
sessions = [read_session(p) for p in paths]
build_checkpoint(sessions[0])  # load the tokenizer outside the timing
kwargs = {"max_chars": BOUND} if bounded else {}
start = resource.getrusage(resource.RUSAGE_SELF).ru_utime
for s in sessions:
    build_checkpoint(s, **kwargs)
print(resource.getrusage(resource.RUSAGE_SELF).ru_utime - start)
""".replace("BOUND", str(BOUND))


def generate(path: Path, mb: float, seed: int = 0) -> None:
    """A deterministic Claude Code transcript of about ``mb`` MB (see the module docstring)."""
    rnd = random.Random(seed)
    n = 0
    parent: str | None = None
    with path.open("w", encoding="utf-8") as out:

        def line(obj: dict[str, object]) -> None:
            nonlocal n, parent
            n += 1
            obj.update(uuid=f"u{n}", parentUuid=parent, sessionId="bench", timestamp="2025-07-01T00:00:00Z")
            parent = f"u{n}"
            out.write(json.dumps(obj) + "\n")

        task = "Fix the failing build in src/main.c and keep the tests green"
        line({"type": "user", "message": {"role": "user", "content": task}})
        i = 0
        while out.tell() < mb * 1024 * 1024:
            i += 1
            text = "\n".join(
                f"step {i}.{k}: checking item {k} on branch feature/x-{i % 7}"
                for k in range(rnd.randint(3, 30))
            )
            tool = rnd.choice(["Bash", "Read", "Edit"])
            # half the commands recur (a retry can resolve their failure), half are run once
            command = f"make test{i % 9}" if i % 2 else f"pytest tests/test_mod{i}.py -q"
            inp: dict[str, object] = {"command": command}
            if tool != "Bash":
                inp = {"file_path": f"/repo/src/f{i % 300}.c"}
            if tool == "Edit":
                inp.update(old_string="a", new_string="b")
            usage = {"input_tokens": 10, "cache_read_input_tokens": 50000, "output_tokens": 50}
            content = [
                {"type": "text", "text": text},
                {"type": "tool_use", "id": f"t{i}", "name": tool, "input": inp},
            ]
            message = {"id": f"m{i}", "role": "assistant", "model": "claude-sonnet-4-5", "content": content}
            line({"type": "assistant", "message": message | {"usage": usage}})
            failed = rnd.random() < 0.2
            body = "\n".join(f"line {k} ok" for k in range(rnd.randint(5, 200)))
            if failed:
                body += f"\nerror: undefined reference to `foo{i % 50}'"
            result = {"type": "tool_result", "tool_use_id": f"t{i}", "content": body, "is_error": failed}
            line({"type": "user", "message": {"role": "user", "content": [result]}})


def run(src: Path, paths: list[Path], bounded: bool, repeat: int) -> float:
    env = dict(os.environ, PYTHONPATH=str(src))
    best = float("inf")
    for _ in range(repeat):
        args = [sys.executable, "-c", CHILD, json.dumps([str(p) for p in paths]), "1" if bounded else "0"]
        done = subprocess.run(
            args, env=env, capture_output=True, text=True, check=True, cwd=tempfile.gettempdir()
        )
        best = min(best, float(done.stdout.strip().splitlines()[-1]))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--mb", type=float, default=50.0)
    parser.add_argument("--baseline", default="main")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        before_src = export(args.baseline, work)
        generated = work / "generated.jsonl"
        generate(generated, args.mb)
        inputs = {"generated": [generated]}
        real = sorted(args.data.glob("*/*.jsonl"))
        if real:
            inputs = {"real_claude_code": real, **inputs}
        results: dict[str, dict[str, object]] = {}
        for name, paths in inputs.items():
            mb = sum(p.stat().st_size for p in paths) / 1e6
            row: dict[str, object] = {"mb": round(mb, 2), "files": len(paths)}
            for variant, src, bounded in (
                ("before", before_src, False),
                ("after", ROOT / "src", False),
                ("after_bounded", ROOT / "src", True),
            ):
                cpu = run(src, paths, bounded, args.repeat)
                row[variant] = {"cpu_s": round(cpu, 3), "s_per_mb": round(cpu / mb, 4)}
            before = row["before"]["cpu_s"]  # type: ignore[index]
            after = row["after"]["cpu_s"]  # type: ignore[index]
            row["speedup"] = round(before / after, 2) if after else None
            results[name] = row
            print(
                f"{name:>18} {mb:7.1f} MB  before {before:7.2f} s  after {after:7.2f} s  "
                f"bounded {row['after_bounded']['cpu_s']:6.2f} s  x{row['speedup']}",  # type: ignore[index]
                file=sys.stderr,
            )
    print(
        json.dumps(
            {"benchmark": "checkpoint", "baseline": args.baseline, "bound_chars": BOUND, "inputs": results}
        )
    )


if __name__ == "__main__":
    main()
