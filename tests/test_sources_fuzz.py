"""Fuzz the readers: broken input gives warnings or a CtxHealthError, never another exception,
and valid lines are never lost."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builders import mutate_bytes
from ctxhealth.errors import CtxHealthError, TranscriptError
from ctxhealth.model import Format, Message, Session
from ctxhealth.sources import anthropic_messages, claude_code, codex, mini_swe_agent, openai_chat
from ctxhealth.sources.claude_code import ClaudeCodeTail
from ctxhealth.sources.reader import read_data

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures"
EXAMPLE = (REPO / "examples" / "claude-code-session.jsonl").read_bytes()
CODEX = (FIXTURES / "codex-rollout.jsonl").read_bytes()
OPENAI = (FIXTURES / "openai-chat.json").read_bytes()
ANTHROPIC = (FIXTURES / "anthropic-messages.json").read_bytes()
MINI = json.dumps(
    {
        "info": {"exit_status": "Submitted", "config": {"model": {"model_name": "m"}}},
        "messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "task"},
            {
                "role": "assistant",
                "content": "THOUGHT\n```bash\nls\n```",
                "extra": {"response": {"usage": {"prompt_tokens": 10, "completion_tokens": 2}}},
            },
            {"role": "user", "content": "<returncode>1</returncode><output>x</output>"},
        ],
        "instance_id": "a__b-1",
        "trajectory_format": "mini-swe-agent-1",
    }
).encode()

PARSERS = {
    Format.CLAUDE_CODE: claude_code.parse,
    Format.CODEX: codex.parse,
    Format.MINI_SWE_AGENT: mini_swe_agent.parse,
    Format.OPENAI_CHAT: openai_chat.parse,
    Format.ANTHROPIC_MESSAGES: anthropic_messages.parse,
}
SEEDS = [EXAMPLE, CODEX, OPENAI, ANTHROPIC, MINI]
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Keys the readers look at, so random JSON reaches deep code paths.
KEYS = [
    "type", "message", "content", "uuid", "parentUuid", "isSidechain", "isCompactSummary", "id", "role",
    "model", "usage", "payload", "info", "last_token_usage", "output", "call_id", "arguments", "messages",
    "tool_calls", "function", "text", "tool_use_id", "input", "extra", "response", "subtype",
    "compactMetadata", "logicalParentUuid", "summary", "input_tokens", "prompt_tokens", "is_error",
]  # fmt: skip
VALUES = [
    "user", "assistant", "system", "tool", "text", "tool_use", "tool_result", "thinking", "image",
    "response_item", "event_msg", "token_count", "function_call", "function_call_output", "compacted",
    "message", "reasoning", "compact_boundary", "u1", "u2", "<synthetic>",
]  # fmt: skip
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(VALUES)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=5), children, max_size=5)
    ),
    max_leaves=25,
)


def _check(fn: Any, *args: Any, **kwargs: Any) -> Session | None:
    """Call a reader; a Session or a CtxHealthError are fine, anything else fails the test."""
    try:
        result = fn(*args, **kwargs)
    except CtxHealthError:
        return None
    assert isinstance(result, Session)
    return result


def _shape(messages: tuple[Message, ...]) -> list[tuple[Any, ...]]:
    """Messages without their line numbers (which shift when a line is inserted)."""
    return [(m.role, m.blocks, m.id, m.response_id, m.usage, m.model) for m in messages]


@FUZZ
@given(st.binary(max_size=2000))
def test_binary_junk_never_crashes(data: bytes) -> None:
    _check(read_data, data, "junk")
    for fmt in Format:
        _check(read_data, data, "junk", format=fmt)


@FUZZ
@given(st.lists(json_values, min_size=1, max_size=6))
def test_random_json_lines_never_crash(rows: list[Any]) -> None:
    jsonl = "\n".join(json.dumps(r) for r in rows).encode()
    document = json.dumps(rows if len(rows) > 1 else rows[0]).encode()
    for parse in PARSERS.values():
        _check(parse, jsonl, "x")
        _check(parse, document, "x")
    _check(read_data, jsonl, "x")
    _check(read_data, document, "x")
    ClaudeCodeTail().feed(jsonl + b"\n")


def _replace_random_subtree(value: Any, data: st.DataObject) -> Any:
    if isinstance(value, dict) and value and data.draw(st.booleans()):
        key = data.draw(st.sampled_from(sorted(value)))
        return {**value, key: _replace_random_subtree(value[key], data)}
    if isinstance(value, list) and value and data.draw(st.booleans()):
        i = data.draw(st.integers(0, len(value) - 1))
        return [*value[:i], _replace_random_subtree(value[i], data), *value[i + 1 :]]
    return data.draw(json_values)


@FUZZ
@given(st.data())
def test_wrong_types_at_any_level(data: st.DataObject) -> None:
    seed_index = data.draw(st.integers(0, len(SEEDS) - 1))
    seed = SEEDS[seed_index]
    fmt = list(PARSERS)[[0, 1, 3, 4, 2][seed_index]]
    if seed in (EXAMPLE, CODEX):
        lines = seed.splitlines()
        i = data.draw(st.integers(0, len(lines) - 1))
        lines[i] = json.dumps(_replace_random_subtree(json.loads(lines[i]), data)).encode()
        mutated = b"\n".join(lines)
    else:
        mutated = json.dumps(_replace_random_subtree(json.loads(seed), data)).encode()
    _check(PARSERS[fmt], mutated, "x")
    _check(read_data, mutated, "x")


@FUZZ
@given(st.data())
def test_random_byte_mutations(data: st.DataObject) -> None:
    seed = data.draw(st.sampled_from(SEEDS))
    mutated = mutate_bytes(data, seed, most_edits=8, most_deleted=50, most_inserted=20)
    _check(read_data, mutated, "x")
    for parse in PARSERS.values():
        _check(parse, mutated, "x")


junk_lines = st.binary(min_size=1, max_size=200).filter(
    lambda b: b"\n" not in b and b"\r" not in b and b.strip() != b"" and not _is_object(b)
)


def _is_object(raw: bytes) -> bool:
    try:
        return isinstance(json.loads(raw), dict)
    except ValueError:
        return False


@pytest.mark.parametrize("seed", [EXAMPLE, CODEX], ids=["claude-code", "codex"])
@FUZZ
@given(data=st.data(), junk=junk_lines)
def test_injected_junk_line_loses_nothing(seed: bytes, data: st.DataObject, junk: bytes) -> None:
    fmt = Format.CLAUDE_CODE if seed is EXAMPLE else Format.CODEX
    lines = seed.splitlines()
    at = data.draw(st.integers(0, len(lines)))
    broken = b"\n".join([*lines[:at], junk, *lines[at:]])
    clean = PARSERS[fmt](seed, "x")
    session = PARSERS[fmt](broken, "x")
    assert _shape(session.messages) == _shape(clean.messages)
    assert [w.line for w in session.warnings] == [at + 1]


@pytest.mark.parametrize("seed", [OPENAI, ANTHROPIC, MINI], ids=["openai", "anthropic", "mini-swe-agent"])
@FUZZ
@given(data=st.data(), junk=json_values.filter(lambda v: not isinstance(v, dict)))
def test_injected_junk_element_loses_nothing(seed: bytes, data: st.DataObject, junk: Any) -> None:
    doc = json.loads(seed)
    messages = doc["messages"]
    at = data.draw(st.integers(0, len(messages)))
    doc["messages"] = [*messages[:at], junk, *messages[at:]]
    parse = {OPENAI: openai_chat.parse, ANTHROPIC: anthropic_messages.parse, MINI: mini_swe_agent.parse}[seed]
    clean = parse(seed, "x")
    session = parse(json.dumps(doc).encode(), "x")
    if seed is MINI and at < len(messages):
        # a junk element between an action and its observation unpairs them: compare texts only
        assert [m.role for m in session.messages] == [m.role for m in clean.messages]
    else:
        assert _shape(session.messages) == _shape(clean.messages)
    assert [w.line for w in session.warnings] == [at + 1]


@FUZZ
@given(cut=st.integers(min_value=1, max_value=len(EXAMPLE) - 1))
def test_truncated_file_keeps_its_complete_lines(cut: int) -> None:
    full = claude_code.parse(EXAMPLE, "x")
    part = _check(read_data, EXAMPLE[:cut], "x", format=Format.CLAUDE_CODE)
    if part is None:
        return
    ids = {m.response_id for m in full.messages}
    assert {m.response_id for m in part.messages} <= ids
    complete_lines = EXAMPLE[:cut].count(b"\n")
    expected = [m for m in full.messages if m.line is not None and m.line <= complete_lines]
    # every message that starts on a complete line survives (the cut line may add a warning)
    got = {(m.line, m.role) for m in part.messages}
    assert {(m.line, m.role) for m in expected} <= got


def test_huge_lines() -> None:
    big_text = "x" * 5_000_000
    row = {"uuid": "u1", "parentUuid": None, "type": "user", "message": {"role": "user", "content": big_text}}
    session = claude_code.parse(json.dumps(row).encode() + b"\n" + b"{" * 3_000_000 + b"\n", "x")
    assert session.messages[0].text == big_text
    assert len(session.warnings) == 1 and session.warnings[0].line == 2
    deep = b"[" * 100_000 + b"]" * 100_000
    # nothing readable in it: a clear input error with the reader's reason, not a crash
    with pytest.raises(TranscriptError, match="no readable message as openai-chat"):
        read_data(deep, "x", format=Format.OPENAI_CHAT)


def test_nul_bytes_and_invalid_utf8() -> None:
    lines = EXAMPLE.splitlines()
    broken = b"\n".join([lines[0], b"\x00\x00\x00", b'{"type": "user", "x": "\xff\xfe"}', *lines[1:]])
    session = claude_code.parse(broken, "x")
    assert [w.line for w in session.warnings] == [2, 3]
    assert _shape(session.messages) == _shape(claude_code.parse(EXAMPLE, "x").messages)


def test_many_junk_lines_cap_the_warnings() -> None:
    session = claude_code.parse(b"junk\n" * 5000 + EXAMPLE, "x")
    assert len(session.warnings) == 201
    assert "4800 more warnings" in session.warnings[-1].reason
    assert session.assistant_turns == claude_code.parse(EXAMPLE, "x").assistant_turns


# Every format's seed, for the hostile values below (one reader each, detected from content).
ALL_SEEDS = {
    "claude-code": EXAMPLE,
    "codex": CODEX,
    "openai-chat": OPENAI,
    "anthropic-messages": ANTHROPIC,
    "mini-swe-agent": MINI,
    "openhands": (FIXTURES / "agents" / "openhands-output.jsonl").read_bytes(),
    "swe-agent": (FIXTURES / "agents" / "swe-agent-1.x-function-calling.traj").read_bytes(),
    "tau-bench": (FIXTURES / "agents" / "tau-bench-results.json").read_bytes(),
}
# A number too large for a float (309+ digits), the constants Python's json.dump writes, a float
# that overflows, and a value nested deeper than any decoder's recursion limit.
HOSTILE_VALUES = {
    "309-digits": b"1" + b"0" * 320,
    "nan": b"NaN",
    "-infinity": b"-Infinity",
    "1e999": b"1e999",
    "3000-deep": b"[" * 3000 + b"]" * 3000,
}
_NUMBER = re.compile(rb"(?<=[:,\[])(\s*)(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)(?=\s*[,}\]\r\n])")
PLACES = 12
"""Numbers of each seed replaced, one at a time, spread over the file (bounded: CI time)."""


def _message_count(data: bytes, name: str) -> int:
    from ctxhealth.sources.reader import read_data_all

    return sum(len(s.messages) for s in read_data_all(data, name))


@pytest.mark.parametrize("value", sorted(HOSTILE_VALUES))
@pytest.mark.parametrize("seed", sorted(ALL_SEEDS))
def test_a_hostile_value_in_place_of_any_number_costs_that_field_only(seed: str, value: str) -> None:
    data = ALL_SEEDS[seed]
    expected = _message_count(data, seed)
    found = list(_NUMBER.finditer(data))
    assert found, seed
    step = max(1, len(found) // PLACES)
    for match in found[::step][:PLACES]:
        start, end = match.span(2)
        mutated = data[:start] + HOSTILE_VALUES[value] + data[end:]
        assert _message_count(mutated, seed) == expected, (seed, value, data[start - 40 : end + 10])
