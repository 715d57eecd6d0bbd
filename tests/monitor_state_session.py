"""A constructed session that exercises every detector's saved state (drift with a new request,
failures and repeated mistakes, repeated calls, re-reads, edit thrash, indicators, verification,
cache reads, a compaction), shared by the saved-state fixture and the test that resumes it.

``python tests/monitor_state_session.py OUT.json`` writes the fixture with the ctxhealth it runs
on: a monitor's snapshot after :data:`CUT` messages (and one recorded recovery) and the readings of
the rest of the session once resumed. The fixture in ``tests/fixtures/monitor/`` was written by the
code before the explicit state format, so the test proves such states still load and assess the same.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from ctxhealth.model import CompactionSummary, Message, Role, TextBlock, ToolCall, ToolResult, Usage

CUT = 41
"""Messages observed before the snapshot."""

_REPLIES = [
    "I will read the parser module first and then run the test suite to see what fails.",
    "Actually, that was wrong: let me revert the change to the parser offsets.",
    "Wait, the offsets are parsed twice. The parser now handles offsets in one place only.",
    "The parser now handles offsets in one place only. The parser now handles offsets in one place only.",
    "Could you please provide the original request again? I do not have the original task.",
    "Perhaps this might possibly work; I think it should probably round-trip now.",
    "Let me look at the unrelated billing report generator and its spreadsheet exporter instead.",
    "",
]
_COMMANDS = [
    "cat src/parser.py",
    "sed -i 's/old/new/' src/parser.py",
    "sed -i 's/new/old/' src/parser.py",
    "python -m pytest -q tests/test_parser.py",
    "rm src/old.py",
    "cat src/old.py",
    "ls src",
    "python repro.py",
]
_OUTPUTS = [
    ("ok", 0, False),
    ("ok", 0, False),
    ("5 passed in 0.2s", 0, False),
    ("done", None, False),
    ("Traceback (most recent call last):\n  File x.py\nValueError: bad offset 3", 1, False),
    ("bash: foo: command not found", 127, True),
    ("error: something broke at line 12", None, False),
    ("fine", None, False),
]


def session() -> list[Message]:
    """The messages, the same on every run (a fixed linear congruential sequence picks each step)."""
    seed = 7
    msgs = [
        Message(Role.SYSTEM, (TextBlock("You are a coding agent."),)),
        Message(
            Role.USER,
            (TextBlock("Fix the date parser so that ISO offsets round-trip; keep the tests green."),),
        ),
    ]
    fill = 4_000
    for t in range(36):
        seed = (seed * 1103515245 + 12345) % 2**31
        if t == 18:
            msgs.append(
                Message(
                    Role.USER, (TextBlock("Now write a changelog entry for the parser fix in CHANGES.md."),)
                )
            )
        if t == 26:
            msgs.append(
                Message(
                    Role.USER,
                    (
                        CompactionSummary(
                            "This session is being continued from a previous conversation.", "auto", fill
                        ),
                    ),
                )
            )
            fill = fill // 3
        text = _REPLIES[seed % len(_REPLIES)]
        blocks: list[Any] = [TextBlock(text)] if text else []
        ids = []
        for j in range(1 + (seed >> 8) % 2):
            command = _COMMANDS[(seed >> (4 + 3 * j)) % len(_COMMANDS)]
            ids.append(f"c{t}_{j}")
            blocks.append(ToolCall(ids[-1], "bash", {"command": command}))
        if (seed >> 12) % 3 == 0:
            ids.append(f"e{t}")
            blocks.append(
                ToolCall(
                    ids[-1], "Edit", {"file_path": "src/parser.py", "old_string": "a", "new_string": "b"}
                )
            )
        fill += 2_500 + (seed >> 5) % 9_000
        usage = Usage(input_tokens=fill // 4, output_tokens=80 + t, cache_read_tokens=fill - fill // 4)
        msgs.append(
            Message(Role.ASSISTANT, tuple(blocks) or (TextBlock("ok"),), usage=usage, model="claude-sonnet-4")
        )
        results = []
        for k, i in enumerate(ids):
            out, code, err = _OUTPUTS[(seed >> (14 + 2 * k)) % len(_OUTPUTS)]
            results.append(ToolResult(i, out, is_error=err, exit_code=code))
        msgs.append(Message(Role.USER, tuple(results)))
    return msgs


def readings() -> dict[str, Any]:
    """The snapshot after :data:`CUT` messages and a recovery, and the readings after it."""
    from ctxhealth.monitor import Monitor
    from ctxhealth.policy import Action

    msgs = session()
    m = Monitor(track_hedges=True)
    for message in msgs[:CUT]:
        m.observe(message)
    m.record_recovery(Action.RESTART)
    snapshot = json.loads(json.dumps(m.snapshot()))
    after = []
    for message in msgs[CUT:]:
        a = m.observe(message)
        after.append({"assessment": a.to_dict(), "features": m.features()})
    return {"cut": CUT, "snapshot": snapshot, "after_sha256": digest(after), "last": after[-1]}


def digest(readings: list[dict[str, Any]]) -> str:
    """A digest of the readings (every field of every assessment and the features), to compare."""
    import hashlib

    return hashlib.sha256(json.dumps(readings, sort_keys=True).encode()).hexdigest()


if __name__ == "__main__":
    with open(sys.argv[1], "w", encoding="utf-8") as out:
        json.dump(readings(), out, indent=None, separators=(",", ":"), sort_keys=True)
        out.write("\n")
