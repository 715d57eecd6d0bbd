"""The retention audit: matching rules on hand-made text, and the real compactions checked against
an independent count made here straight from the raw log."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import toktok

from conftest import invoke
from ctxhealth.model import CompactionSummary, Format, Message, Role, Session, TextBlock, ToolCall, ToolResult
from ctxhealth.recovery.retention import (
    Fact,
    FactKind,
    audit,
    fact_survives,
    identifier_survives,
    normalise,
    sentence_survives,
)

F67 = "-home-kenth56-vsla/f67ab274-e83b-41ac-ac85-77488d6b5c28.jsonl"
A0A = "-home-kenth56-vsla/0a725fb5-6378-432a-9e84-9f3f49d4043d.jsonl"
NOISE = ("<command-", "<local-command", "caveat: the messages below", "[request interrupted")


def _n(text: str) -> tuple[str, set[str]]:
    norm = normalise(text)
    return norm, set(norm.split())


def test_sentence_rule_substring_and_coverage() -> None:
    norm, words = _n("The user said: “Never push to main!” and then left.")
    assert sentence_survives("never push to MAIN", norm, words)
    norm, words = _n("Constraint recorded: tests required before merging any branch.")
    assert sentence_survives("Run the tests before merging a branch", norm, words)  # 4 of 5 content words
    assert not sentence_survives("Always run the linters before deploying anything", norm, words)
    assert not sentence_survives("no tests", *_n("tests"))  # too few content words and not a substring


def test_identifier_rule_paths_and_versions() -> None:
    norm = normalise("Edited /repo/src/cli.py and bumped to 0.43 on branch feature/x.")
    assert identifier_survives("/elsewhere/src/cli.py", norm)  # file name match
    assert identifier_survives("v0.43", norm)
    assert identifier_survives("feature/x", norm)
    assert not identifier_survives("cli.pyc", norm)
    assert not identifier_survives("v0.4", norm)  # "0.43" is not "0.4"


def test_audit_counts_on_a_constructed_session() -> None:
    s = Session(
        path="s",
        format=Format.ANTHROPIC_MESSAGES,
        messages=(
            Message(Role.USER, (TextBlock("Port the parser to Rust. Never use unsafe code."),)),
            Message(
                Role.ASSISTANT, (ToolCall("a", "Write", {"file_path": "/p/src/lib.rs", "content": "x"}),)
            ),
            Message(Role.USER, (ToolResult("a", "ok"),)),
            Message(Role.ASSISTANT, (ToolCall("b", "Bash", {"command": "cargo build"}),)),
            Message(Role.USER, (ToolResult("b", "error[E0425]: cannot find value `x`", is_error=True),)),
        ),
    )
    summary = CompactionSummary("We are porting the parser to Rust; wrote lib.rs.")
    report = audit(s, summary=summary)
    kinds = {f.kind: f.text for f in report.facts}
    assert kinds[FactKind.CONSTRAINT] == "Never use unsafe code."
    assert kinds[FactKind.FILE] == "/p/src/lib.rs"
    assert kinds[FactKind.ERROR] == "error[E0425]: cannot find value `x`"
    by_name = {t.name: t for t in report.targets}
    agent, ours = by_name["agent-summary"], by_name["checkpoint"]
    assert agent.count(report.facts, FactKind.FILE) == 1
    assert agent.count(report.facts, FactKind.CONSTRAINT) == 0
    assert not agent.all_kept(report.facts, FactKind.CONSTRAINT)
    assert sum(ours.kept) == len(report.facts)
    assert agent.tokens == toktok.batch_count([summary.text], "o200k_base")[0]


def test_fact_survives_dispatches_by_kind() -> None:
    norm, words = _n("see notes")
    assert fact_survives(Fact(FactKind.FILE, "/a/notes"), norm, words)
    assert not fact_survives(Fact(FactKind.DECISION, "/a/notes"), norm, words)


# --- real compactions ----------------------------------------------------------------------


def _raw_before(path: Path, k: int) -> tuple[list[dict[str, Any]], str]:
    """Main-thread lines before the k-th compaction, and that compaction's text (read directly)."""
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    seen = 0
    for i, d in enumerate(lines):
        if d.get("isCompactSummary"):
            seen += 1
            if seen == k:
                content = d["message"]["content"]
                text = content if isinstance(content, str) else "".join(b.get("text", "") for b in content)
                return [x for x in lines[:i] if not x.get("isSidechain")], text
    raise AssertionError("compaction not found")


def _user_requests(lines: list[dict[str, Any]]) -> list[str]:
    out = []
    for d in lines:
        if d.get("type") != "user" or d.get("isMeta") or d.get("isCompactSummary"):
            continue
        content = d["message"]["content"]
        if isinstance(content, list):
            if any(b.get("type") == "tool_result" for b in content):
                continue
            content = "\n".join(b.get("text", "") for b in content if b.get("type") == "text")
        text = content.strip()
        if text and not text.lower().startswith(NOISE):
            out.append(text)
    return out


def _edit_paths(lines: list[dict[str, Any]]) -> set[str]:
    paths = set()
    for d in lines:
        if d.get("type") != "assistant":
            continue
        for b in d["message"].get("content", []):
            if (
                isinstance(b, dict)
                and b.get("type") == "tool_use"
                and b.get("name") in {"Edit", "Write", "MultiEdit"}
            ):
                paths.add(b["input"]["file_path"])
    return paths


def _mentioned(path: str, text: str) -> bool:
    lowered = text.lower()
    for form in (path, path.rsplit("/", 1)[-1]):
        if re.search(r"(?<![a-z0-9])" + re.escape(form.lower()) + r"(?![a-z0-9])", lowered):
            return True
    return False


@pytest.mark.parametrize(("name", "k"), [(F67, 1), (F67, 2), (A0A, 1)])
def test_retention_on_real_compactions_matches_an_independent_count(
    claude_code_data: Path, name: str, k: int
) -> None:
    path = claude_code_data / name
    result = invoke(["retention", str(path), "--before-compaction", str(k), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["schema_version"] == 1
    (report,) = doc["audits"]
    lines, summary = _raw_before(path, k)

    # user requests: one instruction fact each (distinct first sentences)
    assert report["totals"]["instruction"] == len(_user_requests(lines))
    # files edited with the edit tools are all file facts; survival in the summary agrees
    files = {f["text"]: f for f in report["facts"] if f["kind"] == "file"}
    edited = _edit_paths(lines)
    assert edited and edited <= set(files)
    for p in edited:
        assert ("agent-summary" in files[p]["kept_in"]) == _mentioned(p, summary), p
    # every per-target count is the number of facts that name it
    for target in report["targets"]:
        for kind, n in target["kept"].items():
            facts = report["facts"] if kind == "all" else [f for f in report["facts"] if f["kind"] == kind]
            assert n == sum(target["name"] in f["kept_in"] for f in facts)
    sizes = {t["name"]: t["tokens"] for t in report["targets"]}
    assert sizes["agent-summary"] == toktok.batch_count([summary], "o200k_base")[0]
    # the goal: our checkpoint keeps every user constraint in fewer tokens than the agent's summary
    checkpoint = next(t for t in report["targets"] if t["name"] == "checkpoint")
    assert checkpoint["all_constraints_kept"]
    assert checkpoint["tokens"] <= 500 < sizes["agent-summary"]


def test_retention_text_table(claude_code_data: Path) -> None:
    result = invoke(["retention", str(claude_code_data / A0A)])
    assert result.exit_code == 0, result.output
    assert "before compaction 1" in result.output
    header = next(line for line in result.output.splitlines() if line.startswith("fact type"))
    assert header.split() == [
        "fact",
        "type",
        "total",
        "agent-summary",
        "checkpoint",
        "restart",
        "truncate",
        "clear",
        "reanchor",
    ]
