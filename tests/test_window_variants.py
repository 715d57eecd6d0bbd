"""A Claude model's 1M context, asked for by a request, read from a log that names the plain model.

Claude Code sends a ``[1m]`` model as the plain id with the ``context-1m`` beta header, and the
transcript names the plain model (seen with the real 2.1.332 against the suite's fake server); without
it, Sonnet 4 to 4.6 and Opus 4.6 work within 200K. So a transcript says 1M only by a response whose
prompt is above 200K: from there every reader (``check``, the hooks, a restored monitor) reads the
session with the 1M window, and none reads it at 200% of 200K.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import invoke
from ctxhealth.integrations.claude_code.tail import read_tail
from ctxhealth.integrations.claude_code.tailstate import SessionCounters
from ctxhealth.monitor import Monitor


def _transcript(path: Path, model: str, fills: list[int]) -> Path:
    lines = [
        {
            "type": "user",
            "uuid": "u0",
            "sessionId": "s1",
            "message": {"role": "user", "content": "Refactor the parser module into smaller functions"},
        }
    ]
    parent = "u0"
    for i, fill in enumerate(fills):
        usage = {"input_tokens": 10, "cache_read_input_tokens": fill - 10, "output_tokens": 50}
        message = {
            "id": f"msg_{i}",
            "role": "assistant",
            "model": model,
            "content": [
                {"type": "text", "text": f"Step {i} of the parser refactor: splitting the tokenizer."}
            ],
            "usage": usage,
        }
        lines.append(
            {
                "type": "assistant",
                "uuid": f"a{i}",
                "parentUuid": parent,
                "sessionId": "s1",
                "message": message,
            }
        )
        parent = f"a{i}"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _check(path: Path) -> dict[str, object]:
    result = invoke("check", str(path), "--json")
    return dict(json.loads(result.output.strip().splitlines()[-1]))


@pytest.mark.parametrize("model", ["claude-sonnet-4-6", "claude-sonnet-4-5-20250929", "claude-opus-4-6"])
def test_a_prompt_above_200k_reads_the_session_with_its_1m_window(model: str, tmp_path: Path) -> None:
    path = _transcript(tmp_path / "t.jsonl", model, [60_000, 180_000, 260_000, 420_000])
    doc = _check(path)
    assert (doc["window"], doc["usable_window"]) == (1_000_000, 967_000)
    fill = doc["fill"]
    assert isinstance(fill, dict) and fill["current_pct"] == 42.0
    counters = SessionCounters(str(path))
    read_tail(counters, str(path))
    assert counters.assessment is not None
    hooks = {k: counters.assessment[k] for k in ("zone", "action", "pressure", "fill")}
    assert hooks == {
        "zone": doc["zone"],
        "action": doc["action"],
        "pressure": doc["pressure"],
        "fill": 420_000,
    }
    assert counters.thresholds is not None and counters.thresholds["window"] == 1_000_000
    # a hook process restores the monitor from its snapshot: the window stays the one the prompt proved
    assert counters.monitor is not None
    assert Monitor.restore(counters.monitor).info.window == 1_000_000


def test_without_such_a_prompt_the_session_is_read_within_200k(tmp_path: Path) -> None:
    """Claude Code works (and compacts) within 200K for a plain ``claude-sonnet-4-6``: 160K is near its
    compaction, not 16% of a 1M window."""
    doc = _check(_transcript(tmp_path / "t.jsonl", "claude-sonnet-4-6", [60_000, 160_000]))
    assert (doc["window"], doc["usable_window"]) == (200_000, 167_000)
    assert doc["zone"] in ("orange", "red", "critical")
