"""The typed fast paths (Claude Code, mini-swe-agent) and the fast model constructors give exactly
what the lenient path gives: on every real file, on fuzzed records and on byte-mutated input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from builders import mutate_bytes
from ctxhealth.model import (
    Block,
    Message,
    Role,
    Session,
    TextBlock,
    ToolCall,
    ToolResult,
    Usage,
)
from ctxhealth.sources import claude_code, mini_swe_agent
from ctxhealth.sources.lines import make_call, make_message, make_result, make_text, make_usage

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = (REPO / "examples" / "claude-code-session.jsonl").read_bytes()
FUZZ = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _both(data: bytes) -> tuple[Session, Session]:
    return claude_code.parse(data, "x.jsonl"), claude_code.parse(data, "x.jsonl", typed=False)


def _overflows_a_double(line: bytes) -> bool:
    """The one documented difference: orjson rejects a number too large for a double anywhere."""
    try:
        orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        return "infinity" in str(exc)
    return False


def test_every_real_file_reads_the_same_on_both_paths(claude_code_data: Path) -> None:
    files = sorted(claude_code_data.rglob("*.jsonl"))
    assert files
    typed = total = 0
    for file in files:
        data = file.read_bytes()
        fast, lenient = _both(data)
        assert fast == lenient, file.name
        lines = [line for line in data.split(b"\n") if line.strip()]
        total += len(lines)
        typed += sum(claude_code._typed_node(line, True) is not None for line in lines)
    assert typed >= total * 0.99  # the comparison really exercised the typed path


def test_the_example_reads_the_same_on_both_paths() -> None:
    fast, lenient = _both(EXAMPLE)
    assert fast == lenient
    assert fast.assistant_turns > 0 and fast.warnings == ()


def _record(kind: str, body: dict[str, Any]) -> dict[str, Any]:
    return {"type": kind, "uuid": "u", "parentUuid": None, "sessionId": "s", **body}


# Claude Code shaped records; any value may instead be of a wrong type or odd (one time in eight).
ODD = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=6)
)


def mostly(valid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.sampled_from([False] * 7 + [True]).flatmap(lambda odd: ODD if odd else valid)


BLOCK_TYPES = ["text", "thinking", "redacted_thinking", "tool_use", "server_tool_use", "tool_result", "image"]
part = st.fixed_dictionaries(
    {"type": mostly(st.sampled_from(["text", "text", "image", "document"]))},
    optional={
        "text": mostly(st.text(max_size=8)),
        "source": mostly(st.fixed_dictionaries({"data": st.text(max_size=4)})),
    },
)
block = st.fixed_dictionaries(
    {
        "type": mostly(st.sampled_from(BLOCK_TYPES)),
        "text": mostly(st.text(max_size=8)),
        "id": mostly(st.sampled_from(["t1", "t2"])),
        "name": mostly(st.just("Bash")),
        "tool_use_id": mostly(st.sampled_from(["t1", "t2"])),
    },
    optional={
        "thinking": mostly(st.text(max_size=8)),
        "input": mostly(st.dictionaries(st.text(max_size=3), ODD, max_size=3)),
        "content": mostly(st.text(max_size=8) | st.lists(mostly(part), max_size=3)),
        "is_error": mostly(st.booleans()),
        "source": mostly(
            st.fixed_dictionaries(
                {}, optional={"data": mostly(st.text(max_size=4)), "media_type": mostly(st.just("image/png"))}
            )
        ),
    },
)
usage = st.fixed_dictionaries(
    {},
    optional={
        k: mostly(st.integers(-5, 2**65))
        for k in ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    },
)
message = st.fixed_dictionaries(
    {},
    optional={
        "content": mostly(st.lists(mostly(block), max_size=3) | st.text(max_size=8)),
        "id": mostly(st.sampled_from(["m1", "m2"])),
        "model": mostly(st.sampled_from(["claude-opus-4-1", "<synthetic>"])),
        "usage": mostly(usage),
    },
)
record = st.fixed_dictionaries(
    {"type": mostly(st.sampled_from(["user", "assistant", "assistant", "system", "summary", "progress"]))},
    optional={
        "uuid": mostly(st.sampled_from(["a", "b", "c", "d"])),
        "parentUuid": mostly(st.sampled_from(["a", "b", "c", "d", "zz"])),
        "isSidechain": mostly(st.booleans()),
        "message": mostly(message),
        "timestamp": mostly(st.just("2025-07-01T00:00:00Z")),
        "sessionId": mostly(st.just("s")),
        "isCompactSummary": mostly(st.booleans()),
        "subtype": mostly(st.just("compact_boundary")),
        "compactMetadata": mostly(
            st.fixed_dictionaries(
                {}, optional={"trigger": mostly(st.just("auto")), "preTokens": mostly(st.integers(0, 2**65))}
            )
        ),
        "logicalParentUuid": mostly(st.sampled_from(["a", "b"])),
        "toolUseResult": st.dictionaries(st.text(max_size=3), ODD, max_size=3) | ODD,
    },
)


@FUZZ
@given(st.lists(record, min_size=1, max_size=8))
def test_fuzzed_records_read_the_same_on_both_paths(rows: list[dict[str, Any]]) -> None:
    data = "\n".join(json.dumps(r) for r in rows).encode()
    fast, lenient = _both(data)
    assert fast == lenient


@FUZZ
@given(st.data())
def test_byte_mutations_read_the_same_on_both_paths(data: st.DataObject) -> None:
    mutated = mutate_bytes(data, EXAMPLE, most_edits=6, most_deleted=30, most_inserted=12)
    assume(not any(_overflows_a_double(line) for line in mutated.split(b"\n")))
    fast, lenient = _both(mutated)
    assert fast == lenient


def _fields(value: Any) -> Any:
    """A node as plain values, field by field (lenient nodes have no ``==``)."""
    names = getattr(value, "__struct_fields__", None) or getattr(value, "__slots__", None)
    if names is not None and not isinstance(value, Block):
        return (type(value).__name__, *(_fields(getattr(value, n)) for n in names))
    if isinstance(value, list):
        return [_fields(v) for v in value]
    return value


def _line_by_line(data: bytes) -> tuple[list[Any], tuple[Any, ...]]:
    """The definition of a typed read: every line on its own (``_iter_nodes``), and its warnings."""
    from ctxhealth.sources.claude_code.records import _iter_nodes
    from ctxhealth.sources.lines import WarningSink

    sink = WarningSink("x.jsonl")
    return _fields(list(_iter_nodes(data, sink))), sink.result()


def _whole_file(data: bytes) -> tuple[list[Any], tuple[Any, ...]]:
    from ctxhealth.sources.claude_code.records import _read_nodes
    from ctxhealth.sources.lines import WarningSink

    sink = WarningSink("x.jsonl")
    return _fields(_read_nodes(data, sink)), sink.result()


# what may stand between two records: a plain newline, or a line the whole-file decode must not
# number wrongly (blank, spaces, CRLF, two records on one line, a bad UTF-8 byte in a skipped field)
JOINS = st.sampled_from([b"\n"] * 6 + [b"\n\n", b"\n   \n", b"\r\n", b" ", b"\n\x0b\n", b"\n{bad\n"])


@FUZZ
@given(st.lists(st.tuples(record, JOINS), min_size=1, max_size=8), st.booleans(), st.booleans())
def test_the_whole_file_decode_numbers_the_nodes_as_line_by_line(
    rows: list[tuple[dict[str, Any], bytes]], newline_at_end: bool, bad_utf8: bool
) -> None:
    data = b"".join(json.dumps(r).encode() + join for r, join in rows)
    if bad_utf8:
        data = data.replace(b'"sessionId"', b'"\xffsessionId"', 1)
    data = data.rstrip(b"\n") + (b"\n" if newline_at_end else b"")
    assert _whole_file(data) == _line_by_line(data)


def test_real_files_take_the_whole_file_decode_with_the_same_nodes(claude_code_data: Path) -> None:
    from ctxhealth.sources.claude_code.typed import _typed_file
    from ctxhealth.sources.lines import max_line_bytes

    taken = 0
    for file in sorted(claude_code_data.rglob("*.jsonl")):
        data = file.read_bytes()
        taken += _typed_file(data, max_line_bytes()) is not None
        assert _whole_file(data) == _line_by_line(data), file.name
    assert taken >= 10  # the clean real files are read in one call


def test_two_records_on_a_line_next_to_a_blank_line_keep_their_line_numbers() -> None:
    # as many values as lines, but not one per line: the whole-file decode must not be taken
    a, b = EXAMPLE.splitlines()[:2]
    data = a + b" " + b + b"\n\n" + a + b"\n"
    nodes, warnings = _whole_file(data)
    assert (nodes, warnings) == _line_by_line(data)
    assert [n[-1] for n in nodes] == [3] and [w.line for w in warnings] == [1]  # line is the last field


def test_a_record_split_over_two_lines_next_to_two_on_one_line_stays_two_bad_lines() -> None:
    # a decoder of a whole file reads across newlines: one record spread over lines 1-2 and a second
    # record on line 2 are two values for two lines, but line by line both lines are invalid JSON
    data = b'{"type":"summary","uuid":"a","x":\n{}} {"type":"summary","uuid":"b"}\n'
    nodes, warnings = _whole_file(data)
    assert (nodes, warnings) == _line_by_line(data)
    assert nodes == [] and [w.line for w in warnings] == [1, 2]


def test_invalid_utf8_in_a_skipped_field_is_still_a_warning() -> None:
    line = json.loads(EXAMPLE.splitlines()[1])
    line["toolUseResult"] = "PLACEHOLDER"
    raw = json.dumps(line).encode().replace(b"PLACEHOLDER", b"\xff\xfe")
    fast, lenient = _both(raw + b"\n" + EXAMPLE)
    assert fast == lenient
    assert [w.line for w in fast.warnings] == [1]
    assert "invalid JSON" in fast.warnings[0].reason


def test_large_integers_keep_orjson_values() -> None:
    """orjson turns integers beyond 64 bits into floats; the typed path must give the same values."""
    call = {"type": "tool_use", "id": "t1", "name": "X", "input": {"n": 2**70, "m": -(2**64)}}
    use = {"input_tokens": 2**64 + 1, "output_tokens": 2**63, "cache_read_input_tokens": 1}
    row = _record(
        "assistant", {"message": {"id": "m1", "model": "claude-opus-4", "content": [call], "usage": use}}
    )
    fast, lenient = _both(json.dumps(row).encode())
    assert fast == lenient
    assert fast.messages[0].tool_calls[0].input == {"n": float(2**70), "m": float(-(2**64))}


def test_a_lone_surrogate_escape_does_not_drop_the_line() -> None:
    """JSON the grammar allows: the line is read on both paths (the escape becomes U+FFFD)."""
    row = _record("user", {"message": {"content": "hi"}})
    raw = json.dumps(row).encode()[:-1] + b', "toolUseResult": "\\ud800"}'
    fast, lenient = _both(raw)
    assert fast == lenient and fast.warnings == ()
    assert [m.text for m in fast.messages] == ["hi"]
    in_text = (
        json.dumps(_record("user", {"message": {"content": "hi"}})).encode().replace(b'"hi"', b'"h\\ud800i"')
    )
    fast, lenient = _both(in_text)
    assert fast == lenient and [m.text for m in fast.messages] == ["h\ufffdi"]


def test_a_double_overflow_in_a_skipped_field_does_not_drop_the_line() -> None:
    """An overflowing number (``1e999``) the grammar allows: both paths read the line."""
    row = _record("user", {"message": {"content": "hi"}, "toolUseResult": {"n": 1}})
    raw = json.dumps(row).encode().replace(b'{"n": 1}', b'{"n": 1e999}')
    fast, lenient = _both(raw)
    assert fast == lenient
    assert [m.text for m in fast.messages] == ["hi"] and fast.warnings == ()


def test_tail_matches_a_full_read_of_the_example() -> None:
    tail = claude_code.ClaudeCodeTail()
    got: list[Message] = []
    for start in range(0, len(EXAMPLE), 997):
        got.extend(tail.feed(EXAMPLE[start : start + 997]))
    assert [m.text for m in got if m.role is Role.USER] == [
        m.text for m in claude_code.parse(EXAMPLE, "x").messages if m.role is Role.USER
    ]
    assert tail.state.warnings == []


def _tail_read(data: bytes, typed_from: int) -> tuple[list[Message], Any]:
    """A tail fed ``data`` in one call, typed-first when the feed is at least ``typed_from`` bytes."""
    from ctxhealth.sources.claude_code import tail as tail_module

    saved = tail_module._TYPED_FEED_BYTES
    tail_module._TYPED_FEED_BYTES = typed_from
    try:
        tail = claude_code.ClaudeCodeTail("x.jsonl")
        messages = tail.feed(data)
    finally:
        tail_module._TYPED_FEED_BYTES = saved
    state = tail.state
    seen = (
        state.session_id,
        state.model,
        state.sidechain_lines,
        state.compactions,
        state.last_compaction,
        state.warnings,
        tail.consumed,
        tail.pending,
    )
    return messages, seen


def _tail_both(data: bytes) -> None:
    typed, lenient_first = _tail_read(data, 0), _tail_read(data, len(data) + 1)
    assert typed == lenient_first


def test_small_and_large_tail_feeds_read_the_same_example() -> None:
    _tail_both(EXAMPLE)
    messages, _ = _tail_read(EXAMPLE, len(EXAMPLE) + 1)
    assert messages and any(m.role is Role.ASSISTANT for m in messages)


def test_small_and_large_tail_feeds_read_every_real_file_the_same(claude_code_data: Path) -> None:
    files = sorted(claude_code_data.rglob("*.jsonl"))
    assert files
    for file in files[:40]:
        data = file.read_bytes()
        _tail_both(data)
        # The per-turn size: the last few lines of the file on their own.
        _tail_both(b"".join(data.splitlines(keepends=True)[-4:]))


def test_a_small_tail_feed_reads_a_double_overflow_line_as_the_typed_path_does() -> None:
    row = _record("user", {"message": {"content": "hi"}, "toolUseResult": {"n": 1}})
    raw = json.dumps(row).encode().replace(b'{"n": 1}', b'{"n": 1e999}') + b"\n"
    messages, seen = _tail_read(raw, len(raw) + 1)
    assert [m.text for m in messages] == ["hi"] and seen[5] == []
    _tail_both(raw + b"{not json\n")


@FUZZ
@given(st.data())
def test_byte_mutations_read_the_same_on_small_and_large_tail_feeds(data: st.DataObject) -> None:
    _tail_both(mutate_bytes(data, EXAMPLE, most_edits=6, most_deleted=30, most_inserted=12))


@FUZZ
@given(st.lists(record, min_size=1, max_size=8))
def test_fuzzed_records_read_the_same_on_small_and_large_tail_feeds(rows: list[dict[str, Any]]) -> None:
    _tail_both("\n".join(json.dumps(r) for r in rows).encode() + b"\n")


def test_fast_constructors_equal_the_model_classes() -> None:
    assert make_text("a") == TextBlock("a")
    assert make_call("i", "n", {"x": [1]}) == ToolCall("i", "n", {"x": [1]})
    assert make_result("i", "t", True) == ToolResult("i", "t", is_error=True)
    assert make_usage(1, 2, 3, 4) == Usage(1, 2, 3, 4)
    usage = Usage(1, 2)
    fast = make_message(Role.ASSISTANT, (TextBlock("a"),), "u", "m", "model", usage, "t", True, 7)
    assert fast == Message(Role.ASSISTANT, (TextBlock("a"),), "u", "m", "model", usage, "t", True, 7)
    assert hash(make_text("a")) == hash(TextBlock("a"))


# --- mini-swe-agent ------------------------------------------------------------------------------


def _both_mini(data: bytes) -> tuple[Session, Session]:
    return mini_swe_agent.parse(data, "x.traj.json"), mini_swe_agent.parse(data, "x.traj.json", typed=False)


def test_every_real_trajectory_reads_the_same_on_both_paths(mini_swe_data: Path) -> None:
    files = sorted(mini_swe_data.rglob("*.traj.json"))
    assert files
    for file in files:
        data = file.read_bytes()
        fast, lenient = _both_mini(data)
        assert fast == lenient, file.name
        assert mini_swe_agent._typed_read(data) is not None  # the typed path really ran


mini_usage = st.fixed_dictionaries(
    {},
    optional={
        "prompt_tokens": mostly(st.integers(-5, 2**65)),
        "completion_tokens": mostly(st.integers(-5, 2**65)),
        "prompt_tokens_details": mostly(
            st.fixed_dictionaries({}, optional={"cached_tokens": mostly(st.integers(-5, 99))})
        ),
        "completion_tokens_details": mostly(
            st.fixed_dictionaries({}, optional={"reasoning_tokens": mostly(st.integers(-5, 99))})
        ),
    },
)
mini_message = st.fixed_dictionaries(
    {
        "role": mostly(st.sampled_from(["system", "user", "assistant", "assistant", "tool"])),
        "content": mostly(
            st.sampled_from(
                ["THOUGHT\n```bash\nls\n```", "<returncode>1</returncode>", "The last command x timed out"]
            )
            | st.text(max_size=8)
            | st.lists(mostly(st.fixed_dictionaries({"text": mostly(st.text(max_size=4))})), max_size=2)
        ),
    },
    optional={
        "extra": mostly(
            st.fixed_dictionaries(
                {},
                optional={
                    "response": mostly(
                        st.fixed_dictionaries(
                            {},
                            optional={
                                "id": mostly(st.just("r1")),
                                "model": mostly(st.just("gemini")),
                                "created": mostly(st.integers(-5, 2**40)),
                                "usage": mostly(mini_usage),
                                "choices": st.lists(ODD, max_size=2),
                            },
                        )
                    )
                },
            )
        )
    },
)
trajectory = st.fixed_dictionaries(
    {"messages": mostly(st.lists(mostly(mini_message), max_size=6))},
    optional={
        "info": mostly(
            st.fixed_dictionaries(
                {
                    "config": mostly(
                        st.fixed_dictionaries(
                            {"model": mostly(st.fixed_dictionaries({"model_name": mostly(st.just("m"))}))}
                        )
                    )
                }
            )
        ),
        "instance_id": mostly(st.just("a__b-1")),
        "trajectory_format": st.just("mini-swe-agent-1"),
    },
)


@FUZZ
@given(trajectory)
def test_fuzzed_trajectories_read_the_same_on_both_paths(doc: dict[str, Any]) -> None:
    fast, lenient = _both_mini(json.dumps(doc).encode())
    assert fast == lenient


def test_invalid_utf8_in_a_skipped_trajectory_field_is_still_a_warning() -> None:
    doc = {"messages": [{"role": "user", "content": "task"}], "info": {"submission": "PLACEHOLDER"}}
    raw = json.dumps(doc).encode().replace(b"PLACEHOLDER", b"\xff")
    fast, lenient = _both_mini(raw)
    assert fast == lenient
    assert fast.messages == () and "invalid JSON" in fast.warnings[0].reason
