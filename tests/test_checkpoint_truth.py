"""What a checkpoint tells the model must be true now: no resolved error as a blocker, no template
text as the person's constraints, no harness framing (Codex's exec header, Claude Code's internal
agent metadata, JSON escapes) in the findings, and ctxhealth's own words never quoted back."""

from __future__ import annotations

from pathlib import Path

from ctxhealth.integrations.claude_code.hooks import reanchor_after_compaction
from ctxhealth.model import Format, Message, Role, Session, TextBlock, ToolCall, ToolResult
from ctxhealth.recovery.checkpoint import CONTINUE_DIRECTIVE, build_checkpoint, render_text
from ctxhealth.recovery.restart import restart
from ctxhealth.sources import read_session

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "claude-code-session.jsonl"
TASK = "Fix the failing date parser in src/dates.py. Please don't change the tests."


def session_of(*messages: Message) -> Session:
    return Session(path="t", format=Format.ANTHROPIC_MESSAGES, messages=messages)


def call(i: int, command: str) -> Message:
    return Message(Role.ASSISTANT, (ToolCall(f"c{i}", "Bash", {"command": command}),))


def result(i: int, text: str, *, error: bool = False) -> Message:
    return Message(Role.USER, (ToolResult(f"c{i}", text, is_error=error),))


def test_the_shipped_example_lists_no_resolved_error_as_a_blocker() -> None:
    cp = build_checkpoint(read_session(EXAMPLE))
    assert "All 13 tests pass" in cp.last_progress
    assert cp.blocking_errors == ()  # every error was fixed by a later run (PYTHONPATH=src python -c ...)


def test_an_env_prefixed_retry_resolves_the_error() -> None:
    s = session_of(
        Message(Role.USER, (TextBlock(TASK),)),
        call(0, 'python -c "import dates"'),
        result(0, "ModuleNotFoundError: No module named 'dates'", error=True),
        call(1, 'PYTHONPATH=src python -c "import dates"'),
        result(1, "ok"),
    )
    assert build_checkpoint(s).blocking_errors == ()


def test_template_code_and_examples_are_not_user_constraints() -> None:
    template = (
        "<pr_description>\nThe parser must accept ISO dates.\n</pr_description>\n"
        "<instructions>\n# Task Instructions\n"
        "```bash\nsed -i '0,/old/s//new/' file.py  # Replace only first occurrence\n```\n"
        "<!-- These comments are hidden, so you do not need to remove them! -->\n"
        "<example_response>\nTHOUGHT: I need to understand the structure of the repository first.\n"
        "</example_response>\n</instructions>"
    )
    s = session_of(
        Message(Role.USER, (TextBlock(template),)), Message(Role.ASSISTANT, (TextBlock("On it."),))
    )
    constraints = build_checkpoint(s).constraints
    assert "The parser must accept ISO dates." in constraints
    joined = "\n".join(constraints)
    assert "Replace only first occurrence" not in joined
    assert "do not need to remove them" not in joined and "THOUGHT" not in joined


def test_findings_carry_no_harness_framing() -> None:
    codex = (
        "Chunk ID: 9c1e\nWall time: 0.0512 seconds\nProcess exited with code 1\nOriginal token count: 88\n"
        "Output:\nTraceback (most recent call last):\nValueError: month must be in 1..12"
    )
    agent = (
        "Async agent launched successfully. (This tool result is internal metadata — never quote or paste "
        "any part of it, including the agentId below, into a user-facing reply.)\nagentId: aa67f4fdf438e9e3b"
    )
    s = session_of(
        Message(Role.USER, (TextBlock(TASK),)),
        call(0, "pytest"),
        result(0, codex, error=True),
        call(1, "cat notes.json"),
        result(1, '{"output": "it\\u0027s the month field", "metadata": {"exit_code": 0}}'),
        Message(Role.ASSISTANT, (ToolCall("c2", "Agent", {"prompt": "scan"}),)),
        result(2, agent),
        Message(Role.ASSISTANT, (TextBlock("The month check is off by one."),)),
    )
    cp = build_checkpoint(s)
    text = render_text(cp)
    for framing in ("Chunk ID", "Wall time", "Original token count", "\\u0027", "never quote", "agentId"):
        assert framing not in text, framing
    assert "it's the month field" in text
    assert "ValueError: month must be in 1..12" in "\n".join(cp.errors)
    assert any(f.startswith("Bash `pytest`: exit code 1") for f in cp.key_findings)  # which command failed


def test_a_checkpoint_of_a_restarted_session_does_not_nest_the_old_one() -> None:
    s = session_of(
        Message(Role.USER, (TextBlock(TASK),)),
        call(0, "pytest"),
        result(0, "FAILED test_dates.py::test_iso - ValueError", error=True),
        Message(Role.ASSISTANT, (TextBlock("Looking at the month parsing next."),)),
    )
    restarted, _ = restart(s)
    later = session_of(*restarted.messages, Message(Role.ASSISTANT, (TextBlock("Fixed the month parsing."),)))
    text = render_text(build_checkpoint(later))
    assert text.count("[CONTEXT CHECKPOINT") == 1
    assert text.count("Do not repeat completed work") == 1
    assert build_checkpoint(later).task == TASK


def test_the_re_injected_checkpoint_says_its_directive_once() -> None:
    from ctxhealth.integrations.claude_code.tailstate import SessionCounters

    counters = SessionCounters()
    s = session_of(Message(Role.USER, (TextBlock(TASK),)), Message(Role.ASSISTANT, (TextBlock("Reading."),)))
    counters.checkpoint_text = render_text(build_checkpoint(s))
    counters.instruction = TASK
    text = reanchor_after_compaction(counters)
    assert text.count(CONTINUE_DIRECTIVE) == 1 and text.rstrip().endswith(CONTINUE_DIRECTIVE)
