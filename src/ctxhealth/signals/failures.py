"""Tool-failure detectors: failure rate, consecutive failures, the same tool failing, the same mistake.

"The same mistake" is the same tool failing with the same error signature (the number-free last error
line; a failure whose output holds no error line has none) within the last ``indicator_window`` turns.

Failure = :func:`ctxhealth.failures.is_failure` (error flag, non-zero exit code, else error text).
The rate is taken over the last ``indicator_window`` tool results (bounded), so an old spiral
does not haunt a long healthy run; totals are kept as plain counters for the risk features.
"""

from __future__ import annotations

from collections import Counter, deque
from typing import TYPE_CHECKING, Any

from ctxhealth.signals.base import BoundedDict, CachedDetector, Signal, recent
from ctxhealth.signals.events import Event
from ctxhealth.signals.thresholds import SignalThresholds

if TYPE_CHECKING:
    from ctxhealth.signals.state import FailureState

SIGNATURE_LIMIT = 32
MISTAKE_HISTORY = 8
"""Occurrences kept per mistake."""


class FailureDetector(CachedDetector):
    """Tool failures over the last results: rate, streak, per tool, repeated mistakes."""

    def __init__(self, profile: SignalThresholds) -> None:
        self.profile = profile
        self.window: deque[tuple[str, bool, int]] = deque()
        self.window_failures = 0
        self.tool_failures: Counter[str] = Counter()
        self.streak: deque[int] = deque(maxlen=16)
        self.streak_len = 0
        self.max_streak = 0
        self.total_calls = 0
        self.total_failures = 0
        self.mistakes: BoundedDict[str, deque[tuple[int, int]]] = BoundedDict(SIGNATURE_LIMIT)
        self.worst_mistake: tuple[str, deque[tuple[int, int]]] = ("", deque())
        self.turn = 0

    def _prune(self, seen: deque[tuple[int, int]]) -> None:
        oldest = self.turn - self.profile.indicator_window
        while seen and seen[0][0] <= oldest:
            seen.popleft()

    def update(self, event: Event) -> None:
        if event.turn != self.turn:
            self.turn = event.turn
            worst = self.worst_mistake[1]
            if worst:
                before = len(worst)
                self._prune(worst)
                if len(worst) != before:
                    self._snap = None
        if not event.results:
            return
        size = self.profile.indicator_window
        for r in event.results:
            tool = r.tool
            self.total_calls += 1
            self.window.append((tool, r.failed, event.index))
            if r.failed:
                self.window_failures += 1
                self.tool_failures[tool] += 1
                self.total_failures += 1
                self.streak_len += 1
                self.streak.append(event.index)
                self.max_streak = max(self.max_streak, self.streak_len)
                signature = r.signature()
                if signature:  # a failure with no error line is no recognisable mistake
                    sig = f"{tool}|{signature}"
                    seen = self.mistakes.get(sig)
                    if seen is None:
                        seen = deque(maxlen=MISTAKE_HISTORY)
                    seen.append((event.turn, event.index))
                    self._prune(seen)
                    self.mistakes.put(sig, seen)
                    if len(seen) >= len(self.worst_mistake[1]):
                        self.worst_mistake = (sig, seen)
            else:
                self.streak_len = 0
                self.streak.clear()
            if len(self.window) > size:
                old_tool, old_failed, _ = self.window.popleft()
                if old_failed:
                    self.window_failures -= 1
                    self.tool_failures[old_tool] -= 1
                    if not self.tool_failures[old_tool]:
                        del self.tool_failures[old_tool]
        self._snap = None

    def serialize(self) -> FailureState:
        from ctxhealth.signals.state import FailureState

        sig, seen = self.worst_mistake
        return FailureState(
            window=list(self.window),
            window_failures=self.window_failures,
            tool_failures=list(self.tool_failures.items()),
            streak=list(self.streak),
            streak_len=self.streak_len,
            max_streak=self.max_streak,
            total_calls=self.total_calls,
            total_failures=self.total_failures,
            mistakes=[(k, list(v)) for k, v in self.mistakes.items()],
            worst_mistake=sig,
            worst_history=list(seen),
            # the worst mistake's history is usually the very deque kept in ``mistakes``
            worst_shared=self.mistakes.get(sig) is seen,
            turn=self.turn,
        )

    def restore(self, state: FailureState) -> None:
        self.window = deque((tool, failed, index) for tool, failed, index in state.window)
        self.window_failures = state.window_failures
        self.tool_failures = Counter(dict(state.tool_failures))
        self.streak = deque(state.streak, maxlen=self.streak.maxlen)
        self.streak_len = state.streak_len
        self.max_streak = state.max_streak
        self.total_calls = state.total_calls
        self.total_failures = state.total_failures
        mistakes: BoundedDict[str, deque[tuple[int, int]]] = BoundedDict(self.mistakes.limit)
        for sig, seen in state.mistakes:
            mistakes.put(sig, deque(seen, maxlen=MISTAKE_HISTORY))
        self.mistakes = mistakes
        sig = state.worst_mistake
        if state.worst_shared and sig in mistakes:
            self.worst_mistake = (sig, mistakes[sig])
        else:
            history = deque((t, i) for t, i in state.worst_history)
            self.worst_mistake = (sig, deque(history, maxlen=MISTAKE_HISTORY) if sig else history)
        self.turn = state.turn
        self._snap = None

    def reset_mistakes(self) -> None:
        """Forget repeated-mistake history (after error output was purged)."""
        self.mistakes.clear()
        self.worst_mistake = ("", deque())
        self._snap = None

    def reset(self) -> None:
        """Start counting afresh (after a restart)."""
        self.window.clear()
        self.window_failures = 0
        self.tool_failures.clear()
        self.streak.clear()
        self.streak_len = 0
        self.reset_mistakes()

    @property
    def rate(self) -> float:
        return self.window_failures / len(self.window) if self.window else 0.0

    @property
    def spiral(self) -> bool:
        p = self.profile
        return len(self.window) >= p.failure_min_calls and self.rate > p.failure_rate

    @property
    def same_mistake_count(self) -> int:
        return len(self.worst_mistake[1])

    def _take(self) -> tuple[Any, ...]:
        sig, seen = self.worst_mistake
        return (self.spiral, tuple(self.window), self.streak_len, tuple(self.streak), sig, tuple(seen))

    def render(self, snap: tuple[Any, ...]) -> tuple[Signal, ...]:
        spiral, window, streak, streak_list, sig, seen = snap
        calls = len(window)
        failed_idx = recent([i for _, f, i in window if f])
        failures = sum(1 for _, f, _ in window if f)
        rate = failures / calls if calls else 0.0
        per_tool: dict[str, int] = {}
        for t, f, _ in window:
            if f:
                per_tool[t] = per_tool.get(t, 0) + 1
        tool, count = max(per_tool.items(), key=lambda kv: (kv[1], kv[0])) if per_tool else ("", 0)
        tool_idx = recent([i for t, f, i in window if f and t == tool])
        streak_idx = recent(list(streak_list))
        m_idx = recent([i for _, i in seen])
        m_n = len(seen)
        p = self.profile
        return (
            Signal(
                "failure_rate",
                rate,
                spiral,
                failed_idx,
                f"{failures}/{calls} recent tool calls failed (fires > {p.failure_rate:.0%} with >= "
                f"{p.failure_min_calls} calls)",
            ),
            Signal(
                "consecutive_failures",
                float(streak),
                streak >= p.consecutive_failures,
                streak_idx,
                f"{streak} in a row (fires at {p.consecutive_failures})",
            ),
            Signal(
                "same_tool_failures",
                float(count),
                count >= p.same_tool_failures,
                tool_idx,
                f"{tool} failed {count} times recently (fires at {p.same_tool_failures})"
                if count
                else "no recent tool failure",
            ),
            Signal(
                "same_mistake",
                float(m_n),
                m_n >= p.same_mistake,
                m_idx,
                f"{sig.split('|', 1)[-1][:80]!r} seen {m_n} times (fires at {p.same_mistake})"
                if m_n
                else "no repeated error",
            ),
        )
