"""Tool-failure detectors: failure rate, consecutive failures, the same tool failing, the same mistake.

"The same mistake" is the same tool failing with the same error signature (the number-free last error
line; a failure whose output holds no error line has none) within the last ``indicator_window`` turns.

Failure = :func:`ctxhealth.failures.is_failure` (error flag, non-zero exit code, else error text).
The rate is taken over the last ``indicator_window`` tool results (bounded), so an old spiral
does not haunt a long healthy run; totals are kept as plain counters for the risk features.
"""

from __future__ import annotations

from collections import Counter, deque
from typing import Any

from ctxhealth.signals.base import BoundedDict, CachedDetector, Signal, recent
from ctxhealth.signals.events import Event
from ctxhealth.signals.thresholds import SignalThresholds

SIGNATURE_LIMIT = 32


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
                        seen = deque(maxlen=8)
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

    def dump_state(self) -> dict[str, Any]:
        state = super().dump_state()
        sig, seen = self.worst_mistake
        # the worst mistake's history is usually the very deque kept in ``mistakes``
        state["_worst_shared"] = self.mistakes.get(sig) is seen
        return state

    def load_state(self, state: dict[str, Any]) -> None:
        state = dict(state)
        shared = bool(state.pop("_worst_shared", False))
        super().load_state(state)
        sig = self.worst_mistake[0]
        if shared and sig in self.mistakes:
            self.worst_mistake = (sig, self.mistakes[sig])

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
