"""Each recovery strategy and the checkpoint builder on small sessions built by hand."""

from __future__ import annotations

import pytest

from ctxhealth.errors import UsageError
from ctxhealth.model import (
    Block,
    CompactionSummary,
    Format,
    Message,
    Role,
    Session,
    TextBlock,
    ToolCall,
    ToolResult,
)
from ctxhealth.policy import Action, Counters, record
from ctxhealth.policy.profile import default_profile
from ctxhealth.recovery.budget import text_tokens, total_tokens
from ctxhealth.recovery.checkpoint import (
    CHECKPOINT_FOOTER,
    CHECKPOINT_HEADER,
    CONTINUE_DIRECTIVE,
    build_checkpoint,
    render_block,
    render_markdown,
    render_text,
)
from ctxhealth.recovery.clear import (
    PLACEHOLDER_PREFIX,
    ClearConfig,
    ClearTrigger,
    TriggerKind,
    clear_tool_results,
)
from ctxhealth.recovery.compress import HISTORY_HEADER, CompressionLevel, CompressionPolicy, compress_history
from ctxhealth.recovery.digest import trim_error_output
from ctxhealth.recovery.pairing import OrphanKind, find_orphans, repair_pairs
from ctxhealth.recovery.parts import before_compaction
from ctxhealth.recovery.reanchor import drift_similarity, reanchor
from ctxhealth.recovery.report import RemovalKind, Strategy
from ctxhealth.recovery.restart import RESTART_DIRECTIVE, restart
from ctxhealth.recovery.truncate import truncate
from ctxhealth.recovery.warn import WarningKind, warn_drift, warn_failure_rate, warn_near_limit

INSTRUCTION = "Add retry logic to the HTTP client in src/client.py. Never change the public API."


def system(text: str) -> Message:
    return Message(Role.SYSTEM, (TextBlock(text),))


def user(text: str) -> Message:
    return Message(Role.USER, (TextBlock(text),))


def assistant(text: str = "", *calls: ToolCall) -> Message:
    blocks: list[Block] = [TextBlock(text)] if text else []
    return Message(Role.ASSISTANT, (*blocks, *calls))


def results(*items: tuple[str, str, bool]) -> Message:
    return Message(Role.USER, tuple(ToolResult(i, t, is_error=e) for i, t, e in items))


def session(*messages: Message) -> Session:
    return Session(path="t", format=Format.ANTHROPIC_MESSAGES, messages=tuple(messages))


def bash(call_id: str, command: str) -> ToolCall:
    return ToolCall(call_id, "Bash", {"command": command})


def worked_session() -> Session:
    todos = {
        "todos": [
            {"content": "Write failing test for retries", "status": "completed"},
            {"content": "Implement exponential backoff", "status": "in_progress"},
            {"content": "Document the retry settings", "status": "pending"},
        ]
    }
    return session(
        system("You are a coding agent."),
        user(INSTRUCTION),
        assistant("I'll start on a branch.", bash("c1", "git checkout -b feature/retry-backoff")),
        results(("c1", "Switched to a new branch 'feature/retry-backoff'", False)),
        assistant("", ToolCall("c2", "TodoWrite", todos)),
        results(("c2", "Todos updated", False)),
        assistant(
            "I'll use tenacity instead of a hand-written loop because it is already a dependency.",
            ToolCall(
                "c3", "Edit", {"file_path": "/repo/src/client.py", "old_string": "a", "new_string": "b"}
            ),
        ),
        results(("c3", "The file /repo/src/client.py has been updated.", False)),
        user("Only retry on 5xx responses, do not retry 4xx."),
        assistant("Running the tests.", bash("c4", "pytest tests/test_client.py")),
        results(
            (
                "c4",
                "E   AssertionError: expected 3 attempts, got 1\nFAILED tests/test_client.py::test_retry",
                True,
            )
        ),
    )


# --- checkpoint -------------------------------------------------------------------------------


def test_checkpoint_keeps_never_compact_fields() -> None:
    cp = build_checkpoint(worked_session())
    assert cp.instruction == INSTRUCTION
    assert cp.task == INSTRUCTION  # shorter than 300 chars
    assert "Only retry on 5xx responses, do not retry 4xx." in cp.constraints
    assert "Never change the public API." in cp.constraints
    assert "feature/retry-backoff" in cp.identifiers
    assert cp.files == ("/repo/src/client.py",)
    assert cp.current_goal == "Implement exponential backoff"
    assert cp.completed == ("Write failing test for retries",)
    assert cp.remaining == ("Document the retry settings",)
    assert any("AssertionError: expected 3 attempts" in e for e in cp.blocking_errors)
    assert any("tenacity" in d.text and "already a dependency" in d.why for d in cp.decisions)
    assert "1 edits to 1 file" in cp.uncommitted
    assert set(cp.tools_used) == {"Bash", "TodoWrite", "Edit"}
    assert cp.tokens == text_tokens(render_text(cp)) and cp.tokens <= 500


def test_checkpoint_text_follows_the_spec_format() -> None:
    cp = build_checkpoint(worked_session())
    text = render_text(cp)
    lines = text.splitlines()
    assert lines[0] == CHECKPOINT_HEADER
    assert lines[1] == f"Original task: {INSTRUCTION}"
    assert lines[2].startswith("Tools used: ")
    assert "Key findings:" in lines and "  - Bash: E   AssertionError" not in lines  # whitespace collapsed
    assert any(line.startswith("Last progress: Running the tests.") for line in lines)
    assert text.endswith(f"{CHECKPOINT_FOOTER}\n\n{CONTINUE_DIRECTIVE}")
    assert render_block(cp) + "\n\n" + CONTINUE_DIRECTIVE == text


def test_checkpoint_spec_limits() -> None:
    long_task = "Refactor " + "very " * 100 + "carefully."
    msgs: list[Message] = [user(long_task)]
    for i in range(12):
        msgs.append(assistant("x" * 900, ToolCall(f"t{i}", f"Tool{i:02d}", {"path": f"f{i}"})))
        msgs.append(results((f"t{i}", f"result {i} " + "y" * 400, False)))
    cp = build_checkpoint(session(*msgs), budget_tokens=5_000)
    assert len(cp.task) <= 300 and cp.instruction == long_task
    assert len(cp.tools_used) == 10
    assert len(cp.key_findings) == 5
    assert all(len(f) <= 200 for f in cp.key_findings)
    assert cp.key_findings[-1].startswith("Tool11 `f11`: result 11")  # the call's target named
    assert len(cp.last_progress) <= 500


def test_checkpoint_budget_shrinks_verbose_fields_but_never_constraints() -> None:
    big = build_checkpoint(worked_session())  # the spec's 500 tokens (a larger budget adds more)
    small = build_checkpoint(worked_session(), budget_tokens=120)
    assert small.tokens < big.tokens
    assert small.constraints == big.constraints
    assert small.identifiers == big.identifiers
    assert small.blocking_errors == big.blocking_errors
    assert small.current_goal == big.current_goal


def test_checkpoint_markdown_sections() -> None:
    md = render_markdown(build_checkpoint(worked_session()))
    assert md.startswith("## Checkpoint: Add retry logic")
    headings = [line for line in md.splitlines() if line.startswith("### ")]
    assert headings == [
        "### Status",
        "### Completed",
        "### Key decisions",
        "### Remaining work",
        "### Blockers",
    ]
    assert "- Write failing test for retries" in md
    assert "AssertionError" in md.split("### Blockers", 1)[1]


def test_checkpoint_is_deterministic() -> None:
    assert render_text(build_checkpoint(worked_session())) == render_text(build_checkpoint(worked_session()))


def test_resolved_error_is_not_blocking() -> None:
    s = session(
        user("Build it"),
        assistant("", bash("a", "make all")),
        results(("a", "make: *** [all] Error 2", True)),
        assistant("", bash("b", "make all")),
        results(("b", "built", False)),
    )
    cp = build_checkpoint(s)
    assert cp.blocking_errors == ()
    assert cp.errors == ("make: *** [all] Error 2 (not blocking)",)


def test_old_unresolved_error_is_stale_and_vague_errors_name_their_call() -> None:
    msgs = [user("Build it"), assistant("", bash("a", "make docs")), results(("a", "Error", True))]
    for i in range(25):
        msgs += [assistant("", bash(f"k{i}", f"echo {i}")), results((f"k{i}", "fine", False))]
    msgs += [assistant("", bash("z", "pytest -q")), results(("z", "Error", True))]
    cp = build_checkpoint(session(*msgs))
    assert cp.blocking_errors == ("Bash pytest -q: Error",)
    assert cp.errors == ("Bash make docs: Error (not blocking)", "Bash pytest -q: Error")


# --- truncate ---------------------------------------------------------------------------------


def long_session(turns: int = 8) -> Session:
    msgs = [system("sys"), user(INSTRUCTION)]
    for i in range(turns):
        msgs.append(assistant(f"step {i}", bash(f"c{i}", f"echo {i}")))
        msgs.append(results((f"c{i}", f"out {i}", False)))
    return session(*msgs)


def test_truncate_keeps_head_checkpoint_and_last_two_pairs() -> None:
    s = long_session()
    out, report = truncate(s)
    m = out.messages
    assert m[0] == s.messages[0] and m[1] == s.messages[1]
    assert m[2].text.startswith(CHECKPOINT_HEADER)
    assert m[3:] == s.messages[-4:]
    assert report.counts_as_truncation and report.strategy is Strategy.TRUNCATE
    dropped = [r.index for r in report.removals if r.kind is RemovalKind.DROPPED]
    assert dropped == list(range(2, len(s.messages) - 4))
    assert report.tokens_after == total_tokens(m) < report.tokens_before
    assert record(Counters(), report.action, default_profile()).truncations == 1


def test_truncate_with_budget_shortens_long_outputs_keeping_error_tail() -> None:
    error = "\n".join(f"frame {i}" for i in range(3_000)) + "\nValueError: final cause"
    s = session(
        user(INSTRUCTION),
        assistant("a", bash("x", "run")),
        results(("x", error, True)),
    )
    out, report = truncate(s, budget_tokens=2_000)
    assert total_tokens(out.messages) <= 2_000
    kept = out.messages[-1].tool_results[0].text
    assert kept.endswith("ValueError: final cause")
    assert any(r.kind is RemovalKind.TRIMMED for r in report.removals)


def test_truncate_budget_too_small_is_a_usage_error() -> None:
    with pytest.raises(UsageError) as info:
        truncate(long_session(), budget_tokens=5)
    assert "raise --budget to at least" in info.value.hint


def test_truncate_drops_result_whose_call_was_cut() -> None:
    s = session(
        user(INSTRUCTION),
        assistant("", bash("a", "one"), bash("b", "two")),
        results(("a", "1", False)),
        results(("b", "2", False)),
        assistant("next", bash("c", "three")),
        results(("c", "3", False)),
        assistant("done"),
    )
    out, _ = truncate(s, keep_pairs=2)
    assert find_orphans(out.messages) == ()


# --- restart ----------------------------------------------------------------------------------


def test_restart_is_system_plus_one_user_message() -> None:
    s = worked_session()
    out, report = restart(s)
    assert [m.role for m in out.messages] == [Role.SYSTEM, Role.USER]
    text = out.messages[1].text
    assert text.startswith(INSTRUCTION + "\n\n" + CHECKPOINT_HEADER)
    assert text.endswith(CHECKPOINT_FOOTER + "\n\n" + RESTART_DIRECTIVE)
    assert report.counts_as_restart and report.action is Action.RESTART
    after = record(Counters(truncations=2, steps=9), report.action, default_profile())
    assert (after.restarts, after.steps) == (1, 0) and after.cooldown > 0


def test_restart_respects_budget() -> None:
    out, _ = restart(worked_session(), budget_tokens=250)
    assert total_tokens(out.messages) <= 250


# --- re-anchor --------------------------------------------------------------------------------


def test_reanchor_appends_the_spec_message_and_removes_nothing() -> None:
    s = long_session(3)
    out, report = reanchor(s, similarity=0.1234, tokens=123_456)
    assert out.messages[:-1] == s.messages
    assert out.messages[-1].text == (
        "[RE-ANCHOR -- Context drift detected]\n\n"
        "Your recent output has drifted from the original request.\n"
        "Reason: Task drift detected (similarity=0.12) at 123,456 tokens\n\n"
        "ORIGINAL REQUEST (verbatim):\n"
        f"{INSTRUCTION}\n\n"
        "Refocus on satisfying this specific request.\n"
        "Do not repeat completed work -- continue from where you are,\n"
        "but ensure your output addresses the original request above."
    )
    assert report.removals == ()


def test_drift_similarity_is_the_spec_overlap() -> None:
    s = session(user("alpha beta gamma delta"), assistant("beta and delta only"))
    assert drift_similarity(s) == pytest.approx(2 / 4)


# --- warnings ---------------------------------------------------------------------------------


def test_warnings_show_the_numbers() -> None:
    near = warn_near_limit(150_000, 180_000, zone="orange")
    assert (
        near.kind is WarningKind.NEAR_LIMIT
        and "150,000 of 180,000" in near.headline
        and "83%" in near.headline
    )
    fail = warn_failure_rate(5, 8, consecutive=3)
    assert "5 of 8" in fail.headline and "62%" in fail.headline and "3 in a row" in fail.headline
    drift = warn_drift(0.08, 95_000)
    assert "0.08" in drift.headline and "95,000" in drift.headline and "reanchor" in drift.detail


# --- clear tool results -----------------------------------------------------------------------


def clear_session() -> Session:
    msgs = [user(INSTRUCTION)]
    for i in range(6):
        name = "Read" if i != 1 else "Memory"
        msgs.append(assistant("", ToolCall(f"r{i}", name, {"file_path": f"/src/m{i}.py"})))
        msgs.append(results((f"r{i}", f"content of module {i} " * 200, i == 2)))
    return session(*msgs)


def test_clear_keeps_last_n_excludes_tools_and_says_what_was_there() -> None:
    cfg = ClearConfig(
        ClearTrigger(TriggerKind.TOOL_USES, 3), keep_tool_uses=2, exclude_tools=frozenset({"Memory"})
    )
    out, report = clear_tool_results(clear_session(), cfg)
    texts = [m.tool_results[0].text for m in out.messages if m.tool_results]
    cleared = [t.startswith(PLACEHOLDER_PREFIX) for t in texts]
    assert cleared == [True, False, True, True, False, False]
    assert "Read result for `/src/m0.py`" in texts[0] and "tokens" in texts[0]
    assert "it failed: content of module 2" in texts[2]
    assert find_orphans(out.messages) == ()
    assert len([r for r in report.removals if r.kind is RemovalKind.CLEARED]) == 3
    assert report.tokens_after < report.tokens_before


def test_clear_does_nothing_below_trigger_or_minimum() -> None:
    s = clear_session()
    out, report = clear_tool_results(s, ClearConfig(ClearTrigger(TriggerKind.TOKENS, 10**7)))
    assert out == s and "trigger not reached" in report.notes[0]
    out, report = clear_tool_results(
        s, ClearConfig(ClearTrigger(TriggerKind.TOOL_USES, 1), clear_at_least_tokens=10**6)
    )
    assert out == s and "nothing cleared" in report.notes[0]


def test_clear_tool_inputs() -> None:
    s = session(
        user(INSTRUCTION),
        assistant("", ToolCall("w", "Write", {"file_path": "/a.py", "content": "x = 1\n" * 300})),
        results(("w", "written " * 100, False)),
        assistant("", bash("b", "ls")),
        results(("b", "a.py", False)),
    )
    cfg = ClearConfig(ClearTrigger(TriggerKind.TOOL_USES, 1), keep_tool_uses=1, clear_tool_inputs=True)
    out, _ = clear_tool_results(s, cfg)
    call = out.messages[1].tool_calls[0]
    assert call.input == {"cleared": f"input of Write cleared, {call.input['cleared'].split(', ')[1]}"}
    assert out.messages[3] == s.messages[3]


# --- history compression ----------------------------------------------------------------------


def test_compression_levels_follow_the_spec() -> None:
    policy = CompressionPolicy()
    assert [policy.level(n) for n in (0, 4, 5, 15, 16)] == [
        CompressionLevel.RAW,
        CompressionLevel.RAW,
        CompressionLevel.LIGHT,
        CompressionLevel.LIGHT,
        CompressionLevel.AGGRESSIVE,
    ]
    s = long_session(3)
    out, report = compress_history(s)
    assert out == s and report.notes == ("raw (3 turns)",)


def test_light_compression_shortens_only_large_outputs() -> None:
    msgs = [user(INSTRUCTION)]
    for i in range(6):
        body = "data line\n" * (1_500 if i == 2 else 3)
        msgs += [assistant(f"turn {i}", bash(f"c{i}", "cat big")), results((f"c{i}", body, False))]
    s = session(*msgs)
    out, _ = compress_history(s)
    assert len(out.messages) == len(s.messages)
    changed = [i for i, (a, b) in enumerate(zip(s.messages, out.messages, strict=True)) if a != b]
    assert changed == [6]
    assert text_tokens(out.messages[6].tool_results[0].text) < 2_000
    assert [m.text for m in out.messages if m.role is Role.ASSISTANT] == [f"turn {i}" for i in range(6)]


def test_aggressive_compression_summarises_old_turns_and_keeps_unresolved_errors() -> None:
    msgs = [system("sys"), user(INSTRUCTION)]
    for i in range(20):
        if i == 3:
            trace = "Traceback (most recent call last):\n" + "\n".join(f"  frame {k}" for k in range(120))
            msgs += [
                assistant("compile", bash("e1", "make lib")),
                results(("e1", trace + "\nOSError: disk", True)),
            ]
        elif i == 5:
            msgs += [assistant("flaky", bash("e2", "pytest -x")), results(("e2", "FAILED test_a", True))]
        elif i == 7:
            msgs += [assistant("again", bash("e3", "pytest -x")), results(("e3", "1 passed", False))]
        else:
            msgs += [assistant(f"turn {i}", bash(f"c{i}", f"echo {i}")), results((f"c{i}", f"ok {i}", False))]
        if i == 4:
            msgs.append(user("Keep the old config format working."))
    s = session(*msgs)
    out, report = compress_history(s)
    assert out.messages[0] == s.messages[0] and out.messages[1] == s.messages[1]
    summary = out.messages[2].text
    assert summary.startswith(HISTORY_HEADER)
    assert "Turn 1: Bash echo 0 → ok (ok 0)" in summary
    assert "User (verbatim): Keep the old config format working." in summary
    assert "OSError: disk" in summary and "Traceback (most recent call last):" in summary
    # The resolved failure keeps only its turn line; its output is not carried.
    assert summary.count("Unresolved error output") == 1
    assert "Turn 6: Bash pytest -x → failed: FAILED test_a" in summary
    assert out.messages[3:] == s.messages[-10:]  # the last 5 turns, raw
    assert find_orphans(out.messages) == ()
    assert report.notes == ("aggressive (20 turns)",)


def test_trim_error_output_keeps_stack_and_last_50_lines() -> None:
    text = 'Traceback (most recent call last):\n  File "a.py", line 1\n' + "\n".join(
        f"noise {i}" for i in range(200)
    )
    trimmed = trim_error_output(text).splitlines()
    assert trimmed[0] == "Traceback (most recent call last):"
    assert trimmed[-50:] == [f"noise {i}" for i in range(150, 200)]
    assert any("earlier lines of error output trimmed" in line for line in trimmed)


# --- pairing and compaction split ------------------------------------------------------------


def test_find_and_repair_orphans() -> None:
    msgs = (
        user("go"),
        assistant("", bash("a", "x"), bash("b", "y")),
        results(("a", "1", False), ("zzz", "stray", False)),
        assistant("", bash("c", "z")),
    )
    kinds = {(o.tool_id, o.kind) for o in find_orphans(msgs)}
    assert kinds == {
        ("b", OrphanKind.CALL_WITHOUT_RESULT),
        ("zzz", OrphanKind.RESULT_WITHOUT_CALL),
        ("c", OrphanKind.CALL_WITHOUT_RESULT),
    }
    repaired, removed = repair_pairs(msgs)
    assert find_orphans(repaired) == () and len(removed) == 3
    assert [b.id for m in repaired for b in m.tool_calls] == ["a"]
    assert len(repaired) == 3  # the assistant left with nothing is gone


def test_before_compaction_splits_and_validates() -> None:
    s = session(
        user(INSTRUCTION),
        assistant("one"),
        Message(Role.USER, (CompactionSummary("first summary"),)),
        assistant("two"),
        Message(Role.USER, (CompactionSummary("second summary"),)),
    )
    pre, summary = before_compaction(s, 2)
    assert summary.text == "second summary" and len(pre.messages) == 4
    with pytest.raises(UsageError):
        before_compaction(s, 3)
