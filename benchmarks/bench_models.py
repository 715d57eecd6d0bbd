"""Benchmark: what model knowledge costs a fresh process (the hooks start one per event).

Run: ``python benchmarks/bench_models.py [--runs N]``

Each figure is the median wall time of ``--runs`` fresh Python processes, in milliseconds, side by
side in the same run:

* ``bare``: ``python -c pass`` (the floor);
* ``import_genai_prices``: importing the price package's data (the peer: what a lookup would cost if
  it imported the package);
* ``lookup_derived``: ctxhealth's first lookup of a model with no cached table (the table is derived
  from the package, then written under a fresh home);
* ``lookup_cached``: ctxhealth's first lookup with the cached table present (what every hook pays).

Prints one JSON document, then a table.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

LOOKUP = (
    "from ctxhealth.accounting.catalog import configure_cache_dir\n"
    "from ctxhealth.accounting.registry import ModelRegistry\n"
    "import os\n"
    "configure_cache_dir(os.environ['CTXHEALTH_HOME'])\n"
    "ModelRegistry.default().lookup('claude-opus-5-5')\n"
)


def _time(code: str, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
    return (time.perf_counter() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cached_home = os.path.join(tmp, "cached")
        env = {**os.environ, "CTXHEALTH_HOME": cached_home}
        _time(LOOKUP, env)  # derive once
        runs: dict[str, list[float]] = {
            k: [] for k in ("bare", "import_genai_prices", "lookup_derived", "lookup_cached")
        }
        for i in range(args.runs):
            runs["bare"].append(_time("pass", env))
            runs["import_genai_prices"].append(_time("import genai_prices.data", env))
            fresh = {**os.environ, "CTXHEALTH_HOME": os.path.join(tmp, f"fresh{i}")}
            runs["lookup_derived"].append(_time(LOOKUP, fresh))
            runs["lookup_cached"].append(_time(LOOKUP, env))
    result = {k: round(statistics.median(v), 1) for k, v in runs.items()}
    print(json.dumps({"benchmark": "models", "runs": args.runs, "median_ms": result}))
    for name, ms in result.items():
        print(f"{name:<22} {ms:8.1f} ms")


if __name__ == "__main__":
    main()
