"""Check: ``ctxhealth check --json`` (with and without ``--series``) and ``ctxhealth fleet``'s tables
are byte-identical between another ctxhealth (a baseline install, e.g. main's) and this tree, on
every transcript under ``--data``.

Run: ``python benchmarks/same_results.py --baseline-bin PATH/TO/ctxhealth [--data DIR]
[--fleet claude-code mini-swe-agent ...]``

For each folder of ``--data`` both CLIs run ``check FOLDER --json`` and ``check FOLDER --json
--series``, and ``check --json`` on every file of the folder given one by one in a single run
(each file as its own input, not found by the directory walk; for the ``--each`` folders, where a file
is a session); their stdout, stderr and exit codes
are compared byte for byte. For each ``--fleet`` folder both run ``fleet FOLDER --out X.duckdb -j 1``
(and again with ``--accounting``, the accounting level) and every table but ``files`` and ``meta``
(file times and the run's own record) is dumped sorted and compared. Prints one JSON line: per
comparison ``identical`` and, when not, the first differing line of each side.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data"
SKIP_TABLES = {"files", "meta"}
TRANSCRIPTS = {".json", ".jsonl", ".traj"}


def ours() -> str:
    return shutil.which("ctxhealth") or str(Path(sys.executable).with_name("ctxhealth"))


def run(cmd: list[str]) -> tuple[int, bytes, bytes]:
    done = subprocess.run(cmd, capture_output=True, check=False, timeout=3600)
    return done.returncode, done.stdout, done.stderr


def first_difference(a: bytes, b: bytes) -> dict[str, Any]:
    la, lb = a.splitlines(), b.splitlines()
    for i, (x, y) in enumerate(zip(la, lb, strict=False)):
        if x != y:
            return {
                "line": i + 1,
                "baseline": x[:300].decode(errors="replace"),
                "ours": y[:300].decode(errors="replace"),
            }
    return {"line": min(len(la), len(lb)) + 1, "baseline_lines": len(la), "ours_lines": len(lb)}


def compare(name: str, base_cmd: list[str], our_cmd: list[str]) -> dict[str, Any]:
    a, b = run(base_cmd), run(our_cmd)
    out: dict[str, Any] = {
        "name": name,
        "identical": a == b,
        "exit": [a[0], b[0]],
        "lines": len(b[1].splitlines()),
    }
    out["sha256"] = hashlib.sha256(b[1]).hexdigest()[:16]
    if a[1] != b[1]:
        out["stdout"] = first_difference(a[1], b[1])
    if a[2] != b[2]:
        out["stderr"] = first_difference(a[2], b[2])
    return out


def tables(db: Path) -> bytes:
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    parts = []
    for (table,) in con.execute("show tables").fetchall():
        if table in SKIP_TABLES:
            continue
        rows = sorted(repr(r) for r in con.execute(f"select * from {table}").fetchall())
        parts.append(f"== {table} ({len(rows)} rows)\n" + "\n".join(rows))
    con.close()
    return "\n".join(parts).encode()


def compare_fleet(folder: Path, base: str, mine: str, level: tuple[str, ...] = ()) -> dict[str, Any]:
    """Both CLIs' fleet tables of ``folder``; ``level`` ``("--accounting",)`` compares that level."""
    name = f"fleet {folder.name}" + "".join(f" {option}" for option in level)
    with tempfile.TemporaryDirectory(prefix="ctxhealth-same-") as tmp:
        dumps = []
        for n, exe in enumerate((base, mine)):
            db = Path(tmp) / f"f{n}.duckdb"
            code, _, err = run([exe, "fleet", str(folder), "--out", str(db), "-j", "1", *level])
            if code != 0:
                return {"name": name, "identical": False, "error": err[-300:].decode()}
            dumps.append(tables(db))
    out: dict[str, Any] = {"name": name, "identical": dumps[0] == dumps[1]}
    out["sha256"] = hashlib.sha256(dumps[1]).hexdigest()[:16]
    out["rows"] = dumps[1].count(b"\n") + 1
    if dumps[0] != dumps[1]:
        out["tables"] = first_difference(dumps[0], dumps[1])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-bin", required=True, help="the other install's ctxhealth executable")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--fleet", nargs="*", default=["claude-code", "mini-swe-agent", "tau-bench"])
    parser.add_argument(
        "--each",
        nargs="*",
        default=["claude-code", "mini-swe-agent", "tau-bench"],
        help="folders whose transcript files are also given one by one (a file is a session there)",
    )
    args = parser.parse_args()
    base, mine = args.baseline_bin, ours()
    results = []
    for folder in sorted(p for p in args.data.iterdir() if p.is_dir()):
        for extra in ([], ["--series"]):
            cmd = ["check", str(folder), "--json", *extra]
            results.append(compare(" ".join(["check", folder.name, *extra]), [base, *cmd], [mine, *cmd]))
        if folder.name in args.each:
            files = sorted(str(p) for p in folder.rglob("*") if p.is_file() and p.suffix in TRANSCRIPTS)
            cmd = ["check", *files, "--json"]
            name = f"check each file of {folder.name} ({len(files)})"
            results.append(compare(name, [base, *cmd], [mine, *cmd]))
    for name in args.fleet:
        if (args.data / name).is_dir():
            for level in ((), ("--accounting",)):
                results.append(compare_fleet(args.data / name, base, mine, level))
    print(json.dumps({"identical": all(r["identical"] for r in results), "results": results}))


if __name__ == "__main__":
    main()
