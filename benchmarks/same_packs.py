"""Check: ``ctxhealth pack`` gives byte-identical payloads and manifests before and after, cold and warm.

Run: ``python benchmarks/same_packs.py --repo DIR [--data DIR] [--baseline REV] [--limit N]``

Every django task of ``packing/django_dev_tasks.jsonl`` is packed from ``--repo`` (the django 5.2.19
source tree, see ``bench_pack.py``) at budgets of 4K, 32K and 120K tokens (``--type code``,
markdown), and every fifth task also as ``docs`` (comments kept), ``debug`` and in XML at 32K. Each
pack is recorded as the sha256 of its payload and its manifest (sorted keys). Four runs, each a
child process with its own ctxhealth home:

* ``before_cold`` / ``before_warm``: the code at ``--baseline`` (default ``main``, exported with
  ``git archive``), first with an empty home, then again on the caches the first run left;
* ``after_cold`` / ``after_warm``: this tree (or ``--after REV``), the same way.

Prints one JSON line: the number of packs, a digest per run, ``identical`` (before and after agree,
cold with cold and warm with warm: the manifest counts the index cache's hits, which differ between
a cold and a warm run by design) and the first packs that differ when they do not.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from baseline_tree import export

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data"

CHILD = r"""
import hashlib, json, sys
from pathlib import Path
from ctxhealth.pack.assemble import RepoPacker

repo, home, tasks_file, limit = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4])
rows = [json.loads(line) for line in tasks_file.read_text().splitlines() if line.strip()][:limit]
packer = RepoPacker(repo, cache_home=home)
for n, row in enumerate(rows):
    runs = [("code", "markdown", b) for b in (4000, 32000, 120000)]
    if n % 5 == 0:
        runs += [("docs", "markdown", 32000), ("debug", "markdown", 32000), ("code", "xml", 32000)]
    for kind, fmt, budget in runs:
        got = packer.pack(row["task"], budget=budget, task_type=kind, output_format=fmt)
        digest = hashlib.sha256(
            got.text.encode() + b"\0" + json.dumps(got.manifest, sort_keys=True).encode()
        ).hexdigest()
        print(row["instance_id"], kind, fmt, budget, digest)
"""


def run(src: Path | None, repo: Path, home: Path, tasks: Path, limit: int) -> list[str]:
    env = {**os.environ, "PYTHONPATH": str(src)} if src is not None else dict(os.environ)
    args = [sys.executable, "-c", CHILD, str(repo), str(home), str(tasks), str(limit)]
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=True)
    return done.stdout.splitlines()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, required=True, help="the django 5.2.19 source tree")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--baseline", default="main")
    parser.add_argument("--after", help="a revision for the 'after' runs (default: this tree as it is)")
    parser.add_argument("--limit", type=int, default=10_000, help="only the first N tasks")
    parser.add_argument(
        "--before-dir", type=Path, help="keep the baseline's lines here, and reuse them when already there"
    )
    args = parser.parse_args()
    tasks = args.data / "packing" / "django_dev_tasks.jsonl"
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        src = export(args.baseline, tmp / "baseline")
        after = export(args.after, tmp / "after") if args.after else None
        results: dict[str, list[str]] = {}
        for who, code in (("before", src), ("after", after)):
            home = tmp / f"home-{who}"
            home.mkdir()
            for phase in ("cold", "warm"):
                kept = (
                    args.before_dir / f"{phase}-{args.limit}.txt"
                    if args.before_dir and who == "before"
                    else None
                )
                if kept is not None and kept.exists():
                    results[f"{who}_{phase}"] = kept.read_text().splitlines()
                    continue
                results[f"{who}_{phase}"] = run(code, args.repo, home, tasks, args.limit)
                if kept is not None:
                    kept.parent.mkdir(parents=True, exist_ok=True)
                    kept.write_text("\n".join(results[f"{who}_{phase}"]) + "\n")
                print(f"{who} {phase}: {len(results[f'{who}_{phase}'])} packs", file=sys.stderr, flush=True)
    differ = {
        phase: [
            f"{a} != {b}"
            for a, b in zip(results[f"before_{phase}"], results[f"after_{phase}"], strict=False)
            if a != b
        ][:5]
        for phase in ("cold", "warm")
        if results[f"before_{phase}"] != results[f"after_{phase}"]
    }
    out = {
        "baseline": args.baseline,
        "after": args.after or "this tree",
        "packs": {name: len(v) for name, v in results.items()},
        "digests": {
            name: hashlib.sha256("\n".join(v).encode()).hexdigest()[:16] for name, v in results.items()
        },
        "identical": not differ,
        "differ": differ,
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
