"""The prompt-cache hit rate of one response, on plain numbers, importing nothing.

Shared by the cache detector (:mod:`ctxhealth.signals.cache`) and anything that only needs this one
figure on every refresh (the Claude Code status line), so both give the signal layer's own answer.
"""

from __future__ import annotations


def cache_hit_rate(read_tokens: int, prompt_tokens: int, min_prompt: int) -> float | None:
    """The share of a prompt read from the prompt cache, or None when the prompt is shorter than
    ``min_prompt`` tokens (providers do not cache those, so a miss there says nothing)."""
    if prompt_tokens < min_prompt or prompt_tokens <= 0:
        return None
    return min(max(read_tokens, 0), prompt_tokens) / prompt_tokens
