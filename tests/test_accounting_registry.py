"""Model registry: longest-prefix matching, id normalisation, tiers, windows, overrides."""

from __future__ import annotations

import pytest

from ctxhealth.accounting.registry import FAMILIES, ModelRegistry, normalise_model_id
from ctxhealth.accounting.types import Prices, Tier
from ctxhealth.errors import ConfigError

REG = ModelRegistry.default()


@pytest.mark.parametrize(
    ("model_id", "family"),
    [
        ("claude-opus-4-20250514", "claude-opus"),
        ("claude-opus-4-1-20250805", "claude-opus"),
        ("claude-opus-4-5-20251101", "claude-opus"),
        ("claude-sonnet-4-20250514", "claude-sonnet"),
        ("claude-sonnet-4-5-20250929", "claude-sonnet"),
        ("claude-haiku-4-5-20251001", "claude-haiku"),
        ("claude-3-5-sonnet-20241022", "claude-3-5-sonnet"),
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet"),
        ("claude-sonnet-4@20250514", "claude-sonnet"),
        ("gpt-5", "gpt-5"),
        ("gpt-5-mini-2025-08-07", "gpt-5-mini"),
        ("gpt-5-codex", "gpt-5"),
        ("gpt-4.1-2025-04-14", "gpt-4.1"),
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("gpt-4o-mini", "gpt-4o-mini"),
        ("gpt-4-0613", "gpt-4"),
        ("o1", "o-series"),
        ("o3-2025-04-16", "o-series"),
        ("o4-mini", "o-mini"),
        ("google/gemini-3-pro-preview", "gemini-pro"),
        ("gemini-2.5-pro", "gemini-pro"),
        ("gemini-2.5-flash", "gemini-flash"),
        ("deepseek-chat", "deepseek"),
        ("meta-llama/Llama-3.1-70B-Instruct", "llama"),
        ("Qwen/Qwen2.5-Coder-32B", "qwen"),
        ("mistral-7b-instruct", "mistral-7b"),
    ],
)
def test_lookup_by_family_words(model_id: str, family: str) -> None:
    info = REG.lookup(model_id)
    assert info.known
    assert info.family == family
    assert info.id == model_id


def test_tiers_follow_the_spec() -> None:
    assert REG.lookup("claude-opus-4-20250514").tier is Tier.FULL
    assert REG.lookup("gpt-4o").tier is Tier.FULL
    assert REG.lookup("google/gemini-3-pro-preview").tier is Tier.FULL
    assert REG.lookup("claude-haiku-4-5").tier is Tier.COMPACT
    assert REG.lookup("gpt-4o-mini").tier is Tier.COMPACT
    assert REG.lookup("gemini-2.5-flash").tier is Tier.COMPACT
    assert REG.lookup("deepseek-coder").tier is Tier.COMPACT
    assert REG.lookup("llama-3.1-8b").tier is Tier.LOCAL
    assert REG.lookup("qwen2.5-coder").tier is Tier.LOCAL


def test_unknown_model_is_compact_and_marked_unknown() -> None:
    for model_id in ("totally-new-model", None, ""):
        info = REG.lookup(model_id)
        assert not info.known
        assert info.tier is Tier.COMPACT
        assert info.prices is None


def test_claude_code_window_and_buffer() -> None:
    info = REG.lookup("claude-sonnet-4-20250514")
    assert info.window == 200_000
    assert info.autocompact_buffer == 13_000
    # Claude Code 2.1: window - min(max output, 20K) - 13K: it compacts near 167K of 200K
    assert info.reserved_output == 20_000
    assert info.usable_window == 167_000
    # a model whose maximum output is under 20K reserves only that
    haiku = REG.lookup("claude-3-5-haiku-20241022")
    assert haiku.reserved_output == 8_192
    assert haiku.usable_window == 200_000 - 8_192 - 13_000


def test_one_m_suffix_gives_a_million_tokens() -> None:
    info = REG.lookup("claude-sonnet-4-5[1m]")
    assert info.window == 1_000_000
    assert info.family == "claude-sonnet"
    assert normalise_model_id("Claude-Sonnet-4[1M]") == ("claude-sonnet-4", True)


def test_encodings() -> None:
    assert REG.lookup("gpt-4o").encoding == "o200k_base"
    assert REG.lookup("gpt-5").encoding == "o200k_base"
    assert REG.lookup("o3").encoding == "o200k_base"
    assert REG.lookup("gpt-4-0613").encoding == "cl100k_base"
    assert REG.lookup("gpt-3.5-turbo").encoding == "cl100k_base"
    assert REG.lookup("claude-opus-4").encoding is None


def test_anthropic_cache_prices_are_multiples_of_input() -> None:
    # from the price package: its tiered price (every token above 200K prompt tokens) is our long tier
    prices = REG.lookup("claude-sonnet-4-5-20250929").prices
    assert prices is not None
    base = (prices.input, prices.output, prices.cache_write, prices.cache_read, prices.cache_write_1h)
    assert base == (3, 15, 3.75, 0.3, 6)
    # Sonnet 4.5 above 200K prompt tokens: 2x input, 1.5x output, the cache multipliers on those.
    assert prices.long_context_above == 200_000
    long = Prices(input=6, output=22.5, cache_write=7.5, cache_read=0.6, cache_write_1h=12)
    assert prices.long_context == long
    assert REG.lookup("claude-opus-4-20250514").prices.long_context is None  # type: ignore[union-attr]


def test_every_family_is_sane() -> None:
    for family in FAMILIES:
        info = REG.lookup(family.name)
        assert info.usable_window > info.window // 2 - 1, family
        if info.prices is not None:
            assert info.prices.cache_read <= info.prices.input <= info.prices.output, family


def test_overrides_replace_fields_and_add_models() -> None:
    reg = REG.with_overrides(
        {
            "claude-sonnet-4": {"window": 500_000, "input": 2.0},
            "acme-coder": {"window": 64_000, "tier": "local", "input": 1, "output": 2},
        }
    )
    sonnet = reg.lookup("claude-sonnet-4-20250514")
    assert sonnet.window == 500_000
    assert sonnet.prices is not None and sonnet.prices.input == 2.0 and sonnet.prices.output == 15
    assert sonnet.autocompact_buffer == 13_000  # untouched fields keep the built-in value
    acme = reg.lookup("acme-coder-v2")
    assert acme.known and acme.tier is Tier.LOCAL and acme.window == 64_000
    assert acme.prices == Prices(1.0, 2.0, 1.0, 1.0)
    assert REG.lookup("claude-sonnet-4").window == 200_000  # the default registry is unchanged


@pytest.mark.parametrize(
    "table",
    [
        {"window": "big"},
        {"window": -1},
        {"tier": "huge"},
        {"input": "cheap"},
        {"colour": "red"},
        {"input": 1},
    ],
)
def test_bad_overrides_raise_config_error(table: dict[str, object]) -> None:
    with pytest.raises(ConfigError) as info:
        REG.with_overrides({"acme": table}, origin="/x/config.toml")
    assert info.value.hint
    assert info.value.path == "/x/config.toml"
