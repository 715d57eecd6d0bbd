"""Words for overlap measures: lower-cased, stop words removed, lightly stemmed (cached).

:func:`content_words` is on every turn's path, so it is written for speed with the same result as
``[stem(w) for w in WORD.findall(text.lower()) if w not in STOP_WORDS]``: words are only ASCII, so
the text is folded to ASCII bytes (:func:`fold`: letters lower-cased, every other character but
digits and ``_`` a space; ``İ`` and the Kelvin sign, the two characters whose lower case is ASCII,
are lower-cased first), split into runs at C speed, and each run is one lookup in a bounded table
of known runs (stop-word test and stemming in one). The folded text is shared with the hedge count
(:mod:`~ctxhealth.signals.hedging`), which needs the same runs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import lru_cache

from ctxhealth.lazy import pattern
from ctxhealth.native import KERNELS

_WORD_SOURCE = r"[A-Za-z][A-Za-z0-9_]{2,}"
"""``WORD``, the definition the word runs are tested against: compiled on first use (no run needs it)."""


def __getattr__(name: str) -> re.Pattern[str]:
    """``WORD``: :data:`_WORD_SOURCE` compiled (on first use)."""
    if name == "WORD":
        return pattern(_WORD_SOURCE)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


STOP_WORDS = frozenset(
    [
        "the",
        "and",
        "for",
        "are",
        "but",
        "not",
        "you",
        "all",
        "any",
        "can",
        "had",
        "her",
        "was",
        "one",
        "our",
        "out",
        "has",
        "have",
        "him",
        "his",
        "how",
        "its",
        "let",
        "may",
        "new",
        "now",
        "see",
        "two",
        "way",
        "who",
        "did",
        "get",
        "got",
        "use",
        "used",
        "using",
        "that",
        "this",
        "with",
        "from",
        "they",
        "will",
        "would",
        "there",
        "their",
        "what",
        "when",
        "where",
        "which",
        "while",
        "into",
        "than",
        "then",
        "them",
        "these",
        "those",
        "been",
        "being",
        "were",
        "also",
        "just",
        "like",
        "some",
        "such",
        "only",
        "other",
        "more",
        "most",
        "very",
        "should",
        "could",
        "about",
        "after",
        "before",
        "again",
        "each",
        "few",
        "here",
        "once",
        "over",
        "same",
        "so",
        "too",
        "under",
        "until",
        "why",
        "both",
        "because",
        "does",
        "doing",
        "during",
        "itself",
        "myself",
        "own",
        "off",
        "yet",
        "your",
        "yours",
        "ours",
        "she",
        "him",
        "i",
        "me",
        "my",
        "we",
        "us",
        "it",
        "is",
        "be",
        "do",
        "of",
        "in",
        "on",
        "at",
        "by",
        "to",
        "or",
        "as",
        "an",
        "if",
        "no",
        "up",
    ]
)

_SUFFIXES = (
    "ization",
    "ations",
    "ation",
    "ments",
    "ment",
    "ingly",
    "ings",
    "ing",
    "edly",
    "ies",
    "ied",
    "ed",
    "es",
    "ly",
    "s",
)


@lru_cache(maxsize=4096)
def stem(word: str) -> str:
    """A light suffix stripper: enough to match "tests"/"testing"/"tested" with "test"."""
    w = word.lower()
    for suffix in _SUFFIXES:
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            w = w[: -len(suffix)]
            if suffix in ("ies", "ied"):
                w += "y"
            break
    return w


STEM_TABLE_LIMIT = 8192
"""Known word runs kept for :func:`content_words` (the table is emptied when it grows past this)."""

_RUN_TABLE = bytes(
    (c | 0x20) if 65 <= c <= 90 else c if (48 <= c <= 57 or 97 <= c <= 122 or c == 95) else 32
    for c in range(256)
)
"""Byte translation for :func:`fold`: ASCII letters lower-cased, digits and ``_`` kept, the rest a space."""
_LEADING = b"0123456789_"


def _stop_runs() -> dict[bytes, str]:
    return {w.encode("ascii"): "" for w in STOP_WORDS}


_STEMS: dict[bytes, str] = _stop_runs()
"""word run -> the stem of its word, or "" when it holds no content word (a stop word, or fewer than
3 characters from its first letter on); a stem is never empty: it keeps at least 3 letters."""
_NOT_ASCII_LOWER = ("\u0130", "\u212a")
"""The characters whose lower case contains ASCII letters (``İ`` -> ``i̇``, Kelvin sign -> ``k``)."""


def fold_py(text: str) -> bytes:
    """``text`` lower-cased as ASCII bytes with every character that is not an ASCII letter, digit or
    ``_`` turned into a space, one byte per character of ``text.lower()``.

    ``fold(text).split()`` are then the runs of ``[a-z0-9_]`` of the lower-cased text: the words of
    :data:`WORD` are those runs from their first letter on (when 3 characters or more remain), and on
    an ASCII text they are exactly its ``\\w+`` runs. Only ``İ`` changes length when lower-cased.
    """
    if text.isascii():
        data = text.encode("ascii")
    elif _NOT_ASCII_LOWER[0] in text or _NOT_ASCII_LOWER[1] in text:
        data = text.lower().encode("ascii", "replace")
    else:
        # no other character lower-cases to ASCII: each one is a separator, whatever its case
        data = text.encode("ascii", "replace")
    return data.translate(_RUN_TABLE)


def _stem_run_py(run: bytes) -> str:
    """The table's value for a word run: the stem of its word, or "" (see :data:`_STEMS`)."""
    word = run.lstrip(_LEADING).decode("ascii")
    return "" if len(word) < 3 or word in STOP_WORDS else stem(word)


_stem_run: Callable[[bytes], str] = _stem_run_py
if KERNELS is not None:
    _native_stem_run: Callable[[bytes, frozenset[str]], str] = KERNELS.stem_run

    def _stem_run(run: bytes) -> str:
        """:func:`_stem_run_py` in C (the first sight of a run: every new word of ``check``)."""
        return _native_stem_run(run, STOP_WORDS)


def run_stems(runs: Sequence[bytes]) -> list[str]:
    """Content words (stems) of the word runs of a :func:`fold`-ed text, in order."""
    table = _STEMS
    try:
        return list(filter(None, map(table.__getitem__, runs)))
    except KeyError:
        pass
    if len(table) > STEM_TABLE_LIMIT:
        table.clear()
        table.update(_stop_runs())
    for r in set(runs).difference(table):
        table[r] = _stem_run(r)
    return list(filter(None, map(table.__getitem__, runs)))


def folded_stems_py(folded: bytes) -> list[str]:
    """Content words (stems) of a :func:`fold`-ed text: :func:`run_stems` of its word runs."""
    return run_stems(folded.split())


def _learn(run: bytes) -> str:
    """Add a run to the table of known runs (emptied first past its limit, as :func:`run_stems`
    does) and give its value."""
    table = _STEMS
    if len(table) > STEM_TABLE_LIMIT:
        table.clear()
        table.update(_stop_runs())
    value = table[run] = _stem_run(run)
    return value


def _folded_stems_native(folded: bytes) -> list[str]:
    """:func:`folded_stems_py` in C: each run looked up (in a C cache of the table, then in the
    table) without building the list of runs; a run not seen yet is learnt (:func:`_learn`)."""
    return _native_stems(folded, _STEMS, _learn)


fold: Callable[[str], bytes] = fold_py
"""The folding the Monitor runs: :func:`fold_py`, or the same in C (:mod:`~ctxhealth.native`)."""
folded_stems: Callable[[bytes], list[str]] = folded_stems_py
"""The content words of a folded text the Monitor computes: :func:`folded_stems_py`, or in C."""
if KERNELS is not None:
    _native_stems: Callable[[bytes, dict[bytes, str], Callable[[bytes], str]], list[str]] = KERNELS.stems
    fold = KERNELS.fold
    folded_stems = _folded_stems_native


def content_words(text: str) -> list[str]:
    """Stems of the words of ``text`` that carry meaning, in order (duplicates kept).

    The same list as ``[stem(w) for w in WORD.findall(text.lower()) if w not in STOP_WORDS]``,
    computed from the byte runs of :func:`fold` (C-speed translation and splitting) and one table
    lookup per run.
    """
    return folded_stems(fold(text))


def weighted_words(text: str) -> list[tuple[str, int]]:
    """Content words of ``text`` with the characters each one stands for: the text's length shared
    evenly (the first word takes the remainder), so the weights sum to ``len(text)``."""
    return weighted(text, content_words(text))


def weighted(text: str, stems: list[str]) -> list[tuple[str, int]]:
    """:func:`weighted_words` from the content words of ``text`` already computed."""
    n = len(stems)
    if not n:
        return []
    each, extra = divmod(len(text), n)
    out = [(w, each) for w in stems]
    out[0] = (stems[0], each + extra)
    return out
