"""Paragraph dedup across the packed files: MinHash candidates, confirmed by exact Jaccard > 0.85.

A paragraph is a run of lines between blank lines with at least :data:`MIN_SHINGLES` word
5-shingles. Each is sketched with MinHash (64 universal hash functions ``(a * h + b) mod p`` over
32-bit shingle hashes, fixed seed) and looked up in a banded LSH index (8 bands of 8 rows) of the
paragraphs already kept; a candidate pair counts as a duplicate only when the exact Jaccard
similarity of the two shingle sets exceeds 0.85. A duplicate is replaced by one line naming the
file that holds the kept copy. Files are fed in a fixed order, so the result is deterministic.

The sketch is the classic one (as in the ``datasketch`` package, which the tests compare it with);
it is implemented here because importing ``datasketch`` imports SciPy's integrator, which costs
more than a whole warm pack.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

JACCARD_THRESHOLD = 0.85
SHINGLE_WORDS = 5
MIN_SHINGLES = 8
NUM_PERM = 64
BANDS = 8
ROWS = NUM_PERM // BANDS
_PRIME = (1 << 61) - 1
_MAX_HASH = (1 << 32) - 1
_SEED = 1
_WORDS = re.compile(r"\S+")
_PARAGRAPHS = re.compile(r"\n[ \t]*\n")

_generator = np.random.RandomState(_SEED)
_A = _generator.randint(1, _MAX_HASH, size=NUM_PERM, dtype=np.uint64)
_B = _generator.randint(0, _MAX_HASH, size=NUM_PERM, dtype=np.uint64)

Sketch = npt.NDArray[np.uint64]


def shingles(paragraph: str) -> frozenset[bytes]:
    """The word 5-shingles of a paragraph."""
    words = _WORDS.findall(paragraph)
    return frozenset(
        " ".join(words[i : i + SHINGLE_WORDS]).encode() for i in range(max(0, len(words) - SHINGLE_WORDS + 1))
    )


def shingle_hash(data: bytes) -> int:
    """A 32-bit hash of one shingle (BLAKE2b; stable across processes, unlike ``hash``)."""
    return int.from_bytes(hashlib.blake2b(data, digest_size=4).digest(), "little")


def minhash(items: frozenset[bytes]) -> Sketch:
    """The MinHash sketch of a set: per hash function, the least ``(a * h + b) mod p`` (32 bits)."""
    hashes = np.fromiter((shingle_hash(s) for s in sorted(items)), dtype=np.uint64, count=len(items))
    values = ((np.outer(hashes, _A) + _B) % np.uint64(_PRIME)) & np.uint64(_MAX_HASH)
    sketch: Sketch = values.min(axis=0) if len(items) else np.full(NUM_PERM, _MAX_HASH, dtype=np.uint64)
    return sketch


def estimated_jaccard(first: Sketch, second: Sketch) -> float:
    return float(np.count_nonzero(first == second)) / NUM_PERM


def _bands(sketch: Sketch) -> list[tuple[int, bytes]]:
    return [(band, sketch[band * ROWS : (band + 1) * ROWS].tobytes()) for band in range(BANDS)]


@dataclass(slots=True)
class ParagraphDeduper:
    """Remembers the paragraphs already packed and replaces later near-copies."""

    _buckets: dict[tuple[int, bytes], list[str]] = field(default_factory=dict)
    _kept: dict[str, tuple[str, frozenset[bytes]]] = field(default_factory=dict)
    _sketched: dict[str, tuple[frozenset[bytes], Sketch | None]] = field(default_factory=dict)
    """Paragraph -> its shingles and sketch (None under :data:`MIN_SHINGLES`): a file is often
    deduplicated more than once (each form tried, then the upgrade to the whole file)."""
    merged: int = 0

    def _sketch(self, paragraph: str) -> tuple[frozenset[bytes], Sketch | None]:
        found = self._sketched.get(paragraph)
        if found is None:
            items = shingles(paragraph)
            found = (items, minhash(items) if len(items) >= MIN_SHINGLES else None)
            self._sketched[paragraph] = found
        return found

    def _candidates(self, sketch: Sketch) -> list[str]:
        found: set[str] = set()
        for key in _bands(sketch):
            found.update(self._buckets.get(key, ()))
        return sorted(found)

    def dedupe(self, path: str, text: str) -> Deduped:
        """``text`` with paragraphs already kept (in files committed before) replaced by a pointer.

        Nothing is remembered until :meth:`commit` is called with the result, so a file that is
        finally not packed leaves no trace.
        """
        parts = _PARAGRAPHS.split(text)
        out: list[str] = []
        pending: list[tuple[str, Sketch, frozenset[bytes]]] = []
        replaced = 0
        for number, paragraph in enumerate(parts):
            items, sketch = self._sketch(paragraph)
            if sketch is None:
                out.append(paragraph)
                continue
            twin = None
            for key in self._candidates(sketch):
                kept_path, kept = self._kept[key]
                if len(items & kept) / len(items | kept) > JACCARD_THRESHOLD:
                    twin = kept_path
                    break
            if twin is None:
                pending.append((f"{path}#{number}", sketch, items))
                out.append(paragraph)
            else:
                indent = paragraph[: len(paragraph) - len(paragraph.lstrip())].split("\n")[-1]
                out.append(f"{indent}[... near-duplicate paragraph, see {twin} ...]")
                replaced += 1
        return Deduped(path, "\n\n".join(out) if replaced else text, replaced, tuple(pending))

    def commit(self, result: Deduped) -> None:
        """Remember the paragraphs of a file that was packed."""
        for key, sketch, items in result.pending:
            for band in _bands(sketch):
                self._buckets.setdefault(band, []).append(key)
            self._kept[key] = (result.path, items)
        self.merged += result.replaced


@dataclass(frozen=True, slots=True)
class Deduped:
    """A file's text after dedup, how many paragraphs were replaced, and what to remember on commit."""

    path: str
    text: str
    replaced: int
    pending: tuple[tuple[str, Sketch, frozenset[bytes]], ...]
