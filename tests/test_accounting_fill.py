"""Fill per turn on constructed sessions: reported, exact and calibrated-estimate paths, compactions."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from ctxhealth.accounting.fill import account_session
from ctxhealth.accounting.tokens import (
    MESSAGE_OVERHEAD_TOKENS,
    TOOL_BLOCK_OVERHEAD_TOKENS,
    count_tokens,
    message_tokens,
)
from ctxhealth.accounting.types import FillSource
from ctxhealth.model import (
    CompactionSummary,
    Format,
    Message,
    Role,
    Session,
    TextBlock,
    ToolCall,
    ToolResult,
    Usage,
)


def user(text: str) -> Message:
    return Message(Role.USER, (TextBlock(text),))


def assistant(text: str, *, context: int | None = None, rid: str | None = None, model: str = "m") -> Message:
    usage = Usage(input_tokens=context, output_tokens=7) if context is not None else None
    return Message(Role.ASSISTANT, (TextBlock(text),), response_id=rid, model=model, usage=usage)


def session(*messages: Message, model: str | None = "claude-sonnet-4-20250514", **kw: object) -> Session:
    return Session(path="t.jsonl", format=Format.ANTHROPIC_MESSAGES, messages=messages, model=model, **kw)  # type: ignore[arg-type]


def test_reported_fill_per_turn_and_dedupe_by_response_id() -> None:
    s = session(
        user("hi"),
        assistant("a", context=1_000, rid="r1"),
        assistant("a again", context=1_000, rid="r1"),  # the same response written twice
        user("more"),
        assistant("b", context=2_500, rid="r2"),
    )
    acc = account_session(s)
    assert [t.tokens for t in acc.turns] == [1_000, 2_500]
    assert [t.message_index for t in acc.turns] == [1, 4]
    assert acc.source is FillSource.REPORTED
    assert (acc.peak, acc.current, acc.window) == (2_500, 2_500, 200_000)
    assert acc.turns[0].output_tokens == 7


def test_exact_running_context_for_openai_models() -> None:
    texts = ["You are terse.", "hello world", "tiktoken is great!", "2 + 2 = 4"]
    s = session(
        Message(Role.SYSTEM, (TextBlock(texts[0]),)),
        user(texts[1]),
        assistant(texts[2]),
        user(texts[3]),
        assistant("ok"),
        model="gpt-4o",
    )
    acc = account_session(s)
    assert acc.source is FillSource.EXACT
    per = [count_tokens(t, "o200k_base").tokens + MESSAGE_OVERHEAD_TOKENS for t in texts]
    assert [t.tokens for t in acc.turns] == [per[0] + per[1], sum(per)]


def test_tool_payloads_count_in_the_running_context() -> None:
    call = ToolCall(id="c1", name="Bash", input={"command": "ls -la"})
    result = ToolResult(tool_call_id="c1", text="a.py\nb.py")
    s = session(
        user("list"),
        Message(Role.ASSISTANT, (call,), model="gpt-4o"),
        Message(Role.TOOL, (result,)),
        assistant("done"),
        model="gpt-4o",
    )
    acc = account_session(s)
    enc = "o200k_base"
    first = count_tokens("list", enc).tokens + MESSAGE_OVERHEAD_TOKENS
    call_tokens = (
        count_tokens('Bash\n{"command":"ls -la"}', enc).tokens
        + MESSAGE_OVERHEAD_TOKENS
        + TOOL_BLOCK_OVERHEAD_TOKENS
    )
    result_tokens = (
        count_tokens("a.py\nb.py", enc).tokens + MESSAGE_OVERHEAD_TOKENS + TOOL_BLOCK_OVERHEAD_TOKENS
    )
    assert [t.tokens for t in acc.turns] == [first, first + call_tokens + result_tokens]
    assert (acc.tool_calls, acc.tool_errors) == (1, 0)


def test_estimate_without_usage_or_encoding_uses_four_chars_per_token() -> None:
    s = session(user("x" * 400), assistant("y" * 400), user("z" * 400), assistant("w"), model="acme-9")
    acc = account_session(s)
    assert acc.source is FillSource.ESTIMATED
    assert not acc.model.known
    overhead_chars = MESSAGE_OVERHEAD_TOKENS * 4
    assert acc.turns[0].tokens == (400 + overhead_chars) // 4
    assert acc.turns[1].tokens == 3 * (400 + overhead_chars) // 4


def test_estimate_is_calibrated_on_reported_turns() -> None:
    # Reported fills follow tokens = 5,000 hidden + chars / 2; the unreported turn must follow too.
    chunk = "x" * 996  # 996 chars + 16 chars of overhead per message = 1,012
    msgs: list[Message] = []
    chars = 0
    for n in range(6):
        msgs.append(user(chunk))
        chars += 1_012
        reported = 5_000 + chars // 2 if n != 4 else None
        msgs.append(assistant(chunk, context=reported, model="acme"))
        chars += 1_012
    acc = account_session(session(*msgs, model="acme"))
    assert acc.chars_per_token == 2.0
    unreported = acc.turns[4]
    assert unreported.source is FillSource.ESTIMATED
    chars_before = 9 * 1_012  # nine messages precede the fifth response
    assert unreported.tokens == 5_000 + chars_before // 2
    assert acc.source is FillSource.ESTIMATED
    assert [t.source for t in acc.turns].count(FillSource.REPORTED) == 5


def test_compaction_resets_running_context_and_is_recorded() -> None:
    s = session(
        Message(Role.SYSTEM, (TextBlock("sys"),)),
        user("x" * 4_000),
        assistant("y" * 4_000),
        Message(Role.USER, (CompactionSummary("summary " * 10, trigger="auto"),)),
        user("go on"),
        assistant("ok"),
        model="acme",
    )
    acc = account_session(s)
    before, after = acc.turns[0].tokens, acc.turns[1].tokens
    assert after < before
    assert len(acc.compactions) == 1
    rec = acc.compactions[0]
    assert (rec.index, rec.message_index, rec.trigger) == (0, 3, "auto")
    assert rec.pre_tokens == acc.turns[0].tokens  # the log states no pre_tokens: last fill before
    assert rec.post_tokens == after


def test_compaction_pre_tokens_from_log_and_double_markers_merge() -> None:
    s = session(
        user("a"),
        assistant("b", context=150_000, rid="r1"),
        Message(Role.USER, (CompactionSummary("", trigger="manual", pre_tokens=151_000),)),
        Message(Role.USER, (CompactionSummary("This session is being continued"),)),
        assistant("c", context=40_000, rid="r2"),
        user("d"),
        Message(Role.USER, (CompactionSummary("again"),)),
    )
    acc = account_session(s)
    assert [(c.index, c.pre_tokens, c.trigger, c.post_source) for c in acc.compactions] == [
        (0, 151_000, "manual", None),
        (1, 40_000, None, FillSource.ESTIMATED),
    ]
    assert acc.compactions[0].post_tokens == 40_000  # the next response's fill
    # no response after the last compaction: what it left, the unseen base under the summary, counted
    left = acc.compactions[1].post_tokens
    assert left is not None and left < 40_000 and left == acc.current
    assert acc.current_source is FillSource.ESTIMATED


def test_log_window_and_reported_fill_map_to_turns() -> None:
    s = session(
        user("a"),
        assistant("b"),
        user("c"),
        assistant("d"),
        user("e"),
        model="gpt-5-codex",
        context_window=272_000,
        reported_fill={2: 9_000, 4: 12_000},
    )
    acc = account_session(s)
    assert acc.window == acc.usable_window == 272_000  # the log's window is the prompt's budget
    assert [(t.tokens, t.source) for t in acc.turns] == [
        (9_000, FillSource.REPORTED),
        (12_000, FillSource.REPORTED),
    ]
    assert account_session(s, model="gpt-4o").window == 128_000  # an override beats the log


def test_tool_errors_count_flags_and_exit_codes_across_sidechains() -> None:
    side = session(
        Message(Role.ASSISTANT, (ToolCall("s1", "Read", {}),), model="m"),
        Message(Role.USER, (ToolResult("s1", "boom", is_error=True),)),
    )
    s = session(
        Message(Role.ASSISTANT, (ToolCall("c1", "Bash", {}), ToolCall("c2", "Bash", {})), model="m"),
        Message(Role.USER, (ToolResult("c1", "ok", exit_code=0), ToolResult("c2", "no", exit_code=2))),
        Message(Role.USER, (ToolResult("c2", "no", exit_code=2),)),  # duplicated line
        sidechains=(side,),
    )
    acc = account_session(s)
    assert (acc.tool_calls, acc.tool_errors) == (3, 2)


def test_claude_code_stand_in_responses_are_not_turns() -> None:
    s = Session(
        path="x",
        format=Format.CLAUDE_CODE,
        messages=(
            user("a"),
            assistant("b", context=100, rid="r1", model="claude-opus-4"),
            Message(Role.ASSISTANT, (TextBlock("API Error"),), synthetic=True),  # as the reader marks it
        ),
    )
    acc = account_session(s)
    assert len(acc.turns) == 1
    assert acc.source is FillSource.REPORTED


def test_empty_session() -> None:
    acc = account_session(session())
    assert (acc.turns, acc.compactions, acc.peak, acc.current, acc.cost_usd) == ((), (), 0, 0, None)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.text(max_size=60), st.one_of(st.none(), st.integers(0, 300_000)), st.booleans()),
        max_size=25,
    )
)
def test_fill_is_total_and_one_turn_per_assistant(rows: list[tuple[str, int | None, bool]]) -> None:
    msgs: list[Message] = []
    for text, context, compact in rows:
        msgs.append(Message(Role.USER, (CompactionSummary(text),)) if compact else user(text))
        msgs.append(assistant(text, context=context))
    acc = account_session(session(*msgs, model="acme"))
    assert len(acc.turns) == len(rows)
    assert all(t.tokens >= 0 for t in acc.turns)
    assert acc.peak == max((t.tokens for t in acc.turns), default=0)
    assert len(acc.compactions) == sum(1 for r in rows if r[2])


def _recount(messages: list[Message], upto: int) -> int:
    """Quadratic reference: recount the context before message ``upto`` from scratch."""
    start = 0
    for i in range(upto):
        if messages[i].compaction is not None:
            start = i
    context = [m for m in messages[:start] if m.role is Role.SYSTEM] + messages[start:upto]
    return sum(message_tokens(m, lambda t: count_tokens(t, "o200k_base").tokens) for m in context)


_ROWS = st.lists(
    st.tuples(
        st.sampled_from(["system", "user", "assistant", "tool", "compaction"]),
        st.text(max_size=40),
    ),
    max_size=20,
)


@settings(max_examples=60, deadline=None)
@given(_ROWS)
def test_exact_running_sums_equal_a_full_recount(rows: list[tuple[str, str]]) -> None:
    msgs: list[Message] = []
    for kind, text in rows:
        if kind == "system":
            msgs.append(Message(Role.SYSTEM, (TextBlock(text),)))
        elif kind == "user":
            msgs.append(user(text))
        elif kind == "assistant":
            msgs.append(Message(Role.ASSISTANT, (TextBlock(text), ToolCall("c", "Bash", {"cmd": text}))))
        elif kind == "tool":
            msgs.append(Message(Role.TOOL, (ToolResult("c", text, exit_code=1),)))
        else:
            msgs.append(Message(Role.USER, (CompactionSummary(text),)))
    acc = account_session(session(*msgs, model="gpt-4o"))
    expected = [_recount(msgs, i) for i, m in enumerate(msgs) if m.role is Role.ASSISTANT]
    assert [t.tokens for t in acc.turns] == expected
    assert all(t.source is FillSource.EXACT for t in acc.turns)


_KINDS = st.lists(
    st.tuples(
        st.sampled_from(["system", "user", "assistant", "stand-in", "tool", "compaction"]),
        st.text(max_size=40),
        st.one_of(st.none(), st.sampled_from(["r1", "r2"])),  # response ids repeat, not only in a row
        st.one_of(st.none(), st.integers(1, 200_000)),  # a reported fill, for the mixed property
    ),
    max_size=25,
)


def _messages(rows: list[tuple[str, str, str | None, int | None]], *, reported: bool) -> list[Message]:
    out: list[Message] = []
    for n, (kind, text, rid, fill) in enumerate(rows):
        if kind == "system":
            out.append(Message(Role.SYSTEM, (TextBlock(text),)))
        elif kind == "user":
            out.append(user(text))
        elif kind == "assistant":
            out.append(assistant(text, rid=rid, context=fill if reported else None, model="acme"))
        elif kind == "stand-in":
            out.append(Message(Role.ASSISTANT, (TextBlock(text),), synthetic=True))
        elif kind == "tool":
            out.append(Message(Role.USER, (ToolResult(f"c{n}", text),)))
        else:
            out.append(Message(Role.USER, (CompactionSummary(text),)))
    return out


_APART = [("assistant", "a", "r1", None), ("user", "u", None, None), ("assistant", "b", "r2", None)]
_APART += [("user", "v", None, None), ("assistant", "c", "r1", None)]  # r1 again, two responses later


@settings(max_examples=150, deadline=None)
@given(_KINDS)
@example(_APART)
def test_a_host_fed_message_by_message_estimates_what_check_estimates(
    rows: list[tuple[str, str, str | None, int | None]],
) -> None:
    """On estimated sessions (no usage, a model without an encoding) the Monitor fed one message at a
    time, as hooks and SDK hosts feed it, counts the same turns as ``account_session`` (one per
    response id however far apart, never a stand-in) and estimates the same fill at each."""
    from ctxhealth.monitor import Monitor

    messages = _messages(rows, reported=False)
    account = account_session(session(*messages, model="acme"))
    monitor = Monitor("acme")
    fills = []
    for message in messages:
        before = monitor.account.turns
        monitor.observe(message)
        if monitor.account.turns != before:
            fills.append(monitor.account.fill)
    assert fills == [t.tokens for t in account.turns]
    assert all(t.source is FillSource.ESTIMATED for t in account.turns)


@settings(max_examples=150, deadline=None)
@given(_KINDS)
@example(_APART)
def test_mixed_sessions_share_the_turn_predicate_and_the_reports(
    rows: list[tuple[str, str, str | None, int | None]],
) -> None:
    """With some turns reported, host and check still agree on which messages are turns and on every
    reported fill; an estimate between reports is the last report plus what the context grew by."""
    from ctxhealth.accounting.running import RunningFill

    messages = _messages(rows, reported=True)
    account = account_session(session(*messages, model="acme"))
    running = RunningFill()
    turns = [i for i, m in enumerate(messages) if running.observe(m)]
    assert turns == [t.message_index for t in account.turns]
    for t in account.turns:
        usage = messages[t.message_index].usage
        if usage is not None and usage.context_tokens > 0:
            assert t.source is FillSource.REPORTED and t.tokens == usage.context_tokens
        else:
            assert t.source is FillSource.ESTIMATED and t.tokens >= 0


def test_a_running_fill_saved_before_the_one_predicate_still_loads() -> None:
    """States saved by the older RunningFill (``always_reports``, only the last response id) load:
    the last id seeds the ids seen, the ratio is the default one."""
    from ctxhealth.accounting.running import RunningFill

    old = {
        "_anchor_chars": 40,
        "_anchor_fill": 1_000,
        "_chars": 80,
        "_hidden": 990.0,
        "_last_response": "r1",
        "_system_chars": 0,
        "always_reports": True,
        "fill": 1_000,
        "peak": 1_000,
        "source": "reported",
        "turns": 1,
    }
    running = RunningFill()
    running.load_state(old)
    assert running.chars_per_token == 4.0 and running.fill == 1_000
    from ctxhealth.accounting.running import message_size

    same = assistant("again", rid="r1")
    assert not running.observe(same)  # the same response, not a new turn
    grown = 80 + message_size(same) - 40
    assert running.observe(assistant("next", rid="r2")) and running.fill == 1_000 + round(grown / 4)
    again = RunningFill()
    again.load_state(running.dump_state())
    assert again.dump_state() == running.dump_state()
