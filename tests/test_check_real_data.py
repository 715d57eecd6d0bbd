"""`ctxhealth check --json` on every real transcript, against figures computed here with plain json.

The expected numbers are derived directly from the raw files (no ctxhealth code): distinct
response ids, usage sums, compaction summary lines, tool_use / tool_result blocks, and
costs priced from a price table written out in this file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from conftest import invoke
from ctxhealth.failures import text_looks_failed

# USD per million tokens: (input, output, cache write, cache read).
PRICES = {
    "claude-opus-4-20250514": (15.0, 75.0, 18.75, 1.50),
    "claude-sonnet-4-20250514": (3.0, 15.0, 3.75, 0.30),
    "google/gemini-3-pro-preview": (2.0, 12.0, 2.0, 0.20),
    "gemini-3-pro-preview": (2.0, 12.0, 2.0, 0.20),
}


def run_check_json(*paths: Path) -> tuple[int, list[dict[str, Any]]]:
    """Reports of ``check --json``; the exit code must agree with the reports' verdicts."""
    result = invoke(["check", "--json", *map(str, paths)])
    lines = [json.loads(line) for line in result.output.splitlines() if line.startswith("{")]
    reports = [r for r in lines if "skipped" not in r]  # skipped files (LICENSE, labels) are listed
    assert reports, result.output
    assert result.exit_code == (0 if all(r["healthy"] for r in reports) else 1), result.output
    return result.exit_code, reports


def _result_text(content: Any) -> str:
    """A raw ``tool_result`` content as text: a string, or its text blocks joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"
        )
    return ""


def claude_code_expected(path: Path) -> dict[str, Any]:
    """Figures of one Claude Code file from its raw lines."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    fills: list[int] = []  # main thread, one per distinct response, in file order
    seen: set[str] = set()
    usage_by_id: dict[str, tuple[str, dict[str, int]]] = {}
    tool_ids: set[str] = set()
    error_ids: set[str] = set()
    compactions: list[tuple[int, int]] = []  # (fills seen before, -) -> resolved below
    for row in rows:
        message = row.get("message") if isinstance(row.get("message"), dict) else None
        if row.get("isCompactSummary"):
            compactions.append((len(fills), 0))
            continue
        if message is None:
            continue
        content = message.get("content")
        if isinstance(content, list):
            for block in content:
                if block.get("type") == "tool_use":
                    tool_ids.add(block["id"])
                if block.get("type") == "tool_result" and (
                    block.get("is_error") or text_looks_failed(_result_text(block.get("content")))
                ):
                    # the log's flag, else the one named heuristic (ctxhealth.failures): an output that
                    # reads like an error (`gcc-12: command not found` in a pipeline that exited 0)
                    error_ids.add(block["tool_use_id"])
        if row.get("type") != "assistant" or message.get("model") == "<synthetic>":
            continue
        usage = message["usage"]
        rid = message["id"]
        old = usage_by_id.get(rid)
        if old is None or usage["output_tokens"] > old[1]["output_tokens"]:
            usage_by_id[rid] = (message["model"], usage)
        if row.get("isSidechain") or rid in seen:
            continue
        seen.add(rid)
        fills.append(
            usage["input_tokens"] + usage["cache_creation_input_tokens"] + usage["cache_read_input_tokens"]
        )
    cost = 0.0
    for model, u in usage_by_id.values():
        p_in, p_out, p_write, p_read = PRICES[model]
        cost += (
            u["input_tokens"] * p_in
            + u["output_tokens"] * p_out
            + u["cache_creation_input_tokens"] * p_write
            + u["cache_read_input_tokens"] * p_read
        ) / 1e6
    return {
        "turns": len(fills),
        "peak": max(fills, default=0),
        "current": fills[-1] if fills else 0,
        "compactions": [(fills[n - 1], fills[n]) for n, _ in compactions],
        "tool_calls": len(tool_ids),
        "tool_errors": len(error_ids),
        "cost": cost if usage_by_id else None,
    }


def test_f67ab274_has_the_two_documented_compactions(claude_code_data: Path) -> None:
    (path,) = claude_code_data.glob("*/f67ab274-*.jsonl")
    _, (report,) = run_check_json(path)
    pairs = [(c["pre_tokens"], c["post_tokens"]) for c in report["compactions"]]
    assert pairs == [(150_286, 102_368), (155_283, 43_421)]
    assert [c["index"] for c in report["compactions"]] == [0, 1]


def test_every_claude_code_session_matches_raw_figures(claude_code_data: Path) -> None:
    files = sorted(claude_code_data.glob("*/*.jsonl"))
    assert len(files) == 11
    _, reports = run_check_json(*files)
    by_path = {Path(r["path"]).name: r for r in reports}
    assert set(by_path) == {f.name for f in files}
    for path in files:
        report, expected = by_path[path.name], claude_code_expected(path)
        assert report["format"] == "claude-code"
        assert report["session_id"] in (path.stem, None)
        assert report["turns"] == expected["turns"], path.name
        assert report["fill"]["peak"] == expected["peak"], path.name
        assert report["fill"]["current"] == expected["current"], path.name
        assert report["fill"]["source"] == ("reported" if expected["turns"] else "estimated")
        pairs = [(c["pre_tokens"], c["post_tokens"]) for c in report["compactions"]]
        assert pairs == expected["compactions"], path.name
        assert report["tool_calls"] == expected["tool_calls"], path.name
        assert report["tool_errors"] == expected["tool_errors"], path.name
        if expected["cost"] is None:
            assert report["cost_usd"] is None
        else:
            assert report["cost_usd"] == pytest.approx(expected["cost"], abs=1e-5), path.name
        assert report["window"] == 200_000 or report["turns"] == 0
        if expected["turns"]:
            assert report["warnings"] == [], path.name


_RETURNCODE = re.compile(r"^\s*<returncode>\s*(-?\d+)\s*</returncode>")


def mini_swe_expected(path: Path) -> dict[str, Any]:
    doc = json.loads(path.read_text())
    fills: list[int] = []
    cost = 0.0
    provider_cost = 0.0
    calls = errors = 0
    messages = doc["messages"]
    for i, m in enumerate(messages):
        if m["role"] != "assistant":
            continue
        response = m["extra"]["response"]
        usage = response["usage"]
        fills.append(usage["prompt_tokens"])
        cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
        p_in, p_out, _, p_read = PRICES[response["model"]]
        cost += (
            (usage["prompt_tokens"] - cached) * p_in + cached * p_read + usage["completion_tokens"] * p_out
        ) / 1e6
        provider_cost += usage.get("cost") or 0.0
        if len(re.findall(r"```bash\s*\n(.*?)\n```", m["content"], re.DOTALL)) == 1:
            calls += 1
            following = messages[i + 1]["content"] if i + 1 < len(messages) else ""
            match = _RETURNCODE.match(following)
            if (match and int(match.group(1)) != 0) or "timed out" in following[:200]:
                errors += 1
    return {
        "turns": len(fills),
        "peak": max(fills),
        "current": fills[-1],
        "cost": cost,
        "provider_cost": provider_cost,
        "tool_calls": calls,
        "tool_errors": errors,
    }


def test_every_mini_swe_agent_trajectory_matches_raw_figures(mini_swe_data: Path) -> None:
    files = sorted(mini_swe_data.glob("trajs/*/*.traj.json"))
    assert len(files) == 249
    _, reports = run_check_json(mini_swe_data)
    by_path = {Path(r["path"]).name: r for r in reports}
    assert len(by_path) == 249
    provider_matches = 0
    for path in files:
        report, expected = by_path[path.name], mini_swe_expected(path)
        assert report["format"] == "mini-swe-agent"
        assert report["model"] in ("google/gemini-3-pro-preview", "@google/gemini-3-pro-preview")
        assert report["window"] == 1_048_576
        assert report["turns"] == expected["turns"], path.name
        assert report["fill"] == {
            "current": expected["current"],
            "peak": expected["peak"],
            "source": "reported",
            "current_pct": round(100 * expected["current"] / 1_048_576, 1),
            "peak_pct": round(100 * expected["peak"] / 1_048_576, 1),
        }
        assert report["compactions"] == []
        assert report["tool_calls"] == expected["tool_calls"], path.name
        assert report["tool_errors"] == expected["tool_errors"], path.name
        assert report["cost_usd"] == pytest.approx(expected["cost"], abs=1e-5), path.name
        if expected["provider_cost"] and report["cost_usd"] == pytest.approx(
            expected["provider_cost"], abs=1e-5
        ):
            provider_matches += 1
    # Where the router reported its own charge per response, our list-price cost agrees with it.
    assert provider_matches >= 240


def test_human_output_holds_the_key_figures(claude_code_data: Path) -> None:
    (path,) = claude_code_data.glob("*/f67ab274-*.jsonl")
    expected = claude_code_expected(path)
    result = invoke(["check", str(path)])
    assert result.exit_code in (0, 1)
    out = result.output
    assert "claude-code" in out
    assert "claude-sonnet-4-20250514" in out
    assert f"turns        {expected['turns']}" in out
    assert f"peak {expected['peak']:,}" in out
    assert "150,286 → 102,368" in out
    assert "155,283 → 43,421" in out
    assert f"{expected['tool_calls']} calls, {expected['tool_errors']} errors" in out
    assert f"${expected['cost']:,.2f}" in out
    verdict = "healthy" if result.exit_code == 0 else "UNHEALTHY"
    assert f"verdict      {verdict}" in out
