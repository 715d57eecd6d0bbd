"""The audit on the real Claude Code sessions, against figures computed here from the raw JSON.

The independent computation is a plain loop over every line of each file: assistant lines with
usage, deduplicated by ``message.id`` + ``requestId`` (ccusage's key; the first line seen is
kept, as ccusage keeps it), priced at list prices typed in below (USD per million tokens, the
same figures ccusage takes from LiteLLM for these two models). ccusage keeps the first line's
``output_tokens``, which a streamed response under-reports; ctxhealth keeps the largest, so the
totals are compared on input and cache tokens exactly, and the output difference is accounted.
"""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from ctxhealth.accounting.fill import account_session
from ctxhealth.audit import run_audit
from ctxhealth.audit.cache import BreakCause, audit_cache
from ctxhealth.audit.cache import hit_rate as audit_hit_rate
from ctxhealth.audit.responses import session_responses
from ctxhealth.sources import read_session, read_sessions

# input, output, cache write (5 min), cache read
LIST_PRICES = {
    "claude-opus-4-20250514": (15.0, 75.0, 18.75, 1.5),
    "claude-sonnet-4-20250514": (3.0, 15.0, 3.75, 0.3),
}


def _raw_responses(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """(message.id, requestId) -> {model, time, first usage, largest output} in file order."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for text in path.read_text().splitlines():
        if not text.strip():
            continue
        line = json.loads(text)
        message = line.get("message") or {}
        usage = message.get("usage")
        if line.get("type") != "assistant" or not usage:
            continue
        key = (message["id"], line["requestId"])
        if key not in out:
            out[key] = {"model": message["model"], "time": line["timestamp"], "usage": usage, "output": 0}
        out[key]["output"] = max(out[key]["output"], usage["output_tokens"])
    return out


def _raw_cost(item: dict[str, Any], output: int) -> float:
    inp, out, write, read = LIST_PRICES[item["model"]]
    u = item["usage"]
    return (
        u["input_tokens"] * inp
        + u["cache_creation_input_tokens"] * write
        + u["cache_read_input_tokens"] * read
        + output * out
    ) / 1e6


def _sessions(root: Path) -> list[Path]:
    return sorted(root.rglob("*.jsonl"))


def test_hit_rates_and_cost_per_session_equal_a_plain_loop_over_the_raw_json(claude_code_data: Path) -> None:
    docs = {d["path"]: d for d in run_audit([str(claude_code_data)]) if d["kind"] == "session"}
    assert len(docs) == len(_sessions(claude_code_data)) == 11
    priced = 0
    for path in _sessions(claude_code_data):
        raw = _raw_responses(path)
        doc = docs[str(path)]
        assert doc["cost"]["requests"] == len(raw)
        if not raw:
            assert doc["cache"]["hit_rate"] is None
            continue
        read = sum(r["usage"]["cache_read_input_tokens"] for r in raw.values())
        prompt = sum(
            r["usage"]["input_tokens"]
            + r["usage"]["cache_creation_input_tokens"]
            + r["usage"]["cache_read_input_tokens"]
            for r in raw.values()
        )
        assert doc["cache"]["hit_rate"] == pytest.approx(read / prompt, rel=1e-12)
        expected = sum(_raw_cost(r, r["output"]) for r in raw.values())
        assert doc["cost"]["usd"] == pytest.approx(expected, rel=1e-9)
        by_model: dict[str, float] = defaultdict(float)
        for r in raw.values():
            by_model[r["model"]] += _raw_cost(r, r["output"])
        assert doc["cost"]["by_model"] == pytest.approx(dict(by_model), rel=1e-9)
        # the same figure `ctxhealth check` prints: one cost, priced in one place
        assert doc["cost"]["usd"] == pytest.approx(account_session(read_session(path)).cost_usd, rel=1e-12)
        priced += 1
    assert priced == 9


def test_totals_agree_with_the_ccusage_method_on_input_and_cache_tokens(claude_code_data: Path) -> None:
    totals = list(run_audit([str(claude_code_data)]))[-1]
    raw: dict[tuple[str, str], dict[str, Any]] = {}
    for path in _sessions(claude_code_data):
        for key, item in _raw_responses(path).items():
            raw.setdefault(key, item)  # across files too, the first one seen counts
    first_line = sum(_raw_cost(r, r["usage"]["output_tokens"]) for r in raw.values())
    largest = sum(_raw_cost(r, r["output"]) for r in raw.values())
    under_reported = sum(
        (r["output"] - r["usage"]["output_tokens"]) * LIST_PRICES[r["model"]][1] / 1e6 for r in raw.values()
    )
    assert totals["cost"]["requests"] == len(raw) == 572
    # 18 breaks: the 8 of 0a725fb5 (checked by hand below) and 10 in f67ab274; the 3 compactions
    # are not among the avoidable ones.
    assert totals["cache"]["breaks_by_cause"] == {
        "compaction": 3,
        "idle": 5,
        "model-switch": 2,
        "prefix-change": 8,
    }
    assert totals["cache"]["breaks"] == 15
    assert totals["cost"]["usd"] == pytest.approx(largest, rel=1e-9)
    # ccusage's figure (first line's output) + the output its streamed first lines under-report
    assert totals["cost"]["usd"] == pytest.approx(first_line + under_reported, rel=1e-9)
    assert under_reported > 0
    by_day: dict[str, float] = defaultdict(float)
    for r in raw.values():
        by_day[datetime.fromisoformat(r["time"].replace("Z", "+00:00")).date().isoformat()] += _raw_cost(
            r, r["output"]
        )
    assert totals["cost"]["by_day"] == pytest.approx(dict(by_day), rel=1e-9)


def test_the_cache_breaks_of_one_real_session_checked_by_hand(claude_code_data: Path) -> None:
    """0a725fb5: read line by line; each break's previous response, gap and model were checked in
    the raw file (gaps between the two responses' timestamps; compaction summary at line 451)."""
    path = next(claude_code_data.rglob("0a725fb5-*.jsonl"))
    session = read_session(path)
    report = audit_cache(session, session_responses(session))
    got = [
        (b.response.line, b.cause, b.previous.usage.cache_read_tokens, b.response.usage.cache_read_tokens)
        for b in report.breaks
    ]
    assert got == [
        (67, BreakCause.IDLE, 37_992, 0),  # 5m41s after the previous response
        (120, BreakCause.PREFIX_CHANGE, 55_853, 10_491),  # 1m42s, a new user prompt; 10,491 still cached
        (132, BreakCause.IDLE, 57_443, 0),  # 17m15s
        (203, BreakCause.IDLE, 86_123, 0),  # 17m56s
        (210, BreakCause.MODEL_SWITCH, 86_544, 0),  # opus-4 -> sonnet-4, 9 s later
        (264, BreakCause.IDLE, 108_311, 0),  # 5m22s
        (337, BreakCause.IDLE, 121_583, 0),  # 7m35s
        (452, BreakCause.COMPACTION, 153_814, 14_031),  # the compaction summary at line 451
    ]
    idle = report.breaks[0]
    assert idle.detail == "idle 5m41s (cache TTL 5m00s)"
    # The response at line 64 read 37,992 and wrote 455; line 67 wrote 38,605 and read nothing:
    # the 38,447 it could have read were paid at Opus 4's write price instead of its read price.
    assert idle.tokens == 37_992 + 455
    assert idle.usd == pytest.approx(idle.tokens * (18.75 - 1.5) / 1e6)
    assert report.usd_without_breaks == pytest.approx(
        sum(r.usd or 0 for r in session_responses(session)) - report.usd_breaks
    )


def test_mini_swe_agent_cost_equals_the_cost_openrouter_reported_and_hit_rates_the_raw_ones(
    mini_swe_data: Path,
) -> None:
    """OpenRouter wrote its own price of every call (``usage.cost``); ours comes from the registry."""
    compared = 0
    for session in read_sessions([mini_swe_data / "trajs"]):
        raw = json.loads(Path(session.path).read_text())
        usages = [
            m["extra"]["response"]["usage"]
            for m in raw["messages"]
            if (m.get("extra") or {}).get("response", {}).get("usage")
        ]
        responses = session_responses(session)
        assert len(responses) == len(usages)
        prompt = sum(u["prompt_tokens"] for u in usages)
        cached = sum((u.get("prompt_tokens_details") or {}).get("cached_tokens") or 0 for u in usages)
        assert audit_hit_rate(responses) == pytest.approx(cached / prompt, rel=1e-12)
        if all("cost" in u for u in usages):
            reported = sum(u["cost"] for u in usages)
            assert sum(r.usd or 0 for r in responses) == pytest.approx(reported, rel=1e-9, abs=1e-12)
            compared += 1
    assert compared == 242  # the other 7 have calls without a reported cost
