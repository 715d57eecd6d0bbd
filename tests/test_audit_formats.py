"""The audit on other formats than Claude Code: any session whose responses carry usage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxhealth.audit import run_audit
from ctxhealth.audit.cache import BreakCause, audit_cache
from ctxhealth.audit.responses import session_responses
from ctxhealth.model import Format, Message, Role, Session, TextBlock, ToolCall, ToolResult, Usage

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def test_codex_hit_rate_equals_the_rollouts_own_running_totals() -> None:
    path = FIXTURES / "codex-rollout.jsonl"
    totals = [
        json.loads(line)["payload"]["info"]["total_token_usage"]
        for line in path.read_text().splitlines()
        if '"token_count"' in line and '"info":null' not in line
    ][-1]
    session_doc, _ = list(run_audit([str(path)]))
    # Codex input_tokens include the cached ones: the hit rate is cached / input over the session.
    assert session_doc["cache"]["hit_rate"] == pytest.approx(
        totals["cached_input_tokens"] / totals["input_tokens"], rel=1e-12
    )
    causes = [b["cause"] for b in session_doc["cache"]["breaks"]]
    assert causes == ["compaction"]  # the `compacted` item; the cache restarts after it


def _assistant(read: int, prompt: int, *blocks: object, rid: str) -> Message:
    usage = Usage(input_tokens=prompt - read, cache_read_tokens=read, output_tokens=10)
    return Message(Role.ASSISTANT, (TextBlock("ok"), *blocks), response_id=rid, usage=usage)  # type: ignore[arg-type]


def test_a_changed_system_message_and_a_long_lookback_are_named() -> None:
    calls = [ToolCall(f"c{n}", "Read", {"file_path": f"f{n}.py"}) for n in range(11)]
    results = [ToolResult(f"c{n}", "x") for n in range(11)]
    messages = (
        Message(Role.SYSTEM, (TextBlock("You are helpful."),)),
        Message(Role.USER, (TextBlock("go"),)),
        _assistant(0, 5_000, rid="r1"),
        Message(Role.USER, (TextBlock("more"),)),
        _assistant(5_000, 7_000, rid="r2"),
        Message(Role.SYSTEM, (TextBlock("You are helpful. Today is Tuesday."),)),
        Message(Role.USER, (TextBlock("again"),)),
        _assistant(3_000, 8_000, *calls, rid="r3"),  # 12 blocks
        Message(Role.USER, tuple(results)),  # 11 more: 23 blocks since r3's request
        _assistant(1_000, 9_000, rid="r4"),
    )
    session = Session("chat.json", Format.OPENAI_CHAT, messages)
    report = audit_cache(session, session_responses(session))
    assert [(b.response.response_id, b.cause) for b in report.breaks] == [
        ("r3", BreakCause.SYSTEM_CHANGE),
        ("r4", BreakCause.LOOKBACK),
    ]
    assert report.breaks[1].detail == "23 content blocks since the previous request"


def test_unknown_model_prices_are_a_cost_warning(tmp_path: Path) -> None:
    doc = {
        "model": "acme-coder-1",
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": "hello",
                "id": "r1",
                "usage": {"prompt_tokens": 2000, "completion_tokens": 5},
            },
        ],
    }
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(doc))
    session_doc, totals = list(run_audit([str(path)]))
    assert session_doc["cost"]["usd"] is None and session_doc["cost"]["unpriced_requests"] == 1
    assert totals["verdicts"]["cost"]["status"] == "warn"
    assert totals["findings"][-1]["evidence"]["response_id"] == "r1"
