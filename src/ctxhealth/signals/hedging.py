"""Hedging in assistant text: words of doubt and self-correction ("but", "still", "maybe", "wait").

An agent that keeps qualifying its own reasoning ("this still fails", "maybe the issue is", "wait,
actually") is less sure of its path; the count per turn is one input of the risk score. Counting is
linear in the message: one translation of the text into word runs (shared with the drift detector's
word extraction), a set intersection with the hedge words and a count of the few found; the
regular expression is only run for "hmm" and "not sure" when they may occur.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ctxhealth.lazy import pattern
from ctxhealth.native import KERNELS
from ctxhealth.signals.text import fold

if TYPE_CHECKING:
    from ctxhealth.signals.events import Event

HEDGE_WORDS: tuple[str, ...] = (
    "however",
    "but",
    "still",
    "wait",
    "actually",
    "maybe",
    "perhaps",
    "might",
    "seem",
    "seems",
    "probably",
    "not sure",
)
"""Words of doubt or self-correction, matched as whole words, case-insensitively (plus "hmm")."""

# The plain definition, kept for the rare parts of a count and for the tests: each alternative opens
# with a literal letter, and the lookbehind ``(?<!\w.)`` right after it is the ``\b`` before it.
_HEDGE = (
    r"(?:b(?<!\w.)ut|h(?<!\w.)(?:owever|m{2,})|s(?<!\w.)(?:till|eems?)|w(?<!\w.)ait|a(?<!\w.)ctually"
    r"|m(?<!\w.)(?:aybe|ight)|p(?<!\w.)(?:erhaps|robably)|n(?<!\w.)ot sure)\b"
)
"""The definition's source (``findall`` over the lower-cased text), never compiled by a count."""
_RARE = r"\b(?:hm{2,}|not sure)\b"
"""The two alternatives that are not one fixed word (counted apart, only when they may occur;
compiled on first use)."""
_WORD_RUNS = frozenset(w.encode("ascii") for w in (*HEDGE_WORDS, "seem") if " " not in w)
"""The hedges that are one fixed word, as :func:`~ctxhealth.signals.text.fold` runs."""
_WORD_TUPLE = tuple(sorted(_WORD_RUNS))


def count_hedges(text: str) -> int:
    """Number of hedge words in ``text`` (whole words, any case; "hmm", "hmmm" ... count too)."""
    folded = fold(text)
    return count_folded(text, folded, folded.split())


def count_folded(text: str, folded: bytes, runs: Sequence[bytes]) -> int:
    """:func:`count_hedges` from ``folded = fold(text)`` and its runs, already computed.

    A hedge is a whole ``\\w+`` word of the lower-cased text, and on an ASCII text the word runs of
    ``folded`` are exactly those words, so most replies are counted with a set intersection and a
    list count (C speed, no regex). On other text a run may continue into a non-ASCII letter, so
    each candidate's occurrences are checked against their neighbours in the text itself (cheaper
    than first asking whether any non-ASCII character is a letter: that scans all of them).
    """
    found = _WORD_RUNS.intersection(runs)
    n = 0
    if found:
        n = sum(map(runs.count, found)) if text.isascii() else _verified(text, folded, found)
    if b"hmm" in folded or b"not sure" in folded:
        n += len(pattern(_RARE).findall(text.lower()))
    return n


def count_event_py(event: Event) -> int:
    """:func:`count_hedges` of an assistant event's text, from its folded text and word runs (the
    runs stay on the event for the content words)."""
    return count_folded(event.text, event.folded, event.runs)


def _count_event_native(event: Event) -> int:
    """:func:`count_event_py` in C: the fixed hedge words are counted on the folded text, each run
    checked against its neighbours in the text (as :func:`_verified` does), without splitting it."""
    text = event.text
    folded = event.folded
    base = text.lower() if not text.isascii() and ("\u0130" in text or "\u212a" in text) else text
    n = _whole_runs(base, folded, _WORD_TUPLE)
    if b"hmm" in folded or b"not sure" in folded:
        n += len(pattern(_RARE).findall(text.lower()))
    return n


count_event: Callable[[Event], int] = count_event_py
"""The hedge count the Monitor runs on each reply: :func:`count_event_py`, or the same in C."""
if KERNELS is not None:
    _whole_runs: Callable[[str, bytes, tuple[bytes, ...]], int] = KERNELS.whole_runs
    count_event = _count_event_native


def _verified(text: str, folded: bytes, words: frozenset[bytes]) -> int:
    """Occurrences of ``words`` as whole runs of ``folded`` that no non-ASCII letter adjoins in the
    lower-cased text (``folded`` is position for position that text, see ``fold``)."""
    base = text.lower() if "\u0130" in text or "\u212a" in text else text
    size = len(folded)
    n = 0
    for word in words:
        pos = folded.find(word)
        while pos >= 0:
            end = pos + len(word)
            if (
                (pos == 0 or folded[pos - 1] == 32)
                and (end == size or folded[end] == 32)
                and not (pos and _is_word(base[pos - 1]))
                and not (end < size and _is_word(base[end]))
            ):
                n += 1
            pos = folded.find(word, end)
    return n


def _is_word(ch: str) -> bool:
    """Whether ``ch`` is a ``\\w`` character (for one character of the text)."""
    return ch.isalnum() or ch == "_"
