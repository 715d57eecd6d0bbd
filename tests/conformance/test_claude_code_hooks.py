"""The hooks under the real Claude Code CLI: what they count and inject, asserted against the fake
server's log (the truth) and the CLI's own debug log (which hooks ran)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ctxhealth.accounting.registry import ModelRegistry
from ctxhealth.integrations.claude_code.assess import tool_counts
from ctxhealth.integrations.claude_code.tailstate import load_counters
from ctxhealth.policy.profile import default_profile

from .agents import agent_or_skip
from .claude_harness import ClaudeBox, hooks_fired, injected
from .fake_anthropic import Exchange, FakeAnthropic, message_text

pytestmark = pytest.mark.conformance


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        yield server


@pytest.fixture
def box(tmp_path: Path, fake: FakeAnthropic) -> ClaudeBox:
    return ClaudeBox(tmp_path, fake, agent_or_skip("claude"))


def test_a_subagents_tool_calls_are_not_the_main_sessions(box: ClaudeBox, fake: FakeAnthropic) -> None:
    box.install_ctxhealth()
    box.print_mode("AGENT: look around")
    assert fake.messages("subagent"), "the CLI started no sub-agent"
    post = [h for h in hooks_fired(box) if h.event == "PostToolUse"]
    assert len(post) >= 2  # the sub-agent's Bash call and the main thread's Agent call both fired
    counters = load_counters(str(box.ctxhealth_home), str(box.transcript()))
    assert counters is not None
    main_calls = sum(
        1
        for e in fake.messages("main")
        for block in (e.reply.blocks if e.reply is not None else [])
        if type(block).__name__ == "ToolUse"
    )
    # the Agent call; the sub-agent's `echo sub` is its own (the session monitor's count)
    assert tool_counts(counters).calls == main_calls == 1


def test_a_compaction_then_a_resume_gives_back_once(box: ClaudeBox, fake: FakeAnthropic) -> None:
    box.install_ctxhealth()
    box.print_mode("BASH: false x2")
    box.print_mode("/compact", "--continue")
    box.print_mode("go on", "--continue")
    after_compact = injected(fake.messages("main")[-1])
    assert any("Context was compacted" in n for n in after_compact)
    box.print_mode("and then", "--continue")  # a resume after the compaction: nothing new injected
    last = fake.messages("main")[-1]
    assert [n for n in injected(last) if n not in after_compact] == []
    events = [(h.event, h.matcher) for h in hooks_fired(box)]
    assert events.count(("SessionStart", "compact")) == 1 and ("SessionStart", "resume") in events


DRIFTED = "Fix the timezone parser so ISO offsets round-trip in dates.py PAD: 300000"
"""A request the fake model answers with 300,000 characters of lorem ipsum: the output shares no word
with the request (drift, read on a whole window)."""
MODEL = ("--model", "claude-sonnet-4-5")
"""A 200K window: the prompt after that answer (about 97K tokens) is past the sweet spot (74K), short
of the compact zone (111K), where drift decides."""


REANCHOR_HEAD = "[RE-ANCHOR -- Context drift detected]"


def _reanchors(exchange: Exchange) -> int:
    """How many re-anchor notes the request's messages hold (the CLI puts a hook's context inside a
    ``<system-reminder>``, after its own words)."""
    return sum(message_text(m).count(REANCHOR_HEAD) for m in exchange.body.get("messages", []))


def _drifted(box: ClaudeBox, fake: FakeAnthropic) -> None:
    """A session whose latest response was made past the sweet spot with output off its request: the
    monitor's decision (saved by the Stop hook) is to re-anchor."""
    box.install_ctxhealth()
    box.print_mode(DRIFTED, *MODEL)
    box.print_mode("go on", "--continue", *MODEL)  # a follow-up: its prompt holds the long answer
    usage = fake.messages("main")[-1].usage
    prompt = usage["input_tokens"] + usage["cache_creation_input_tokens"] + usage["cache_read_input_tokens"]
    zones = default_profile().zones(ModelRegistry.default().lookup(MODEL[1]))
    assert zones.sweet_spot < prompt < zones.compact_zone  # drift decides there
    assert _reanchors(fake.messages("main")[-1]) == 0  # the fill read at its prompt was below the sweet spot
    counters = load_counters(str(box.ctxhealth_home), str(box.transcript()))
    assert counters is not None and counters.assessment is not None
    assert counters.assessment["action"] == "reanchor"


def test_a_follow_up_after_drift_is_re_anchored(box: ClaudeBox, fake: FakeAnthropic) -> None:
    _drifted(box, fake)
    box.print_mode("ok continue", "--continue", *MODEL)  # the request stands: its drift is re-anchored
    assert _reanchors(fake.messages("main")[-1]) == 1


def test_a_new_request_after_drift_is_not_re_anchored(box: ClaudeBox, fake: FakeAnthropic) -> None:
    """The person changed the subject: the output so far was for the request before, so there is no
    drift from the new one to call (nor a reason to send the agent back to the old one)."""
    _drifted(box, fake)
    box.print_mode(
        "Now write the release notes for the billing dashboard export feature", "--continue", *MODEL
    )
    last = fake.messages("main")[-1]
    assert "release notes" in message_text(last.body["messages"][-1])
    assert _reanchors(last) == 0
    counters = load_counters(str(box.ctxhealth_home), str(box.transcript()))
    assert counters is not None and counters.assessment is not None
    assert counters.assessment["action"] != "reanchor"
