"""Read benchmark: the whole transcript corpus through ``read_sessions`` + ``account_session``.

Prints MB/s and sessions/s (best of N runs) for ctxhealth on the full corpus and, in the
same run and on the same Claude Code sessions, for the ``contextrot`` package's Claude Code
adapter (``pip install -e '.[bench]'``) and for a floor that only decodes every line with
orjson (no reader does less and still sees every record). Runs of the two alternate so that a busy machine
slows both alike. The last line on stdout is one JSON object with every figure and the ratio.

    python benchmarks/bench_read.py [--data ../shared/data] [--repeat 5]
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import orjson

from ctxhealth.accounting.fill import account_session
from ctxhealth.sources import read_sessions

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def run_ours(paths: Sequence[Path]) -> int:
    """Read and account every path; returns the number of sessions."""
    sessions = 0
    for session in read_sessions(paths):
        account_session(session)
        sessions += 1
    return sessions


def contextrot_runner() -> Callable[[Sequence[Path]], int] | None:
    """contextrot's Claude Code adapter as a runner, or None when it is not installed."""
    try:
        from contextrot.adapters.claude_code import ClaudeCodeAdapter
    except ImportError:
        return None
    adapter = ClaudeCodeAdapter()

    def run(paths: Sequence[Path]) -> int:
        for path in paths:
            adapter.parse(path)
        return len(paths)

    return run


def run_parse_floor(paths: Sequence[Path]) -> int:
    """Only read each file and decode every line with orjson: what any full reader must pay."""
    for path in paths:
        for line in path.read_bytes().splitlines():
            if line.strip():
                orjson.loads(line)
    return len(paths)


def best_time(fn: Callable[[], int]) -> tuple[float, int]:
    gc.collect()
    start = time.perf_counter()
    count = fn()
    return time.perf_counter() - start, count


def figures(seconds: float, size: int, sessions: int) -> dict[str, float]:
    return {
        "seconds": round(seconds, 6),
        "mb_per_s": round(size / 1e6 / seconds, 2),
        "sessions_per_s": round(sessions / seconds, 1),
        "sessions": sessions,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data", type=Path, default=DEFAULT_DATA, help="corpus root (claude-code/, mini-swe-agent/)"
    )
    parser.add_argument("--repeat", type=int, default=5, help="runs per contender; the best is kept")
    args = parser.parse_args(argv)

    claude_dir = args.data / "claude-code"
    claude_files = sorted(claude_dir.glob("*/*.jsonl"))
    corpus_dirs = [d for d in (claude_dir, args.data / "mini-swe-agent") if d.is_dir()]
    if not claude_files or not corpus_dirs:
        print(f"no corpus under {args.data}", file=sys.stderr)
        return 2
    claude_bytes = sum(p.stat().st_size for p in claude_files)
    corpus_bytes = sum(
        p.stat().st_size
        for d in corpus_dirs
        for p in d.rglob("*")
        if p.is_file() and p.suffix in (".json", ".jsonl")
    )
    theirs = contextrot_runner()

    # Warm-up: imports, tokenizer tables, the OS page cache.
    run_ours(corpus_dirs)
    if theirs is not None:
        theirs(claude_files)

    best: dict[str, tuple[float, int]] = {}

    def keep(name: str, result: tuple[float, int]) -> None:
        if name not in best or result[0] < best[name][0]:
            best[name] = result

    sessions = list(read_sessions(claude_files))

    def run_account_only() -> int:
        for session in sessions:
            account_session(session)
        return len(sessions)

    for _ in range(max(1, args.repeat)):
        keep("ours_claude_code", best_time(lambda: run_ours(claude_files)))
        if theirs is not None:
            keep("contextrot_claude_code", best_time(lambda: theirs(claude_files)))
        keep("ours_corpus", best_time(lambda: run_ours(corpus_dirs)))
        keep("orjson_floor_claude_code", best_time(lambda: run_parse_floor(claude_files)))
        keep("ours_account_only_claude_code", best_time(run_account_only))

    result: dict[str, object] = {
        "benchmark": "read",
        "repeat": args.repeat,
        "claude_code_bytes": claude_bytes,
        "corpus_bytes": corpus_bytes,
        "ours_claude_code": figures(*best["ours_claude_code"][:1], claude_bytes, best["ours_claude_code"][1]),
        "ours_corpus": figures(*best["ours_corpus"][:1], corpus_bytes, best["ours_corpus"][1]),
        "ours_account_only_claude_code": figures(
            best["ours_account_only_claude_code"][0], claude_bytes, best["ours_account_only_claude_code"][1]
        ),
        "orjson_floor_claude_code": figures(
            best["orjson_floor_claude_code"][0], claude_bytes, best["orjson_floor_claude_code"][1]
        ),
    }
    if theirs is not None:
        ours_s = best["ours_claude_code"][0]
        theirs_s = best["contextrot_claude_code"][0]
        result["contextrot_claude_code"] = figures(theirs_s, claude_bytes, best["contextrot_claude_code"][1])
        result["ratio_vs_contextrot"] = round(theirs_s / ours_s, 2)
    else:
        result["contextrot_claude_code"] = None
        result["ratio_vs_contextrot"] = None

    for key in (
        "ours_corpus",
        "ours_claude_code",
        "contextrot_claude_code",
        "orjson_floor_claude_code",
        "ours_account_only_claude_code",
    ):
        value = result[key]
        if isinstance(value, dict):
            print(
                f"{key:<30} {value['mb_per_s']:>8.2f} MB/s {value['sessions_per_s']:>9.1f} sessions/s "
                f"({value['sessions']} sessions, best of {args.repeat})",
                file=sys.stderr,
            )
    if result["ratio_vs_contextrot"] is not None:
        print(f"ctxhealth / contextrot on Claude Code: {result['ratio_vs_contextrot']}x", file=sys.stderr)
    print(json.dumps(result, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
