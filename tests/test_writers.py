"""Writers to OpenAI Chat Completions and Anthropic Messages: structurally valid against the
official SDKs' request types, protocol-valid (tool calls answered in the right place), and
round-tripping through our readers."""

from __future__ import annotations

import collections.abc
import functools
import itertools
import types
import typing
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from typing_extensions import is_typeddict

from ctxhealth.model import CompactionSummary, Message, Role, Session, TextBlock, ToolCall, ToolResult
from ctxhealth.recovery.pairing import repair_pairs
from ctxhealth.recovery.truncate import truncate
from ctxhealth.sources import anthropic_messages, openai_chat
from ctxhealth.sources.writers import to_anthropic_request, to_openai_messages, to_openai_request
from lazy_import import lazy
from test_recovery_invariants import sessions

anthropic = lazy("anthropic")  # the SDKs load when a test uses them, not at collection
openai = lazy("openai")

# --- a runtime structural check against the SDKs' TypedDict request types ---------------------


@functools.cache
def _hints(tp: Any) -> dict[str, Any]:
    return typing.get_type_hints(tp)


def conforms(value: Any, tp: Any, path: str = "$") -> list[str]:
    """Errors found checking ``value`` against the typing annotation ``tp`` (empty = conforms).

    TypedDicts: required keys present, no unknown keys, each value checked; unions: any arm;
    literals: membership; iterables: a list whose items conform."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is Any or tp is object:
        return []
    if origin is typing.Annotated:
        return conforms(value, args[0], path)
    if origin in (typing.Required, typing.NotRequired):
        return conforms(value, args[0], path)
    if origin is typing.Union or origin is types.UnionType:
        found = [conforms(value, arm, path) for arm in args]
        return [] if any(not f for f in found) else [f"{path}: matches no arm of {tp}"]
    if origin is typing.Literal:
        return [] if value in args else [f"{path}: {value!r} not in {args}"]
    if is_typeddict(tp):
        if not isinstance(value, dict):
            return [f"{path}: expected object for {tp.__name__}"]
        hints = _hints(tp)
        errors = [f"{path}: unknown key {k!r} for {tp.__name__}" for k in value if k not in hints]
        errors += [f"{path}: missing {k!r} for {tp.__name__}" for k in tp.__required_keys__ if k not in value]
        for k, v in value.items():
            if k in hints:
                errors += conforms(v, hints[k], f"{path}.{k}")
        return errors
    if origin in (list, collections.abc.Iterable, collections.abc.Sequence):
        if not isinstance(value, list):
            return [f"{path}: expected array"]
        return [
            e
            for i, item in enumerate(value)
            for e in conforms(item, args[0] if args else Any, f"{path}[{i}]")
        ]
    if origin in (dict, collections.abc.Mapping) or tp in (dict, collections.abc.Mapping):
        return [] if isinstance(value, dict) else [f"{path}: expected object"]
    if tp is type(None):
        return [] if value is None else [f"{path}: expected null"]
    if tp is bool:
        return [] if isinstance(value, bool) else [f"{path}: expected bool"]
    if tp in (int, float):
        return (
            []
            if isinstance(value, (int, float)) and not isinstance(value, bool)
            else [f"{path}: expected number"]
        )
    if tp is str:
        return [] if isinstance(value, str) else [f"{path}: expected string"]
    if isinstance(tp, type):
        return [] if isinstance(value, tp) else [f"{path}: expected {tp.__name__}"]
    return []  # anything more exotic is not produced by our writers


def anthropic_errors(body: dict[str, Any]) -> list[str]:
    """Type errors plus the Messages API's protocol rules."""
    errors = conforms(
        {**body, "model": "m", "max_tokens": 1},
        anthropic.types.message_create_params.MessageCreateParamsNonStreaming,
    )
    msgs = body["messages"]
    if msgs and msgs[0]["role"] != "user":
        errors.append("first message must be user")
    for a, b in itertools.pairwise(msgs):
        if a["role"] == b["role"]:
            errors.append("roles must alternate")
    for i, m in enumerate(msgs):
        uses = [b["id"] for b in m["content"] if b["type"] == "tool_use"]
        if m["role"] == "assistant" and uses:
            nxt = msgs[i + 1]["content"] if i + 1 < len(msgs) else []
            answered = [b["tool_use_id"] for b in nxt if b["type"] == "tool_result"]
            if sorted(answered) != sorted(uses):
                errors.append(f"message {i}: tool_use ids {uses} answered by {answered}")
            kinds = [b["type"] for b in nxt]
            if (
                "tool_result" in kinds and kinds.index("text") < kinds.index("tool_result")
                if "text" in kinds
                else False
            ):
                errors.append(f"message {i + 1}: tool_result must come first")
        if m["role"] == "user" and i > 0:
            prev = {b["id"] for b in msgs[i - 1]["content"] if b["type"] == "tool_use"}
            for b in m["content"]:
                if b["type"] == "tool_result" and b["tool_use_id"] not in prev:
                    errors.append(f"message {i}: tool_result {b['tool_use_id']} without tool_use")
        for b in m["content"]:
            if b["type"] == "text" and not b["text"].strip():
                errors.append(f"message {i}: empty text block")
    return errors


def openai_errors(messages: list[dict[str, Any]]) -> list[str]:
    errors = conforms(
        {"messages": messages, "model": "m"},
        openai.types.chat.completion_create_params.CompletionCreateParamsNonStreaming,
    )
    i = 0
    while i < len(messages):
        m = messages[i]
        if m["role"] == "assistant" and m.get("tool_calls"):
            ids = [c["id"] for c in m["tool_calls"]]
            j = i + 1
            answered = []
            while j < len(messages) and messages[j]["role"] == "tool":
                answered.append(messages[j]["tool_call_id"])
                j += 1
            if sorted(answered) != sorted(ids):
                errors.append(f"message {i}: tool_calls {ids} answered by {answered}")
            i = j
            continue
        if m["role"] == "tool":
            errors.append(f"message {i}: tool message not right after its assistant")
        i += 1
    return errors


def example() -> Session:
    return Session(
        path="x",
        format=anthropic_messages.Format.ANTHROPIC_MESSAGES,
        messages=(
            Message(Role.SYSTEM, (TextBlock("Be brief."),)),
            Message(Role.USER, (TextBlock("List files"),)),
            Message(Role.ASSISTANT, (TextBlock("Listing."), ToolCall("t1", "Bash", {"command": "ls"}))),
            Message(Role.USER, (ToolResult("t1", "a.py\nb.py"),)),
            Message(Role.USER, (TextBlock("and the tests?"),)),
            Message(Role.ASSISTANT, (ToolCall("t2", "Bash", {"command": "ls tests"}),)),
            Message(Role.TOOL, (ToolResult("t2", "No such file", is_error=True),)),
            Message(Role.USER, (CompactionSummary("Earlier: listed files."),)),
            Message(Role.ASSISTANT, (TextBlock("There are no tests."),)),
        ),
    )


def test_sdk_type_check_rejects_bad_shapes() -> None:
    good = to_anthropic_request(example())
    assert anthropic_errors(good) == []
    bad = orjson.loads(orjson.dumps(good))
    bad["messages"][1]["content"][1]["type"] = "tool_call"
    assert anthropic_errors(bad)
    extra = orjson.loads(orjson.dumps(good))
    extra["messages"][0]["content"][0]["colour"] = "red"
    assert anthropic_errors(extra)
    assert openai_errors(to_openai_messages(example())) == []
    assert openai_errors([{"role": "assistant", "content": None, "tool_calls": [{"id": "a"}]}])


def test_anthropic_request_shape() -> None:
    body = to_anthropic_request(example())
    assert body["system"] == "Be brief."
    assert [m["role"] for m in body["messages"]] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    merged = body["messages"][2]["content"]
    assert [b["type"] for b in merged] == ["tool_result", "text"]
    assert body["messages"][4]["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "t2",
        "content": "No such file",
        "is_error": True,
    }


def test_openai_messages_shape() -> None:
    msgs = to_openai_messages(example())
    assert [m["role"] for m in msgs] == [
        "system",
        "user",
        "assistant",
        "tool",
        "user",
        "assistant",
        "tool",
        "user",
        "assistant",
    ]
    assert msgs[2]["tool_calls"][0]["function"] == {"name": "Bash", "arguments": '{"command":"ls"}'}
    assert to_openai_request(example()) == {"messages": msgs}


def canonical(messages: tuple[Message, ...] | list[Message], *, errors: bool) -> list[tuple[Any, ...]]:
    """What a provider sees: role groups (tool results count as user), texts, calls, results."""
    groups: list[tuple[str, list[str], list[Any], list[Any]]] = []
    for m in messages:
        texts = [b.text for b in m.blocks if isinstance(b, (TextBlock, CompactionSummary)) and b.text.strip()]
        calls = [(c.id, c.name, c.input) for c in m.tool_calls]
        results = [(r.tool_call_id, r.text, r.is_error if errors else None) for r in m.tool_results]
        if not (texts or calls or results):
            continue  # nothing sendable (thinking only): the writers leave it out
        role = {Role.ASSISTANT: "assistant", Role.SYSTEM: "system"}.get(m.role, "user")
        if not groups or groups[-1][0] != role:
            groups.append((role, [], [], []))
        groups[-1][1].extend(texts)
        groups[-1][2].extend(calls)
        groups[-1][3].extend(results)
    return [(r, "\n".join(t), c, sorted(res)) for r, t, c, res in groups if t or c or res]


def test_round_trip_example() -> None:
    s = example()
    back = anthropic_messages.parse(orjson.dumps(to_anthropic_request(s)), "a.json")
    assert not back.warnings
    assert canonical(back.messages, errors=True) == canonical(s.messages, errors=True)
    back = openai_chat.parse(orjson.dumps(to_openai_request(s)), "o.json")
    assert not back.warnings
    assert canonical(back.messages, errors=False) == canonical(s.messages, errors=False)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(session=sessions(max_turns=10))
def test_generated_sessions_write_valid_requests_and_round_trip(session: Session) -> None:
    paired, _ = repair_pairs(session.messages)
    for messages in (paired, truncate(session)[0].messages):
        body = to_anthropic_request(messages)
        assert anthropic_errors(body) == []
        back = anthropic_messages.parse(orjson.dumps(body), "a.json")
        assert canonical(back.messages, errors=True) == canonical(messages, errors=True)
        oa = to_openai_request(messages)
        assert openai_errors(oa["messages"]) == []
        back = openai_chat.parse(orjson.dumps(oa), "o.json")
        assert canonical(back.messages, errors=False) == canonical(messages, errors=False)
