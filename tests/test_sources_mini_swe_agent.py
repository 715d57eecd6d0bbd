"""mini-swe-agent reader: real trajectories checked against a plain json + regex computation."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from builders import reader_counts
from ctxhealth.model import Format, Role, Session, ToolResult
from ctxhealth.sources import read_session, read_sessions
from ctxhealth.sources.mini_swe_agent import parse


def _plain(path: Path) -> dict[str, Any]:
    doc = json.loads(path.read_text())
    messages = doc["messages"]
    calls = errors = 0
    fills = []
    for i, m in enumerate(messages):
        if m["role"] != "assistant":
            continue
        fills.append(m["extra"]["response"]["usage"]["prompt_tokens"])
        if len(re.findall(r"```bash\s*\n(.*?)\n```", m["content"], re.DOTALL)) != 1:
            continue
        calls += 1
        after = messages[i + 1]["content"] if i + 1 < len(messages) else ""
        code = re.match(r"<returncode>(\d+)</returncode>", after)
        errors += bool(code and code.group(1) != "0") or ("timed out" in after[:300] and not code)
    return {
        "turns": sum(m["role"] == "assistant" for m in messages),
        "tool_calls": calls,
        "tool_errors": errors,
        "first_fill": fills[0],
        "last_fill": fills[-1],
        "id": doc["instance_id"],
    }


def _numbers(session: Session) -> dict[str, Any]:
    fills = [m.usage.context_tokens for m in session.messages if m.usage is not None]
    return {
        **reader_counts(session),
        "first_fill": fills[0],
        "last_fill": fills[-1],
        "id": session.session_id,
    }


def test_sample_of_real_trajectories_matches_plain_computation(mini_swe_data: Path) -> None:
    files = sorted(mini_swe_data.rglob("*.traj.json"))
    sample = files[::8]
    assert len(sample) >= 30
    for file in sample:
        session = read_session(file)
        assert session.format is Format.MINI_SWE_AGENT
        assert session.warnings == ()
        assert _numbers(session) == _plain(file), file.name


def test_totals_over_all_trajectories(mini_swe_data: Path) -> None:
    sessions = list(read_sessions([mini_swe_data]))
    assert len(sessions) == 249
    files = sorted(mini_swe_data.rglob("*.traj.json"))
    plain = [_plain(f) for f in files]
    for key in ("turns", "tool_calls", "tool_errors"):
        assert sum(_numbers(s)[key] for s in sessions) == sum(p[key] for p in plain), key
    assert all(s.model and s.model.endswith("google/gemini-3-pro-preview") for s in sessions)


def test_first_messages_are_system_and_instruction(mini_swe_data: Path) -> None:
    file = sorted(mini_swe_data.rglob("*.traj.json"))[0]
    session = read_session(file)
    assert session.messages[0].role is Role.SYSTEM
    assert "bash" in session.system_prompt
    assert session.instruction.startswith("<pr_description>")


def _traj(messages: list[dict[str, Any]]) -> bytes:
    doc = {"info": {"exit_status": "Submitted"}, "messages": messages, "instance_id": "x__y-1"}
    return json.dumps(doc).encode()


def _asst(text: str, prompt: int = 100, cached: int | None = None) -> dict[str, Any]:
    usage: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": 7}
    if cached is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    return {"role": "assistant", "content": text, "extra": {"response": {"usage": usage, "model": "m"}}}


def test_actions_observations_and_usage() -> None:
    data = _traj(
        [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "task"},
            _asst("THOUGHT\n\n```bash\nls -la\n```", cached=60),
            {"role": "user", "content": "<returncode>2</returncode>\n<output>\nno such dir\n</output>"},
            _asst("two\n```bash\na\n```\n```bash\nb\n```"),
            {"role": "user", "content": "Please always provide EXACTLY ONE action in triple backticks"},
            _asst("```bash\nsleep 999\n```"),
            {
                "role": "user",
                "content": "The last command <command>sleep 999</command> timed out and has been killed.",
            },
            _asst("```bash\nfind .\n```"),
            {
                "role": "user",
                "content": "<returncode>0</returncode><output_head>a</output_head>"
                "<elided_chars>9</elided_chars>",
            },
        ]
    )
    session = parse(data, "t.traj.json")
    calls = [c for m in session.messages for c in m.tool_calls]
    assert [c.input for c in calls] == [
        {"command": "ls -la"},
        {"command": "sleep 999"},
        {"command": "find ."},
    ]
    results = [r for m in session.messages for r in m.tool_results]
    assert [(r.exit_code, r.is_error) for r in results] == [(2, True), (None, True), (0, False)]
    assert all(
        isinstance(r, ToolResult) and r.tool_call_id == c.id for r, c in zip(results, calls, strict=True)
    )
    usage = session.messages[2].usage
    assert usage is not None and (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (
        40,
        60,
        7,
    )
    assert usage.context_tokens == 100
    assert session.session_id == "x__y-1" and session.model == "m"


def test_broken_elements_become_warnings() -> None:
    data = _traj(
        [{"role": "system", "content": "s"}, 5, {"role": "wizard"}, {"role": "user", "content": {"x": 1}}]
    )
    session = parse(data, "t")
    assert [w.line for w in session.warnings] == [2, 3, 4]
    assert len(session.messages) == 2
