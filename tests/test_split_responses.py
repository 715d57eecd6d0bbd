"""A response read in parts is one response: the reading of a log read in pieces is its whole reading.

Claude Code writes a line per content block of a response, all with the response's ``message.id``. A hook
or the status line that reads the transcript while the lines of one response are being written stops
between them, and its next read starts with the rest of that response: the tail reader gives the two
parts as two messages with the same ``response_id``. The Monitor takes the later part as more of the
same turn (:meth:`ctxhealth.monitor.Monitor.update`), so the hooks, the status line and ``watch`` end
with the turn count, the message index and the assessment a whole read gives.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxhealth.integrations.claude_code.tail import read_tail
from ctxhealth.integrations.claude_code.tailstate import SessionCounters
from ctxhealth.integrations.claude_code.watch import SessionWatch
from ctxhealth.model import Message, Role, TextBlock, ToolCall, ToolResult, Usage
from ctxhealth.monitor import Monitor

RECORDED = Path(__file__).parent / "fixtures" / "agents" / "claude-code-2.1.332"
TRANSCRIPTS = sorted(RECORDED.glob("*.jsonl"))

REQUEST = "Fix the failing test in tests/test_parse.py and run the test suite again"


def _usage(output: int, reasoning: int = 0) -> Usage:
    return Usage(input_tokens=10, output_tokens=output, cache_read_tokens=20_000, reasoning_tokens=reasoning)


def _response(*blocks: TextBlock | ToolCall, usage: Usage, rid: str = "msg_1") -> Message:
    model = "claude-sonnet-4-5-20250929"
    return Message(Role.ASSISTANT, list(blocks), response_id=rid, model=model, usage=usage)


def _result(call_id: str, text: str = "2 failed, 40 passed") -> Message:
    return Message(Role.USER, [ToolResult(call_id, text, is_error=True)])


def _reading(monitor: Monitor) -> tuple[object, ...]:
    a = monitor.assess()
    return (a.to_dict(), a.features, monitor.output_tokens, monitor.reasoning_tokens, monitor.fill)


TEXT = TextBlock("The test fails on nested brackets; I will run it again to see the trace. " * 4)
CALL_A = ToolCall("toolu_a", "Bash", {"command": "pytest tests/test_parse.py -x"})
CALL_B = ToolCall("toolu_b", "Read", {"file_path": "src/parse.py"})


@pytest.mark.parametrize("restore_between", [False, True], ids=["one-monitor", "snapshot-between"])
@pytest.mark.parametrize("results_between", [False, True], ids=["calls-together", "a-result-between"])
def test_the_parts_of_a_response_read_as_the_response(restore_between: bool, results_between: bool) -> None:
    """A reply's text, then two calls, as Claude Code writes them (a line each, the output reported
    growing): given merged (a whole read) or as the parts a tail read can give apart, also with the
    first call's result written before the second call (the readers merge across a response's own
    results), the monitor ends with the same reading; also when a hook process saved the monitor
    between the parts and the next one restored it."""
    request = Message(Role.USER, [TextBlock(REQUEST)])
    merged = Monitor()
    for message in (
        request,
        _response(TEXT, CALL_A, CALL_B, usage=_usage(90, 30)),
        _result("toolu_a"),
        _result("toolu_b", "def parse(text): ..."),
    ):
        merged.update(message)
    parts = [request, _response(TEXT, usage=_usage(12, 30)), _response(CALL_A, usage=_usage(40, 30))]
    if results_between:
        parts += [_result("toolu_a"), _response(CALL_B, usage=_usage(90, 30))]
    else:
        parts += [_response(CALL_B, usage=_usage(90, 30)), _result("toolu_a")]
    parts.append(_result("toolu_b", "def parse(text): ..."))
    split = Monitor()
    for message in parts:
        if restore_between:
            split = Monitor.restore(split.snapshot())
        split.update(message)
    assert split.turn == merged.turn == 1
    assert split.index == merged.index == 3
    assert _reading(split) == _reading(merged)


def test_a_new_response_or_a_request_closes_the_open_one() -> None:
    """The same id after a person's message is not more of the response (the readers do not merge it
    either): the turn counts; so does a new id right after the response."""
    monitor = Monitor()
    monitor.update(Message(Role.USER, [TextBlock(REQUEST)]))
    monitor.update(_response(TEXT, usage=_usage(10)))
    monitor.update(_response(CALL_A, usage=_usage(10), rid="msg_2"))
    assert monitor.turn == 2
    monitor.update(Message(Role.USER, [TextBlock("and then commit it")]))
    monitor.update(_response(TEXT, usage=_usage(10), rid="msg_2"))
    assert monitor.turn == 3 and monitor.output_tokens == 30


def _cuts_inside_responses(lines: list[bytes]) -> list[int]:
    """The line counts after which a read stops inside a response: the next line is more of it."""
    import orjson

    ids: list[str | None] = []
    for line in lines:
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            ids.append(None)
            continue
        message = obj.get("message") if isinstance(obj, dict) else None
        rid = message.get("id") if obj.get("type") == "assistant" and isinstance(message, dict) else None
        ids.append(rid if isinstance(rid, str) else None)
    return [cut for cut in range(1, len(lines)) if ids[cut] is not None and ids[cut] in ids[:cut]]


def _grow(path: Path, lines: list[bytes], cut: int) -> None:
    path.write_bytes(b"".join(lines[:cut]))


def _reads_in_two_pieces_as_one(transcript: Path, tmp_path: Path, most: int | None = None) -> int:
    """Read ``transcript`` in two pieces at each line where a response goes on (at most ``most`` of
    them, spread over the file), by the hooks' tail reader and by ``watch``: each ends with one read's
    counters (turns, output, cost, the monitor's assessment) and assessment. Returns the cuts tried."""
    lines = transcript.read_bytes().splitlines(keepends=True)
    whole = SessionCounters(str(transcript))
    read_tail(whole, str(transcript))
    one_watch = SessionWatch(transcript)
    one_watch.poll()
    cuts = _cuts_inside_responses(lines)
    if one_watch.assessment is None:  # no message (a file of summaries only)
        assert not cuts
        return 0
    if most is not None and len(cuts) > most:
        cuts = [cuts[round(i * (len(cuts) - 1) / (most - 1))] for i in range(most)]
    path = tmp_path / "t.jsonl"
    for cut in cuts:
        _grow(path, lines, cut)
        counters = SessionCounters(str(path))
        watch = SessionWatch(path)
        read_tail(counters, str(path))
        watch.poll()
        _grow(path, lines, len(lines))
        read_tail(counters, str(path))
        watch.poll()
        assert counters.assessment == whole.assessment, f"{transcript.name}: cut after line {cut}"
        assert (counters.turns, counters.output_tokens) == (whole.turns, whole.output_tokens)
        assert counters.cost_usd == pytest.approx(whole.cost_usd, rel=1e-12)  # (sums in another order)
        assert watch.assessment is not None
        assert watch.assessment.to_dict() == one_watch.assessment.to_dict(), f"watch, cut after line {cut}"
    return len(cuts)


@pytest.mark.parametrize("transcript", TRANSCRIPTS, ids=[t.stem for t in TRANSCRIPTS])
def test_a_hook_reading_between_the_lines_of_a_response_ends_as_one_read(
    transcript: Path, tmp_path: Path
) -> None:
    """Every transcript the real Claude Code 2.1 wrote against the suite's fake server."""
    _reads_in_two_pieces_as_one(transcript, tmp_path)


def test_the_same_on_real_sessions(claude_code_data: Path, tmp_path: Path) -> None:
    """Real sessions, where most responses are several lines (text, then each call): eight cuts inside
    responses per session, spread over it."""
    tried = sum(
        _reads_in_two_pieces_as_one(t, tmp_path, most=8) for t in sorted(claude_code_data.glob("*/*.jsonl"))
    )
    assert tried >= 20
