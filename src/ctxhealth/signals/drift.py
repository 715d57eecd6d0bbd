"""Task drift: how much of the original instruction the agent's recent output still talks about.

similarity = |instruction words ∩ words of the last ``drift_window_chars`` characters of assistant
output| / |instruction words| (asymmetric on purpose: the output may say much more than the
request). Words are stop-word filtered and lightly stemmed. The signal fires when similarity is
below ``drift_threshold`` and the fill is above the sweet spot.

The original instruction is the first real user request; a compaction summary never replaces it.
The recent-output window is kept incrementally: a deque of (stem, chars) whose character total is
trimmed to the window, and a count of how many window stems are instruction words, so an update
costs O(new text), never O(history); a reply of a quarter of the window or more recounts the window
from its last characters instead (bounded by the window, and faster than word-by-word updates). The
tail's text is kept as segments with their content words, so that recount re-reads only the text of
the new reply and of a segment the window cut into, not the whole window.
"""

from __future__ import annotations

from collections import Counter, deque
from itertools import repeat
from typing import Any

from ctxhealth.model import Role, TextBlock
from ctxhealth.signals.base import CachedDetector, Signal
from ctxhealth.signals.events import Event
from ctxhealth.signals.profile import Profile
from ctxhealth.signals.text import content_words, weighted

INSTRUCTION_WORD_LIMIT = 400


class DriftDetector(CachedDetector):
    """Similarity of recent output to the original instruction (1.0 on topic)."""

    def __init__(self, profile: Profile, sweet_spot: int) -> None:
        self.profile = profile
        self.sweet_spot = sweet_spot
        self.instruction = ""
        self.instruction_index: int | None = None
        self.pinned = False
        self.instruction_words: frozenset[str] = frozenset()
        self._words: deque[tuple[str, int, int]] = deque()
        self._chars = 0
        self._counts: Counter[str] = Counter()
        self._hits = 0
        # the last ``drift_window_chars`` characters of output as "\n"-joined segments (text, its
        # content words or None when the text was cut and not yet recounted); ``_seg_chars`` is the
        # joined length
        self._segs: deque[tuple[str, list[str] | None]] = deque()
        self._seg_chars = 0
        self.similarity = 1.0
        self.fill = 0
        self._last_output = 0

    def set_instruction(self, text: str, index: int | None = None) -> None:
        """Pin the original instruction; later user messages and compaction summaries never replace it."""
        self.pinned = True
        self.instruction = text
        self.instruction_index = index
        words: dict[str, None] = {}
        for w in content_words(text):
            words.setdefault(w, None)
            if len(words) >= INSTRUCTION_WORD_LIMIT:
                break
        self.instruction_words = frozenset(words)
        self._hits = sum(1 for w in self._counts if w in self.instruction_words)
        self._recompute()

    def update(self, event: Event) -> None:
        msg = event.message
        fill = event.fill
        if fill != self.fill:
            # the reading depends on the fill only through "above the sweet spot"
            if (fill >= self.sweet_spot) != (self.fill >= self.sweet_spot):
                self._snap = None
            self.fill = fill
        if msg.role is Role.USER:
            if not self.pinned and msg.compaction is None and not event.results:
                text = msg.text
                if text.strip():
                    self.set_instruction(text, event.index)
            return
        if msg.role is not Role.ASSISTANT:
            return
        text = "\n".join(b.text for b in msg.blocks if isinstance(b, TextBlock))
        if not text:
            return
        limit = self.profile.drift_window_chars
        if len(text) >= limit:
            # the reply alone fills the window: only its last characters count
            tail = text[-limit:]
            stems = content_words(tail)
            self._segs = deque(((tail, stems),))
            self._seg_chars = len(tail)
            self._replace(stems, len(tail), event.index)
            self._last_output = event.index
            self._recompute()
            return
        stems = content_words(text)
        self._append_segment(text, stems, limit)
        if len(text) * 4 >= limit:
            # a long reply: recounting the window from its text is cheaper than word-by-word updates
            self._replace(self._tail_words(), self._seg_chars, event.index)
        else:
            self._push(weighted(text, stems), event.index)
        self._last_output = event.index
        self._recompute()

    def _append_segment(self, text: str, stems: list[str], limit: int) -> None:
        """Add ``text`` to the output tail and cut the tail to its last ``limit`` characters."""
        segs = self._segs
        total = self._seg_chars + len(text) + (1 if segs else 0)
        segs.append((text, stems))
        # drop whole segments (and the separator after each) that lie before the window
        while total - len(segs[0][0]) - 1 >= limit:
            total -= len(segs.popleft()[0]) + 1
        cut = total - limit
        if cut > 0:
            first = segs[0][0]
            segs[0] = (first[cut:], None)
            total -= cut
        self._seg_chars = total

    def _tail_words(self) -> list[str]:
        """Content words of the tail: each segment's, in order (segments are "\n"-separated)."""
        out: list[str] = []
        segs = self._segs
        for i, (text, stems) in enumerate(segs):
            if stems is None:
                stems = content_words(text)
                segs[i] = (text, stems)
            out.extend(stems)
        return out

    @property
    def tail(self) -> str:
        """The last ``drift_window_chars`` characters of assistant output."""
        return "\n".join(t for t, _ in self._segs)

    def _replace(self, stems: list[str], chars: int, index: int) -> None:
        """The new text fills the whole window on its own: rebuild it in one go (C-speed counting)."""
        n = len(stems)
        each = chars // n if n else 0
        self._words = deque(zip(stems, repeat(each), repeat(index)))
        self._chars = each * n
        self._counts = Counter(stems)
        self._hits = len(self.instruction_words.intersection(self._counts))

    def _push(self, words: list[tuple[str, int]], index: int) -> None:
        instr = self.instruction_words
        counts = self._counts
        window = self._words
        append = window.append
        chars = self._chars
        hits = self._hits
        for w, c in words:
            append((w, c, index))
            chars += c
            n = counts.get(w, 0) + 1
            counts[w] = n
            if n == 1 and w in instr:
                hits += 1
        limit = self.profile.drift_window_chars
        popleft = window.popleft
        while chars > limit and window:
            w, c, _ = popleft()
            chars -= c
            n = counts[w] - 1
            if n:
                counts[w] = n
            else:
                del counts[w]
                if w in instr:
                    hits -= 1
        self._chars = chars
        self._hits = hits

    def _recompute(self) -> None:
        n = len(self.instruction_words)
        self.similarity = self._hits / n if n and self._words else 1.0
        self._snap = None

    @property
    def has_output(self) -> bool:
        """Whether any assistant text was seen (else the similarity is the 1.0 of "nothing yet")."""
        return bool(self._segs)

    @property
    def above_sweet_spot(self) -> bool:
        return self.fill >= self.sweet_spot

    @property
    def drifting(self) -> bool:
        return self.above_sweet_spot and self.similarity < self.profile.drift_threshold

    def _take(self) -> tuple[Any, ...]:
        first = self._words[0][2] if self._words else self._last_output
        return (
            self.similarity,
            self.drifting,
            (self.instruction_index, first, self._last_output),
            self._hits,
            len(self.instruction_words),
            self.sweet_spot,
        )

    def render(self, snap: tuple[Any, ...]) -> tuple[Signal, ...]:
        similarity, drifting, where, hits, n, sweet_spot = snap
        evidence = tuple(sorted({i for i in where if i is not None}))
        p = self.profile
        return (
            Signal(
                "drift",
                similarity,
                drifting,
                evidence,
                f"{hits}/{n} instruction words in the last {p.drift_window_chars} chars of output "
                f"(fires below {p.drift_threshold} above {sweet_spot} tokens)",
            ),
        )
