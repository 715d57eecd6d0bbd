"""Each message sized once: ``SessionAccount.sizes`` (what the accounting sized) is
:func:`~ctxhealth.accounting.running.message_size` of each message, on the estimate and the exact
path, and a Monitor fed the account with them ends where a Monitor that sizes every message itself
ends; and each compaction looked up once: the Monitor's fill account, handed the compaction the
Monitor looked up, is the fill account that looks it up itself."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from msgspec.structs import replace

from ctxhealth.accounting.fill import SessionAccount, account_session
from ctxhealth.accounting.running import RunningFill, message_size
from ctxhealth.model import (
    CompactionSummary,
    Format,
    ImageBlock,
    Message,
    Role,
    Session,
    TextBlock,
    ThinkingBlock,
    ToolCall,
    ToolResult,
    Usage,
)
from ctxhealth.monitor import Monitor

_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=30)
# tool inputs as hosts send them: JSON objects (ASCII or not), raw strings, and values orjson
# cannot write (an integer past 64 bits, a set: the sizing falls back to ``str``)
_JSON: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=8,
)
_INPUT = st.one_of(
    st.dictionaries(_TEXT, _JSON, max_size=4), _TEXT, st.frozensets(st.integers(0, 9), max_size=2)
)
_BLOCK = st.one_of(
    st.builds(TextBlock, _TEXT),
    st.builds(ThinkingBlock, _TEXT),
    st.builds(ToolCall, id=st.just("c1"), name=_TEXT, input=_INPUT),
    st.builds(ToolResult, st.just("c1"), _TEXT),
    st.builds(ImageBlock),
    st.builds(CompactionSummary, _TEXT),
)


@st.composite
def _message(draw: st.DrawFn) -> Message:
    role = draw(st.sampled_from([Role.SYSTEM, Role.USER, Role.ASSISTANT]))
    blocks = tuple(draw(st.lists(_BLOCK, max_size=4)))
    usage = None
    if role is Role.ASSISTANT and draw(st.booleans()):
        usage = Usage(input_tokens=draw(st.integers(1, 100_000)))
    rid = draw(st.one_of(st.none(), st.sampled_from(["r1", "r2", "r3"])))
    return Message(role, blocks, response_id=rid, usage=usage)


def _session(messages: list[Message], model: str) -> Session:
    return Session(path="t.jsonl", format=Format.ANTHROPIC_MESSAGES, messages=tuple(messages), model=model)


@settings(max_examples=150, deadline=None)
@given(st.lists(_message(), max_size=12), st.sampled_from(["acme", "gpt-4o"]))
def test_the_accounts_sizes_are_message_size_of_each_message(messages: list[Message], model: str) -> None:
    """``acme`` takes the estimate path, ``gpt-4o`` the exact one (its sizes come from the texts it
    counted); with every turn reported nothing is sized and ``sizes`` is None."""
    account = account_session(_session(messages, model))
    if account.sizes is None:
        assert all(t.source.value == "reported" for t in account.turns)
    else:
        assert account.sizes == tuple(message_size(m) for m in messages)


def _fed(session: Session, account: SessionAccount) -> Monitor:
    monitor = Monitor("acme")
    monitor.observe_session(session, account=account)
    return monitor


@settings(max_examples=100, deadline=None)
@given(st.lists(_message(), max_size=12), st.lists(_message(), min_size=12, max_size=12))
def test_a_monitor_fed_the_accounts_sizes_ends_as_one_sizing_itself(
    messages: list[Message], others: list[Message]
) -> None:
    """Fill, pending prompt and assessment agree after the last message with those of the same
    account without sizes (the Monitor sizes every message). An account of another session
    (``others``, as long or longer) lends its fills as before but never its sizes."""
    session = _session(messages, "acme")
    account = account_session(session)
    fed, mine = _fed(session, account), _fed(session, replace(account, sizes=None))
    assert fed.account.dump_state() == mine.account.dump_state()
    assert fed.assess().check_fields() == mine.assess().check_fields()

    foreign = account_session(_session(others, "acme"))
    lent, mine = _fed(session, foreign), _fed(session, replace(foreign, sizes=None))
    assert lent.account.dump_state() == mine.account.dump_state()


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(_message(), st.one_of(st.none(), st.integers(1, 100_000))), max_size=14))
def test_the_monitors_fill_looks_up_each_compaction_as_a_fill_alone_does(
    rows: list[tuple[Message, int | None]],
) -> None:
    """The Monitor hands the compaction it looked up to its fill account: after every message that
    account is a plain :class:`RunningFill` fed the same messages (which looks each one up)."""
    monitor = Monitor("acme")
    alone = RunningFill()
    for message, fill in rows:
        monitor.update(message, fill=fill)
        alone.observe(message, fill)
        assert monitor.account.dump_state() == alone.dump_state()
