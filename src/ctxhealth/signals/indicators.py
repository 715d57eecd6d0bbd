"""Early-warning indicators (the spec's list), each counted over the last ``indicator_window`` turns.

* repeated tool calls — taken from :class:`~ctxhealth.signals.repetition.RepetitionDetector`
  (identical calls, re-reads without an edit) and combined by the monitor;
* contradictory reasoning — assistant text that reverses an earlier step ("actually, ...",
  "I was wrong", "let me revert ...");
* missing prior context — the assistant asks for, or says it lacks, what it was given;
* over-explanation — assistant text repeating sentences it already wrote;
* stale references — a call that reads a path deleted earlier (and not re-created).

Two or more fired indicators raise the zone one step (the monitor applies it).
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from ctxhealth.model import Role, TextBlock
from ctxhealth.signals.base import BoundedDict, CachedDetector, Signal, TurnWindow, stable_hash
from ctxhealth.signals.events import Event
from ctxhealth.signals.profile import Profile

# Each pattern opens with a lookahead on the letters its alternatives start with: a position that
# cannot start a match is rejected by one class test instead of trying every alternative (the same
# matches, case-insensitively as before; tests compare with the plain patterns).
_CONTRADICTION_SOURCE = (
    r"(?=[awoitmlrs])\b(?:actually,? (?:that|this|it|I|the)\b|wait[,.!]|on second thought|I was wrong|"
    r"(?:that|this) (?:was|is) (?:wrong|incorrect|not right)|my (?:previous|earlier) (?:approach|assumption|"
    r"fix|change|edit|analysis) (?:was|is)|let me (?:revert|undo)|"
    r"revert(?:ing)? (?:my|the|this) (?:change|edit|fix)|"
    r"scratch that|I made a mistake|I misread|that didn't work|that broke)"
)
_MISSING_SOURCE = (
    r"(?=[cpiwr])(?:could you (?:please )?(?:provide|share|tell|clarify|paste)|"
    r"please (?:provide|share|clarify|paste)|"
    r"I (?:don't|do not) (?:have|see) (?:access|the original|any information)|"
    r"what (?:is|was) the (?:original )?(?:task|request|goal)|remind me|"
    r"I (?:need|would need) (?:more|the) (?:context|information|details)|can you (?:provide|share|paste))"
)


@cache
def _pattern(source: str) -> re.Pattern[str]:
    """A case-insensitive pattern compiled on first use (most turns need neither; see the hints)."""
    return re.compile(source, re.I)


def __getattr__(name: str) -> re.Pattern[str]:
    """``_CONTRADICTION`` and ``_MISSING``: the compiled patterns, compiled on first use."""
    if name == "_CONTRADICTION":
        return _pattern(_CONTRADICTION_SOURCE)
    if name == "_MISSING":
        return _pattern(_MISSING_SOURCE)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_CONTRADICTION_HINTS = (
    "actually",
    "wait",
    "second thought",
    "wrong",
    "incorrect",
    "not right",
    "previous",
    "earlier",
    "revert",
    "undo",
    "scratch that",
    "mistake",
    "misread",
    "didn't work",
    "broke",
)
_MISSING_HINTS = (
    "provide",
    "share",
    "clarify",
    "paste",
    "don't have",
    "do not have",
    "don't see",
    "do not see",
    "original",
    "remind me",
    "need more",
    "need the",
)
_SENTENCE = re.compile(r"[^.!?\n]{40,}")
SENTENCE_LIMIT = 512
TEXT_LIMIT = 2000
OPENING_LIMIT = 800
_LOWER_CONTEXT = ("\u0130", "\u03a3")
"""``İ`` (lowers to two characters) and ``Σ`` (lowers by context): texts with them take the plain path."""


class IndicatorDetector(CachedDetector):
    """The early-warning indicators read from assistant text and tool calls."""

    def __init__(self, profile: Profile) -> None:
        self.profile = profile
        w = profile.indicator_window
        self.contradictions = TurnWindow(w)
        self.missing = TurnWindow(w)
        self.over_explained = TurnWindow(w)
        self.stale = TurnWindow(w)
        self.sentences: BoundedDict[int, int] = BoundedDict(SENTENCE_LIMIT)
        self.deleted: BoundedDict[str, int] = BoundedDict(128)
        self.repeated_sentences = 0
        self.assistant_chars = 0
        self._turn = 0

    def update(self, event: Event) -> None:
        turn = event.turn
        msg = event.message
        changed = False
        if msg.role is Role.ASSISTANT:
            text = "\n".join(b.text for b in msg.blocks if isinstance(b, TextBlock))
            if text:
                changed = self._text(text, turn, event.index)
        for call in event.calls:
            for path in call.reads:
                if path in self.deleted:
                    self.stale.add(turn, event.index)
                    changed = True
            for path in call.edits:
                self.deleted.pop(path, None)
            for path in call.deletes:
                self.deleted.put(path, event.index)
        if turn != self._turn:
            self._turn = turn
            for window in (self.contradictions, self.missing, self.over_explained, self.stale):
                changed = window.prune(turn) or changed
        if changed:
            self._snap = None

    def _text(self, text: str, turn: int, index: int) -> bool:
        changed = False
        self.assistant_chars += len(text)
        probe = text[:TEXT_LIMIT]
        # the visible reasoning only: a code block is an action, not an explanation
        prose = probe.split("```", 1)[0]
        # reversals and requests open a reply: probe its start, with cheap substring hints first
        opening = prose[:OPENING_LIMIT]
        # lower-casing is per character and keeps lengths except for "İ" and a final "Σ": without
        # them the prose is lowered once and its sentences are the same spans of the lowered text
        if _LOWER_CONTEXT[0] in prose or _LOWER_CONTEXT[1] in prose:
            low = opening.lower()
            found = [s.lower() for s in _SENTENCE.findall(prose)]
        else:
            low_prose = prose.lower()
            low = low_prose[:OPENING_LIMIT]
            found = _SENTENCE.findall(low_prose)
        if any(h in low for h in _CONTRADICTION_HINTS) and _pattern(_CONTRADICTION_SOURCE).search(opening):
            self.contradictions.add(turn, index)
            changed = True
        if any(h in low for h in _MISSING_HINTS) and _pattern(_MISSING_SOURCE).search(opening):
            self.missing.add(turn, index)
            changed = True
        repeated = 0
        sentences = self.sentences
        for s in found:
            h = stable_hash(" ".join(s.split()))
            if h in sentences:
                repeated += 1
            sentences.put(h, index)
        total = len(found)
        self.repeated_sentences += repeated
        if total and (repeated >= 2 or (repeated and repeated * 2 >= total)):
            self.over_explained.add(turn, index)
            changed = True
        return changed

    def _take(self) -> tuple[Any, ...]:
        return (
            len(self.contradictions),
            self.contradictions.evidence(),
            len(self.missing),
            self.missing.evidence(),
            len(self.over_explained),
            self.over_explained.evidence(),
            len(self.stale),
            self.stale.evidence(),
        )

    def fired(self) -> list[str]:
        """Names of the indicators firing now (thresholds as in :meth:`render`)."""
        out = []
        if len(self.contradictions) >= 2:
            out.append("contradictions")
        if len(self.missing) >= 1:
            out.append("missing context")
        if len(self.over_explained) >= 2:
            out.append("over-explanation")
        if len(self.stale) >= 1:
            out.append("stale references")
        return out

    def render(self, snap: tuple[Any, ...]) -> tuple[Signal, ...]:
        contra, contra_idx, missing, missing_idx, over, over_idx, stale, stale_idx = snap
        w = self.profile.indicator_window
        return (
            Signal(
                "contradictions",
                float(contra),
                contra >= 2,
                contra_idx,
                f"{contra} reversals of an earlier step in the last {w} turns (fires at 2)",
            ),
            Signal(
                "missing_context",
                float(missing),
                missing >= 1,
                missing_idx,
                f"{missing} requests for context already given in the last {w} turns (fires at 1)",
            ),
            Signal(
                "over_explanation",
                float(over),
                over >= 2,
                over_idx,
                f"{over} replies repeating earlier text in the last {w} turns (fires at 2)",
            ),
            Signal(
                "stale_references",
                float(stale),
                stale >= 1,
                stale_idx,
                f"{stale} reads of paths deleted earlier in the last {w} turns (fires at 1)",
            ),
        )
