"""Token counting: exact counts match tiktoken's published figures; estimates and fallbacks."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxhealth.accounting import tokens
from ctxhealth.accounting.tokens import (
    MESSAGE_OVERHEAD_TOKENS,
    TOOL_BLOCK_OVERHEAD_TOKENS,
    count_batch,
    count_tokens,
    estimate_tokens,
    message_text_for_count,
    message_tokens,
)
from ctxhealth.accounting.types import FillSource
from ctxhealth.model import Message, Role, TextBlock, ThinkingBlock, ToolCall, ToolResult

# Counts published in tiktoken's README and OpenAI's cookbook ("How to count tokens with tiktoken").
KNOWN_CL100K = {
    "hello world": 2,
    "tiktoken is great!": 6,
    "antidisestablishmentarianism": 6,
    "2 + 2 = 4": 7,
    "お誕生日おめでとう": 9,
}
KNOWN_O200K = {"hello world": 2, "tiktoken is great!": 6, "お誕生日おめでとう": 8}


@pytest.mark.parametrize(("text", "expected"), sorted(KNOWN_CL100K.items()))
def test_exact_cl100k_matches_published_counts(text: str, expected: int) -> None:
    assert count_tokens(text, "cl100k_base") == tokens.TokenCount(expected, FillSource.EXACT)


@pytest.mark.parametrize(("text", "expected"), sorted(KNOWN_O200K.items()))
def test_exact_o200k_matches_published_counts(text: str, expected: int) -> None:
    assert count_tokens(text, "o200k_base") == tokens.TokenCount(expected, FillSource.EXACT)


def test_no_encoding_estimates_four_chars_per_token() -> None:
    assert count_tokens("x" * 40) == tokens.TokenCount(10, FillSource.ESTIMATED)
    assert count_tokens("abcde") == tokens.TokenCount(2, FillSource.ESTIMATED)


def test_unknown_encoding_estimates_instead_of_failing() -> None:
    assert count_tokens("hello world", "no-such-encoding").source is FillSource.ESTIMATED


def test_missing_toktok_falls_back_to_estimate(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens, "_toktok", None)
    result = count_tokens("hello world", "cl100k_base")
    assert result == tokens.TokenCount(3, FillSource.ESTIMATED)
    assert not tokens.exact_available("o200k_base")


def test_estimate_tokens_edges() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("a") == 1
    assert estimate_tokens("a" * 10, chars_per_token=2.5) == 4
    assert estimate_tokens("a" * 8, chars_per_token=0) == 2  # nonsense ratio -> default


@given(st.lists(st.text(max_size=200), max_size=8))
def test_batch_equals_single_counts(texts: list[str]) -> None:
    batch, source = count_batch(texts, "o200k_base")
    assert source is FillSource.EXACT
    assert batch == [count_tokens(t, "o200k_base").tokens for t in texts]


@given(st.text(max_size=300), st.text(max_size=300))
def test_estimate_is_monotone_and_subadditive_within_one(a: str, b: str) -> None:
    whole = estimate_tokens(a + b)
    assert whole >= max(estimate_tokens(a), estimate_tokens(b))
    assert whole <= estimate_tokens(a) + estimate_tokens(b)


def test_message_text_includes_tool_input_json_and_results() -> None:
    msg = Message(
        role=Role.ASSISTANT,
        blocks=(
            TextBlock("Let me look."),
            ThinkingBlock("need the file"),
            ToolCall(id="t1", name="Read", input={"file_path": "/a.py", "limit": 5}),
        ),
    )
    text = message_text_for_count(msg)
    assert "Let me look." in text
    assert "need the file" in text
    assert '{"file_path":"/a.py","limit":5}' in text
    result = Message(role=Role.USER, blocks=(ToolResult(tool_call_id="t1", text="print(1)"),))
    assert message_text_for_count(result) == "print(1)"


def test_message_tokens_adds_documented_overhead() -> None:
    msg = Message(
        role=Role.ASSISTANT,
        blocks=(TextBlock("hello world"), ToolCall(id="t", name="Bash", input={"command": "ls"})),
    )
    expected = (
        count_tokens(message_text_for_count(msg), "cl100k_base").tokens
        + MESSAGE_OVERHEAD_TOKENS
        + TOOL_BLOCK_OVERHEAD_TOKENS
    )
    assert message_tokens(msg, lambda t: count_tokens(t, "cl100k_base").tokens) == expected
