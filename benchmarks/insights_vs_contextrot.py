"""ctxhealth insights beside contextrot 2.1 on the same Claude Code sessions: steps, fill per step,
slips, cost and time, session by session.

Run: ``python benchmarks/insights_vs_contextrot.py [--data DIR] [--repeat N]`` (contextrot is in the
``bench`` extra). Prints one JSON line per session, then one with the totals, each with both tools'
figures side by side:

* ``steps`` — ctxhealth: model responses, once per response id (main thread); contextrot: its steps;
* ``mean_fill`` — mean prompt tokens per step (ctxhealth: the one fill account; contextrot:
  input + cache read + cache write of the step's line);
* ``slips`` — steps that slipped (ctxhealth: its slip definition; contextrot: ``degraded`` steps);
* ``cost_usd`` — ctxhealth: the audit's priced responses (``check``'s cost); contextrot: the sum of
  its steps' ``cost_usd``;
* ``seconds`` — parse and analyse the file, best of ``--repeat`` runs, each tool in this process.

``docs/results/insights.md`` explains where and why they differ.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "claude-code"


def ours(path: Path) -> dict[str, Any]:
    from ctxhealth.accounting.fill import account_session
    from ctxhealth.insights.steps import measure_session
    from ctxhealth.sources import read_session

    session = read_session(path)
    account = account_session(session)
    measured = measure_session(session, account)
    steps = measured.steps
    return {
        "steps": len(steps),
        "mean_fill": round(statistics.fmean(s.fill for s in steps)) if steps else 0,
        "slips": measured.slipped_steps,
        "cost_usd": None if account.cost_usd is None else round(account.cost_usd, 4),
    }


def theirs(path: Path) -> dict[str, Any]:
    from contextrot.adapters import ClaudeCodeAdapter
    from contextrot.pricing import context_window_for
    from contextrot.signals import extract_signals

    session = ClaudeCodeAdapter().parse(path)
    if session is None:
        return {"steps": 0, "mean_fill": 0, "slips": 0, "cost_usd": 0.0}
    window = context_window_for(session.steps[0].model if session.steps else "")
    signals = extract_signals(session, window).steps
    return {
        "steps": len(signals),
        "mean_fill": round(statistics.fmean(s.prompt_tokens for s in signals)) if signals else 0,
        "slips": sum(1 for s in signals if s.degraded),
        "cost_usd": round(sum(s.cost_usd for s in signals), 4),
    }


def timed(fn: Callable[[Path], dict[str, Any]], path: Path, repeat: int) -> dict[str, Any]:
    best = float("inf")
    result: dict[str, Any] = {}
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn(path)
        best = min(best, time.perf_counter() - start)
    return {**result, "seconds": round(best, 4)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    files = sorted(args.data.glob("*/*.jsonl"))
    totals: dict[str, dict[str, float]] = {"ctxhealth": {}, "contextrot": {}}
    for path in files:
        try:
            a = timed(ours, path, args.repeat)
        except Exception as exc:  # a file ctxhealth refuses (no message): say so, keep going
            a = {"error": str(exc).splitlines()[0]}
        b = timed(theirs, path, args.repeat)
        print(json.dumps({"session": path.name, "ctxhealth": a, "contextrot": b}))
        for name, row in (("ctxhealth", a), ("contextrot", b)):
            for key in ("steps", "slips", "cost_usd", "seconds"):
                if isinstance(row.get(key), int | float):
                    totals[name][key] = round(totals[name].get(key, 0) + row[key], 4)
    print(json.dumps({"totals": totals, "sessions": len(files)}))


if __name__ == "__main__":
    main()
