"""Re-running a command after editing the file it runs is iteration: repeated-call and doom-loop
detection (the monitor's, which the hooks' doom-loop notice is) skip a repeat whose target changed
in between."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from claude_session import Session
from ctxhealth.model import Message, Role, ToolCall, ToolResult
from ctxhealth.monitor import Monitor
from ctxhealth.signals.calls import parse_call


def call(n: int, name: str, inp: dict[str, Any]) -> list[Message]:
    return [
        Message(Role.ASSISTANT, (ToolCall(f"c{n}", name, inp),)),
        Message(Role.USER, (ToolResult(f"c{n}", "Traceback ...\nValueError: bad offset", exit_code=1),)),
    ]


def repeats(sequence: list[tuple[str, dict[str, Any]]]) -> float:
    m = Monitor("claude-sonnet-4-5")
    m.observe(Message(Role.USER, (ToolResult("x", ""),)))
    for n, (name, inp) in enumerate(sequence):
        for message in call(n, name, inp):
            m.observe(message)
    return {s.name: s for s in m.repetition.signals()}["repeated_calls"].value


RUN = ("Bash", {"command": "python repro.py"})
EDIT = ("Edit", {"file_path": "/home/dev/proj/repro.py", "old_string": "a", "new_string": "b"})
EDIT2 = ("Edit", {"file_path": "/home/dev/proj/repro.py", "old_string": "b", "new_string": "c"})
PATCH = ("Bash", {"command": "sed -i 's/a/b/' repro.py"})
OTHER = ("Edit", {"file_path": "/home/dev/proj/other.py", "old_string": "a", "new_string": "b"})


@pytest.mark.parametrize(
    ("sequence", "expected"),
    [
        ([RUN, EDIT, RUN, EDIT2, RUN], 0),  # edit, re-run: iteration
        ([RUN, PATCH, RUN], 0),  # sed -i counts as an edit of the script
        ([RUN, RUN, RUN], 2),  # nothing changed: repeats
        ([RUN, OTHER, RUN], 1),  # an edit of another file does not change what runs
        (
            [
                ("Read", {"file_path": "a.py"}),
                ("Write", {"file_path": "/x/a.py"}),
                ("Read", {"file_path": "a.py"}),
            ],
            0,
        ),
        (
            [("Bash", {"command": "pytest -q"}), OTHER, ("Bash", {"command": "pytest -q"})],
            0,
        ),  # checks: any edit
        ([("Bash", {"command": "pytest -q"}), ("Bash", {"command": "pytest -q"})], 1),
        ([RUN, ("Bash", {"command": "git apply fix.diff"}), RUN], 0),  # a patch of unknown files
    ],
)
def test_repeated_calls_skip_a_repeat_whose_target_changed(
    sequence: list[tuple[str, dict[str, Any]]], expected: int
) -> None:
    assert repeats(sequence) == expected


def test_the_parser_reads_what_a_command_runs() -> None:
    def runs(command: str) -> tuple[str, ...]:
        return parse_call(ToolCall("c", "Bash", {"command": command})).runs

    assert runs("python repro.py --fast") == ("repro.py",)
    assert runs("cd /p && python3.11 -m pytest tests/test_x.py -q") == ("tests/test_x.py",)
    assert runs("./scripts/build.sh release") == ("./scripts/build.sh",)
    assert runs("FOO=1 node dist/app.js") == ("dist/app.js",)
    assert runs("ls -la && git status") == ()


def test_doom_loop_hook_skips_runs_after_an_edit(tmp_path: Path) -> None:
    # the hooks' notice is the monitor's repeated_calls signal: an edit in between is iteration
    s = Session(tmp_path)
    steps = [RUN, EDIT, RUN, EDIT2, RUN, ("Bash", {"command": "git apply fix.diff"}), RUN]
    outputs = [s.call(name, inp, "Traceback ...\nValueError: bad offset") for name, inp in steps]
    assert not any("Doom loop" in out for out in outputs)
    # after one more edit, three runs with nothing changed in between are a doom loop
    s.call("Edit", {"file_path": "/home/dev/proj/repro.py", "old_string": "c", "new_string": "d"}, "ok")
    outputs = [s.call(*RUN, "Traceback ...\nValueError: bad offset") for _ in range(3)]
    assert "Doom loop" not in outputs[0] + outputs[1] and "Doom loop" in outputs[2]
