"""Pack benchmark: relevance on real tasks against a plain BM25 baseline, and speed against repomix.

Relevance: the 87 django tasks of the corpus's ``packing/django_dev_tasks.jsonl`` (issue text and
the non-test files the accepted fix changed). For each task ctxhealth packs the django 5.2.19
source tree (``--type code``, nothing active, no git history: the similarity term drives the
ranking) and we report the recall of the gold files — in any form — within 8K and 32K tokens, and
in the top 5 / 10 of the ranking. In the same run, the baseline the corpus README describes: plain
BM25 (the ``bm25s`` package, no stemming, no stopwords) over each file's text and path words,
whole files taken in rank order until the budget (at about 4 characters a token) is full.

Speed: ``ctxhealth pack`` as a fresh process on the same tree, cold (empty ctxhealth home) and warm
(index cached), and ``repomix`` packing the same tree (installed with npm into a temporary prefix;
skipped with a message when npm or the package is unavailable). Aider's repo map needs the
``aider-chat`` package; it is measured only when importable, else skipped with a message.

    pip download django==5.2.19 --no-deps --no-binary :all: -d /tmp/dj && tar xzf /tmp/dj/*.tar.gz -C /tmp/dj
    python benchmarks/bench_pack.py --repo /tmp/dj/django-5.2.19 [--split all|even|odd] [--no-speed]

Wall and CPU time (user + system) are both reported: on a shared machine CPU time is the steadier.
Human lines go to stderr; the last line on stdout is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ctxhealth.pack.assemble import RepoPacker
from ctxhealth.pack.candidates import list_candidates

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
BUDGETS = (8_000, 32_000)
TOPS = (1, 5, 10)
_WORD = re.compile(r"\w\w+")


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def load_tasks(data: Path, split: str) -> list[dict[str, object]]:
    rows = [
        json.loads(line) for line in (data / "packing" / "django_dev_tasks.jsonl").read_text().splitlines()
    ]
    if split == "even":
        rows = rows[0::2]
    elif split == "odd":
        rows = rows[1::2]
    return rows


def recall(gold: list[str], found: set[str]) -> float:
    return sum(1 for g in gold if g in found) / len(gold)


class Baseline:
    """Plain BM25 over file text + path words; whole files in rank order until the budget is full."""

    def __init__(self, repo: Path) -> None:
        import bm25s

        self.paths: list[str] = []
        self.chars: list[int] = []
        corpus: list[list[str]] = []
        for path in list_candidates(repo).paths:
            data = (repo / path).read_bytes()
            if b"\x00" in data[:8192]:
                continue
            text = data.decode("utf-8", "replace")
            self.paths.append(path)
            self.chars.append(len(text))
            corpus.append(_WORD.findall((text + " " + path.replace("/", " ").replace(".", " ")).lower()))
        self.retriever = bm25s.BM25()
        self.retriever.index(corpus, show_progress=False)

    def rank(self, task: str) -> list[int]:
        scores = self.retriever.get_scores(_WORD.findall(task.lower()))
        return sorted(range(len(self.paths)), key=lambda i: (-scores[i], self.paths[i]))

    def within(self, order: list[int], budget: int, *, stop_at_first_miss: bool = False) -> set[str]:
        """Whole files in rank order while the budget lasts: a file that does not fit is skipped
        (the next, smaller one may fit), or, with ``stop_at_first_miss``, ends the pack."""
        taken: set[str] = set()
        used = 0.0
        for i in order:
            cost = self.chars[i] / 4
            if used + cost > budget:
                if stop_at_first_miss:
                    break
                continue
            used += cost
            taken.add(self.paths[i])
        return taken


def relevance(repo: Path, tasks: list[dict[str, object]]) -> dict[str, object]:
    packer = RepoPacker(repo)
    baseline = Baseline(repo)
    ours: dict[str, list[float]] = {}
    base: dict[str, list[float]] = {}
    for n, row in enumerate(tasks):
        task = str(row["task"])
        gold = [str(g) for g in row["gold_files"]]  # type: ignore[attr-defined]
        order = baseline.rank(task)
        for k in TOPS:
            base.setdefault(f"top{k}", []).append(recall(gold, {baseline.paths[i] for i in order[:k]}))
        for b in BUDGETS:
            base.setdefault(f"within_{b // 1000}k", []).append(recall(gold, baseline.within(order, b)))
            stopped = baseline.within(order, b, stop_at_first_miss=True)
            base.setdefault(f"within_{b // 1000}k_stop_at_first_miss", []).append(recall(gold, stopped))
            result = packer.pack(task, budget=b)
            packed = {f["path"] for f in result.manifest["files"]}
            ours.setdefault(f"within_{b // 1000}k", []).append(recall(gold, packed))
            if b == BUDGETS[0]:
                ranking = sorted(
                    [f for f in result.manifest["files"] if f["score"] is not None]
                    + [e for e in result.manifest["excluded"] if e["score"] is not None],
                    key=lambda e: (-e["score"], e["path"]),
                )
                for k in TOPS:
                    ours.setdefault(f"top{k}", []).append(recall(gold, {e["path"] for e in ranking[:k]}))
        if (n + 1) % 10 == 0:
            log(f"  {n + 1}/{len(tasks)} tasks")
    mean = {name: round(sum(v) / len(v), 3) for name, v in ours.items()}
    base_mean = {name: round(sum(v) / len(v), 3) for name, v in base.items()}
    return {
        "tasks": len(tasks),
        "ours": mean,
        "baseline": base_mean,
        "ratio_within_8k": round(mean["within_8k"] / base_mean["within_8k"], 2)
        if base_mean["within_8k"]
        else None,
        "aims": {
            "within_8k_at_least_2x_baseline": mean["within_8k"] >= 2 * base_mean["within_8k"],
            "within_32k_at_least_0_75": mean["within_32k"] >= 0.75,
        },
    }


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, the child and its own children) of one run of ``cmd``."""
    cpu = _children_cpu()
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, env=env, timeout=600, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{cmd[0]} failed: {done.stderr.decode(errors='replace')[-400:]}")
    return round(elapsed, 3), round(_children_cpu() - cpu, 3)


def speed(repo: Path, task: str, repeat: int) -> dict[str, object]:
    ctxhealth = shutil.which("ctxhealth") or str(Path(sys.executable).with_name("ctxhealth"))
    cmd = [ctxhealth, "pack", str(repo), "--task", task, "--budget", "32000", "-o", os.devnull]
    cold: list[tuple[float, float]] = []
    warm: list[tuple[float, float]] = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as home:
            env = {**os.environ, "CTXHEALTH_HOME": home}
            cold.append(_timed(cmd, env))
            warm.append(_timed(cmd, env))
    out: dict[str, object] = {
        "ours_cold_s": min(w for w, _ in cold),
        "ours_cold_cpu_s": min(c for _, c in cold),
        "ours_warm_s": min(w for w, _ in warm),
        "ours_warm_cpu_s": min(c for _, c in warm),
        "runs": repeat,
        "load_average_1m": round(os.getloadavg()[0], 2),
    }
    repomix = _repomix(repo, repeat)
    out["repomix_s"] = None if repomix is None else min(w for w, _ in repomix)
    out["repomix_cpu_s"] = None if repomix is None else min(c for _, c in repomix)
    try:
        import aider  # type: ignore[import-not-found]  # noqa: F401
    except ImportError:
        log("aider: not installed (aider-chat does not install offline here): its repo map is not measured")
        out["aider_repo_map_s"] = None
    return out


def _repomix(repo: Path, repeat: int) -> list[tuple[float, float]] | None:
    npm = shutil.which("npm")
    if npm is None:
        log("repomix: npm not found: skipped")
        return None
    prefix = Path(tempfile.mkdtemp(prefix="repomix-"))
    try:
        done = subprocess.run(
            [npm, "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(prefix), "repomix"],
            capture_output=True,
            timeout=600,
            check=False,
        )
        binary = prefix / "node_modules" / ".bin" / "repomix"
        if done.returncode != 0 or not binary.exists():
            log(f"repomix: npm install failed: skipped ({done.stderr.decode(errors='replace')[-200:]})")
            return None
        out = prefix / "out.xml"
        cmd = [str(binary), str(repo), "-o", str(out), "--quiet"]
        return [_timed(cmd, dict(os.environ)) for _ in range(repeat)]
    finally:
        shutil.rmtree(prefix, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, help="the unpacked django 5.2.19 source tree")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--split", choices=["all", "even", "odd"], default="all")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-speed", action="store_true")
    args = parser.parse_args()
    if args.repo is None or not (args.repo / "django").is_dir():
        sys.exit(
            "bench_pack: give --repo DIR, the django 5.2.19 source tree: "
            "pip download django==5.2.19 --no-deps --no-binary :all: -d /tmp/dj && "
            "tar xzf /tmp/dj/django-5.2.19.tar.gz -C /tmp/dj  (then --repo /tmp/dj/django-5.2.19)"
        )
    if not (args.data / "packing").is_dir():
        sys.exit(f"bench_pack: the packing tasks are not at {args.data / 'packing'} (give --data)")
    tasks = load_tasks(args.data, args.split)
    log(f"relevance: {len(tasks)} tasks ({args.split})")
    result: dict[str, object] = {"relevance": relevance(args.repo, tasks)}
    rel = result["relevance"]
    assert isinstance(rel, dict)
    log(f"{'metric':34} {'ours':>6} {'baseline':>8}")
    for name in rel["baseline"]:
        ours = rel["ours"].get(name)
        log(f"{name:34} {'' if ours is None else f'{ours:6.3f}':>6} {rel['baseline'][name]:8.3f}")
    if not args.no_speed:
        result["speed"] = speed(args.repo, str(tasks[0]["task"]), args.repeat)
        log(f"speed: {result['speed']}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
