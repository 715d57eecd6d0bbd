"""Invariants of every recovery strategy, property-tested over generated sessions: no orphaned
tool call or result, system prompt and original instruction kept, output within the budget (or a
usage error saying so), deterministic."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxhealth.errors import UsageError
from ctxhealth.model import (
    Block,
    CompactionSummary,
    Format,
    Message,
    Role,
    Session,
    TextBlock,
    ThinkingBlock,
    ToolCall,
    ToolResult,
)
from ctxhealth.recovery.budget import total_tokens
from ctxhealth.recovery.checkpoint import build_checkpoint, render_text
from ctxhealth.recovery.clear import ClearConfig, ClearTrigger, TriggerKind, clear_tool_results
from ctxhealth.recovery.compress import compress_history
from ctxhealth.recovery.pairing import find_orphans, repair_pairs
from ctxhealth.recovery.reanchor import reanchor
from ctxhealth.recovery.report import RecoveryReport
from ctxhealth.recovery.restart import restart
from ctxhealth.recovery.truncate import truncate

WORDS = st.sampled_from(
    ["fix", "the", "parser", "must", "never", "drop", "tests", "src/app.py", "error", "branch", "v1.2", "ok"]
)
TOOLS = st.sampled_from(["Bash", "Read", "Edit", "Write", "Grep"])


def _sentence(draw: st.DrawFn, lo: int = 1, hi: int = 12) -> str:
    return " ".join(draw(st.lists(WORDS, min_size=lo, max_size=hi)))


@st.composite
def sessions(draw: st.DrawFn, max_turns: int = 22) -> Session:
    """A plausible agent session: optional system prompt, an instruction, then turns of an assistant
    message (text, thinking, 0-3 tool calls) and the results; now and then a user request, a
    compaction summary, a long or failing output, or a trailing call without a result."""
    messages: list[Message] = []
    if draw(st.booleans()):
        messages.append(Message(Role.SYSTEM, (TextBlock("You are a careful agent. " + _sentence(draw)),)))
    messages.append(Message(Role.USER, (TextBlock("Please " + _sentence(draw, 2)),)))
    n = 0
    for _ in range(draw(st.integers(0, max_turns))):
        blocks: list[Block] = []
        if draw(st.booleans()):
            blocks.append(TextBlock(_sentence(draw)))
        if draw(st.integers(0, 4)) == 0:
            blocks.append(ThinkingBlock(_sentence(draw)))
        calls = []
        for _ in range(draw(st.integers(0, 3))):
            n += 1
            name = draw(TOOLS)
            calls.append(ToolCall(f"call_{n}", name, {"command": _sentence(draw), "file_path": "src/app.py"}))
        blocks.extend(calls)
        if not blocks:
            blocks.append(TextBlock("done"))
        messages.append(Message(Role.ASSISTANT, tuple(blocks)))
        if calls:
            results: list[Block] = []
            for c in calls:
                lines = draw(st.integers(1, 3 if draw(st.integers(0, 6)) else 900))
                failed = draw(st.integers(0, 3)) == 0
                body = "\n".join(f"line {i} " + ("Error: boom" if failed else "fine") for i in range(lines))
                results.append(ToolResult(c.id, body, is_error=failed))
            messages.append(Message(draw(st.sampled_from([Role.USER, Role.TOOL])), tuple(results)))
        roll = draw(st.integers(0, 9))
        if roll == 0:
            messages.append(Message(Role.USER, (TextBlock("Also " + _sentence(draw, 3)),)))
        elif roll == 1:
            messages.append(Message(Role.USER, (CompactionSummary("Summary: " + _sentence(draw, 3)),)))
    if draw(st.integers(0, 5)) == 0:
        messages.append(Message(Role.ASSISTANT, (ToolCall("dangling", "Bash", {"command": "ls"}),)))
    return Session(path="generated", format=Format.ANTHROPIC_MESSAGES, messages=tuple(messages))


Run = Callable[[Session, int | None], tuple[Session, RecoveryReport]]
STRATEGIES: dict[str, Run] = {
    "truncate": lambda s, b: truncate(s, budget_tokens=b),
    "restart": lambda s, b: restart(s, budget_tokens=b),
    "reanchor": lambda s, b: reanchor(s),
    "clear": lambda s, b: clear_tool_results(
        s, ClearConfig(ClearTrigger(TriggerKind.TOOL_USES, 1), keep_tool_uses=2)
    ),
    "compress": lambda s, b: compress_history(s),
}
BUDGETED = {"truncate", "restart"}
FAST = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("name", sorted(STRATEGIES))
@FAST
@given(session=sessions())
def test_strategy_keeps_pairs_system_prompt_and_instruction(name: str, session: Session) -> None:
    out, report = STRATEGIES[name](session, None)
    assert find_orphans(out.messages) == ()
    assert out.system_prompt == session.system_prompt
    if name == "restart":
        assert out.instruction.startswith(session.instruction.strip())
    else:
        assert out.instruction == session.instruction
    assert report.messages_after == len(out.messages)
    assert report.tokens_after == total_tokens(out.messages)


@pytest.mark.parametrize("name", sorted(STRATEGIES))
@FAST
@given(session=sessions(max_turns=8))
def test_strategy_is_deterministic(name: str, session: Session) -> None:
    assert STRATEGIES[name](session, None) == STRATEGIES[name](session, None)


@pytest.mark.parametrize("name", sorted(BUDGETED))
@FAST
@given(session=sessions(), budget=st.integers(40, 3_000))
def test_budgeted_strategy_fits_or_says_how_much_it_needs(name: str, session: Session, budget: int) -> None:
    try:
        out, report = STRATEGIES[name](session, budget)
    except UsageError as exc:
        assert "raise --budget to at least" in exc.hint
        needed = int(exc.hint.rsplit(" ", 1)[1])
        assert needed > budget
        return
    assert total_tokens(out.messages) <= budget
    assert report.budget_tokens == budget
    assert find_orphans(out.messages) == ()


@FAST
@given(session=sessions(), budget=st.integers(150, 800))
def test_checkpoint_fits_budget_unless_must_keep_fields_overflow(session: Session, budget: int) -> None:
    cp = build_checkpoint(session, budget_tokens=budget)
    if cp.over_budget:
        # Only the never-dropped fields may push it over: the smallest form is what we got.
        assert cp.key_findings == () and cp.last_progress == "" and cp.requests == ()
    else:
        assert cp.tokens <= budget
    assert render_text(cp) == render_text(build_checkpoint(session, budget_tokens=budget))


@FAST
@given(session=sessions(max_turns=10))
def test_repair_pairs_is_idempotent_and_only_removes(session: Session) -> None:
    repaired, removed = repair_pairs(session.messages)
    assert find_orphans(repaired) == ()
    assert repair_pairs(repaired) == (repaired, ())
    kept_ids = {b.id for m in repaired for b in m.tool_calls}
    all_ids = {b.id for m in session.messages for b in m.tool_calls}
    assert kept_ids <= all_ids
    assert bool(removed) == bool(find_orphans(session.messages))
