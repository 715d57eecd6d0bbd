"""The canary table: which secret formats reach which place, after every writing path ran.

Run: ``python benchmarks/bench_canaries.py [--markdown]``

Drives every path by which ctxhealth writes or prints (the same scenario as the canary test,
``tests/canary_paths.py``) with the canary set of ``tests/canaries.py``, then searches every byte
under a fresh ``CTXHEALTH_HOME`` and state root (SQLite files included) and every output for every
canary. Prints a format x location table (the number of files or outputs holding that canary; ``0``
everywhere is the aim) and, last, one JSON line with the totals. The baseline for comparison is the
same scenario run on an earlier checkout (``PYTHONPATH=<checkout>/src``).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from canaries import canaries  # noqa: E402
from canary_paths import OUTPUTS, drive_every_writer, find_canaries, locations_written  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true", help="Print the table as markdown.")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ctxhealth-canaries-") as tmp:
        home = Path(tmp) / "home"
        root, printed = drive_every_writer(Path(tmp), home)
        columns = [*locations_written(home, root), *OUTPUTS]
        found = find_canaries(home, root, printed)
    names = list(canaries())
    sep = " | " if args.markdown else "  "
    head = ["format", *columns]
    rows = [[name, *(str(found[name].get(c, 0)) for c in columns)] for name in names]
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + " --- |" * len(head))
        for row in rows:
            print("| " + " | ".join(row) + " |")
    else:
        width = max(len(n) for n in names)
        print(sep.join([head[0].ljust(width), *head[1:]]), file=sys.stderr)
        for row in rows:
            cells = [row[0].ljust(width), *(v.rjust(len(c)) for v, c in zip(row[1:], columns, strict=True))]
            print(sep.join(cells), file=sys.stderr)
    leaked = sorted(name for name in names if found[name])
    on_disk = sorted(name for name in names if any(c not in OUTPUTS for c in found[name]))
    summary = {
        "canaries": len(names),
        "locations": columns,
        "canaries_found_anywhere": len(leaked),
        "canaries_found_on_disk": len(on_disk),
        "found": {name: found[name] for name in leaked},
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
