"""The guard in-process: usage read from split streams, the Responses adapter, sessions by response
id, re-anchoring, and state that survives a new guard through its store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from ctxhealth.integrations.guard import Applied, Guard, LedgerStore, Mode
from ctxhealth.integrations.guard.apply import recovery_session
from ctxhealth.integrations.wire import ADAPTERS, ApiStyle, ResponseFacts, UsageTap
from ctxhealth.model import Role, Usage
from ctxhealth.policy import Action
from ctxhealth.recovery.reanchor import reanchor
from ctxhealth.state.ledger import Ledger
from wire_upstream import WIRE

EXPECTED = {
    ApiStyle.ANTHROPIC_MESSAGES: (
        "anthropic-messages",
        Usage(412, 71, 1536, 18204),
        "msg_01Kx8p3JnWqYF3a9bHc2Vd7T",
    ),
    ApiStyle.OPENAI_CHAT: (
        "openai-chat",
        Usage(20152 - 18176, 19, 0, 18176),
        "chatcmpl-C9xR4b2TqW8nZp1LkJ6vYh3Ds",
    ),
    ApiStyle.OPENAI_RESPONSES: (
        "openai-responses",
        Usage(20152 - 18176, 236, 0, 18176, 192),
        "resp_68af3c2e9b1c8190a4d2f7e6b5c43a21",
    ),
}


@pytest.mark.parametrize("style", list(EXPECTED))
@pytest.mark.parametrize("stream", [True, False])
def test_usage_is_read_however_the_body_is_cut(style: ApiStyle, stream: bool) -> None:
    name, usage, response_id = EXPECTED[style]
    data = (WIRE / (name + (".sse" if stream else ".json"))).read_bytes()
    content_type = "text/event-stream; charset=utf-8" if stream else "application/json"
    for size in (1, 2, 3, 7, 64, len(data)):
        tap = UsageTap(style, content_type)
        for i in range(0, len(data), size):
            tap.feed(data[i : i + size])
        facts = tap.facts()
        assert facts.usage == usage, size
        assert facts.response_id == response_id


def test_responses_items_round_trip_unchanged() -> None:
    adapter = ADAPTERS[ApiStyle.OPENAI_RESPONSES]
    items: list[Any] = [
        {"role": "user", "content": [{"type": "input_text", "text": "Fix the parser."}]},
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "Look at the parser."}],
        },
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Reading it."}]},
        {"type": "function_call", "call_id": "c1", "name": "read", "arguments": '{"p": 1}'},
        {"type": "function_call_output", "call_id": "c1", "output": "text"},
        {"role": "user", "content": "Go on."},
    ]
    body = {"model": "gpt-5", "instructions": "Be brief.", "input": items}
    parsed = adapter.to_messages(body, items, with_head=True)
    assert [m.role for m in parsed] == [Role.SYSTEM, Role.USER, Role.ASSISTANT, Role.TOOL, Role.USER]
    assert [c.name for c in parsed[2].tool_calls] == ["read"]
    assert adapter.write(parsed, items, [m for m in parsed if m.line]) == items


def chat_body(turns: int) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Write the release notes for version 2.4 of the billing service."}
    ]
    for i in range(turns):
        messages.append(
            {
                "role": "assistant",
                # over 500 characters a reply: from the fourth on, a whole drift window was written
                "content": f"Meanwhile the garden hose and tomato plants need watering {i}. " * 9,
            }
        )
        messages.append({"role": "user", "content": "go on"})
    return {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": messages}


def test_responses_continuation_stays_in_its_session() -> None:
    guard = Guard(Mode.OBSERVE)
    first = guard.plan(
        ApiStyle.OPENAI_RESPONSES, orjson.dumps({"model": "gpt-5", "input": "Hello there"}), {}
    )
    guard.finish(first, 200, ResponseFacts(Usage(input_tokens=900), "gpt-5", "resp_1"))
    body = {
        "model": "gpt-5",
        "previous_response_id": "resp_1",
        "input": [{"role": "user", "content": "And then?"}],
    }
    second = guard.plan(ApiStyle.OPENAI_RESPONSES, orjson.dumps(body), {})
    assert second.key == first.key and not second.reset
    assert guard.sessions[first.key].observed == 2


def test_enforce_reanchor_appends_the_recovery_text() -> None:
    guard = Guard(Mode.ENFORCE)
    body = chat_body(6)
    style = ApiStyle.ANTHROPIC_MESSAGES
    guard.finish(
        guard.plan(style, orjson.dumps(body), {}), 200, ResponseFacts(Usage(input_tokens=85_000), None, "m1")
    )
    grown = chat_body(7)
    plan = guard.plan(style, orjson.dumps(grown), {})
    assert plan.action is Action.REANCHOR and plan.applied is Applied.REWRITE
    assert plan.body is not None and plan.assessment is not None
    sent = orjson.loads(plan.body)
    adapter = ADAPTERS[style]
    session = guard.sessions[str(plan.key)]
    _, report = reanchor(
        recovery_session(adapter.to_messages(grown, grown["messages"], with_head=True), session.key),
        similarity=session.monitor.drift.similarity,
        tokens=plan.assessment.fill,
    )
    assert sent["messages"][:-1] == grown["messages"][:-1]
    assert sent["messages"][-1]["content"][-1]["text"] == report.injected[0]
    assert report.injected[0].startswith("[RE-ANCHOR -- Context drift detected]")


class DictStore:
    def __init__(self) -> None:
        self.states: dict[str, dict[str, Any]] = {}
        self.rows: list[tuple[str, int, dict[str, Any], Any]] = []

    def load(self, key: str) -> dict[str, Any] | None:
        return orjson.loads(orjson.dumps(self.states[key])) if key in self.states else None

    def save(self, key: str, state: dict[str, Any]) -> None:
        self.states[key] = state

    def record(self, key: str, turn: int, row: dict[str, Any], decision: Any) -> None:
        self.rows.append((key, turn, row, decision))

    def close(self) -> None:
        pass


def test_a_new_guard_resumes_from_the_store_as_the_old_one_would_have_gone_on() -> None:
    style = ApiStyle.ANTHROPIC_MESSAGES
    store = DictStore()
    old = Guard(Mode.ENFORCE, store=store)
    twin = Guard(Mode.ENFORCE)
    for guard in (old, twin):
        plan = guard.plan(style, orjson.dumps(chat_body(3)), {})
        guard.finish(plan, 200, ResponseFacts(Usage(input_tokens=85_000), None, "m1"))
    assert old.flush() == 1
    resumed = Guard(Mode.ENFORCE, store=store)
    a = resumed.plan(style, orjson.dumps(chat_body(7)), {})
    b = twin.plan(style, orjson.dumps(chat_body(7)), {})
    assert a.observed == b.observed == 8 and not a.reset
    assert a.body == b.body and a.action is b.action
    assert a.assessment is not None and b.assessment is not None
    assert a.assessment.to_dict() == b.assessment.to_dict()


def test_a_new_request_after_drift_is_not_re_anchored_by_the_proxy() -> None:
    """The request that carries a person's change of subject: the output before it was for the old
    request, so the guard does not re-anchor (it did at every change of subject); a follow-up is."""
    style = ApiStyle.ANTHROPIC_MESSAGES
    actions = []
    for last in ("Now draft the migration guide for the payments API clients and their webhooks", "go on"):
        guard = Guard(Mode.ENFORCE)
        first = guard.plan(style, orjson.dumps(chat_body(6)), {})
        guard.finish(first, 200, ResponseFacts(Usage(input_tokens=85_000), None, "m1"))
        grown = chat_body(7)
        grown["messages"][-1] = {"role": "user", "content": last}
        actions.append(guard.plan(style, orjson.dumps(grown), {}).action)
    assert actions[0] is not Action.REANCHOR and actions[1] is Action.REANCHOR


def test_ledger_store_keeps_sessions_and_records(tmp_path: Path) -> None:
    store = LedgerStore(tmp_path)
    guard = Guard(Mode.ADVISE, store=store)
    plan = guard.plan(ApiStyle.ANTHROPIC_MESSAGES, orjson.dumps(chat_body(3)), {"x-ctxhealth-session": "s1"})
    guard.finish(plan, 200, ResponseFacts(Usage(input_tokens=100_000), None, "m1"))
    guard.plan(ApiStyle.ANTHROPIC_MESSAGES, orjson.dumps(chat_body(4)), {"x-ctxhealth-session": "s1"})
    guard.flush()
    store.close()
    with Ledger.open(tmp_path) as ledger:
        rows = ledger.assessments("anthropic-messages:s1")
        decisions = ledger.decisions("anthropic-messages:s1")
        tail = ledger.get_tail("guard:anthropic-messages:s1")
    assert [r.details["action"] for r in rows] == ["continue", decisions[0].action]
    assert [d.action for d in decisions] == ["reanchor"] and "drift" in decisions[0].reason
    # the one fill account: between responses the fill is the latest reported prompt
    assert rows[-1].tokens == 100_000 and rows[-1].details["applied"] == "note"
    assert tail is not None and tail.state["requests"] == 2


def test_a_retried_request_gets_the_same_rewrite_and_no_second_recovery() -> None:
    guard = Guard(Mode.ENFORCE)
    style = ApiStyle.ANTHROPIC_MESSAGES
    body = chat_body(6)
    for m in body["messages"]:
        m["content"] = m["content"].replace(
            "garden hose and tomato plants need watering", "billing release notes draft"
        )
    first = guard.plan(style, orjson.dumps(body), {})
    guard.finish(first, 200, ResponseFacts(Usage(input_tokens=125_000), None, "m1"))
    grown = {
        **body,
        "messages": [
            *body["messages"],
            {"role": "assistant", "content": "release notes"},
            {"role": "user", "content": "go"},
        ],
    }
    truncated = guard.plan(style, orjson.dumps(grown), {})
    assert truncated.action is Action.TRUNCATE and truncated.applied is Applied.REWRITE
    retry = guard.plan(style, orjson.dumps(grown), {})
    assert retry.applied is Applied.NONE and retry.observed == 0
    assert retry.body == truncated.body
    assert guard.sessions[str(retry.key)].monitor.counters.truncations == 1


def test_enforce_clears_repeated_error_output_and_keeps_the_latest_error() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Run the parser tests in tests/test_parser.py and fix them."}
    ]
    for i in range(9):
        failed = i >= 6
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"Running the parser tests, attempt {i}."},
                    {
                        "type": "tool_use",
                        "id": f"t{i}",
                        "name": "Bash",
                        "input": {"command": f"pytest -k case{i}"},
                    },
                ],
            }
        )
        trace = "".join(
            f'  File "src/parser.py", line {n}, in parse_{n}\n    return step(text)\n' for n in range(30)
        )
        error = (
            f"Traceback (most recent call last):\n{trace}ModuleNotFoundError: No module named 'parserlib'\n"
        )
        text = error if failed else "tests/test_parser.py::test_case PASSED\n" * 40
        messages.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": f"t{i}", "is_error": failed, "content": text}
                ],
            }
        )
    body = {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": messages}
    plan = Guard(Mode.ENFORCE).plan(ApiStyle.ANTHROPIC_MESSAGES, orjson.dumps(body), {})
    assert plan.action is Action.CLEAR_TOOL_RESULTS and plan.body is not None
    results = [
        b
        for m in orjson.loads(plan.body)["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] == "tool_result"
    ]
    assert len(results) == 9  # paired: every call keeps its result
    assert results[-1]["content"] == messages[-1]["content"][0]["content"]  # the latest error, whole
    assert all(r["content"].startswith("[cleared by ctxhealth:") for r in results[:-1])
    assert "parserlib" in results[-2]["content"]  # a cleared error keeps its signature line


def test_flush_waits_for_a_pause_or_the_age_limit() -> None:
    store = DictStore()
    guard = Guard(Mode.OBSERVE, store=store)
    guard.plan(ApiStyle.ANTHROPIC_MESSAGES, orjson.dumps(chat_body(2)), {"x-ctxhealth-session": "busy"})
    assert guard.flush(idle=60.0, max_age=300.0) == 0  # just seen, just taken up: not yet
    assert guard.flush(idle=0.0) == 1 and "anthropic-messages:busy" in store.states
    assert guard.flush() == 0  # nothing changed since


def test_a_rewrite_saved_by_an_enforcing_guard_is_not_applied_in_observe_mode() -> None:
    store = DictStore()
    style = ApiStyle.ANTHROPIC_MESSAGES
    body = chat_body(6)
    for m in body["messages"]:
        m["content"] = m["content"].replace(
            "garden hose and tomato plants need watering", "billing release notes draft"
        )
    enforcing = Guard(Mode.ENFORCE, store=store)
    enforcing.finish(
        enforcing.plan(style, orjson.dumps(body), {}),
        200,
        ResponseFacts(Usage(input_tokens=125_000), None, "m1"),
    )
    grown = {
        **body,
        "messages": [
            *body["messages"],
            {"role": "assistant", "content": "notes"},
            {"role": "user", "content": "go"},
        ],
    }
    assert enforcing.plan(style, orjson.dumps(grown), {}).applied is Applied.REWRITE
    enforcing.flush()
    observing = Guard(Mode.OBSERVE, store=store)
    later = {
        **grown,
        "messages": [
            *grown["messages"],
            {"role": "assistant", "content": "more"},
            {"role": "user", "content": "ok"},
        ],
    }
    plan = observing.plan(style, orjson.dumps(later), {})
    assert plan.body is None and plan.observed == 2  # forwarded as sent, the saved session resumed


def test_enforced_truncation_sends_kept_messages_as_the_client_wrote_them() -> None:
    """Signed thinking, images and cache markers survive in the messages a recovery keeps."""
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Fix the billing release notes for version 2.4."}
    ]
    for i in range(8):
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": f"The notes need step {i}.", "signature": f"sig-{i}=="},
                    {"type": "text", "text": f"Editing the billing release notes, step {i}."},
                    {"type": "tool_use", "id": f"tu{i}", "name": "Edit", "input": {"file_path": "NOTES.md"}},
                ],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": f"tu{i}",
                        "content": "edited",
                        "cache_control": {"type": "ephemeral"},
                    }
                ],
            }
        )
    style = ApiStyle.ANTHROPIC_MESSAGES
    guard = Guard(Mode.ENFORCE)
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 64,
        "thinking": {"type": "enabled", "budget_tokens": 1024},
    }
    first = guard.plan(style, orjson.dumps({**body, "messages": messages[:-2]}), {})
    guard.finish(first, 200, ResponseFacts(Usage(input_tokens=125_000), None, "m1"))
    plan = guard.plan(style, orjson.dumps({**body, "messages": messages}), {})
    assert plan.action is Action.TRUNCATE and plan.body is not None
    sent = orjson.loads(plan.body)
    assert sent["thinking"] == body["thinking"]
    assert len(sent["messages"]) < len(messages)
    assert sent["messages"][-4:] == messages[-4:]  # the last two pairs, byte for byte


def test_the_one_pass_chain_equals_hashing_each_prefix_whole() -> None:
    import hashlib

    from ctxhealth.integrations.guard.prefix import DIGEST_SIZE, chain_values
    from ctxhealth.integrations.wire.base import canonical

    items: list[Any] = chat_body(4)["messages"]
    items[1] = {
        "role": "assistant",
        "content": [{"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}}],
    }
    head = [{"type": "text", "text": "system", "cache_control": {"type": "ephemeral"}}]
    seed = b"s\x00" + canonical(head) + b"\x00"
    whole = {
        n: hashlib.blake2b(seed + canonical(items[:n]), digest_size=DIGEST_SIZE).digest()
        for n in range(len(items) + 1)
    }
    for lengths in ([0], [len(items)], [2, 5, len(items)], list(range(len(items) + 1))):
        assert chain_values("s", head, items, lengths) == {n: whole[n] for n in lengths}


def test_sessions_that_share_a_first_message_or_a_name_are_told_apart_by_their_conversation() -> None:
    """Chat Completions, where the system prompt is the first message: two interleaved agents with
    the same start stay two sessions; under one name another system prompt is another session, the
    same system prompt with a replaced history is a reset of the named one."""
    guard = Guard(Mode.OBSERVE)

    def chat(agent: str, turns: int, system: str = "You are a coding agent.") -> bytes:
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": system},
            {"role": "user", "content": "Fix the parser."},
        ]
        for i in range(turns):
            messages += [
                {"role": "assistant", "content": f"{agent} step {i}"},
                {"role": "user", "content": f"{agent} result {i}"},
            ]
        return orjson.dumps({"model": "gpt-4o", "messages": messages})

    keys = []
    for turn in range(4):
        for agent in ("a", "b"):
            keys.append(guard.plan(ApiStyle.OPENAI_CHAT, chat(agent, turn), {}).key)
    assert len(set(keys[2:])) == 2 and guard.metrics.resets == 0
    named = {"x-ctxhealth-session": "run"}
    first = guard.plan(ApiStyle.OPENAI_CHAT, chat("a", 2), named)
    other = guard.plan(ApiStyle.OPENAI_CHAT, chat("z", 1, system="Another tool."), named)
    assert other.key == f"{first.key}#2" and not other.reset
    again = guard.plan(ApiStyle.OPENAI_CHAT, chat("a", 3), named)
    assert again.key == first.key and not again.reset
    compacted = guard.plan(ApiStyle.OPENAI_CHAT, chat("summary", 0), named)
    assert compacted.key == first.key and compacted.reset


def test_the_window_the_proxy_is_told_is_the_sessions_window() -> None:
    """No request states the window an agent works with (Codex CLI compacts within its own, 258,400
    for gpt-5.5, where the model's is 1M): ``window`` makes it the sessions' window, in a new, a
    reset and a restored session alike."""
    style = ApiStyle.OPENAI_CHAT

    def body(n: int) -> dict[str, Any]:
        messages: list[dict[str, Any]] = [
            {"role": "user", "content": "Port the billing exporter to the new API."}
        ]
        for i in range(n):
            messages += [{"role": "assistant", "content": f"step {i}"}, {"role": "user", "content": "go on"}]
        return {"model": "gpt-5.5", "messages": messages}

    readings = {}
    for told in (None, 258_400):
        store = DictStore()
        guard = Guard(Mode.OBSERVE, store=store, window=told, window_is_usable=True)
        guard.finish(
            guard.plan(style, orjson.dumps(body(2)), {}),
            200,
            ResponseFacts(Usage(input_tokens=240_000), None, "r1"),
        )
        plan = guard.plan(style, orjson.dumps(body(3)), {})
        assert plan.assessment is not None
        session = guard.sessions[str(plan.key)]
        readings[told] = (session.monitor.info.usable_window, plan.assessment.zone.value)
        assert guard.flush() == 1
        again = Guard(Mode.OBSERVE, store=store, window=told, window_is_usable=True)
        assert again._known(str(plan.key)) is not None
        assert again.sessions[str(plan.key)].monitor.info.usable_window == readings[told][0]  # restored
    # 240K tokens: past the sweet spot of the model's 1M window; 93% of the window Codex works with
    assert readings[None] == (872_000, "yellow")
    assert readings[258_400] == (258_400, "red")


def test_a_request_asking_for_the_1m_context_is_read_with_it() -> None:
    """Claude Code sends a ``[1m]`` model as the plain id with the ``context-1m`` beta (seen with the real
    2.1.332 against the fake server): the proxy reads the session with the 1M window; without the beta,
    the model's standard 200K; and a response that reports a prompt above 200K proves the 1M one."""
    style = ApiStyle.ANTHROPIC_MESSAGES
    body: dict[str, Any] = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 1024,
        "messages": [{"role": "user", "content": "Port the billing exporter to the new API."}],
    }
    beta = {"anthropic-beta": "claude-code-20250219,context-1m-2025-08-07,interleaved-thinking-2025-05-14"}
    windows = {}
    for name, headers in (("beta", beta), ("plain", {"anthropic-beta": "claude-code-20250219"})):
        guard = Guard(Mode.OBSERVE, store=DictStore())
        plan = guard.plan(style, orjson.dumps(body), headers)
        windows[name] = guard.sessions[str(plan.key)].monitor.info.window
        if name == "plain":
            guard.finish(plan, 200, ResponseFacts(Usage(input_tokens=250_000), None, "r1"))
            more = [
                {"role": "assistant", "content": "Reading the exporter."},
                {"role": "user", "content": "go on"},
            ]
            plan = guard.plan(style, orjson.dumps({**body, "messages": body["messages"] + more}), headers)
            windows["plain, then a prompt of 250K"] = guard.sessions[str(plan.key)].monitor.info.window
    assert windows == {"beta": 1_000_000, "plain": 200_000, "plain, then a prompt of 250K": 1_000_000}


def test_a_message_written_as_a_string_then_as_one_marked_block_is_the_same_conversation() -> None:
    """Claude Code 2.1 writes the newest message's string content as a one-block list to carry its cache
    marker, and as a string on the next request: the conversation only grew (no reset), so the usage
    the server reported for the response is the next turn's fill (it was estimated again, without the
    tool definitions, on every such turn)."""
    from ctxhealth.integrations.wire.base import canonical

    text = "Today's date is 2026-12-03.\nThe deferred tools are now available."
    marked = {
        "role": "user",
        "content": [{"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}],
    }
    plain = {"role": "user", "content": text}
    assert canonical(marked) == canonical(plain)
    two = {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}
    assert canonical(two) != canonical({"role": "user", "content": "ab"})

    style = ApiStyle.ANTHROPIC_MESSAGES
    guard = Guard(Mode.OBSERVE, store=DictStore())
    first = {
        "model": "claude-sonnet-4-6",
        "messages": [{"role": "user", "content": "Fix the parser."}, marked],
    }
    plan = guard.plan(style, orjson.dumps(first), {})
    guard.finish(plan, 200, ResponseFacts(Usage(input_tokens=12_127), None, "r1"))
    reply = {"role": "assistant", "content": [{"type": "text", "text": "Reading the parser."}]}
    nxt = {"type": "text", "text": "go on", "cache_control": {"type": "ephemeral"}}
    second = {**first, "messages": [first["messages"][0], plain, reply, {"role": "user", "content": [nxt]}]}
    plan = guard.plan(style, orjson.dumps(second), {})
    session = guard.sessions[str(plan.key)]
    assert not plan.reset and session.resets == 0
    assert plan.assessment is not None and plan.assessment.fill == 12_127
