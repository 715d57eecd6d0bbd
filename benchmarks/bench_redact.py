"""Redaction on real transcripts: what it removes (false positives), what it must leave, and its speed.

Run: ``python benchmarks/bench_redact.py [--data ../shared/data] [--before-src DIR]``

Redacts every transcript file under ``--data`` (Claude Code, mini-swe-agent, OpenHands, tau-bench:
text written by other people's agents, with no real secrets known to be in it) and reports:

* every redaction by kind, with ten examples in context (each one is a false positive, or a secret
  that was in the corpus: read them);
* identifiers that must survive: UUIDs, 40- and 64-hex digests (git hashes, SHA-256), message ids
  (``msg_``, ``toolu_``, ``req_``, ``call_``, ``chatcmpl-``): how many occur and how many redaction
  touched (the aim: 0);
* throughput (MB/s, best of 3), beside ``--before-src`` (another checkout's ``redact``) run on the
  same text in the same run when given.

Last line on stdout: one JSON object with these figures.
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import json
import re
import sys
import time
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data"
IDS = re.compile(
    r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b|\b[0-9a-f]{40}\b|\b[0-9a-f]{64}\b"
    r"|\b(?:msg|toolu|req|call)_[A-Za-z0-9]{10,}\b|\bchatcmpl-[A-Za-z0-9]{10,}\b"
)
MARKER = re.compile(r"\[REDACTED:([a-z-]+)\]")


def _load(src: Path | None) -> ModuleType:
    if src is None:
        from ctxhealth import redact

        return redact
    spec = importlib.util.spec_from_file_location("redact_before", src / "ctxhealth" / "redact.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["redact_before"] = module
    spec.loader.exec_module(module)
    return module


def _speed(module: ModuleType, texts: list[str]) -> float:
    total = sum(len(t) for t in texts) / 1e6
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        for text in texts:
            module.redact(text)
        best = min(best, time.perf_counter() - started)
    return round(total / best, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--before-src", type=Path, help="Another checkout's src/ to compare speed with.")
    args = parser.parse_args()
    files = sorted(p for p in args.data.rglob("*") if p.suffix in (".jsonl", ".json") and p.is_file())
    if not files:
        sys.exit(f"no transcripts under {args.data}")
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in files]
    module = _load(None)
    kinds: collections.Counter[str] = collections.Counter()
    examples: dict[str, list[str]] = collections.defaultdict(list)
    ids_seen = ids_touched = 0
    for text in texts:
        out = module.redact(text)
        for match in MARKER.finditer(out):
            kinds[match.group(1)] += 1
            if len(examples[match.group(1)]) < 10:
                examples[match.group(1)].append(out[max(0, match.start() - 60) : match.end() + 20])
        before = collections.Counter(IDS.findall(text))
        after = collections.Counter(IDS.findall(out))
        ids_seen += sum(before.values())
        ids_touched += sum((before - after).values())
    megabytes = sum(len(t) for t in texts) / 1e6
    for kind, count in kinds.most_common():
        print(f"{kind}: {count}", file=sys.stderr)
        for example in examples[kind]:
            print("   " + " ".join(example.split()), file=sys.stderr)
    result = {
        "files": len(files),
        "mb": round(megabytes, 2),
        "redactions": dict(kinds),
        "ids_seen": ids_seen,
        "ids_touched": ids_touched,
        "mb_per_s": _speed(module, texts),
        "before_mb_per_s": _speed(_load(args.before_src), texts) if args.before_src else None,
    }
    print(f"ids (UUIDs, digests, message ids): {ids_seen:,} seen, {ids_touched} touched", file=sys.stderr)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
