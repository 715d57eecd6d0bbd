"""The prompt-cache signal: per-response hit rate, the run of low ones, and when it may fire."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ctxhealth.model import Message, Role, TextBlock, Usage
from ctxhealth.policy.profile import Profile
from ctxhealth.signals.cache import CacheDetector
from ctxhealth.signals.events import Event

P = Profile()


def reply(read: int, prompt: int = 20_000) -> Message:
    usage = Usage(input_tokens=prompt - read, cache_read_tokens=read, output_tokens=50)
    return Message(Role.ASSISTANT, (TextBlock("ok"),), usage=usage)


def feed(detector: CacheDetector, messages: list[Message]) -> None:
    for i, m in enumerate(messages):
        detector.update(Event(i, m, i + 1, 0))


def test_five_low_responses_after_a_hit_fire_with_evidence() -> None:
    d = CacheDetector(P)
    feed(d, [reply(18_000), reply(1_000), reply(0), reply(2_000), reply(500), reply(7_000)])
    (sig,) = d.signals()
    assert d.low_turns == 5 and sig.fired
    assert sig.value == 7_000 / 20_000
    assert sig.evidence == (1, 5)  # where the run started, the latest response
    assert "5 responses in a row under 40%" in sig.detail


def test_a_good_response_ends_the_run() -> None:
    d = CacheDetector(P)
    feed(d, [reply(18_000), *[reply(0)] * 4, reply(8_000), reply(0)])
    assert d.low_turns == 1 and not d.signals()[0].fired


def test_no_cache_reported_at_all_never_fires() -> None:
    d = CacheDetector(P)
    feed(d, [reply(0)] * 12)
    assert d.low_turns == 0 and not d.signals()[0].fired


def test_misses_before_the_first_hit_are_the_cache_warming_up() -> None:
    d = CacheDetector(P)
    feed(d, [reply(0)] * 4 + [reply(7_000)])  # 35%: the first hit, itself low
    assert d.low_turns == 1 and d.run_start == 4
    feed(d, [reply(12_000)])
    assert d.low_turns == 0


def test_short_prompts_and_non_assistant_messages_do_not_count() -> None:
    d = CacheDetector(P)
    user = Message(Role.USER, (TextBlock("go on"),))
    feed(d, [reply(15_000), *[reply(0, prompt=800)] * 6, user, user])
    assert d.low_turns == 0 and d.rate == 0.75 and d.session_rate == 0.75


def test_thresholds_come_from_the_profile() -> None:
    d = CacheDetector(P.with_overrides({"cache_hit_min": 0.9, "cache_miss_turns": 2}))
    feed(d, [reply(19_000), reply(17_000), reply(16_000)])
    assert d.low_turns == 2 and d.signals()[0].fired


@given(st.lists(st.tuples(st.integers(0, 40_000), st.integers(0, 40_000)), max_size=60))
def test_low_turns_equals_the_trailing_run_counted_directly(pairs: list[tuple[int, int]]) -> None:
    messages = [reply(min(r, p), prompt=p) for r, p in pairs]
    d = CacheDetector(P)
    feed(d, messages)
    counted = [(min(r, p), p) for r, p in pairs if p >= P.cache_min_prompt]
    first_hit = next((i for i, (read, _) in enumerate(counted) if read > 0), len(counted))
    run = 0
    for read, prompt in counted[first_hit:]:
        run = run + 1 if read / prompt < P.cache_hit_min else 0
    assert d.low_turns == run
    assert 0.0 <= d.signals()[0].value <= 1.0
