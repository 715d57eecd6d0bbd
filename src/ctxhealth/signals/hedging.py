"""Hedging in assistant text: words of doubt and self-correction ("but", "still", "maybe", "wait").

An agent that keeps qualifying its own reasoning ("this still fails", "maybe the issue is", "wait,
actually") is less sure of its path; the count per turn is one input of the risk score. Counting is
one pass of one compiled pattern over the lower-cased text, so it is linear in the message.
"""

from __future__ import annotations

import re

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

# Each alternative opens with a literal letter, so the regex engine jumps between the positions that
# hold one of those letters (a leading ``\b`` would defeat that skip and test every position); the
# lookbehind ``(?<!\w.)`` right after that letter is the ``\b`` before it. Twice as fast as
# ``\b(?:but|however|...)\b``; tests check it finds exactly what that plain pattern finds.
_HEDGE = re.compile(
    r"(?:b(?<!\w.)ut|h(?<!\w.)(?:owever|m{2,})|s(?<!\w.)(?:till|eems?)|w(?<!\w.)ait|a(?<!\w.)ctually"
    r"|m(?<!\w.)(?:aybe|ight)|p(?<!\w.)(?:erhaps|robably)|n(?<!\w.)ot sure)\b"
)


def count_hedges(text: str) -> int:
    """Number of hedge words in ``text`` (whole words, any case; "hmm", "hmmm" ... count too)."""
    return len(_HEDGE.findall(text.lower()))
