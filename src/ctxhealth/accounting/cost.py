"""Cost of a session from its provider-reported usage records, at each response's own model prices.

Every model response is priced once (usage deduplicated by response id across the main
thread and all sidechains): uncached input at the input price, cache writes at the cache-write
price, cache reads at the cache-read price, output at the output price. ``output_tokens`` is
taken as the provider reports it, which already includes reasoning tokens for OpenAI-style
usage (``completion_tokens``). Sessions switch models, so each response is priced at the model
that produced it. The cost is None when there is no usage at all or when a response with
non-zero usage comes from a model whose prices are unknown (a partial sum would mislead).
A request whose prompt exceeds a model's long-context threshold is priced at that tier, and
1-hour cache writes at the 1-hour write price (:func:`usage_cost`).

:func:`priced_responses` prices each response once, as a :class:`Priced` record; the session's
cost (:func:`cost_of`) and the audit's responses (:func:`ctxhealth.audit.session_responses`) both
read those records, so an analysis that needs both prices each response once.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

from ctxhealth.accounting.registry import ModelRegistry
from ctxhealth.accounting.types import Prices
from ctxhealth.model import Message, Role, Session, Usage

_PER_TOKEN = 1e-6
_MISSING: Any = object()


def prices_for_prompt(prices: Prices, prompt_tokens: int) -> Prices:
    """The tier of ``prices`` a request with ``prompt_tokens`` of prompt is billed at."""
    above = prices.long_context_above
    if prices.long_context is not None and above is not None and prompt_tokens > above:
        return prices.long_context
    return prices


def usage_cost(usage: Usage, prices: Prices) -> float:
    """USD for one response's usage at ``prices`` (USD per million tokens).

    A prompt above the long-context threshold prices every token at the long-context tier;
    1-hour cache writes are priced at ``cache_write_1h`` when the model has that price.
    """
    tier = prices_for_prompt(prices, usage.context_tokens)
    one_hour = usage.cache_write_1h_tokens
    hour_price = tier.cache_write if tier.cache_write_1h is None else tier.cache_write_1h
    return _PER_TOKEN * (
        usage.input_tokens * tier.input
        + (usage.cache_creation_tokens - one_hour) * tier.cache_write
        + one_hour * hour_price
        + usage.cache_read_tokens * tier.cache_read
        + usage.output_tokens * tier.output
    )


def iter_threads(session: Session) -> Iterator[Session]:
    """The session itself, then every sidechain (depth first)."""
    stack = [session]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.sidechains))


def iter_responses(session: Session) -> Iterator[tuple[Session, Message]]:
    """Each distinct model response with usage, main thread and sidechains, deduplicated by id.

    A compaction whose own request's usage the log keeps apart (``CompactionSummary.usage``) is a
    response too: it is billed, though it is not a turn (yielded as a message of its own, with the
    compaction's model and usage).
    """
    for _, _, thread, message, usage, apart in _response_walk(session):
        if apart:
            yield thread, Message(role=Role.ASSISTANT, blocks=(), model=message.model, usage=usage)
        else:
            yield thread, message


def _response_walk(session: Session) -> Iterator[tuple[int, int, Session, Message, Usage, bool]]:
    """The one walk of :func:`iter_responses` and :func:`priced_responses`: for each response, its
    thread's number in :func:`iter_threads` order, its message's index there, the thread, the
    message, the usage billed and whether it is a compaction's own request (``apart``)."""
    seen: set[str] = set()
    for number, thread in enumerate(iter_threads(session)):
        for position, message in enumerate(thread.messages):
            usage = message.usage
            if message.role is not Role.ASSISTANT or usage is None:
                summary = message.compaction
                if summary is not None and summary.usage is not None:
                    yield number, position, thread, message, summary.usage, True
            elif is_new_response(message.response_id, seen):
                yield number, position, thread, message, usage, False


def is_new_response(response_id: str | None, seen: set[str]) -> bool:
    """False when ``response_id`` is already in ``seen`` (a response written on several lines counts
    once); otherwise True, and the id joins ``seen``. A message without an id is always new."""
    if response_id is None:
        return True
    if response_id in seen:
        return False
    seen.add(response_id)
    return True


def _is_zero(usage: Usage) -> bool:
    return not (
        usage.input_tokens or usage.output_tokens or usage.cache_creation_tokens or usage.cache_read_tokens
    )


class Priced(NamedTuple):
    """One response of :func:`iter_responses`, priced: ``thread`` is its thread's number in
    :func:`iter_threads` order (0 = main thread) and ``position`` its message's index there;
    ``model`` the model it is priced as; ``usd`` None when that model's prices are unknown.
    ``apart`` marks a compaction's own request (billed, though not a response message of the
    thread: ``message`` is then the compaction's message)."""

    thread: int
    position: int
    message: Message
    usage: Usage
    model: str | None
    prices: Prices | None
    usd: float | None
    apart: bool


def priced_responses(
    session: Session, registry: ModelRegistry | None = None, *, model: str | None = None
) -> list[Priced]:
    """Every response of :func:`iter_responses`, in its order, priced once (``model``: every
    response at that one model)."""
    registry = registry or ModelRegistry.default()
    prices_by_model: dict[str | None, Prices | None] = {}
    out: list[Priced] = []
    for number, position, thread, message, usage, apart in _response_walk(session):
        model_id = model or message.model or thread.model or session.model
        prices = prices_by_model.get(model_id, _MISSING)
        if prices is _MISSING:
            prices = prices_by_model[model_id] = registry.lookup(model_id).prices
        usd = usage_cost(usage, prices) if prices is not None else None
        out.append(Priced(number, position, message, usage, model_id, prices, usd, apart))
    return out


def cost_of(priced: Iterable[Priced]) -> float | None:
    """Total USD of a session's :func:`priced_responses` (the rule of the module docstring: None
    without usage, or when a response with usage has no prices)."""
    total = 0.0
    priced_any = False
    for p in priced:
        if _is_zero(p.usage):
            continue
        if p.usd is None:
            return None
        total += p.usd
        priced_any = True
    return total if priced_any else None


def session_cost(
    session: Session, registry: ModelRegistry | None = None, *, model: str | None = None
) -> float | None:
    """Total USD of ``session`` from its usage records; ``model`` prices every response at one model."""
    return cost_of(priced_responses(session, registry, model=model))
