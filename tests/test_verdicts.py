"""Each tool result is judged once per session (:class:`ctxhealth.failures.Verdicts`), and the shared
verdict is the definition's (:func:`ctxhealth.failures.is_failure`): the accounting's error count,
fleet's tool-call rows and the Monitor's events read the same table, and agree with judging every
result afresh."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ctxhealth.failures as failures
from ctxhealth.accounting.cost import cost_of, iter_responses, iter_threads, priced_responses, usage_cost
from ctxhealth.accounting.fill import account_session
from ctxhealth.accounting.registry import ModelRegistry
from ctxhealth.analysis import analyse_session
from ctxhealth.audit.responses import session_responses
from ctxhealth.failures import Verdicts, is_failure
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
from ctxhealth.monitor import Monitor
from ctxhealth.sources import read_session

TEXTS = st.lists(
    st.sampled_from(["a", " ", "\n", "Error: ", "error", "ERROR", "Traceback (most recent call last)"]),
    max_size=12,
).map("".join)
RESULTS = st.builds(
    ToolResult,
    st.sampled_from(["", "t1", "t2"]),
    TEXTS,
    st.booleans(),
    st.one_of(st.none(), st.integers(-1, 2)),
)


@given(st.lists(RESULTS, max_size=30))
def test_a_kept_verdict_is_the_definition(results: list[ToolResult]) -> None:
    verdicts = Verdicts()
    for _ in range(2):  # the second round reads the kept verdicts
        assert [verdicts(r) for r in results] == [is_failure(r) for r in results]
    assert len(verdicts) == len({id(r) for r in results})


def test_equal_ids_or_texts_are_not_one_result() -> None:
    verdicts = Verdicts()
    ok = ToolResult("t", "Error: nothing", exit_code=0)
    failed = ToolResult("t", "Error: nothing")  # same id and text, no exit code: the text decides
    assert (verdicts(ok), verdicts(failed)) == (False, True)
    assert (verdicts(ok), verdicts(failed)) == (False, True)


def test_a_verdict_never_passes_to_a_later_object() -> None:
    # results made and dropped one after another reuse memory (and ids): the table keeps each one it
    # judged, so a new result at a freed address is judged on its own, never given an old verdict
    verdicts = Verdicts()
    for i in range(2000):
        result = ToolResult("t", "fine" if i % 3 else "command not found", exit_code=None if i % 2 else 0)
        assert verdicts(result) is is_failure(result)
        del result


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[ToolResult]:
    judged: list[ToolResult] = []
    definition = failures.is_failure

    def judge(result: ToolResult) -> bool:
        judged.append(result)
        return definition(result)

    monkeypatch.setattr(failures, "is_failure", judge)
    return judged


def _duplicate_ids() -> Session:
    """A result written twice under one call id, the second time failed: the accounting and the rows
    count the first, the Monitor sees both."""
    usage = Usage(input_tokens=100, output_tokens=5)
    messages = (
        Message(role=Role.USER, blocks=(TextBlock("build it"),)),
        Message(role=Role.ASSISTANT, blocks=(ToolCall("c1", "Bash", {"command": "make"}),), usage=usage),
        Message(role=Role.USER, blocks=(ToolResult("c1", "built"),)),
        Message(role=Role.USER, blocks=(ToolResult("c1", "Traceback (most recent call last)\nboom"),)),
        Message(role=Role.ASSISTANT, blocks=(ToolCall("c2", "Bash", {"command": "ls"}),), usage=usage),
        Message(role=Role.USER, blocks=(ToolResult("c2", "ls: x: No such file or directory"),)),
    )
    return Session("dup.jsonl", Format.CLAUDE_CODE, messages, model="claude-sonnet-4-5")


def _sessions(data: Path) -> list[Session]:
    return [_duplicate_ids(), *(read_session(p) for p in sorted(data.glob("*/*.jsonl"))[:4])]


@pytest.mark.parametrize("health", [False, True])
def test_one_analysis_judges_each_result_once_and_as_the_definition(
    claude_code_data: Path, monkeypatch: pytest.MonkeyPatch, health: bool
) -> None:
    for session in _sessions(claude_code_data):
        # the reference: every counter judges every result afresh with the definition
        monkeypatch.setattr(Verdicts, "__call__", lambda self, result: is_failure(result))
        fresh = analyse_session(session, events=True, health=health)
        monkeypatch.undo()
        judged = _counting(monkeypatch)
        shared = analyse_session(session, events=True, health=health)
        monkeypatch.undo()
        assert judged and len(judged) == len({id(r) for r in judged})  # each result object once
        # the shared verdicts give what judging afresh gives
        assert shared.rows.tool_calls == fresh.rows.tool_calls
        assert shared.rows.events == fresh.rows.events
        assert shared.account == fresh.account
        assert (shared.assessed is None) is (not health)
        if shared.assessed is not None and fresh.assessed is not None:
            assert shared.assessed.check_fields() == fresh.assessed.check_fields()
        # and each row's verdict is the definition on the result it joins
        results = {
            b.tool_call_id: b
            for m in reversed(session.messages)
            for b in reversed(m.tool_results)
            if not session.sidechains
        }
        for row in shared.rows.tool_calls:
            if row.call_id in results and row.failed is not None:
                assert row.failed is is_failure(results[row.call_id])


def test_the_monitor_counts_with_the_shared_table_as_without(claude_code_data: Path) -> None:
    for session in _sessions(claude_code_data):
        verdicts = Verdicts()
        account = account_session(session, verdicts=verdicts)
        shared = Monitor(info=account.model)
        shared.judge_with(verdicts)
        alone = Monitor(info=account.model)
        a = shared.observe_session(session, account=account).check_fields()
        b = alone.observe_session(session, account=account_session(session)).check_fields()
        assert a == b
        errors = 0
        seen: set[str] = set()
        for m in session.messages:
            for r in m.tool_results:
                if r.tool_call_id and r.tool_call_id in seen:
                    continue
                seen.add(r.tool_call_id)
                errors += is_failure(r)
        if not session.sidechains:
            assert account.tool_errors == errors


def _reference_cost(session: Session, registry: ModelRegistry, model: str | None = None) -> float | None:
    """The session's cost by its definition, every response priced on its own (the code the one
    pricing replaced)."""
    total, any_priced = 0.0, False
    for thread, message in iter_responses(session):
        usage = message.usage
        if usage is None or not (
            usage.input_tokens
            or usage.output_tokens
            or usage.cache_creation_tokens
            or usage.cache_read_tokens
        ):
            continue
        prices = registry.lookup(model or message.model or thread.model or session.model).prices
        if prices is None:
            return None
        total += usage_cost(usage, prices)
        any_priced = True
    return total if any_priced else None


def _priced_cases() -> list[Session]:
    """Model switch, a compaction billed apart, a duplicate id, an unknown model with and without
    usage, a sub-agent."""
    big = Usage(input_tokens=300_000, output_tokens=20, cache_read_tokens=5)

    def reply(rid: str | None, model: str | None, usage: Usage) -> Message:
        return Message(
            role=Role.ASSISTANT, blocks=(TextBlock("ok"),), response_id=rid, model=model, usage=usage
        )

    compaction = Message(
        role=Role.USER,
        blocks=(CompactionSummary("summary", usage=Usage(input_tokens=900, output_tokens=80)),),
        model="claude-opus-4-1",
    )
    side = Session("s.jsonl", Format.CLAUDE_CODE, (reply("r9", "claude-haiku-4-5", Usage(input_tokens=7)),))
    main = (
        reply("r1", "claude-sonnet-4-5", Usage(input_tokens=100, output_tokens=5)),
        reply("r1", "claude-sonnet-4-5", Usage(input_tokens=100, output_tokens=5)),
        compaction,
        reply("r2", "claude-opus-4-1", big),
        reply(None, "not-a-known-model", Usage()),
    )
    unknown = (*main, reply("r3", "not-a-known-model", Usage(output_tokens=3)))
    return [
        Session("a.jsonl", Format.CLAUDE_CODE, main, model="claude-sonnet-4-5", sidechains=(side,)),
        Session("b.jsonl", Format.CLAUDE_CODE, unknown, model="claude-sonnet-4-5"),
        Session("c.jsonl", Format.CLAUDE_CODE, ()),
    ]


@pytest.mark.parametrize("model", [None, "claude-opus-4-1"])
def test_responses_priced_once_give_the_cost_and_the_audit_by_their_definitions(
    claude_code_data: Path, model: str | None
) -> None:
    registry = ModelRegistry.default()
    sessions = _priced_cases() + [read_session(p) for p in sorted(claude_code_data.glob("*/*.jsonl"))[:4]]
    for session in sessions:
        priced = priced_responses(session, registry, model=model)
        for p in priced:
            prices = registry.lookup(p.model).prices
            assert p.usd == (None if prices is None else usage_cost(p.usage, prices))
        expected = _reference_cost(session, registry, model)
        assert cost_of(priced) == expected
        assert account_session(session, registry=registry, model=model, priced=priced).cost_usd == expected
        analysis = analyse_session(session, registry=registry, model=model, events=False, health=False)
        assert analysis.account.cost_usd == expected
        # the audit's responses: the response messages of the same walk, the compaction's request left out
        walk = [(t, m) for t, m in iter_responses(session) if m.blocks or m.role is not Role.ASSISTANT]
        assert [(r.message, r.usage) for r in analysis.responses] == [
            (m, m.usage) for _, m in walk if m.usage is not None
        ]
        assert analysis.responses == session_responses(session, registry, model=model)


def _sub_agent_calls() -> Session:
    """Calls without an id, a call id repeated in a sub-agent (counted once, in the main thread), a
    sub-agent of a sub-agent, and a result written in a sub-agent before the main thread's."""
    usage = Usage(input_tokens=10, output_tokens=1)

    def call(*blocks: ToolCall | ToolResult, role: Role = Role.ASSISTANT) -> Message:
        return Message(role=role, blocks=blocks, usage=usage if role is Role.ASSISTANT else None)

    inner = Session("i.jsonl", Format.CLAUDE_CODE, (call(ToolCall("d", "Grep", {})),))
    side = Session(
        "s.jsonl",
        Format.CLAUDE_CODE,
        (
            call(ToolCall("a", "Bash", {}), ToolCall("b", "Read", {})),
            call(ToolResult("a", "late"), role=Role.USER),
        ),
        sidechains=(inner,),
    )
    main = (
        call(ToolCall("a", "Bash", {"command": "make"}), ToolCall("", "Bash", {})),
        call(ToolResult("a", "Error: no"), role=Role.USER),
        call(ToolCall("", "Bash", {}), ToolCall("c", "Edit", {})),
    )
    return Session("m.jsonl", Format.CLAUDE_CODE, main, model="claude-sonnet-4-5", sidechains=(side,))


def _reference_tools(session: Session) -> tuple[list[tuple[int, int, ToolCall]], dict[str, ToolResult]]:
    """The definitions, walked on their own: every thread in order, each call id once (a call without
    an id always), and the first result written for each call id."""
    calls: list[tuple[int, int, ToolCall]] = []
    answers: dict[str, ToolResult] = {}
    seen: set[str] = set()
    for number, thread in enumerate(iter_threads(session)):
        for i, message in enumerate(thread.messages):
            for block in message.blocks:
                if isinstance(block, ToolCall) and not (block.id and block.id in seen):
                    if block.id:
                        seen.add(block.id)
                    calls.append((number, i, block))
                elif (
                    isinstance(block, ToolResult) and block.tool_call_id and block.tool_call_id not in answers
                ):
                    answers[block.tool_call_id] = block
    return calls, answers


def test_the_accounts_calls_and_answers_are_the_walk_the_tool_rows_list(claude_code_data: Path) -> None:
    """The tool calls counted and the result answering each call id are taken once, by the
    accounting's walk; the tool-call rows list them. They are the definitions' walk, and rows made
    from an account without them (made elsewhere) are the same rows."""
    for session in [*_sessions(claude_code_data), _sub_agent_calls()]:
        account = account_session(session)
        calls, answers = _reference_tools(session)
        assert account.calls is not None and account.answers is not None
        assert list(account.calls) == calls
        assert all(c[2] is block for c, (_, _, block) in zip(account.calls, calls, strict=True))
        assert account.tool_calls == len(calls)
        assert account.answers == answers
        assert all(account.answers[k] is v for k, v in answers.items())
        shared = analyse_session(session, account=account, events=True)
        bare = msgspec.structs.replace(account, answers=None, calls=None)
        walked = analyse_session(session, account=bare, events=True)
        assert shared.rows.tool_calls == walked.rows.tool_calls
        assert [(r.thread, r.message_index, r.call_id) for r in shared.rows.tool_calls] == [
            (n, i, b.id or "") for n, i, b in calls
        ]
        assert shared.rows.events == walked.rows.events
    dup = account_session(_duplicate_ids())
    assert dup.answers is not None and dup.answers["c1"].text == "built"  # the first one written
