"""1-hour cache writes (read from Claude Code / Anthropic usage) and long-context price tiers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxhealth.accounting.cost import usage_cost
from ctxhealth.accounting.registry import ModelRegistry
from ctxhealth.model import Usage
from ctxhealth.sources import read_session

REG = ModelRegistry.default()


def _claude_line(usage: dict[str, object], *, typed: bool = True) -> str:
    line = {
        "type": "assistant",
        "uuid": "a1",
        "parentUuid": None,
        "sessionId": "s",
        "timestamp": "2026-01-05T10:00:00Z",
        "message": {
            "id": "msg_1",
            "role": "assistant",
            "model": "claude-sonnet-4-5-20250929",
            "content": [{"type": "text", "text": "hi"}],
            "usage": usage,
        },
    }
    if not typed:
        line["unexpected"] = {"x": 1}
        line["isSidechain"] = "no"  # a wrong type: the line goes down the lenient path
    return json.dumps(line)


@pytest.mark.parametrize("typed", [True, False])
def test_claude_code_usage_keeps_the_one_hour_cache_writes(tmp_path: Path, typed: bool) -> None:
    usage = {
        "input_tokens": 3,
        "output_tokens": 10,
        "cache_creation_input_tokens": 5000,
        "cache_read_input_tokens": 20000,
        "cache_creation": {"ephemeral_5m_input_tokens": 1000, "ephemeral_1h_input_tokens": 4000},
    }
    path = tmp_path / "s.jsonl"
    path.write_text(_claude_line(usage, typed=typed) + "\n")
    message = read_session(path).messages[0]
    assert message.usage == Usage(3, 10, 5000, 20000, 0, 4000)


def test_one_hour_writes_cost_twice_input_five_minute_writes_one_and_a_quarter() -> None:
    prices = REG.lookup("claude-sonnet-4-5").prices
    assert prices is not None
    mixed = usage_cost(Usage(cache_creation_tokens=100_000, cache_write_1h_tokens=40_000), prices)
    assert mixed == pytest.approx((60_000 * 3.75 + 40_000 * 6.0) / 1e6)
    assert usage_cost(Usage(cache_creation_tokens=100_000), prices) == pytest.approx(0.375)


def test_a_prompt_above_200k_prices_every_token_at_the_long_context_tier() -> None:
    prices = REG.lookup("claude-sonnet-4-5").prices
    assert prices is not None
    at_limit = Usage(input_tokens=1_000, cache_read_tokens=199_000, output_tokens=1_000)
    above = Usage(input_tokens=1_001, cache_read_tokens=199_000, output_tokens=1_000)
    assert usage_cost(at_limit, prices) == pytest.approx((1_000 * 3 + 199_000 * 0.3 + 1_000 * 15) / 1e6)
    assert usage_cost(above, prices) == pytest.approx((1_001 * 6 + 199_000 * 0.6 + 1_000 * 22.5) / 1e6)
    opus = REG.lookup("claude-opus-4-1").prices
    assert opus is not None  # no long-context tier: the base prices at any size
    assert usage_cost(above, opus) == pytest.approx((1_001 * 15 + 199_000 * 1.5 + 1_000 * 75) / 1e6)


def test_config_can_set_the_one_hour_write_price() -> None:
    registry = REG.with_overrides({"claude-sonnet-4-5": {"cache_write_1h": 9.0}})
    prices = registry.lookup("claude-sonnet-4-5").prices
    assert prices is not None and prices.cache_write_1h == 9.0
