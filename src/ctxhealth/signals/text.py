"""Words for overlap measures: lower-cased, stop words removed, lightly stemmed (cached)."""

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


def content_words(text: str) -> list[str]:
    """Stems of the words of ``text`` that carry meaning, in order (duplicates kept)."""
    stop = STOP_WORDS
    return [stem(w) for w in WORD.findall(text.lower()) if w not in stop]


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
