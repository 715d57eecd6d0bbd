"""Prompt-cache hits per response, and the run of responses that mostly missed the cache.

The hit rate of one response is the share of its prompt the provider read from its prompt cache
(``cache_read_tokens / context_tokens``). A stable prefix (system prompt, tools, earlier turns
appended, never edited) keeps it high; a prefix that changes every request (a timestamp in the
system prompt, reordered tools, edited history) keeps it near zero and pays full price for every
prompt. The spec's reset trigger: a hit rate under ``cache_hit_min`` for ``cache_miss_turns``
responses in a row → restructure the prefix.

Only responses whose prompt is at least ``cache_min_prompt`` tokens count (providers do not cache
shorter prompts), and the run is counted from the session's first cache hit on: the misses before
it are the cache warming up (or a provider or log that reports no caching at all, which is not a
cache problem the agent can fix). State is a few numbers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ctxhealth.model import Role
from ctxhealth.signals.base import CachedDetector, Signal
from ctxhealth.signals.cache_rate import cache_hit_rate
from ctxhealth.signals.events import Event
from ctxhealth.signals.thresholds import SignalThresholds

if TYPE_CHECKING:
    from ctxhealth.signals.state import CacheState


class CacheDetector(CachedDetector):
    """The latest response's cache hit rate, the session's, and the current run of low ones."""

    def __init__(self, profile: SignalThresholds) -> None:
        self.profile = profile
        self.rate: float | None = None
        self.read_tokens = 0
        self.prompt_tokens = 0
        self.seen_hit = False
        self.run = 0
        self.run_start: int | None = None
        self.last_index: int | None = None

    def serialize(self) -> CacheState:
        from ctxhealth.signals.state import CacheState

        return CacheState(
            rate=self.rate,
            read_tokens=self.read_tokens,
            prompt_tokens=self.prompt_tokens,
            seen_hit=self.seen_hit,
            run=self.run,
            run_start=self.run_start,
            last_index=self.last_index,
        )

    def restore(self, state: CacheState) -> None:
        self.rate = state.rate
        self.read_tokens = state.read_tokens
        self.prompt_tokens = state.prompt_tokens
        self.seen_hit = state.seen_hit
        self.run = state.run
        self.run_start = state.run_start
        self.last_index = state.last_index
        self._snap = None

    def update(self, event: Event) -> None:
        msg = event.message
        usage = msg.usage
        if msg.role is not Role.ASSISTANT or usage is None or event.continues:
            return  # (a response's later part reports the same prompt)
        prompt = usage.context_tokens
        rate = cache_hit_rate(usage.cache_read_tokens, prompt, self.profile.cache_min_prompt)
        if rate is None:
            return
        read = min(usage.cache_read_tokens, prompt)
        self.rate = rate
        self.read_tokens += read
        self.prompt_tokens += prompt
        self.last_index = event.index
        if read > 0:
            self.seen_hit = True
        if self.seen_hit and rate < self.profile.cache_hit_min:
            if self.run == 0:
                self.run_start = event.index
            self.run += 1
        else:
            self.run = 0
            self.run_start = None
        self._snap = None

    @property
    def low_turns(self) -> int:
        """Responses in a row under the hit-rate threshold, counted from the session's first hit."""
        return self.run

    @property
    def session_rate(self) -> float | None:
        """Cached share of every counted prompt so far (None before the first one)."""
        return self.read_tokens / self.prompt_tokens if self.prompt_tokens else None

    def _take(self) -> tuple[float | None, float | None, int, int | None, int | None]:
        return (self.rate, self.session_rate, self.low_turns, self.run_start, self.last_index)

    def render(
        self, snap: tuple[float | None, float | None, int, int | None, int | None]
    ) -> tuple[Signal, ...]:
        rate, overall, low, start, last = snap
        p = self.profile
        evidence = tuple(i for i in (start, last) if i is not None) if low else ()
        if rate is None:
            detail = f"no response with a prompt of {p.cache_min_prompt}+ tokens yet"
        else:
            detail = (
                f"latest response {rate:.0%} of its prompt from cache, session {overall or 0.0:.0%}; "
                f"{low} responses in a row under {p.cache_hit_min:.0%} "
                f"(fires at {p.cache_miss_turns}; counted from the first cache hit)"
            )
        return (
            Signal(
                "cache_hits",
                1.0 if rate is None else rate,
                low >= p.cache_miss_turns,
                evidence,
                detail,
            ),
        )
