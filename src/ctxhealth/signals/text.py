"""Words for overlap measures: lower-cased, stop words removed, lightly stemmed (cached).

:func:`content_words` is on every turn's path, so it is written for speed with the same result as
``[stem(w) for w in WORD.findall(text.lower()) if w not in STOP_WORDS]``: words are only ASCII, so
a text with other characters is first folded to ASCII (each other character becomes ``?``, a
separator like it was; the two characters whose lower case is ASCII, ``İ`` and the Kelvin sign, keep
the plain path), which makes lowering and matching cheap on text with emoji; and the stop-word test
and the stemming are one lookup in a bounded table of known words.
"""

from __future__ import annotations

import re
from functools import lru_cache

WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]{2,}")

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
"""Known words kept for :func:`content_words` (the table is emptied when it grows past this)."""
_STEMS: dict[str, str] = dict.fromkeys(STOP_WORDS, "")
"""word -> its stem, or "" for a stop word (a stem is never empty: it keeps at least 3 letters)."""
_NOT_ASCII_LOWER = ("\u0130", "\u212a")
"""The characters whose lower case contains ASCII letters (``İ`` -> ``i̇``, Kelvin sign -> ``k``)."""


def content_words(text: str) -> list[str]:
    """Stems of the words of ``text`` that carry meaning, in order (duplicates kept)."""
    if text.isascii() or _NOT_ASCII_LOWER[0] in text or _NOT_ASCII_LOWER[1] in text:
        low = text.lower()
    else:
        low = text.encode("ascii", "replace").decode("ascii").lower()
    words = WORD.findall(low)
    table = _STEMS
    try:
        return list(filter(None, map(table.__getitem__, words)))
    except KeyError:
        pass
    if len(table) > STEM_TABLE_LIMIT:
        table.clear()
        table.update(dict.fromkeys(STOP_WORDS, ""))
    for w in words:
        if w not in table:
            table[w] = stem(w)
    return list(filter(None, map(table.__getitem__, words)))


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
