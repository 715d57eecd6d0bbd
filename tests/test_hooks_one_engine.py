"""The hooks run no health engine of their own: tool counts, failure and repeat notices and the
status line's readings are the session monitor's, and a re-anchor still in context is not repeated.

The session is written as Claude Code writes it: the assistant's tool call is in the transcript
when PostToolUse fires, its result is written after the hook.
"""

from __future__ import annotations

import json
from pathlib import Path

from claude_session import MODEL, Session
from ctxhealth.integrations.claude_code.assess import tool_counts
from ctxhealth.integrations.claude_code.hooks import REANCHOR_AGAIN_TURNS
from ctxhealth.integrations.claude_code.statusline import render_status
from ctxhealth.integrations.claude_code.tailstate import load_counters


def _context(stdout: str) -> str:
    return json.loads(stdout)["hookSpecificOutput"]["additionalContext"] if stdout else ""


def test_repeated_calls_are_the_monitors_on_the_line_and_in_the_notice(tmp_path: Path) -> None:
    # A, A, B, B: two identical calls repeated. The monitor (and so `check`) says repeated_calls
    # fired; the hooks' own doom-loop count (the same call 3 times) said nothing, so the status line
    # showed no repeats while check's signals did.
    s = Session(tmp_path)
    said = [
        s.call("Bash", {"command": "ls src"}, "parse.py"),
        s.call("Bash", {"command": "ls src"}, "parse.py"),
        s.call("Read", {"file_path": "/p/src/parse.py"}, "def parse(): ..."),
        s.call("Read", {"file_path": "/p/src/parse.py"}, "def parse(): ..."),
    ]
    assert "repeated_calls" in s.monitor_summary()["fired"]
    notices = [i for i, out in enumerate(said) if "Doom loop" in _context(out)]
    assert notices == [3]  # when the monitor's signal fired, once
    payload = {"transcript_path": str(s.transcript), "model": {"id": MODEL}}
    line = render_status(json.dumps(payload), home=s.home, color=False)  # reads the last result
    assert "repeats ×2" in line and "fail 0/4" in line
    counters = load_counters(s.home, str(s.transcript))
    assert counters is not None
    tools = tool_counts(counters)
    assert (tools.calls, tools.failed, tools.repeats) == (4, 0, 2)


def test_the_failure_notice_is_the_monitors_decision_with_the_payloads_result(tmp_path: Path) -> None:
    # The third failure is not in the transcript yet when its PostToolUseFailure runs: the monitor
    # assesses it as the payload states it, and the notice says what the policy decides.
    s = Session(tmp_path)
    said = [s.call("Bash", {"command": f"make {i}"}, "Error: exit 2", failed=True) for i in range(5)]
    given = [i for i, out in enumerate(said) if "Failure spiral" in _context(out)]
    assert given == [2]
    assert "Why: 3 consecutive tool failures" in _context(said[2])
    # shown as the payload stated it until the transcript has it, and then not counted twice
    counters = load_counters(s.home, str(s.transcript))
    assert counters is not None
    assert (tool_counts(counters).calls, tool_counts(counters).failed) == (5, 5)
    s.reply("Looking at the build error.")
    s.hook("Stop")
    counters = load_counters(s.home, str(s.transcript))
    assert counters is not None
    assert (tool_counts(counters).calls, tool_counts(counters).failed, tool_counts(counters).streak) == (
        5,
        5,
        5,
    )
    assert counters.assessment is not None and counters.assessment["action"] == s.monitor_summary()["action"]


def test_a_success_stated_by_the_payload_ends_the_streak(tmp_path: Path) -> None:
    s = Session(tmp_path)
    for i in range(2):
        s.call("Bash", {"command": f"make {i}"}, "Error: exit 2", failed=True)
    assert "Failure spiral" not in _context(s.call("Bash", {"command": "make ok"}, "built"))


LISBON = "The weather in Lisbon is mild; museums, tiles and custard tarts are the highlights there. " * 25
"""A whole drift window (2,000 characters) of output off the request: drift is read from here on."""


def _drifted_turn(s: Session) -> str:
    s.user("carry on")
    said = s.hook("UserPromptSubmit", prompt="carry on")
    s.reply("The weather in Lisbon is mild; museums, tiles and custard tarts are the highlights there.")
    return _context(said)


def test_a_reanchor_still_in_context_is_not_repeated_until_it_may_be_lost(tmp_path: Path) -> None:
    s = Session(tmp_path)
    s.fill = 90_000  # above the sweet spot, below the compact zone: drift decides
    s.reply(LISBON)
    said = [_drifted_turn(s) for _ in range(REANCHOR_AGAIN_TURNS + 3)]
    counters = load_counters(s.home, str(s.transcript))
    assert counters is not None and counters.assessment is not None
    assert counters.assessment["action"] == "reanchor"  # the session stayed in the re-anchor zone
    given = [i for i, text in enumerate(said) if text.startswith("[RE-ANCHOR")]
    # once, then again only when it is REANCHOR_AGAIN_TURNS responses back (not every turn, and not
    # never again while the session keeps drifting)
    assert given == [0, REANCHOR_AGAIN_TURNS]


def test_a_reanchor_is_given_again_after_a_compaction_or_when_the_context_grew(tmp_path: Path) -> None:
    s = Session(tmp_path)
    s.fill = 90_000
    s.reply(LISBON)
    assert _drifted_turn(s).startswith("[RE-ANCHOR")
    assert _drifted_turn(s) == ""
    s.fill = 90_000 + 17_000  # a tenth of the usable window (167K) more since: buried deeper
    s.reply("More about Lisbon: trams, viewpoints and the river.")
    assert _drifted_turn(s).startswith("[RE-ANCHOR")


def test_the_failure_notice_comes_at_the_third_failure_while_the_transcript_lags_two_results(
    tmp_path: Path,
) -> None:
    # Claude Code 2.1 writes its transcript in batches: at the third PostToolUseFailure of three quick
    # failures the transcript may hold only the first result. The calls the payloads stated are kept
    # until the transcript holds them, so the monitor still sees three failures there.
    s = Session(tmp_path)
    s.lag = 3  # the last call, the result before it and that call stay unwritten at each hook
    said = [s.call("Bash", {"command": f"make {i}"}, "Error: exit 2", failed=True) for i in range(4)]
    assert [i for i, out in enumerate(said) if "Failure spiral" in _context(out)] == [2]
    s.flush()
    s.reply("Looking at the build error.")
    s.hook("Stop")
    counters = load_counters(s.home, str(s.transcript))
    assert counters is not None
    assert (tool_counts(counters).calls, tool_counts(counters).failed) == (4, 4)
    # the transcript holds every stated result now: none is assessed again
    assert all(f"r:{entry[0]}" in counters.observed for entry in counters.stated)


def test_a_stated_call_whose_result_the_transcript_never_holds_is_dropped_once_a_later_one_is(
    tmp_path: Path,
) -> None:
    s = Session(tmp_path)
    s.lag = 2
    s.call("Bash", {"command": "make 0"}, "Error: exit 2", failed=True)
    s._held.pop()  # that result is never written (an interrupted call)
    s.lag = 0
    s.flush()
    s.call("Bash", {"command": "make 1"}, "built")
    s.call("Read", {"file_path": "/p/a.py"}, "x = 1")
    counters = load_counters(s.home, str(s.transcript))
    assert counters is not None
    assert [entry[2] for entry in counters.stated] == [{"file_path": "/p/a.py"}]  # only the last call's
