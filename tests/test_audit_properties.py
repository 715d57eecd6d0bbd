"""Invariants of the cache audit on random usage sequences."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxhealth.audit.cache import MIN_BREAK_TOKENS, audit_cache
from ctxhealth.audit.responses import session_responses
from ctxhealth.model import Format, Message, Role, Session, TextBlock, Usage

_usage = st.builds(
    Usage,
    input_tokens=st.integers(0, 5_000),
    output_tokens=st.integers(0, 2_000),
    cache_creation_tokens=st.integers(0, 150_000),
    cache_read_tokens=st.integers(0, 150_000),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(_usage, st.sampled_from(["claude-sonnet-4-5", "claude-opus-4-1"])), max_size=30))
def test_breaks_never_cost_more_than_their_response_and_avoiding_them_never_costs_more(
    turns: list[tuple[Usage, str]],
) -> None:
    messages = [Message(Role.USER, (TextBlock("go"),))]
    for n, (usage, model) in enumerate(turns):
        stamp = f"2026-01-05T10:{n:02d}:00Z"
        messages.append(
            Message(
                Role.ASSISTANT,
                (TextBlock("ok"),),
                response_id=f"r{n}",
                model=model,
                usage=usage,
                timestamp=stamp,
            )
        )
    session = Session("s.jsonl", Format.CLAUDE_CODE, tuple(messages))
    responses = session_responses(session)
    report = audit_cache(session, responses)
    total = sum(r.usd or 0 for r in responses)
    assert report.usd_without_breaks is not None
    assert 0 <= report.usd_without_breaks <= total + 1e-9
    for b in report.breaks:
        assert b.previous.usage.cache_read_tokens - b.response.usage.cache_read_tokens >= MIN_BREAK_TOKENS
        assert b.usd is not None and 0 <= b.usd <= (b.response.usd or 0) + 1e-12
        assert 0 <= b.tokens <= b.response.usage.context_tokens
    for rate in (report.hit_rate, report.last_n_hit_rate):
        assert rate is None or 0 <= rate <= 1
