"""The priced model responses of a session: one record per response, every thread, each id once.

Every layer of the audit (cache, cost, waste) reads the same list, so a response is counted and
priced in exactly one place. Responses are deduplicated by response id across the main thread
and its sub-agents (:func:`ctxhealth.accounting.cost.iter_responses`), priced once at the model
that produced them (:func:`ctxhealth.accounting.cost.priced_responses`, whose records the session's
cost reads too) (:func:`ctxhealth.accounting.cost.usage_cost`: cache reads and writes, 1-hour
writes and long-context tiers included), and kept in thread order with their thread number
(0 = main thread), so a cache break is always judged against the previous response of the same
thread.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

import msgspec

from ctxhealth.accounting.cost import Priced, priced_responses
from ctxhealth.accounting.registry import ModelRegistry
from ctxhealth.accounting.types import Prices
from ctxhealth.model import Message, Session, Usage, parse_timestamp


class Response(msgspec.Struct, frozen=True):
    """One model response with usage: where it is, when, which model, what it cost.

    ``position`` is the index of its message in its thread's messages; ``usd`` is None when the
    model's prices are unknown. A frozen struct, built once per response of every analysed session
    (a frozen dataclass's ``__init__`` cost ~14x as much: 1.9 vs 0.14 µs).
    """

    thread: int
    position: int
    message: Message
    usage: Usage
    model: str | None
    time: datetime | None
    prices: Prices | None
    usd: float | None

    @property
    def response_id(self) -> str | None:
        return self.message.response_id

    @property
    def line(self) -> int | None:
        return self.message.line

    @property
    def prompt_tokens(self) -> int:
        return self.usage.context_tokens

    @property
    def cache_read_tokens(self) -> int:
        return self.usage.cache_read_tokens

    @property
    def hit_rate(self) -> float | None:
        """Share of the prompt read from the cache (None for an empty prompt)."""
        prompt = self.usage.context_tokens
        return self.usage.cache_read_tokens / prompt if prompt > 0 else None


def session_responses(
    session: Session,
    registry: ModelRegistry | None = None,
    *,
    model: str | None = None,
    since: datetime | None = None,
) -> list[Response]:
    """Every response with usage of ``session`` (threads in order, ids once), priced.

    ``model`` prices every response at one model; ``since`` drops responses before that time
    (and those without a timestamp).
    """
    return responses_of(priced_responses(session, registry, model=model), since=since)


def responses_of(priced: Iterable[Priced], *, since: datetime | None = None) -> list[Response]:
    """:func:`session_responses` from the session's responses priced already
    (:func:`ctxhealth.accounting.cost.priced_responses`, which the session's cost reads too): the
    response messages, without a compaction's own request."""
    out: list[Response] = []
    for p in priced:
        if p.apart:
            continue
        time = parse_timestamp(p.message.timestamp)
        if since is not None and (time is None or time < since):
            continue
        out.append(Response(p.thread, p.position, p.message, p.usage, p.model, time, p.prices, p.usd))
    return out
