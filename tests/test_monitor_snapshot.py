"""Monitor.snapshot / Monitor.restore: observe(m1..mk), save, restore, observe(mk+1..mn) gives exactly
the assessments of one uninterrupted monitor — in this process, after a JSON round trip, and when the
snapshot was taken by another process (whose string hashing is salted differently)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxhealth.errors import StateError
from ctxhealth.model import Message, Role, Session, TextBlock, ToolCall, ToolResult, Usage
from ctxhealth.monitor import SNAPSHOT_VERSION, Monitor
from ctxhealth.sources import read_sessions

F67 = "f67ab274-e83b-41ac-ac85-77488d6b5c28"


def reading(m: Monitor, message: Message, fill: int | None = None) -> tuple[dict[str, Any], dict[str, float]]:
    a = m.observe(message, fill=fill)
    return a.to_dict(), m.features()


def uninterrupted(messages: list[Message], model: str | None, fills: dict[int, int]) -> list[Any]:
    m = Monitor(model)
    return [reading(m, msg, fills.get(i)) for i, msg in enumerate(messages)]


def resumed(messages: list[Message], model: str | None, fills: dict[int, int], cut: int) -> list[Any]:
    m = Monitor(model)
    out = [reading(m, msg, fills.get(i)) for i, msg in enumerate(messages[:cut])]
    blob = json.dumps(m.snapshot(), allow_nan=False)
    m2 = Monitor.restore(json.loads(blob))
    out += [reading(m2, msg, fills.get(i)) for i, msg in enumerate(messages) if i >= cut]
    return out


# --------------------------------------------------------------------------- constructed sessions

_TEXTS = [
    "Fix the date parser so that ISO offsets round-trip and keep the tests green.",
    "Actually, that was wrong: let me revert the change to the parser.",
    "I will read the parser module first and then run the test suite to see what fails.",
    "Could you please provide the original request again?",
    "The parser now handles offsets. The parser now handles offsets. The tests pass again now.",
    "",
]
_COMMANDS = [
    "cat src/parser.py",
    "sed -i 's/old/new/' src/parser.py",
    "sed -i 's/new/old/' src/parser.py",
    "python -m pytest -q",
    "rm src/old.py",
    "cat src/old.py",
    "ls",
]
_OUTPUTS = [
    ("ok", 0),
    ("Traceback (most recent call last):\nValueError: bad offset 3", 1),
    ("bash: foo: command not found", 127),
    ("error: something broke at line 12", None),
    ("fine", None),
]


@st.composite
def sessions(draw: st.DrawFn) -> list[Message]:
    msgs = [
        Message(Role.SYSTEM, (TextBlock("You are a coding agent."),)),
        Message(Role.USER, (TextBlock(_TEXTS[0]),)),
    ]
    fill = 1_000
    for t in range(draw(st.integers(1, 25))):
        text = draw(st.sampled_from(_TEXTS))
        blocks: list[Any] = [TextBlock(text)] if text else []
        calls = draw(st.lists(st.sampled_from(_COMMANDS), max_size=2))
        ids = [f"c{t}_{j}" for j in range(len(calls))]
        blocks += [ToolCall(i, "bash", {"command": c}) for i, c in zip(ids, calls, strict=True)]
        if draw(st.booleans()):
            blocks.append(
                ToolCall(f"e{t}", "Edit", {"file_path": "a.py", "old_string": "x", "new_string": "y"})
            )
            ids.append(f"e{t}")
        fill += draw(st.integers(0, 30_000))
        usage = Usage(input_tokens=fill, output_tokens=50) if draw(st.booleans()) else None
        msgs.append(Message(Role.ASSISTANT, tuple(blocks) or (TextBlock("ok"),), usage=usage))
        results = []
        for i in ids:
            out, code = draw(st.sampled_from(_OUTPUTS))
            results.append(ToolResult(i, out, is_error=False, exit_code=code))
        if results:
            msgs.append(Message(Role.USER, tuple(results)))
    return msgs


@settings(max_examples=60, deadline=None)
@given(sessions(), st.integers(0, 200), st.sampled_from([None, "claude-sonnet-4", "gpt-4.1"]))
def test_snapshot_restore_matches_an_uninterrupted_monitor(
    msgs: list[Message], cut_seed: int, model: str | None
) -> None:
    cut = 1 + cut_seed % len(msgs)
    assert resumed(msgs, model, {}, cut) == uninterrupted(msgs, model, {})


def test_snapshot_is_versioned_json_and_refuses_other_versions() -> None:
    m = Monitor("claude-sonnet-4")
    m.observe(Message(Role.USER, (TextBlock("hello there, fix the parser"),)))
    data = json.loads(json.dumps(m.snapshot(), allow_nan=False))
    assert data["version"] == SNAPSHOT_VERSION
    assert Monitor.restore(data).index == 0
    with pytest.raises(StateError):
        Monitor.restore({**data, "version": SNAPSHOT_VERSION + 1})
    for damaged in (
        {"drift": {"$x": {"_words": {"$zz": 1}}}},  # an unknown tag
        {"drift": {"$x": {"_words": 3}}},  # the wrong kind of value
        {"turn": "3"},
        {"no_such_attribute": 1},
    ):
        with pytest.raises(StateError):
            Monitor.restore({**data, "state": damaged})


def test_snapshot_size_stays_bounded_as_the_history_grows() -> None:
    msgs: list[Message] = [Message(Role.USER, (TextBlock("Keep the parser tests green."),))]
    sizes = []
    for t in range(1_200):
        text = f"Turn {t}: I check parser case {t} and run the tests for offsets {t % 17} again."
        msgs.append(
            Message(
                Role.ASSISTANT,
                (TextBlock(text), ToolCall(f"c{t}", "bash", {"command": f"cat src/m{t}.py"})),
                usage=Usage(input_tokens=1_000 + 50 * t, output_tokens=40),
            )
        )
        msgs.append(Message(Role.USER, (ToolResult(f"c{t}", f"line {t}\n" * 5, exit_code=t % 5),)))
    m = Monitor("claude-sonnet-4")
    for i, msg in enumerate(msgs):
        m.observe(msg)
        if i in (600, 1_200, 2_400):
            sizes.append(len(json.dumps(m.snapshot())))
    assert sizes[-1] < 256 * 1024
    # flat: bounded windows, not history (the table of seen sentences, 512 at most, fills during the
    # first 512 turns; from then on nothing grows)
    assert sizes[-1] <= sizes[1] * 1.1
    assert sizes[-1] <= sizes[0] * 1.35


# --------------------------------------------------------------------------- real sessions


def _real(claude_code_data: Path, name: str) -> Session:
    (path,) = claude_code_data.glob(f"*/{name}.jsonl")
    (session,) = read_sessions([str(path)])
    return session


def test_snapshot_restore_on_a_real_session_at_several_cuts(claude_code_data: Path) -> None:
    s = _real(claude_code_data, F67)
    msgs, fills = list(s.messages), dict(s.reported_fill)
    expected = uninterrupted(msgs, s.model, fills)
    n = len(msgs)
    for cut in (1, n // 4, n // 2, (3 * n) // 4, n - 1):
        got = resumed(msgs, s.model, fills, cut)
        assert got == expected, f"diverged after a restore at message {cut}"


def test_a_snapshot_of_the_heap_window_resumes_identically(claude_code_data: Path) -> None:
    """Drift's task words were kept with a heap of (number, word) holding superseded entries too, and
    saved in any order: such a snapshot (its words shuffled, stale heap entries added) resumes as an
    uninterrupted monitor does."""
    s = _real(claude_code_data, F67)
    msgs, fills = list(s.messages), dict(s.reported_fill)
    expected = uninterrupted(msgs, s.model, fills)
    tried = 0
    for cut in range(len(msgs) // 8, len(msgs), len(msgs) // 8):
        m = Monitor(s.model)
        out = [reading(m, msg, fills.get(i)) for i, msg in enumerate(msgs[:cut])]
        data = json.loads(json.dumps(m.snapshot()))
        drift = data["state"]["drift"]
        if len(drift["last"]) < 2 or tried == 2:
            continue
        tried += 1
        drift["last"] = drift["last"][::-1]
        # a superseded entry sorts before its word's live one in the old heap
        drift["heap"] = sorted(
            [[pos - 1, w] for w, pos in drift["last"]] + [[p, w] for w, p in drift["last"]]
        )
        m2 = Monitor.restore(data)
        out += [reading(m2, msg, fills.get(i)) for i, msg in enumerate(msgs) if i >= cut]
        assert out == expected, f"diverged after a restore at message {cut}"
    assert tried == 2, "two cuts should hold more than one task word in the window"


_CHILD = """
import json, sys
from ctxhealth.monitor import Monitor
from ctxhealth.sources import read_sessions
(s,) = read_sessions([sys.argv[1]])
m = Monitor(s.model)
for i, msg in enumerate(s.messages[: int(sys.argv[2])]):
    m.observe(msg, fill=s.reported_fill.get(i))
print(json.dumps(m.snapshot()))
"""


def test_snapshot_taken_in_another_process_resumes_identically(claude_code_data: Path) -> None:
    (path,) = claude_code_data.glob(f"*/{F67}.jsonl")
    s = _real(claude_code_data, F67)
    msgs, fills = list(s.messages), dict(s.reported_fill)
    cut = (2 * len(msgs)) // 3
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path), str(cut)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=True,
    )
    m = Monitor.restore(json.loads(out.stdout))
    got = [reading(m, msg, fills.get(i)) for i, msg in enumerate(msgs) if i >= cut]
    assert got == uninterrupted(msgs, s.model, fills)[cut:]
