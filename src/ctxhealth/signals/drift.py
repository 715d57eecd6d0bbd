"""Task drift: how much of the current task the agent's recent output still talks about.

similarity = |task words ∩ words of the last ``drift_window_chars`` characters of assistant output|
/ |task words| (asymmetric on purpose: the output may say much more than the request). Words are
stop-word filtered and lightly stemmed. The signal fires when similarity is below
``drift_threshold`` and the fill is above the sweet spot.

The task is the person's *current* request: the latest real user request (tool results, pasted
terminal output, harness wrappers and compaction summaries are not requests, see
:mod:`~ctxhealth.signals.requests`), with short follow-ups ("go ahead") folded into the request
before them. People give new requests mid-session ("now create a plan in status.md"): measuring
against the first request would call work on the new one drift. The original request is kept
(``instruction``) and named in the signal's evidence and detail next to the current one.

The recent-output window is a sequence of words, each standing for a share of the characters of
the reply it came from, trimmed from the front to ``drift_window_chars`` characters; a reply of a
quarter of the window or more recounts the window from the last characters of output instead
(bounded by the window). It is kept as *runs*, one per reply (its stems, how many of them were
trimmed, the characters each stands for), so trimming is arithmetic on a run, never a loop over
words; and only the task's words are tracked, each by the last position (a running word number)
where it occurs: it is in the window while that position is, and a heap of positions says when it
leaves. An update costs O(new words + task words in them), never O(history); a new request
re-tracks its words over the window (bounded by the window). The tail's text is kept as segments
with their content words, so a recount re-reads only the text of the new reply and of a segment
the window cut into.

Drift is read only on output written *for* the current request: until the agent has written a whole
window (``drift_window_chars``) of output since that request (:attr:`DriftDetector.measured`), the
window still holds what it wrote for an earlier one, and a low overlap says only that the person
changed the subject, so drift does not fire (the policy reads the similarity as 1.0, "nothing to
call drift yet"). A short follow-up continues its request and does not restart the count. The
similarity itself is computed as always (what the risk model and the per-turn tables read).
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable
from itertools import count, islice
from typing import TYPE_CHECKING, Any

from ctxhealth.model import Role
from ctxhealth.native import KERNELS
from ctxhealth.signals.base import CachedDetector, Signal
from ctxhealth.signals.events import Event
from ctxhealth.signals.requests import TaskTracker
from ctxhealth.signals.text import content_words
from ctxhealth.signals.thresholds import SignalThresholds

if TYPE_CHECKING:
    from ctxhealth.signals.state import DriftState

INSTRUCTION_WORD_LIMIT = 400
REQUEST_EXCERPT_CHARS = 60
FEW_FOUND = 8
"""Up to this many task words found in a reply, each is searched from the reply's end; more, and one
dict of every word's last position is built instead (the same positions)."""

# a run of the window: [stems, trimmed (stems dropped from its front), each (characters per word),
# extra (more characters of its first word), index (the message it came from), base (the running
# number of its first word)]
_STEMS, _CUT, _EACH, _EXTRA, _INDEX, _BASE = range(6)


def _last_positions_py(stems: list[str], words: frozenset[str], base: int, start: int = 0) -> dict[str, int]:
    """The running number of the last occurrence in ``stems[start:]`` of each of ``words`` found."""
    found = words.intersection(stems[start:] if start else stems)
    if not found:
        return {}
    if len(found) <= FEW_FOUND:
        # a few words: each one's last occurrence, searched from the end
        rev = stems[::-1]
        top = base + len(stems) - 1
        return {w: top - rev.index(w) for w in found}
    # a dict built from (stem, number) pairs keeps each stem's last number (built at C speed)
    last = dict(zip(stems, count(base)))
    return {w: last[w] for w in found}


_last_positions: Callable[[list[str], frozenset[str], int, int], dict[str, int]] = _last_positions_py
"""The task-word search drift runs: :func:`_last_positions_py`, or the same in C (one pass for the
words found, one from the end for their last positions: the same dict, in the same order)."""
if KERNELS is not None:
    _last_positions = KERNELS.last_positions


class DriftDetector(CachedDetector):
    """Similarity of recent output to the current task (1.0 on topic); see the module docstring."""

    def __init__(self, profile: SignalThresholds, sweet_spot: int) -> None:
        self.profile = profile
        self.sweet_spot = sweet_spot
        self.task = TaskTracker()
        # the original request (``instruction``) and the request drift is measured against
        self.instruction = ""
        self.instruction_index: int | None = None
        self.request = ""
        self.request_index: int | None = None
        self.pinned = False
        self.instruction_words: frozenset[str] = frozenset()
        self._runs: deque[list[Any]] = deque()
        self._chars = 0
        self._count = 0
        self._next = 0
        # task word -> running number of its last occurrence in the window; a heap of
        # (number, word) says when each leaves (entries superseded by a later occurrence are skipped)
        self._last: dict[str, int] = {}
        self._heap: list[tuple[int, str]] = []
        self._hits = 0
        # the last ``drift_window_chars`` characters of output as "\n"-joined segments (text, its
        # content words or None when the text was cut and not yet recounted); ``_seg_chars`` is the
        # joined length
        self._segs: deque[tuple[str, list[str] | None]] = deque()
        self._seg_chars = 0
        self.similarity = 1.0
        self.fill = 0
        self._last_output = 0
        # characters of output written since the current request stood (see ``measured``)
        self.since_request = 0

    def serialize(self) -> DriftState:
        from ctxhealth.signals.state import DriftRun, DriftState, TaskState

        t = self.task
        return DriftState(
            sweet_spot=self.sweet_spot,
            task=TaskState(
                min_words=t.min_words,
                original=t.original,
                original_index=t.original_index,
                current=t.current,
                current_index=t.current_index,
                follow_ups=list(t.follow_ups),
                words=list(t.words),
                requests=t.requests,
            ),
            instruction=self.instruction,
            instruction_index=self.instruction_index,
            request=self.request,
            request_index=self.request_index,
            pinned=self.pinned,
            instruction_words=sorted(self.instruction_words),
            runs=[
                DriftRun(list(r[_STEMS]), r[_CUT], r[_EACH], r[_EXTRA], r[_INDEX], r[_BASE])
                for r in self._runs
            ],
            chars=self._chars,
            count=self._count,
            next=self._next,
            last=list(self._last.items()),
            heap=list(self._heap),
            hits=self._hits,
            segments=[(text, None if stems is None else list(stems)) for text, stems in self._segs],
            segment_chars=self._seg_chars,
            similarity=self.similarity,
            fill=self.fill,
            last_output=self._last_output,
            since_request=self.since_request,
        )

    def restore(self, state: DriftState) -> None:
        self.sweet_spot = state.sweet_spot
        t = state.task
        self.task = TaskTracker(
            t.min_words,
            t.original,
            t.original_index,
            t.current,
            t.current_index,
            list(t.follow_ups),
            list(t.words),
            t.requests,
        )
        self.instruction = state.instruction
        self.instruction_index = state.instruction_index
        self.request = state.request
        self.request_index = state.request_index
        self.pinned = state.pinned
        self.instruction_words = frozenset(state.instruction_words)
        self._runs = deque([list(r.stems), r.cut, r.each, r.extra, r.index, r.base] for r in state.runs)
        self._chars = state.chars
        self._count = state.count
        self._next = state.next
        self._last = dict(state.last)
        self._heap = [(pos, w) for pos, w in state.heap]
        self._hits = state.hits
        self._segs = deque((text, None if stems is None else list(stems)) for text, stems in state.segments)
        self._seg_chars = state.segment_chars
        self.similarity = state.similarity
        self.fill = state.fill
        self._last_output = state.last_output
        self.since_request = state.since_request
        self._snap = None

    def set_instruction(self, text: str, index: int | None = None) -> None:
        """Pin the original request (a host that knows it); later requests still become the current
        task, and compaction summaries never replace either."""
        self.pinned = True
        self.instruction = text
        self.instruction_index = index
        task = self.task
        task.original, task.original_index = text, index
        if not task.current:
            task.add(text, index)
            task.original, task.original_index = text, index
            self._set_task()
        else:
            self._snap = None

    def _set_task(self) -> None:
        """Measure against the tracker's current task from now on (its words tracked afresh); a
        request that replaced the one before (not a follow-up of it) restarts the output count."""
        task = self.task
        if task.current_index != self.request_index or task.current != self.request:
            self.since_request = 0
        self.request = task.current
        self.request_index = task.current_index
        if not self.pinned:
            self.instruction = task.original
            self.instruction_index = task.original_index
        # the first INSTRUCTION_WORD_LIMIT distinct words, in the order they first occur
        self.instruction_words = frozenset(islice(dict.fromkeys(task.words), INSTRUCTION_WORD_LIMIT))
        self._track_all()
        self._recompute()

    def _track_all(self) -> None:
        """Track the instruction's words afresh over the whole window (a new instruction)."""
        last: dict[str, int] = {}
        for run in self._runs:
            last.update(_last_positions(run[_STEMS], self.instruction_words, run[_BASE], run[_CUT]))
        self._last = last
        self._heap = [(pos, w) for w, pos in last.items()]
        heapq.heapify(self._heap)
        self._hits = len(last)

    def update(self, event: Event) -> None:
        msg = event.message
        fill = event.fill
        if fill != self.fill:
            # the reading depends on the fill only through "above the sweet spot"
            if (fill >= self.sweet_spot) != (self.fill >= self.sweet_spot):
                self._snap = None
            self.fill = fill
        if msg.role is Role.USER:
            if not event.results and self.task.observe(msg, event.index):
                self._set_task()
            return
        if msg.role is not Role.ASSISTANT:
            return
        text = event.text
        if not text:
            return
        limit = self.profile.drift_window_chars
        if self.since_request < limit:
            self.since_request += len(text)
            if self.since_request >= limit:
                self._snap = None  # the reading starts to count
        if len(text) >= limit:
            # the reply alone fills the window: only its last characters count
            tail = text[-limit:]
            stems = event.tail_stems(limit)
            self._segs = deque(((tail, stems),))
            self._seg_chars = len(tail)
            self._replace(stems, len(tail), event.index)
            self._last_output = event.index
            self._recompute()
            return
        stems = event.stems
        self._append_segment(text, stems, limit)
        if len(text) * 4 >= limit:
            # a long reply: recounting the window from its text is cheaper than word-by-word updates
            self._replace(self._tail_words(), self._seg_chars, event.index)
        else:
            self._push(stems, len(text), event.index)
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
        """The new text fills the whole window on its own: the window is its words, each standing
        for an equal share of ``chars``."""
        n = len(stems)
        each = chars // n if n else 0
        base = self._next
        self._next = base + n
        self._runs = deque(([stems, 0, each, 0, index, base],)) if n else deque()
        self._chars = each * n
        self._count = n
        self._last = _last_positions(stems, self.instruction_words, base, 0)
        self._heap = sorted(zip(self._last.values(), self._last.keys(), strict=True))
        self._hits = len(self._last)

    def _push(self, stems: list[str], chars: int, index: int) -> None:
        """Append a reply's words (its ``chars`` shared evenly, the first word taking the remainder)
        and trim the window's front to the limit."""
        n = len(stems)
        if n:
            each, extra = divmod(chars, n)
            base = self._next
            self._next = base + n
            self._runs.append([stems, 0, each, extra, index, base])
            self._chars += chars
            self._count += n
            last = self._last
            heap = self._heap
            for w, pos in _last_positions(stems, self.instruction_words, base, 0).items():
                if w not in last:
                    self._hits += 1
                last[w] = pos
                heapq.heappush(heap, (pos, w))
        if self._chars > self.profile.drift_window_chars:
            self._trim()

    def _trim(self) -> None:
        """Drop words from the front while the window holds more than its characters: whole runs,
        then the share of the first run that is needed (its words weigh the same but the first)."""
        limit = self.profile.drift_window_chars
        runs = self._runs
        chars = self._chars
        count = self._count
        while chars > limit and runs:
            run = runs[0]
            cut = run[_CUT]
            left = len(run[_STEMS]) - cut
            each = run[_EACH]
            if cut == 0 and run[_EXTRA]:
                # the first word carries the remainder of its reply's characters
                chars -= each + run[_EXTRA]
                count -= 1
                run[_CUT] = cut = 1
                left -= 1
            if chars <= limit:
                pass
            elif each <= 0 or each * left <= chars - limit:
                chars -= each * left
                count -= left
                left = 0
            else:
                k = -(-(chars - limit) // each)
                chars -= each * k
                count -= k
                run[_CUT] = cut + k
                left -= k
            if left == 0:
                runs.popleft()
        self._chars = chars
        self._count = count
        start = runs[0][_BASE] + runs[0][_CUT] if runs else self._next
        heap = self._heap
        last = self._last
        while heap and heap[0][0] < start:
            pos, w = heapq.heappop(heap)
            if last.get(w) == pos:
                del last[w]
                self._hits -= 1

    def window_words(self) -> list[str]:
        """The words in the window now, oldest first (O(window): for tests and explanations)."""
        return [w for run in self._runs for w in run[_STEMS][run[_CUT] :]]

    def _recompute(self) -> None:
        n = len(self.instruction_words)
        self.similarity = self._hits / n if n and self._count else 1.0
        self._snap = None

    @property
    def above_sweet_spot(self) -> bool:
        return self.fill >= self.sweet_spot

    @property
    def measured(self) -> bool:
        """Whether a whole window of output was written since the current request (before that,
        drift does not fire: see the module docstring)."""
        return self.since_request >= self.profile.drift_window_chars

    @property
    def drifting(self) -> bool:
        return self.above_sweet_spot and self.measured and self.similarity < self.profile.drift_threshold

    def _take(self) -> tuple[Any, ...]:
        first = self._runs[0][_INDEX] if self._runs else self._last_output
        return (
            self.similarity,
            self.drifting,
            (self.instruction_index, self.request_index, first, self._last_output),
            self._hits,
            len(self.instruction_words),
            self.sweet_spot,
            (self.request, self.request_index, self.instruction, self.instruction_index),
            max(0, self.profile.drift_window_chars - self.since_request),
        )

    @staticmethod
    def _which(
        request: str, request_index: int | None, instruction: str, instruction_index: int | None
    ) -> str:
        """Which request the similarity is measured against, in words (for the signal's detail)."""
        if not request:
            return "instruction words"
        excerpt = " ".join(request[: REQUEST_EXCERPT_CHARS * 4].split())
        if len(excerpt) > REQUEST_EXCERPT_CHARS:
            excerpt = excerpt[: REQUEST_EXCERPT_CHARS - 3] + "..."
        where = f"message {request_index}" if request_index is not None else "pinned"
        if request_index == instruction_index and request == instruction:
            return f'words of the original request ({where}: "{excerpt}")'
        original = f"message {instruction_index}" if instruction_index is not None else "pinned"
        return f'words of the current request ({where}: "{excerpt}"; original request: {original})'

    def render(self, snap: tuple[Any, ...]) -> tuple[Signal, ...]:
        similarity, drifting, where, hits, n, sweet_spot, requests, unwritten = snap
        which = self._which(*requests)
        evidence = tuple(sorted({i for i in where if i is not None}))
        p = self.profile
        waiting = f"; not read until {unwritten} more chars of output for this request" if unwritten else ""
        return (
            Signal(
                "drift",
                similarity,
                drifting,
                evidence,
                f"{hits}/{n} {which} in the last {p.drift_window_chars} chars of output "
                f"(fires below {p.drift_threshold} above {sweet_spot} tokens{waiting})",
            ),
        )
