"""Similarity of each file to the task: Okapi BM25 over the files' word bags, plus exact names.

The index is built with numpy straight from the cached word counts (no per-token Python work), and
stored as flat arrays that a warm run reads back without numpy: a query has a few dozen words, so
its scores are summed over their posting lists in plain Python (float32 weights times the query
weight rounded to float32, added in float64 in posting order: the values numpy's ``add.at`` gave).
``idf = ln(1 + (N - df + 0.5) / (df + 0.5))`` and
``tf / (tf + k1 * (1 - b + b * len / avg_len))`` (Lucene's variant, as the ``bm25s`` package computes
it; a test checks the two agree) with ``k1 = 1.5`` and ``b = 0.3``: source
files vary in length by orders of magnitude, and the usual ``b = 0.75`` buries the long core modules
that most tasks touch (``b`` was chosen on half of the django benchmark tasks and checked on the
other half; see docs/pack.md).

The query is the task's words; identifiers the task names as code (``RenameContentType._rename()``,
``update_fields``, ``django.db.models``) count :data:`NAMED_WEIGHT` times. Beyond BM25, a file
that the task names by path, or that declares a class or function the task names, gets a
name-match bonus: :func:`similarity_scores` returns BM25 and the bonus blended, scaled to 0..1.
"""

from __future__ import annotations

import struct
import sys
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ctxhealth.pack.facts import PATH_WORD_WEIGHT
from ctxhealth.pack.words import named_identifiers, named_paths, split_identifier, text_words

K1 = 1.5
B = 0.3
NAMED_WEIGHT = 2
"""A word of an identifier the task names as code counts this many times in the query."""
NAME_MATCH_SHARE = 0.3
"""Share of the similarity that comes from declared names and paths the task names exactly."""

_MAGIC = b"ctxhealth-bm25\x02" + sys.byteorder[0].encode()
"""Starts a stored index: the format and the byte order of its arrays (a file from a machine of the
other order is rebuilt, not misread)."""
_HEADER = struct.Struct("<5Q")


@dataclass(frozen=True, slots=True)
class Bm25Index:
    """Per-term posting lists of BM25 weights: ``weights[starts[t]:starts[t+1]]`` for docs ``docs[...]``."""

    vocab: Mapping[str, int]
    starts: array[int]
    """``q`` (int64): ``len(vocab) + 1`` offsets into ``docs`` and ``weights``."""
    docs: array[int]
    """``i`` (int32): the document of each posting."""
    weights: array[float]
    """``f`` (float32): the BM25 weight of each posting."""
    n_docs: int

    def scores(self, query: Mapping[str, float]) -> list[float]:
        """The BM25 score of every document for a weighted bag of query words."""
        out = [0.0] * self.n_docs
        vocab = self.vocab
        terms = vocab.find_all(query) if isinstance(vocab, StoredVocab) else {}
        for word, weight in query.items():
            term = terms.get(word) if isinstance(vocab, StoredVocab) else vocab.get(word)
            if term is None:
                continue
            lo, hi = self.starts[term], self.starts[term + 1]
            factor = array("f", [weight])[0]
            weights = self.weights[lo:hi]
            if factor != 1.0:
                weights = array("f", [w * factor for w in weights])  # float32 products, rounded once
            for doc, value in zip(self.docs[lo:hi], weights, strict=True):
                out[doc] += value
        return out


def build_bm25(bags: Sequence[Mapping[str, int]], k1: float = K1, b: float = B) -> Bm25Index:
    """A BM25 index of the documents given as word bags (in order)."""
    try:
        import numpy as np
    except ImportError as exc:
        from ctxhealth.pack import missing_extra

        problem = missing_extra(exc)
        if problem is exc:
            raise
        raise problem from exc

    vocab: dict[str, int] = {}
    term_ids: list[int] = []
    counts: list[int] = []
    sizes: list[int] = []
    for bag in bags:
        sizes.append(len(bag))
        for word, count in bag.items():
            term_ids.append(vocab.setdefault(word, len(vocab)))
            counts.append(count)
    n_docs = len(bags)
    terms = np.asarray(term_ids, dtype=np.int64)
    tf = np.asarray(counts, dtype=np.float64)
    docs = np.repeat(np.arange(n_docs, dtype=np.int32), np.asarray(sizes, dtype=np.int64))
    doc_len = np.bincount(docs, weights=tf, minlength=n_docs) if n_docs else np.zeros(0)
    avg_len = float(doc_len.mean()) if n_docs and doc_len.mean() > 0 else 1.0
    df = np.bincount(terms, minlength=len(vocab)).astype(np.float64)
    idf = np.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))
    norm = k1 * (1.0 - b + b * doc_len[docs] / avg_len) if n_docs else np.zeros(0)
    weights = idf[terms] * tf / (tf + norm)
    order = np.argsort(terms, kind="stable")
    starts = np.zeros(len(vocab) + 1, dtype=np.int64)
    np.cumsum(np.bincount(terms, minlength=len(vocab)), out=starts[1:])
    return Bm25Index(
        vocab,
        array("q", starts.astype(np.int64).tobytes()),
        array("i", docs[order].astype(np.int32).tobytes()),
        array("f", weights[order].astype(np.float32).tobytes()),
        n_docs,
    )


def task_query(task: str) -> dict[str, float]:
    """The task as a weighted bag of words (named identifiers weigh :data:`NAMED_WEIGHT`)."""
    query: Counter[str] = Counter(text_words(task))
    for identifier in named_identifiers(task):
        for word in split_identifier(identifier):
            query[word] += NAMED_WEIGHT - 1
    return {word: float(count) for word, count in sorted(query.items())}


def name_matches(task: str, paths: Sequence[str], defines: Sequence[Sequence[str]]) -> list[float]:
    """1 for a file the task names by path, else the share of task-named identifiers it declares (0..1)."""
    named = {n for n in named_identifiers(task) if len(n) >= 3}
    lowered = {n.lower() for n in named}
    mentioned = named_paths(task)
    dotted = {n.replace(".", "/") for n in named if "." in n}
    out = [0.0] * len(paths)
    ends = tuple(mentioned)  # a path can only be named if it ends with one of them (one C test)
    slashed = tuple("/" + d for d in dotted if "/" in d)
    for i, path in enumerate(paths):
        if (
            ends
            and path.endswith(ends)
            and any(path.endswith(m) and (len(m) == len(path) or path[-len(m) - 1] == "/") for m in mentioned)
        ):
            out[i] = 1.0
            continue
        if dotted:
            module = path.rsplit(".", 1)[0].removesuffix("/__init__")
            if module in dotted or (slashed and module.endswith(slashed)):
                out[i] = 1.0
                continue
        if lowered and defines[i]:  # no declared name: no hit (0.0 already)
            hits = sum(1 for name in set(defines[i]) if name.lower() in lowered)
            out[i] = min(1.0, hits / 2)
    return out


def name_matches_by_definition(
    task: str, paths: Sequence[str], defines: Sequence[Sequence[str]]
) -> list[float]:
    """:func:`name_matches` as first written, one test after the other (for the tests)."""
    named = {n for n in named_identifiers(task) if len(n) >= 3}
    lowered = {n.lower() for n in named}
    mentioned = named_paths(task)
    dotted = {n.replace(".", "/") for n in named if "." in n}
    out = [0.0] * len(paths)
    for i, path in enumerate(paths):
        stem = path.rsplit(".", 1)[0]
        module = stem.removesuffix("/__init__")
        if any(path.endswith(m) and (len(m) == len(path) or path[-len(m) - 1] == "/") for m in mentioned) or (
            module in dotted or any(module.endswith("/" + d) for d in dotted if "/" in d)
        ):
            out[i] = 1.0
            continue
        if lowered:
            hits = sum(1 for name in set(defines[i]) if name.lower() in lowered)
            out[i] = min(1.0, hits / 2)
    return out


def similarity_scores(
    task: str, index: Bm25Index, paths: Sequence[str], defines: Sequence[Sequence[str]]
) -> list[float]:
    """Similarity of each document to ``task`` in 0..1: BM25 scaled by its best, blended with name matches."""
    bm25 = index.scores(task_query(task))
    top = max(bm25) if bm25 else 0.0
    scaled = [x / top for x in bm25] if top > 0 else bm25
    names = name_matches(task, paths, defines)
    own = 1.0 - NAME_MATCH_SHARE
    return [own * x + NAME_MATCH_SHARE * n for x, n in zip(scaled, names, strict=True)]


def corpus_key(items: Sequence[tuple[str, str]]) -> str:
    """A key for a BM25 index: the hash of every (path, content hash) pair in corpus order."""
    import hashlib

    digest = hashlib.sha256(f"bm25 lucene k1={K1} b={B} path-weight={PATH_WORD_WEIGHT}\n".encode())
    for path, content in items:
        digest.update(f"{path}\0{content}\n".encode())
    return digest.hexdigest()


def save_bm25(file: Path, key: str, index: Bm25Index) -> None:
    """Store ``index`` under ``key`` (atomically): a header, the key, the newline-joined vocabulary
    (in term order), where each word starts in it (``i``, one more than the terms) and the term ids
    in the alphabetical order of their UTF-8 bytes (``i``; both for the lookups of
    :class:`StoredVocab`), then the three arrays as they lie in memory."""
    from ctxhealth.atomic import write_atomic

    key_bytes = key.encode()
    in_order = [w.encode("utf-8") for w in sorted(index.vocab, key=index.vocab.__getitem__)]
    words = b"\n".join(in_order)
    alphabetical = array("i", sorted(range(len(in_order)), key=in_order.__getitem__))
    offsets = array("i", [0])
    for word in in_order:
        offsets.append(offsets[-1] + len(word) + 1)
    header = _HEADER.pack(len(key_bytes), len(words), len(index.starts), len(index.docs), index.n_docs)
    parts = [
        _MAGIC,
        header,
        key_bytes,
        words,
        offsets.tobytes(),
        alphabetical.tobytes(),
        index.starts.tobytes(),
        index.docs.tobytes(),
        index.weights.tobytes(),
    ]
    write_atomic(file, b"".join(parts))


class StoredVocab(Mapping[str, int]):
    """The vocabulary of a stored index, looked up in its newline-joined bytes: a query asks for a
    few dozen words, so a warm run never builds the dict of every word (100K+ on django). With the
    stored ``order`` (term ids in the alphabetical order of their bytes) and ``offsets`` (where
    each term's word starts, and one past the last's newline), a word is found by a binary search,
    each probe slicing one word out, and is checked equal before it is answered; without them by
    a search through the bytes."""

    __slots__ = ("_dict", "_joined", "_offsets", "_order", "_padded")

    def __init__(
        self, joined: bytes, order: array[int] | None = None, offsets: array[int] | None = None
    ) -> None:
        self._joined = joined
        self._padded = b"\n" + joined + b"\n" if joined else b""
        self._dict: dict[str, int] | None = None
        self._order = order if offsets is not None else None
        self._offsets = offsets

    def get(self, word: str, default: int | None = None) -> int | None:  # type: ignore[override]
        if not word or "\n" in word or not self._padded:
            return default
        target = word.encode("utf-8")
        order, offsets, joined = self._order, self._offsets, self._joined
        if order is None or offsets is None:
            at = self._padded.find(b"\n" + target + b"\n")
            return default if at < 0 else self._padded.count(b"\n", 0, at)
        lo, hi = 0, len(order)
        while lo < hi:
            mid = (lo + hi) // 2
            term = order[mid]
            if joined[offsets[term] : offsets[term + 1] - 1] < target:
                lo = mid + 1
            else:
                hi = mid
        if lo < len(order):
            term = order[lo]
            if joined[offsets[term] : offsets[term + 1] - 1] == target:
                return term
        return default

    def find_all(self, words: Iterable[str]) -> dict[str, int]:
        """:meth:`get` of each word that is there."""
        out: dict[str, int] = {}
        for word in words:
            found = self.get(word)
            if found is not None:
                out[word] = found
        return out

    def __getitem__(self, word: str) -> int:
        found = self.get(word)
        if found is None:
            raise KeyError(word)
        return found

    def _all(self) -> dict[str, int]:
        if self._dict is None:
            words = self._padded[1:-1].decode("utf-8").split("\n") if self._padded else []
            self._dict = {w: i for i, w in enumerate(words)}
        return self._dict

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


def load_bm25(file: Path, key: str) -> Bm25Index | None:
    """The index stored under ``key`` in ``file``, or None (missing, stale, truncated or unreadable)."""
    try:
        data = file.read_bytes()
    except OSError:
        return None
    at = len(_MAGIC) + _HEADER.size
    if len(data) < at or not data.startswith(_MAGIC):
        return None
    key_len, vocab_len, n_starts, n_postings, n_docs = _HEADER.unpack_from(data, len(_MAGIC))
    if data[at : at + key_len] != key.encode():
        return None
    at += key_len
    n_terms = max(0, n_starts - 1)
    sizes = (vocab_len, 8 * n_starts, 4 * n_postings, 4 * n_postings)
    if len(data) != at + sum(sizes) + 4 * (2 * n_terms + 1):
        return None
    vocab = data[at : at + vocab_len]
    try:
        vocab.decode("utf-8")  # a cache that does not decode is not trusted
    except UnicodeDecodeError:
        return None
    at += vocab_len
    offsets = array("i", data[at : at + 4 * (n_terms + 1)])
    at += 4 * (n_terms + 1)
    alphabetical = array("i", data[at : at + 4 * n_terms])
    at += 4 * n_terms
    arrays = []
    for code, size in zip("qif", sizes[1:], strict=True):
        arrays.append(array(code, data[at : at + size]))
        at += size
    starts, docs, weights = arrays
    if n_starts != vocab.count(b"\n") + 1 + (1 if vocab else 0) or (n_starts and starts[-1] != n_postings):
        return None
    if offsets[0] != 0 or offsets[-1] != (vocab_len + 1 if n_terms else 0):
        return None
    vocabulary = StoredVocab(vocab, alphabetical, offsets)
    return Bm25Index(vocabulary, starts, docs, weights, n_docs)  # type: ignore[arg-type]
