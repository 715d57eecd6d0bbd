"""Paragraph dedup across the packed files: MinHash candidates, confirmed by exact Jaccard > 0.85.

A paragraph is a run of lines between blank lines with at least :data:`MIN_SHINGLES` word
5-shingles. Each is sketched with MinHash (datasketch) and looked up in an LSH index of the
paragraphs already kept; a candidate pair counts as a duplicate only when the exact Jaccard
similarity of the two shingle sets exceeds 0.85. A duplicate is replaced by one line naming the
file that holds the kept copy. Files are fed in a fixed order, so the result is deterministic.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

JACCARD_THRESHOLD = 0.85
SHINGLE_WORDS = 5
MIN_SHINGLES = 8
NUM_PERM = 64
_WORDS = re.compile(r"\S+")
_PARAGRAPHS = re.compile(r"\n[ \t]*\n")


def _shingles(paragraph: str) -> frozenset[bytes]:
    words = _WORDS.findall(paragraph)
    return frozenset(
        " ".join(words[i : i + SHINGLE_WORDS]).encode() for i in range(max(0, len(words) - SHINGLE_WORDS + 1))
    )


def _hash(data: bytes) -> int:
    return int.from_bytes(hashlib.blake2b(data, digest_size=4).digest(), "little")


@dataclass(slots=True)
class ParagraphDeduper:
    """Remembers the paragraphs already packed and replaces later near-copies."""

    _lsh: Any = None
    _template: Any = None
    _kept: dict[str, tuple[str, frozenset[bytes]]] = field(default_factory=dict)
    merged: int = 0

    def __post_init__(self) -> None:
        from datasketch import MinHash, MinHashLSH  # type: ignore[import-untyped]

        self._lsh = MinHashLSH(threshold=JACCARD_THRESHOLD, num_perm=NUM_PERM)
        self._template = MinHash(num_perm=NUM_PERM, hashfunc=_hash)

    def _sketch(self, shingles: frozenset[bytes]) -> Any:
        from datasketch import MinHash

        # The permutations are the same for every sketch: drawing them is most of a MinHash's cost.
        sketch = MinHash(
            num_perm=NUM_PERM,
            hashfunc=_hash,
            permutations=self._template.permutations,
            scheme=self._template.scheme,
        )
        sketch.update_batch(sorted(shingles))
        return sketch

    def dedupe(self, path: str, text: str) -> Deduped:
        """``text`` with paragraphs already kept (in files committed before) replaced by a pointer.

        Nothing is remembered until :meth:`commit` is called with the result, so a file that is
        finally not packed leaves no trace.
        """
        parts = _PARAGRAPHS.split(text)
        out: list[str] = []
        pending: list[tuple[str, Any, frozenset[bytes]]] = []
        replaced = 0
        for number, paragraph in enumerate(parts):
            shingles = _shingles(paragraph)
            if len(shingles) < MIN_SHINGLES:
                out.append(paragraph)
                continue
            sketch = self._sketch(shingles)
            twin = None
            for key in sorted(self._lsh.query(sketch)):
                kept_path, kept = self._kept[key]
                if len(shingles & kept) / len(shingles | kept) > JACCARD_THRESHOLD:
                    twin = kept_path
                    break
            if twin is None:
                pending.append((f"{path}#{number}", sketch, shingles))
                out.append(paragraph)
            else:
                indent = paragraph[: len(paragraph) - len(paragraph.lstrip())].split("\n")[-1]
                out.append(f"{indent}[... near-duplicate paragraph, see {twin} ...]")
                replaced += 1
        return Deduped(path, "\n\n".join(out) if replaced else text, replaced, tuple(pending))

    def commit(self, result: Deduped) -> None:
        """Remember the paragraphs of a file that was packed."""
        for key, sketch, shingles in result.pending:
            self._lsh.insert(key, sketch)
            self._kept[key] = (result.path, shingles)
        self.merged += result.replaced


@dataclass(frozen=True, slots=True)
class Deduped:
    """A file's text after dedup, how many paragraphs were replaced, and what to remember on commit."""

    path: str
    text: str
    replaced: int
    pending: tuple[tuple[str, Any, frozenset[bytes]], ...]
