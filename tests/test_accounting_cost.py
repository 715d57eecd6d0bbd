"""Cost from usage records: hand-computed on constructed sessions, per-response models, dedupe."""

from __future__ import annotations

import pytest

from ctxhealth.accounting.cost import session_cost
from ctxhealth.accounting.registry import ModelRegistry
from ctxhealth.model import Format, Message, Role, Session, TextBlock, Usage


def response(rid: str, model: str | None, usage: Usage) -> Message:
    return Message(Role.ASSISTANT, (TextBlock("x"),), response_id=rid, model=model, usage=usage)


def test_cost_by_hand_with_model_switch_sidechain_and_duplicates() -> None:
    opus = Usage(input_tokens=10, output_tokens=200, cache_creation_tokens=1_000, cache_read_tokens=20_000)
    sonnet = Usage(input_tokens=5, output_tokens=100, cache_creation_tokens=2_000, cache_read_tokens=30_000)
    side = Session(
        path="s",
        format=Format.CLAUDE_CODE,
        messages=(response("r3", "claude-sonnet-4-20250514", sonnet),),
    )
    s = Session(
        path="p",
        format=Format.CLAUDE_CODE,
        model="claude-sonnet-4-20250514",
        messages=(
            response("r1", "claude-opus-4-20250514", opus),
            response("r1", "claude-opus-4-20250514", opus),  # same response again: priced once
            response("r2", "claude-sonnet-4-20250514", sonnet),
        ),
        sidechains=(side,),
    )
    # Opus 4: 15 in, 75 out, 18.75 write, 1.50 read. Sonnet 4: 3, 15, 3.75, 0.30 (USD / Mtok).
    opus_cost = (10 * 15 + 200 * 75 + 1_000 * 18.75 + 20_000 * 1.5) / 1e6
    sonnet_cost = (5 * 3 + 100 * 15 + 2_000 * 3.75 + 30_000 * 0.3) / 1e6
    assert session_cost(s) == pytest.approx(opus_cost + 2 * sonnet_cost)
    # One model for everything when overridden.
    all_sonnet = (10 * 3 + 200 * 15 + 1_000 * 3.75 + 20_000 * 0.3) / 1e6 + 2 * sonnet_cost
    assert session_cost(s, model="claude-sonnet-4") == pytest.approx(all_sonnet)


def test_cost_is_none_without_usage_or_prices() -> None:
    no_usage = Session(path="p", format=Format.OPENAI_CHAT, messages=(Message(Role.ASSISTANT, ()),))
    assert session_cost(no_usage) is None
    unknown = Session(
        path="p", format=Format.OPENAI_CHAT, messages=(response("r", "acme-1", Usage(input_tokens=5)),)
    )
    assert session_cost(unknown) is None
    priced = ModelRegistry.default().with_overrides({"acme": {"input": 2.0, "output": 4.0}})
    assert session_cost(unknown, priced) == pytest.approx(5 * 2.0 / 1e6)


def test_zero_usage_from_unknown_model_does_not_void_the_cost() -> None:
    s = Session(
        path="p",
        format=Format.OPENAI_CHAT,
        messages=(
            response("a", "gpt-4o", Usage(input_tokens=1_000_000)),
            response("b", "mystery", Usage()),
        ),
    )
    assert session_cost(s) == pytest.approx(2.5)
