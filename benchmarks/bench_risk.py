"""Does the risk score beat peak fill on labelled runs, and could this data show it if it did?

Run: ``python benchmarks/bench_risk.py --data ../shared/data [--seeds 5]``; a summary goes to stderr
and the last line of stdout is one JSON document. About a minute on 2 cores.

On the labelled mini-swe-agent runs (``<data>/mini-swe-agent/trajs`` + ``labels.csv``), in one run:

* ``cross_validated``: per fold seed, the nested cross-validated AUC of the shipped procedure at each
  evaluation point, and risk minus peak fill with a paired bootstrap 95% CI (the same computation
  as ``ctxhealth validate``);
* ``split_halves``: the runs split in two by a hash of their file name; the procedure fitted on one
  half (settings chosen by its own inner CV) scores the other, both ways — a replication on runs the
  fit never saw, with nothing chosen on the scored half;
* ``single_features``: every ``Monitor.features`` name's own AUC at each point (higher of the two
  directions), the ceiling of what one feature gives;
* ``runs_needed``: from the paired bootstrap standard error at the end of a run, about how many
  labelled runs (same failure share) a difference of the observed size needs before its 95% CI
  leaves zero with 80% power: ``n * ((1.96 + 0.84) * se / difference) ** 2``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ctxhealth.evaluation import (
    EVAL_POINTS,
    LabelledRun,
    bootstrap_auc_difference_ci,
    collect_runs,
    cross_validate_runs,
    fit_risk,
    read_labels,
    roc_auc,
)
from ctxhealth.evaluation.runs import run_key

ANCHOR = "peak_fill"


def paired(scores: Sequence[float], runs: Sequence[LabelledRun], point: float, seed: int) -> dict[str, Any]:
    y = [r.failed for r in runs]
    fill = [r.features[point][ANCHOR] for r in runs]
    lo, hi = bootstrap_auc_difference_ci(scores, fill, y, rounds=1000, seed=seed)
    risk, base = roc_auc(scores, y), roc_auc(fill, y)
    return {
        "risk": round(risk, 4),
        "peak_fill": round(base, 4),
        "difference": round(risk - base, 4),
        "ci95": [round(lo, 4), round(hi, 4)],
    }


def half_of(run: LabelledRun) -> int:
    return int(hashlib.sha256(run_key(run.path).encode()).hexdigest(), 16) % 2


def split_halves(runs: Sequence[LabelledRun]) -> dict[str, Any]:
    halves = [[r for r in runs if half_of(r) == h] for h in (0, 1)]
    out: dict[str, Any] = {}
    for train, test in ((0, 1), (1, 0)):
        model, _ = fit_risk(halves[train], folds=5, seed=0)
        out[f"fit_on_{train}_score_{test}"] = {
            "runs": len(halves[test]),
            "failed": sum(r.failed for r in halves[test]),
            "features": list(model.features),
            **{
                f"{p:g}": paired([model.score(r.features[p]) for r in halves[test]], halves[test], p, 0)
                for p in EVAL_POINTS
            },
        }
    return out


def single_features(runs: Sequence[LabelledRun]) -> dict[str, dict[str, float]]:
    y = [r.failed for r in runs]
    names = sorted(runs[0].features[1.0])
    table: dict[str, dict[str, float]] = {}
    for name in names:
        row = {}
        for p in EVAL_POINTS:
            a = roc_auc([r.features[p].get(name, 0.0) for r in runs], y)
            row[f"{p:g}"] = round(max(a, 1.0 - a), 4)
        table[name] = row
    return dict(sorted(table.items(), key=lambda kv: -kv[1]["1"]))


def runs_needed(n: int, difference: float, lo: float, hi: float) -> int | None:
    se = (hi - lo) / (2 * 1.96)
    if difference <= 0 or se <= 0:
        return None
    return math.ceil(n * ((1.96 + 0.84) * se / difference) ** 2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="../shared/data")
    parser.add_argument("--seeds", type=int, default=5, help="fold seeds for the cross-validation")
    args = parser.parse_args()
    root = Path(args.data) / "mini-swe-agent"
    if not (root / "labels.csv").is_file():
        print(f"no labelled runs under {root}: pass --data", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    runs = collect_runs([str(root / "trajs")], read_labels(str(root / "labels.csv")))
    y = [r.failed for r in runs]
    per_seed: dict[str, Any] = {}
    for seed in range(args.seeds):
        cv = cross_validate_runs(runs, folds=5, seed=seed)
        per_seed[str(seed)] = {f"{p:g}": paired(list(cv.scores[p]), runs, p, seed) for p in EVAL_POINTS}
    end = per_seed["0"]["1"]
    doc = {
        "runs": len(runs),
        "failed": sum(y),
        "cross_validated": per_seed,
        "split_halves": split_halves(runs),
        "single_features": single_features(runs),
        "runs_needed": runs_needed(len(runs), end["difference"], *end["ci95"]),
        "seconds": round(time.perf_counter() - t0, 1),
    }
    for seed, table in per_seed.items():
        cells = "  ".join(
            f"{p}: {c['difference']:+.3f} [{c['ci95'][0]:+.3f},{c['ci95'][1]:+.3f}]" for p, c in table.items()
        )
        print(f"seed {seed} risk - peak fill  {cells}", file=sys.stderr)
    for name, half in doc["split_halves"].items():
        cells = "  ".join(
            f"{p}: {half[p]['risk']:.3f} vs {half[p]['peak_fill']:.3f} ({half[p]['difference']:+.3f} "
            f"[{half[p]['ci95'][0]:+.3f},{half[p]['ci95'][1]:+.3f}])"
            for p in (f"{q:g}" for q in EVAL_POINTS)
        )
        print(f"{name}: {cells}", file=sys.stderr)
    top = list(doc["single_features"].items())[:5]
    print(
        "best single features (end of run): " + ", ".join(f"{n} {r['1']:.3f}" for n, r in top),
        file=sys.stderr,
    )
    print(
        f"labelled runs needed for the end-of-run difference to show: {doc['runs_needed']}", file=sys.stderr
    )
    print(json.dumps(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
