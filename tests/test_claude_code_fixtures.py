"""Claude Code 2.1.332 transcripts recorded by the conformance suite (tests/conformance, our fake server):
what ``check`` reads from them is what the server saw (``<name>.truth.json``). Runs without the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import invoke
from ctxhealth.accounting.cost import usage_cost
from ctxhealth.accounting.fill import account_session, session_model_info
from ctxhealth.accounting.registry import ModelRegistry
from ctxhealth.model import Role, ToolCall, Usage
from ctxhealth.sources.claude_code.session import parse

FIXTURES = Path(__file__).parent / "fixtures" / "agents" / "claude-code-2.1.332"
NAMES = sorted(p.stem for p in FIXTURES.glob("*.jsonl"))


def truth(name: str) -> list[dict[str, Any]]:
    requests: list[dict[str, Any]] = json.loads((FIXTURES / f"{name}.truth.json").read_text("utf-8"))[
        "requests"
    ]
    return requests


def fill(request: dict[str, Any]) -> int:
    u = request["usage"]
    return int(u["input_tokens"] + u["cache_creation_input_tokens"] + u["cache_read_input_tokens"])


def check_json(path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    done = invoke(["check", "--json", str(path)])
    assert done.exit_code in (0, 1), done.output
    doc: dict[str, Any] = json.loads(done.stdout)
    return doc


def test_there_are_fixtures() -> None:
    assert {"print", "continue", "compact", "compact-after-hook", "subagent", "failing", "thinking"} <= set(
        NAMES
    )


@pytest.mark.parametrize("name", NAMES)
def test_turns_and_fill_are_the_servers(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    report = check_json(FIXTURES / f"{name}.jsonl", capsys)
    main_requests = [r for r in truth(name) if r["kind"] == "main"]
    assert report["turns"] == len(main_requests)
    assert report["fill"]["peak"] == max(fill(r) for r in main_requests)
    assert report["compactions"].__len__() == sum(r["kind"] == "compact" for r in truth(name))
    # every 2.1 line type (attachment, api-request, cost-state, ...) is read or skipped without a warning
    assert report["warnings"] == []


@pytest.mark.parametrize("name", NAMES)
def test_typed_and_lenient_decoding_agree(name: str) -> None:
    data = (FIXTURES / f"{name}.jsonl").read_bytes()
    typed, lenient = parse(data, "x"), parse(data, "x", typed=False)
    assert typed.messages == lenient.messages
    assert typed.agent_cost_usd == lenient.agent_cost_usd


def test_print_mode_compact_after_a_hook_note_keeps_the_compaction(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The /compact lines hang off the hook's line before the compaction: not an abandoned branch."""
    report = check_json(FIXTURES / "compact-after-hook.jsonl", capsys)
    assert len(report["compactions"]) == 1
    assert report["compactions"][0]["trigger"] == "manual"
    assert report["warnings"] == []


def test_subagent_meta_json_is_not_read_as_a_transcript(capsys: pytest.CaptureFixture[str]) -> None:
    assert list((FIXTURES / "subagent" / "subagents").glob("*.meta.json"))
    report = check_json(FIXTURES / "subagent.jsonl", capsys)
    assert report["sidechains"] == 1
    assert report["warnings"] == []


def test_ctxhealths_own_notes_are_recognised(capsys: pytest.CaptureFixture[str]) -> None:
    """``hook_additional_context`` attachments: what the hooks injected, ctxhealth's notes among them."""
    session = parse((FIXTURES / "interactive.jsonl").read_bytes(), "x")
    events = [(c.event, c.text.split(".")[0]) for c in session.injected_context]
    assert events == [
        ("PostToolUseFailure", "[ctxhealth] Failure spiral: tool calls keep failing"),
        ("SessionStart", "[ctxhealth] Context was compacted"),
    ]
    report = check_json(FIXTURES / "interactive.jsonl", capsys)
    assert report["injected_context"] == {"notes": 2, "ctxhealth": 2}
    assert "injected_context" not in check_json(FIXTURES / "print.jsonl", capsys)


def test_thinking_tokens_are_the_reasoning_tokens() -> None:
    session = parse((FIXTURES / "thinking.jsonl").read_bytes(), "x")
    reasoning = [m.usage.reasoning_tokens for m in session.messages if m.usage is not None]
    assert reasoning == [r["usage"]["thinking_tokens"] for r in truth("thinking") if r["kind"] == "main"]
    assert any(reasoning)


def test_the_cost_gap_is_the_compactions_request(capsys: pytest.CaptureFixture[str]) -> None:
    """A model both price tables know: ours is what the transcript keeps; the gap to Claude Code's own
    total is the price of the compaction's request, which no transcript keeps."""
    prices = ModelRegistry.default().lookup("claude-sonnet-4-5").prices
    assert prices is not None

    def cost(kind: str) -> float:
        requests = [r["usage"] for r in truth("cost") if r["kind"] == kind]
        return sum(
            usage_cost(
                Usage(
                    u["input_tokens"],
                    u["output_tokens"],
                    u["cache_creation_input_tokens"],
                    u["cache_read_input_tokens"],
                ),
                prices,
            )
            for u in requests
        )

    report = check_json(FIXTURES / "cost.jsonl", capsys)
    assert report["cost_usd"] == pytest.approx(cost("main"), abs=1e-6)
    assert report["cost_not_in_transcript_usd"] == pytest.approx(cost("compact"), rel=1e-2)
    assert report["agent_cost_usd"] == round(cost_state("cost")["totalCostUSD"], 6)
    text = invoke(["check", str(FIXTURES / "cost.jsonl")]).stdout
    assert "not in the transcript (compaction, ...)" in text


def cost_state(name: str) -> dict[str, Any]:
    lines = [json.loads(line) for line in (FIXTURES / f"{name}.jsonl").read_text("utf-8").splitlines()]
    states = [line for line in lines if line.get("type") == "cost-state"]
    state: dict[str, Any] = states[-1]
    return state


def test_claude_codes_own_cost_is_reported_beside_ours(capsys: pytest.CaptureFixture[str]) -> None:
    state = cost_state("compact")
    # the truth: Claude Code's total counts every request the server answered, the compaction's too
    (usage,) = state["modelUsage"].values()
    assert usage["outputTokens"] == sum(r["usage"]["output_tokens"] for r in truth("compact"))
    report = check_json(FIXTURES / "compact.jsonl", capsys)
    assert report["agent_cost_usd"] == round(state["totalCostUSD"], 6)
    if report["cost_usd"] is not None:
        gap = report["cost_not_in_transcript_usd"]
        assert gap == pytest.approx(state["totalCostUSD"] - report["cost_usd"], abs=1e-5)
        assert gap > 0  # the compaction's request is in no transcript


def test_fill_right_after_a_compaction_is_what_the_compaction_left() -> None:
    """Cut the transcript just after ``/compact``: the current fill is the next request's, not the old one."""
    text = (FIXTURES / "compact.jsonl").read_text("utf-8").splitlines()
    cut = next(i for i, line in enumerate(text) if '"content":"after the compaction"' in line)
    start = next(i for i, line in enumerate(text) if '"type":"queue-operation"' in line and i >= cut - 3)
    session = parse(("\n".join(text[:start]) + "\n").encode(), "cut.jsonl")
    account = account_session(session)
    main_requests = [r for r in truth("compact") if r["kind"] == "main"]
    after = fill(main_requests[-1])
    assert account.after_compaction is not None
    assert account.current_source.value == "estimated"
    assert account.current == pytest.approx(after, rel=0.05)
    (record,) = account.compactions
    before = fill(main_requests[-2])  # the last prompt before the compaction
    assert account.current < 0.75 * before
    assert record.log_post_tokens is not None and record.dropped_tokens is not None
    assert record.post_tokens == account.current


STREAMS = sorted((FIXTURES / "stream-json").glob("*.jsonl"))


@pytest.mark.parametrize("log", STREAMS, ids=lambda p: p.stem)
def test_a_stream_json_log_is_one_session_with_its_sub_agent_apart(log: Path) -> None:
    """``claude -p --output-format stream-json --verbose`` (2.1.332; a sub-agent running two failing
    calls, the same for a ``[1m]`` model, two failing calls with ``--include-partial-messages``): file
    order is the thread, the sub-agent's lines (``parent_tool_use_id``) its own sidechain, the session
    named by ``session_id``, Claude Code's own total from the ``result`` line and the window it worked
    with (1M for ``[1m]``, the reserve still out of it); no link warnings. Both decoding paths give the
    same session."""
    data = log.read_bytes()
    lines = [json.loads(line) for line in data.splitlines()]
    result = next(d for d in reversed(lines) if d["type"] == "result")
    for typed in (True, False):
        session = parse(data, log.name, typed=typed)
        assert session.session_id == lines[0]["session_id"]
        assert session.warnings == ()
        main_ids = [
            d["message"]["id"] for d in lines if d["type"] == "assistant" and not d["parent_tool_use_id"]
        ]
        assert [m.response_id for m in session.messages if m.role is Role.ASSISTANT] == main_ids
        side_calls = [
            b for s in session.sidechains for m in s.messages for b in m.blocks if isinstance(b, ToolCall)
        ]
        with_subagent = any(d.get("parent_tool_use_id") for d in lines)
        assert (len(session.sidechains), len(side_calls)) == ((1, 2) if with_subagent else (0, 0))
        assert session.agent_cost_usd == result["total_cost_usd"]
        info = session_model_info(session)
        (stated,) = [u["contextWindow"] for u in result["modelUsage"].values()]
        assert info.window == stated and info.usable_window < stated
    # with --include-partial-messages each response's message_delta states its output: the cost of
    # the requests the log keeps is then Claude Code's own total; without, only the first count
    report = account_session(parse(data, log.name), registry=ModelRegistry.default())
    partial = any(d["type"] == "stream_event" for d in lines)
    assert (round(report.cost_usd, 6) == round(result["total_cost_usd"], 6)) is partial
