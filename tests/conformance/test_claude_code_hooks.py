"""The hooks under the real Claude Code CLI: what they count and inject, asserted against the fake
server's log (the truth) and the CLI's own debug log (which hooks ran)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ctxhealth.integrations.claude_code.assess import tool_counts
from ctxhealth.integrations.claude_code.tailstate import load_counters

from .agents import agent_or_skip
from .claude_harness import ClaudeBox, hooks_fired, injected
from .fake_anthropic import FakeAnthropic

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
