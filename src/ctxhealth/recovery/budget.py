"""Token sizes for recovery: what a message list costs, counted the way accounting counts it.

Recovery budgets are hard: a strategy either returns messages whose total is within the
budget or raises :class:`ctxhealth.errors.UsageError` saying how large the budget must be.
Counts are exact (``o200k_base``) when the tokenizer is present, else the spec's estimate;
one encoding for the whole run keeps every figure comparable.
"""

from __future__ import annotations

from collections.abc import Sequence

from ctxhealth.accounting.tokens import count_batch, message_overhead, message_text_for_count
from ctxhealth.model import Message

DEFAULT_ENCODING = "o200k_base"


def text_tokens(text: str, encoding: str | None = DEFAULT_ENCODING) -> int:
    """Tokens of one text."""
    return count_batch([text], encoding)[0][0]


def texts_tokens(texts: Sequence[str], encoding: str | None = DEFAULT_ENCODING) -> list[int]:
    """Tokens of many texts, in order (one batched call)."""
    if not texts:
        return []
    return count_batch(list(texts), encoding)[0]


def messages_tokens(messages: Sequence[Message], encoding: str | None = DEFAULT_ENCODING) -> list[int]:
    """Tokens each message occupies: its countable text plus framing overhead."""
    counts = texts_tokens([message_text_for_count(m) for m in messages], encoding)
    return [c + message_overhead(m) for c, m in zip(counts, messages, strict=True)]


def total_tokens(messages: Sequence[Message], encoding: str | None = DEFAULT_ENCODING) -> int:
    """Tokens of a whole message list."""
    return sum(messages_tokens(messages, encoding))
