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

# HEDGE_WORDS grouped by first letter: the regex engine then rejects most positions at once (twice
# as fast as a flat alternation); tests check it matches exactly HEDGE_WORDS plus "hmm", "hmmm" ...
_HEDGE = re.compile(
    r"\b(?:b(?:ut)|h(?:owever|m{2,})|s(?:till|eems?)|w(?:ait)|a(?:ctually)|m(?:aybe|ight)"
    r"|p(?:erhaps|robably)|n(?:ot sure))\b"
)


def count_hedges(text: str) -> int:
    """Number of hedge words in ``text`` (whole words, any case; "hmm", "hmmm" ... count too)."""
    return len(_HEDGE.findall(text.lower()))
