"""Each detector on tiny constructed sessions: values, firing and the evidence (message indices)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ctxhealth.failures import is_failure
from ctxhealth.model import Message, Role, TextBlock, ToolCall, ToolResult, Usage
from ctxhealth.monitor import Monitor
from ctxhealth.policy.profile import Profile
from ctxhealth.signals.calls import CallKind, error_signature, parse_call

P = Profile(risk=None)


def sys_(text: str = "You are an agent.") -> Message:
    return Message(Role.SYSTEM, (TextBlock(text),))


def user(text: str) -> Message:
    return Message(Role.USER, (TextBlock(text),))


def act(n: int, command: str, text: str = "", fill: int | None = None) -> Message:
    blocks = ((TextBlock(text),) if text else ()) + (ToolCall(f"c{n}", "bash", {"command": command}),)
    usage = Usage(input_tokens=fill, output_tokens=10) if fill is not None else None
    return Message(Role.ASSISTANT, blocks, usage=usage)


def res(n: int, text: str = "ok", code: int | None = 0) -> Message:
    return Message(Role.USER, (ToolResult(f"c{n}", text, is_error=bool(code), exit_code=code),))


def run(messages: list[Message], model: str = "claude-sonnet-4") -> Monitor:
    m = Monitor(model, P)
    for msg in messages:
        m.observe(msg)
    return m


def test_parse_call_kinds() -> None:
    def kinds(cmd: str) -> frozenset[CallKind]:
        return parse_call(ToolCall("x", "bash", {"command": cmd})).kinds

    assert kinds("cat src/a.py") == {CallKind.READ}
    assert kinds("nl -ba src/a.py | sed -n '1,20p'") == {CallKind.READ}
    assert kinds("sed -i 's/a/b/' src/a.py") == {CallKind.EDIT}
    assert kinds("cat <<'EOF' > t.py\nprint(1)\nEOF") == {CallKind.EDIT}
    assert kinds("rm t.py") == {CallKind.DELETE}
    assert CallKind.VERIFY in kinds("cd /repo && python -m pytest tests/test_a.py")
    assert kinds("grep -rn foo src") == {CallKind.SEARCH}
    edit = parse_call(ToolCall("x", "Edit", {"file_path": "a.py", "old_string": "x", "new_string": "y"}))
    assert edit.edits == ("a.py",) and edit.change == ("x", "y")
    assert parse_call(ToolCall("x", "Read", {"file_path": "a.py"})).reads == ("a.py",)


def test_failure_judgement() -> None:
    assert is_failure(ToolResult("x", "fine", exit_code=1))
    assert not is_failure(ToolResult("x", "Traceback (most recent call last)", exit_code=0))
    assert is_failure(ToolResult("x", "Traceback (most recent call last):\n  ...\nValueError: bad 12"))
    assert is_failure(ToolResult("x", "whatever", is_error=True))
    assert not is_failure(ToolResult("x", "all good"))
    a = error_signature(ToolResult("x", "Traceback\nValueError: bad value 12"))
    b = error_signature(ToolResult("x", "Traceback\nValueError: bad value 99"))
    assert a == b == "ValueError: bad value N"


def test_failure_rate_consecutive_and_same_tool_with_evidence() -> None:
    msgs = [sys_(), user("fix the parser")]
    for n, code in enumerate([0, 1, 1, 1]):
        msgs += [act(n, f"python run{n}.py"), res(n, f"Error: boom {n}", code)]
    m = run(msgs)
    sig = {s.name: s for s in m.failures.signals()}
    # results sit at indices 3, 5, 7, 9; failures at 5, 7, 9
    assert sig["failure_rate"].value == 0.75 and sig["failure_rate"].fired
    assert sig["failure_rate"].evidence == (5, 7, 9)
    assert sig["consecutive_failures"].value == 3 and sig["consecutive_failures"].fired
    assert sig["consecutive_failures"].evidence == (5, 7, 9)
    assert sig["same_tool_failures"].fired and sig["same_tool_failures"].evidence == (5, 7, 9)
    assert sig["same_mistake"].value == 3 and sig["same_mistake"].evidence == (5, 7, 9)


def test_a_failure_without_an_error_line_is_no_repeated_mistake() -> None:
    """Three different LaTeX failures that all end with the same closing line are three failures, not
    one mistake made three times (the signature fell back to the last output line)."""
    msgs = [sys_(), user("build the paper")]
    for n, missing in enumerate(["\\cite{a}", "figure b.pdf", "\\usepackage{c}"]):
        out = f"! Undefined control sequence {missing}.\nl.{40 + n}\nTranscript written on paper.log."
        msgs += [act(n, "pdflatex paper.tex"), res(n, out, 1)]
    sig = {s.name: s for s in run(msgs).failures.signals()}
    assert sig["consecutive_failures"].value == 3
    assert sig["same_mistake"].value == 0 and not sig["same_mistake"].fired
    assert error_signature(ToolResult("x", "ok\nTranscript written on paper.log.")) == ""


def test_failure_rate_needs_min_calls() -> None:
    m = run([sys_(), user("go"), act(0, "ls"), res(0, "x", 1), act(1, "ls"), res(1, "x", 1)])
    assert not m.failures.signals()[0].fired


def test_repeated_calls_rereads_and_thrash() -> None:
    msgs = [
        sys_(),
        user("fix a.py"),
        act(0, "cat a.py"),  # 2
        res(0),
        act(1, "cat a.py"),  # 4: repeated call + re-read
        res(1),
        act(2, "sed -i 's/foo/bar/' a.py"),  # 6
        res(2),
        act(3, "sed -i 's/bar/foo/' a.py"),  # 8: undoes the change
        res(3),
        act(4, "cat a.py"),  # 10: read after an edit of a.py: neither a re-read nor a repeated call
        res(4),
        act(5, "cat a.py"),  # 12: no edit since 10: a repeated call and a re-read
        res(5),
    ]
    m = run(msgs)
    sig = {s.name: s for s in m.repetition.signals()}
    assert sig["repeated_calls"].value == 2 and sig["repeated_calls"].evidence == (4, 12)
    assert sig["rereads"].value == 2 and sig["rereads"].evidence == (4, 12)
    assert sig["edit_thrash"].fired and sig["edit_thrash"].evidence == (8,)


def test_drift_similarity_and_evidence() -> None:
    instruction = "Fix the timezone parser so ISO dates with offsets round-trip correctly"
    on_topic = "The timezone parser drops offsets; I will fix ISO dates so they round-trip."
    m = run([sys_(), user(instruction), Message(Role.ASSISTANT, (TextBlock(on_topic),))])
    s = m.drift.signals()[0]
    assert s.value > 0.5 and not s.fired
    assert s.evidence == (1, 2)
    off = "Let me refactor the logging configuration and rename every helper in the utilities module."
    m.observe(Message(Role.ASSISTANT, (TextBlock(off * 30),)))
    assert m.drift.similarity < 0.15
    assert not m.drift.drifting  # only counts above the sweet spot


def test_drift_keeps_original_instruction_across_compaction() -> None:
    from ctxhealth.model import CompactionSummary

    m = run(
        [
            sys_(),
            user("Make the cache eviction deterministic"),
            Message(Role.USER, (CompactionSummary("This session is being continued: refactor docs"),)),
            user("continue please"),
        ]
    )
    assert m.drift.instruction == "Make the cache eviction deterministic"
    assert m.drift.instruction_index == 1


def test_drift_window_is_bounded_by_characters() -> None:
    m = run([sys_(), user("alpha beta gamma")])
    for i in range(200):
        m.observe(Message(Role.ASSISTANT, (TextBlock(f"word{i} " * 50),)))
    assert m.drift._chars <= P.drift_window_chars
    assert m.drift._count < 400
    # the window keeps few runs, and only instruction words are tracked
    assert len(m.drift._runs) <= P.drift_window_chars // 400 + 1
    assert len(m.drift._heap) <= len(m.drift.instruction_words) * len(m.drift._runs)


def test_indicators_contradiction_missing_context_over_explanation_stale() -> None:
    long = "I will now carefully explain again the exact same plan for the parser module in detail."
    msgs = [
        sys_(),
        user("fix it"),
        Message(Role.ASSISTANT, (TextBlock("Actually, that was wrong. Let me revert my change."),)),  # 2
        Message(Role.ASSISTANT, (TextBlock("Wait, I made a mistake."),)),  # 3
        Message(Role.ASSISTANT, (TextBlock("Could you please provide the original file?"),)),  # 4
        Message(Role.ASSISTANT, (TextBlock(f"{long} {long}"),)),  # 5: repeats itself once
        Message(Role.ASSISTANT, (TextBlock(f"{long}. {long}"),)),  # 6
        act(7, "rm old.py"),  # 7
        res(7),
        act(9, "cat old.py"),  # 9: reads a deleted path
        res(9, "cat: old.py: No such file or directory", 1),
    ]
    m = run(msgs)
    sig = {s.name: s for s in m.indicators.signals()}
    assert sig["contradictions"].fired and sig["contradictions"].evidence == (2, 3)
    assert sig["missing_context"].fired and sig["missing_context"].evidence == (4,)
    assert sig["over_explanation"].fired and sig["over_explanation"].evidence == (5, 6)
    assert sig["stale_references"].fired and sig["stale_references"].evidence == (9,)
    a = m.last
    assert a is not None and a.zone.level == a.base_zone.level + 1
    assert any("zone raised" in r for r in a.reasons)


def test_indicator_windows_forget_old_events() -> None:
    msgs = [sys_(), user("x"), Message(Role.ASSISTANT, (TextBlock("Wait, no."),))]
    msgs += [Message(Role.ASSISTANT, (TextBlock(f"step {i}"),)) for i in range(P.indicator_window + 1)]
    m = run(msgs)
    assert m.indicators.signals()[0].value == 0


def test_fidelity_verification_gap() -> None:
    msgs = [sys_(), user("fix"), act(0, "python -m pytest"), res(0)]
    for n in range(1, 12):
        msgs += [act(n, f"cat f{n}.py"), res(n)]
    m = run(msgs)
    gap = m.fidelity.signals()[0]
    assert gap.name == "verification_gap" and gap.fired
    assert gap.value == 11 and gap.evidence == (2,)


def test_pressure_zones_on_one_scale() -> None:
    # full tier (sonnet): 80K / 120K / 180K fitted inside the usable window 200K - 20K - 13K = 167K
    m = run([sys_(), user("go"), act(0, "ls", fill=100_000)])
    th = m.pressure.thresholds
    assert (th.sweet_spot, th.compact_zone, th.hard_limit) == (74_222, 111_333, 167_000)
    assert m.pressure.tier_zone.value == "yellow"
    assert m.pressure.window_zone.value == "green"
    assert abs(m.pressure.pressure - 100_000 / 167_000) < 1e-9
    m.observe(act(1, "ls", fill=152_000))
    # 152K / 167K = 91% of the usable window: window critical (RED) beats the tier's compact zone
    assert m.pressure.window_zone.value == "red" and m.pressure.tier_zone.value == "orange"
    assert m.pressure.zone.value == "red"
    sig = {s.name: s for s in m.pressure.signals()}
    assert sig["pressure"].evidence == (3,)
    assert "167000" in sig["pressure"].detail


def test_compact_tier_for_unknown_models() -> None:
    m = run([sys_(), user("go"), act(0, "ls", fill=35_000)], model="some-unknown-model")
    assert m.info.tier.value == "compact"
    assert m.pressure.tier_zone.value == "orange"


@given(st.text(max_size=300), st.lists(st.text(max_size=400), max_size=8))
def test_drift_similarity_is_a_fraction_and_matches_a_recount(instruction: str, outputs: list[str]) -> None:
    from ctxhealth.signals.text import content_words

    m = run([sys_(), user(instruction or "x")])
    for out in outputs:
        m.observe(Message(Role.ASSISTANT, (TextBlock(out),)))
    assert 0.0 <= m.drift.similarity <= 1.0
    # independent recount over the exact window the detector holds
    window = set(m.drift.window_words())
    instr = m.drift.instruction_words
    if instr and window:
        assert m.drift.similarity == len(instr & window) / len(instr)
    assert set(content_words("Testing the tests")) == {"test"}


def test_lazy_signals_mapping() -> None:
    m = run([sys_(), user("go"), act(0, "ls", fill=1_000)])
    a = m.last
    assert a is not None
    names = list(a.signals)
    assert names[0] == "pressure" and len(a.signals) == len(names) == 20
    assert a.signals["drift"].name == "drift"
    # a later observation does not change an earlier assessment's readings, read before or after it
    before = a.signals["pressure"].value
    unread = m.observe(act(1, "ls", fill=90_000))
    assert a.signals["pressure"].value == before
    m.observe(act(2, "ls", fill=150_000))
    assert unread.signals["pressure"].value == unread.pressure != m.last.pressure


def test_pinned_instruction_is_not_replaced_by_later_requests() -> None:
    m = Monitor("claude-sonnet-4", P)
    m.set_instruction("Port the scheduler to asyncio")
    m.observe(user("hello there"))
    assert m.drift.instruction == "Port the scheduler to asyncio"
