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
from collections.abc import Callable
from functools import cache
from itertools import repeat
from operator import lshift, or_
from typing import TYPE_CHECKING, Any
from zlib import adler32, crc32

from ctxhealth.lazy import pattern as lazy_pattern
from ctxhealth.model import Role
from ctxhealth.native import KERNELS
from ctxhealth.signals.base import BoundedDict, CachedDetector, Signal, TurnWindow, matches_at_anchors
from ctxhealth.signals.events import Event
from ctxhealth.signals.thresholds import SignalThresholds

if TYPE_CHECKING:
    from ctxhealth.signals.state import IndicatorState

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
def _pattern(source: str, ascii_lower: bool = False) -> re.Pattern[str]:
    """A case-insensitive pattern compiled on first use (most turns need neither; see the hints).

    ``ascii_lower``: the same pattern lower-cased and case-sensitive, for lower-cased ASCII text (where
    it matches exactly where the case-insensitive one matches the text, about twice as fast).
    """
    if ascii_lower:
        assert "\\" not in source.replace("\\b", ""), "only \\b escapes are lower-case safe"
        return re.compile(source.lower())
    return re.compile(source, re.I)


def __getattr__(name: str) -> re.Pattern[str]:
    """``_CONTRADICTION``, ``_MISSING`` and ``_SENTENCE``: the compiled patterns, compiled on first
    use (no run needs ``_SENTENCE``, the definition :func:`sentences` is tested against)."""
    if name == "_SENTENCE":
        return lazy_pattern(_SENTENCE_SOURCE)
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
_SENTENCE_SOURCE = r"[^.!?\n]{40,}"
"""A sentence: 40 characters or more between ``.``, ``!``, ``?`` and newlines (the definition;
:func:`sentences` finds the same ones without the regex, whose retries are quadratic in a line)."""
SENTENCE_MIN = 40


_ANCHORS = {
    _CONTRADICTION_SOURCE: (
        "actually",
        "wait",
        "on second thought",
        "i was wrong",
        "that ",
        "this ",
        "my previous",
        "my earlier",
        "let me ",
        "revert",
        "scratch that",
        "i made a mistake",
        "i misread",
    ),
    _MISSING_SOURCE: (
        "could you ",
        "please ",
        "i don't ",
        "i do not ",
        "what is the ",
        "what was the ",
        "remind me",
        "i need ",
        "i would need ",
        "can you ",
    ),
}
"""For each pattern, lower-case texts that every match of it starts with (one per alternative)."""


_FOLDS_TO_ASCII = frozenset("\u0130\u0131\u017f\u212a")
"""The characters that match an ASCII letter case-insensitively (``İ ı ſ`` and the Kelvin sign)."""


def _ascii_stand_in_py(text: str) -> str | None:
    """``text`` with each non-ASCII character replaced by ``_`` when it is a word character, else by
    ``?``: the indicator patterns match the lower-cased stand-in where they match ``text``
    case-insensitively (word boundaries stay; neither ``_`` nor ``?`` occurs in a pattern) unless a
    character matches an ASCII letter case-insensitively — then None."""
    data = bytearray(text.encode("ascii", "replace"))
    at = data.find(63)
    while at >= 0:
        c = text[at]
        if c != "?":
            if c in _FOLDS_TO_ASCII:
                return None
            if c.isalnum():
                data[at] = 95
        at = data.find(63, at + 1)
    return data.decode("ascii")


def _opens_with(source: str, opening: str, plain: str | None) -> bool:
    """Whether the case-insensitive ``source`` matches in ``opening``; ``plain`` is ``opening``
    lower-cased when ASCII, else its lower-cased ASCII stand-in, or None when it has none.

    A match starts where one of the pattern's anchors occurs, so on ``plain`` the lower-cased
    pattern is tried only there (``match`` at a position sees the text before it, as a search does)
    instead of at every position; without ``plain`` the text is searched the plain way.
    """
    if plain is None:
        return _pattern(source).search(opening) is not None
    return matches_at_anchors(_pattern(source, True).match, plain, _ANCHORS[source])


def hinted_py(low: str) -> tuple[bool, bool]:
    """Whether any contradiction hint, and any missing-context hint, occurs in ``low`` (substring
    tests mapped at C speed, no generator)."""
    has = low.__contains__
    return any(map(has, _CONTRADICTION_HINTS)), any(map(has, _MISSING_HINTS))


def sentences(text: str) -> list[str]:
    """``_SENTENCE.findall(text)``: the maximal runs of ``text`` without ``.!?`` or a newline that are
    at least :data:`SENTENCE_MIN` characters long, found by splitting at C speed."""
    pieces = text.replace("!", ".").replace("?", ".").replace("\n", ".").split(".")
    return [p for p in pieces if len(p) >= SENTENCE_MIN]


_GLUE = " \x00 "
"""Joins the sentences of a reply so their whitespace is normalised in one pass: ``\x00`` is no
whitespace, so it stays a word of its own between two sentences' words."""


def sentence_hashes_py(found: list[str]) -> list[int]:
    """``[stable_hash(" ".join(s.split())) for s in found]``, computed at C speed. Most replies'
    sentences hold no whitespace but single spaces: each is stripped at its ends, and all are
    encoded at once. Otherwise the sentences are
    glued with :data:`_GLUE`, their whitespace normalised in one split and join, encoded once and cut
    apart again at the glue (UTF-8 encodes the glue on its own; plain UTF-8 encodes the same bytes
    as ``surrogatepass`` on text without lone surrogates, and much faster). A sentence of whitespace
    only, or a ``\x00`` in the text, would blur the cuts: those take the sentence-by-sentence way."""
    if not found:
        return []
    joined = "".join(found)
    if "  " not in joined and joined.isprintable():
        # no whitespace but single spaces (every other whitespace character is unprintable, as are
        # lone surrogates and NUL): normalising a sentence is stripping its ends, and NUL cuts them
        data = "\x00".join(map(str.strip, found)).encode()
        pieces = data.split(b"\x00")
        return list(map(or_, map(lshift, map(crc32, pieces), repeat(32)), map(adler32, pieces)))
    if "\x00" in joined:  # a sentence's own NUL could pass for the glue: cut at the wrong place
        return _sentence_hashes_one_by_one(found)
    glued = _GLUE.join(found)
    normed = " ".join(glued.split())
    try:
        data = normed.encode()
    except UnicodeEncodeError:
        data = normed.encode("utf-8", "surrogatepass")
    pieces = data.split(b" \x00 ")
    if len(pieces) != len(found):
        return _sentence_hashes_one_by_one(found)
    return list(map(or_, map(lshift, map(crc32, pieces), repeat(32)), map(adler32, pieces)))


def text_sentence_hashes_py(text: str) -> list[int]:
    """The hashes of the sentences of ``text``: ``sentence_hashes_py(sentences(text))``."""
    return sentence_hashes_py(sentences(text))


def lowered_sentence_hashes_py(text: str) -> list[int] | None:
    """The hashes of the sentences of ``text.lower()`` (:func:`text_sentence_hashes_py`), or None when
    ``text`` holds ``İ`` or ``Σ`` (:data:`_LOWER_CONTEXT`: lowering changes its length, or lowers a
    character by its context, so its sentences are not the spans of the text's own)."""
    if _LOWER_CONTEXT[0] in text or _LOWER_CONTEXT[1] in text:
        return None
    return text_sentence_hashes_py(text.lower())


def _sentence_hashes_one_by_one(found: list[str]) -> list[int]:
    normed = list(map(" ".join, map(str.split, found)))
    try:
        data = list(map(str.encode, normed))
    except UnicodeEncodeError:
        data = [n.encode("utf-8", "surrogatepass") for n in normed]
    return list(map(or_, map(lshift, map(crc32, data), repeat(32)), map(adler32, data)))


def _hinted_native(low: str) -> tuple[bool, bool]:
    """:func:`hinted_py` in C (one pass over ``low`` per hint list, by the hints' first letters)."""
    return _any_in(low, _CONTRADICTION_HINTS), _any_in(low, _MISSING_HINTS)


hinted: Callable[[str], tuple[bool, bool]] = hinted_py
"""The hint test the detector runs: :func:`hinted_py`, or the same in C (:mod:`~ctxhealth.native`)."""
sentence_hashes: Callable[[list[str]], list[int]] = sentence_hashes_py
"""The sentence hashes the detector keeps: :func:`sentence_hashes_py`, or the same in C."""
text_sentence_hashes: Callable[[str], list[int]] = text_sentence_hashes_py
"""The hashes of a text's sentences: :func:`text_sentence_hashes_py`, or in C (one pass, no pieces)."""
lowered_sentence_hashes: Callable[[str], list[int] | None] = lowered_sentence_hashes_py
"""The hashes of a lower-cased text's sentences: :func:`lowered_sentence_hashes_py`, or in C (one
pass, each character lower-cased as it is hashed: no lower-cased copy of the text)."""
_ascii_stand_in: Callable[[str], str | None] = _ascii_stand_in_py
"""The indicators' ASCII stand-in of an opening: :func:`_ascii_stand_in_py`, or the same in C."""
if KERNELS is not None:
    _any_in: Callable[[str, tuple[str, ...]], bool] = KERNELS.any_in
    _text_hashes: Callable[[str, int, bool], list[int] | None] = KERNELS.text_sentence_hashes
    hinted = _hinted_native
    sentence_hashes = KERNELS.sentence_hashes
    _ascii_stand_in = KERNELS.ascii_stand_in

    _plain_hashes: Callable[[str, int], list[int]] = KERNELS.text_sentence_hashes

    def text_sentence_hashes(text: str) -> list[int]:
        """:func:`text_sentence_hashes_py` in C."""
        return _plain_hashes(text, SENTENCE_MIN)

    def lowered_sentence_hashes(text: str) -> list[int] | None:
        """:func:`lowered_sentence_hashes_py` in C."""
        return _text_hashes(text, SENTENCE_MIN, True)


SENTENCE_LIMIT = 512
TEXT_LIMIT = 2000
OPENING_LIMIT = 800
_LOWER_CONTEXT = ("\u0130", "\u03a3")
"""``İ`` (lowers to two characters) and ``Σ`` (lowers by context): texts with them take the plain path."""


class IndicatorDetector(CachedDetector):
    """The early-warning indicators read from assistant text and tool calls."""

    def __init__(self, profile: SignalThresholds) -> None:
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

    def serialize(self) -> IndicatorState:
        from ctxhealth.signals.state import IndicatorState, pairs, window_state

        return IndicatorState(
            contradictions=window_state(self.contradictions),
            missing=window_state(self.missing),
            over_explained=window_state(self.over_explained),
            stale=window_state(self.stale),
            sentences=pairs(self.sentences),
            deleted=pairs(self.deleted),
            repeated_sentences=self.repeated_sentences,
            assistant_chars=self.assistant_chars,
            turn=self._turn,
        )

    def restore(self, state: IndicatorState) -> None:
        from ctxhealth.signals.state import bounded, load_window

        load_window(self.contradictions, state.contradictions)
        load_window(self.missing, state.missing)
        load_window(self.over_explained, state.over_explained)
        load_window(self.stale, state.stale)
        self.sentences = bounded(self.sentences.limit, state.sentences)
        self.deleted = bounded(self.deleted.limit, state.deleted)
        self.repeated_sentences = state.repeated_sentences
        self.assistant_chars = state.assistant_chars
        self._turn = state.turn
        self._snap = None

    def update(self, event: Event) -> None:
        turn = event.turn
        msg = event.message
        changed = False
        if msg.role is Role.ASSISTANT:
            text = event.text
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
        fence = probe.find("```")
        prose = probe if fence < 0 else probe[:fence]
        # reversals and requests open a reply: probe its start, with cheap substring hints first
        opening = prose[:OPENING_LIMIT]
        if prose.isascii():
            # lowering ASCII is a copy at C speed: cheaper than lowering each character as it is hashed
            low_prose = prose.lower()
            low = low_prose[:OPENING_LIMIT]
            hashes = text_sentence_hashes(low_prose)
        else:
            low = opening.lower()
            # lower-casing is per character and keeps lengths except for "İ" and a final "Σ":
            # without them the sentences of the lowered prose are the same spans, hashed without
            # lowering a copy of up to TEXT_LIMIT characters
            lowered = lowered_sentence_hashes(prose)
            hashes = (
                lowered if lowered is not None else sentence_hashes([s.lower() for s in sentences(prose)])
            )
        contradiction, missing = hinted(low)
        if contradiction or missing:
            if opening.isascii():
                plain: str | None = low
            else:
                stand_in = _ascii_stand_in(opening)
                plain = None if stand_in is None else stand_in.lower()
            if contradiction and _opens_with(_CONTRADICTION_SOURCE, opening, plain):
                self.contradictions.add(turn, index)
                changed = True
            if missing and _opens_with(_MISSING_SOURCE, opening, plain):
                self.missing.add(turn, index)
                changed = True
        repeated = 0
        sentences_seen = self.sentences
        limit = sentences_seen.limit
        move = sentences_seen.move_to_end
        for h in hashes:
            # BoundedDict.put, inlined
            if h in sentences_seen:
                repeated += 1
                move(h)
            sentences_seen[h] = index
            if len(sentences_seen) > limit:
                sentences_seen.popitem(last=False)
        total = len(hashes)
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

    def fired_count(self) -> int:
        """How many indicators fire now (the length of :meth:`fired`)."""
        return (
            (len(self.contradictions) >= 2)
            + (len(self.missing) >= 1)
            + (len(self.over_explained) >= 2)
            + (len(self.stale) >= 1)
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
