"""Paragraph dedup across the packed files: MinHash candidates, confirmed by exact Jaccard > 0.85.

A paragraph is a run of lines between blank lines with at least :data:`MIN_SHINGLES` word
5-shingles. Each is sketched with MinHash (64 universal hash functions ``(a * h + b) mod p`` over
32-bit shingle hashes, fixed seed) and looked up in a banded LSH index (8 bands of 8 rows) of the
paragraphs already kept; a candidate pair counts as a duplicate only when the exact Jaccard
similarity of the two shingle sets exceeds 0.85. A duplicate is replaced by one line naming the
file that holds the kept copy. Files are fed in a fixed order, so the result is deterministic.

The sketch is the classic one (as in the ``datasketch`` package, which the tests compare it with);
it is implemented here, in Python integers, because importing ``datasketch`` imports SciPy's
integrator and importing numpy costs about a quarter of a warm pack. The two tests are asked in the
cheaper order (exact Jaccard first, over a shingle index; the sketch and its bands only for a pair
that passes), which gives the same twin (see :class:`ParagraphDeduper`).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

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

# The 64 hash functions: ``numpy.random.RandomState(1).randint(1, 2**32 - 1, 64)`` for ``a`` and then
# ``.randint(0, 2**32 - 1, 64)`` for ``b`` (uint64), written out so that packing never imports numpy;
# a test draws them again and compares.
_A: tuple[int, ...] = (
    1791095846,
    4282876140,
    3093770125,
    4005303369,
    491264,
    550290314,
    1298508492,
    4290846342,
    630311760,
    1013994433,
    396591249,
    1703301250,
    799981517,
    1666063944,
    1484172014,
    2876537341,
    1704103303,
    4018109722,
    2314200243,
    3634877717,
    1800426751,
    1345499494,
    2942995347,
    2252917205,
    878115724,
    1904615677,
    3771485675,
    986026653,
    117628830,
    2295290255,
    2879636019,
    3925436997,
    1792310488,
    1963679704,
    2399554538,
    1849836274,
    602957304,
    4033523167,
    850839393,
    3343156311,
    3439171726,
    3075069930,
    4158651786,
    3447817224,
    1346146624,
    398576446,
    2973502999,
    2225448250,
    3764062722,
    3715233665,
    3842306365,
    3561158866,
    365262089,
    3563119321,
    167739022,
    1172740724,
    729416112,
    254447595,
    3771593338,
    2879896009,
    422396447,
    2547197000,
    1808643460,
    2884732359,
)
_B: tuple[int, ...] = (
    4114104213,
    1768615473,
    2289927481,
    848474627,
    2971589572,
    1243949848,
    1355129329,
    610401323,
    2948499020,
    3364310042,
    3584689972,
    1771840848,
    78547565,
    146764659,
    3221845289,
    2680188370,
    4247126031,
    2837408832,
    3213347012,
    1282027545,
    1204497775,
    1916133090,
    3389928919,
    954017671,
    443352346,
    315096729,
    1923688040,
    2015364118,
    3902387977,
    413056707,
    1261063143,
    3879945342,
    1235985687,
    513207677,
    558468452,
    2253996187,
    83180453,
    359158073,
    2915576403,
    3937889446,
    908935816,
    3910346016,
    1140514210,
    1283895050,
    2111290647,
    2509932175,
    229190383,
    2430573655,
    2465816345,
    2636844999,
    630194419,
    4108289372,
    2531048010,
    1120896190,
    3005439278,
    992203680,
    439523032,
    2291143831,
    1778356919,
    4079953217,
    2982425969,
    2117674829,
    1778886403,
    2321861504,
)

Sketch = tuple[int, ...]


def shingles(paragraph: str) -> frozenset[bytes]:
    """The word 5-shingles of a paragraph: each run of :data:`SHINGLE_WORDS` words (runs of
    ``\\S``) joined by one space, UTF-8.

    ``str.split()`` splits where ``\\s`` matches (both ask ``Py_UNICODE_ISSPACE``; a test checks every
    code point), and joining the words' bytes in C is the same as encoding each joined shingle."""
    words = [w.encode() for w in paragraph.split()]
    return frozenset(map(b" ".join, zip(*(words[k:] for k in range(SHINGLE_WORDS)), strict=False)))


def shingles_by_definition(paragraph: str) -> frozenset[bytes]:
    """:func:`shingles` as its definition reads (for the tests)."""
    words = _WORDS.findall(paragraph)
    return frozenset(
        " ".join(words[i : i + SHINGLE_WORDS]).encode() for i in range(max(0, len(words) - SHINGLE_WORDS + 1))
    )


def shingle_hash(data: bytes) -> int:
    """A 32-bit hash of one shingle (BLAKE2b; stable across processes, unlike ``hash``)."""
    return int.from_bytes(hashlib.blake2b(data, digest_size=4).digest(), "little")


def minhash(items: frozenset[bytes]) -> Sketch:
    """The MinHash sketch of a set: per hash function, the least ``(a * h + b) mod p`` (32 bits).

    Python integers (``a``, ``b`` and ``h`` are under 2**32, so nothing overflows 64 bits and the
    values are the ones numpy's uint64 arithmetic gives).
    """
    hashes = [shingle_hash(s) for s in sorted(items)]
    if not hashes:
        return (_MAX_HASH,) * NUM_PERM
    return tuple(min(((a * h + b) % _PRIME) & _MAX_HASH for h in hashes) for a, b in zip(_A, _B, strict=True))


def estimated_jaccard(first: Sketch, second: Sketch) -> float:
    return sum(1 for x, y in zip(first, second, strict=True) if x == y) / NUM_PERM


def _share_a_band(first: Sketch, second: Sketch) -> bool:
    """Whether the LSH index (:data:`BANDS` bands of :data:`ROWS` rows) files the two together."""
    return any(
        first[band * ROWS : (band + 1) * ROWS] == second[band * ROWS : (band + 1) * ROWS]
        for band in range(BANDS)
    )


@dataclass(slots=True)
class ParagraphDeduper:
    """Remembers the paragraphs already packed and replaces later near-copies.

    A paragraph's twin is the first kept paragraph (in key order) that the banded LSH index files
    with it and whose exact Jaccard similarity exceeds the threshold. The exact test is the rare one
    to pass, so it is asked first, over the kept paragraphs that share a shingle (an inverted index);
    the sketches, whose 64 hash functions cost most, are computed only for the pairs that pass it.
    The twin is the same: the first in key order of the pairs that pass both tests.
    """

    _by_shingle: dict[bytes, list[str]] = field(default_factory=dict)
    _kept: dict[str, tuple[str, frozenset[bytes]]] = field(default_factory=dict)
    _shingled: dict[str, frozenset[bytes]] = field(default_factory=dict)
    """Paragraph -> its shingles: a file is often deduplicated more than once (each form tried, then
    the upgrade to the whole file)."""
    _sketches: dict[frozenset[bytes], Sketch] = field(default_factory=dict)
    merged: int = 0

    def _shingles(self, paragraph: str) -> frozenset[bytes]:
        found = self._shingled.get(paragraph)
        if found is None:
            found = self._shingled[paragraph] = shingles(paragraph)
        return found

    def _sketch(self, items: frozenset[bytes]) -> Sketch:
        found = self._sketches.get(items)
        if found is None:
            found = self._sketches[items] = minhash(items)
        return found

    def _twin(self, items: frozenset[bytes]) -> str | None:
        shared: dict[str, int] = {}
        for shingle in items:
            for key in self._by_shingle.get(shingle, ()):
                shared[key] = shared.get(key, 0) + 1
        similar = []
        for key, common in shared.items():
            kept = self._kept[key][1]
            if common / (len(items) + len(kept) - common) > JACCARD_THRESHOLD:
                similar.append(key)
        for key in sorted(similar):
            kept_path, kept = self._kept[key]
            if _share_a_band(self._sketch(items), self._sketch(kept)):
                return kept_path
        return None

    def dedupe(self, path: str, text: str) -> Deduped:
        """``text`` with paragraphs already kept (in files committed before) replaced by a pointer.

        Nothing is remembered until :meth:`commit` is called with the result, so a file that is
        finally not packed leaves no trace.
        """
        parts = _PARAGRAPHS.split(text)
        out: list[str] = []
        pending: list[tuple[str, frozenset[bytes]]] = []
        replaced = 0
        for number, paragraph in enumerate(parts):
            items = self._shingles(paragraph)
            if len(items) < MIN_SHINGLES:
                out.append(paragraph)
                continue
            twin = self._twin(items) if self._kept else None
            if twin is None:
                pending.append((f"{path}#{number}", items))
                out.append(paragraph)
            else:
                indent = paragraph[: len(paragraph) - len(paragraph.lstrip())].split("\n")[-1]
                out.append(f"{indent}[... near-duplicate paragraph, see {twin} ...]")
                replaced += 1
        return Deduped(path, "\n\n".join(out) if replaced else text, replaced, tuple(pending))

    def commit(self, result: Deduped) -> None:
        """Remember the paragraphs of a file that was packed."""
        for key, items in result.pending:
            for shingle in items:
                self._by_shingle.setdefault(shingle, []).append(key)
            self._kept[key] = (result.path, items)
        self.merged += result.replaced


@dataclass(frozen=True, slots=True)
class Deduped:
    """A file's text after dedup, how many paragraphs were replaced, and what to remember on commit."""

    path: str
    text: str
    replaced: int
    pending: tuple[tuple[str, frozenset[bytes]], ...]
