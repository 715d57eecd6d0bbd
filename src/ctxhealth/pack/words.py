"""Words for similarity: identifiers split on case and ``_``, path words, and the task's named identifiers.

One splitter serves files and task text, so both sides of the BM25 match speak the same words.
A compound identifier (``RenameContentType``, ``update_fields``) yields its lower-cased whole
form as well as its parts, so a task that names it exactly matches it with a rare, heavy term.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z]|\d|\b)|[A-Z]?[a-z]+|[A-Z]+|\d+")
_CODE_LIKE = re.compile(
    r"`([^`\n]{2,80})`"  # `quoted`
    r"|\b([A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)+)(?:\(\))?"  # dotted.path or attr.access
    r"|\b([A-Za-z_]\w*)\(\)"  # call()
    r"|\b([a-z0-9]+_[\w]+|_[\w]+|[A-Za-z][a-z0-9]+[A-Z]\w*|[A-Z]{2,}[a-z]\w*)\b"  # snake_case / CamelCase
)
_PATH_LIKE = re.compile(r"[\w.-]+(?:/[\w.-]+)+\.\w+|[\w-]+\.(?:py|js|ts|tsx|jsx|go|rs|java|html|txt|md)\b")

STOPWORDS = frozenset(
    {
        "a",
        "all",
        "also",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "bug",
        "but",
        "by",
        "can",
        "case",
        "class",
        "cls",
        "could",
        "def",
        "description",
        "did",
        "do",
        "does",
        "e",
        "eg",
        "etc",
        "false",
        "for",
        "from",
        "g",
        "get",
        "had",
        "has",
        "have",
        "here",
        "how",
        "i",
        "ie",
        "if",
        "import",
        "in",
        "into",
        "is",
        "issue",
        "it",
        "its",
        "just",
        "like",
        "made",
        "make",
        "makes",
        "may",
        "me",
        "might",
        "more",
        "most",
        "my",
        "need",
        "needs",
        "new",
        "no",
        "none",
        "not",
        "of",
        "ok",
        "old",
        "on",
        "one",
        "only",
        "or",
        "other",
        "our",
        "problem",
        "return",
        "same",
        "see",
        "self",
        "set",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "to",
        "too",
        "true",
        "two",
        "use",
        "used",
        "using",
        "very",
        "want",
        "wants",
        "was",
        "way",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "why",
        "will",
        "with",
        "work",
        "working",
        "works",
        "would",
        "you",
        "your",
    }
)
MIN_WORD_CHARS = 2


@lru_cache(maxsize=200_000)
def split_identifier(identifier: str) -> tuple[str, ...]:
    """Lower-cased parts of ``identifier`` split on ``_`` and case changes, plus the whole form."""
    parts: list[str] = []
    for chunk in identifier.split("_"):
        if chunk:
            parts.extend(p.lower() for p in _CAMEL.findall(chunk))
    whole = identifier.strip("_").lower()
    words = [p for p in parts if len(p) >= MIN_WORD_CHARS and p not in STOPWORDS]
    if len(parts) > 1 and len(whole) >= MIN_WORD_CHARS:
        words.append(whole)
    return tuple(words)


def text_words(text: str) -> list[str]:
    """Every word of ``text`` (identifiers split; the whole compound form kept as well)."""
    out: list[str] = []
    for identifier in _WORD.findall(text):
        out.extend(split_identifier(identifier))
    return out


def word_bag(text: str) -> Counter[str]:
    """How often each word of ``text`` occurs (the same words as :func:`text_words`, counted)."""
    bag: Counter[str] = Counter()
    get = bag.get
    split = split_identifier
    for identifier, count in Counter(_WORD.findall(text)).items():
        for word in split(identifier):
            bag[word] = get(word, 0) + count
    return bag


def path_words(path: str) -> list[str]:
    """Words of a relative path: directories and the file name without its suffix."""
    stem = path.rsplit(".", 1)[0] if "." in path.rsplit("/", 1)[-1] else path
    return text_words(stem.replace("/", " ").replace("-", " ").replace(".", " "))


def named_identifiers(task: str) -> list[str]:
    """Identifiers the task text names as code (quoted, dotted, called, snake_case or CamelCase)."""
    found: list[str] = []
    for match in _CODE_LIKE.finditer(task):
        text = next(g for g in match.groups() if g)
        for piece in re.split(r"[^\w]+", text):
            if piece and not piece.isdigit() and len(piece) >= MIN_WORD_CHARS:
                found.append(piece)
    return found


def named_paths(task: str) -> list[str]:
    """File paths (``a/b/c.py``, ``models.py``) the task text names."""
    return [m.group(0).strip("./") for m in _PATH_LIKE.finditer(task)]
