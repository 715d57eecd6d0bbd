"""Reliability under abuse: kill -9 of a writer at random moments, and 8 concurrent writers.

Bounded in time: every subprocess has a timeout. The kill -9 writers are forked (no start-up
cost); the kill moment is picked by reading a random number of progress bytes from the writer
(no sleeps), so the kill lands somewhere inside a later round of writes.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from ctxhealth.state.ledger import Ledger
from ctxhealth.state.schema import TaskState
from ctxhealth.state.startup import inspect
from ctxhealth.state.status import Status
from ctxhealth.state.store import StateStore
from ctxhealth.state.summary import render_summary

TRIALS = 40
WRITERS = 8
ROUNDS = 12
TIMEOUT = 60


def _expected(i: int) -> TaskState:
    """The i-th state the writer writes: large, so that a kill often lands inside a write."""
    return TaskState(
        goal="g",
        current_phase="p",
        next_action=f"step {i}",
        important_outputs=tuple(f"{i}-{k}-" + "x" * 2000 for k in range(60)),
        updated_at=str(i),
    )


def _env() -> dict[str, str]:
    src = str(Path(__file__).resolve().parents[1] / "src")
    return {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}


def _writer(root: Path, progress: int) -> None:
    """Child process body: rewrite state + summary forever, one progress byte per round."""
    store = StateStore(root)
    for i in range(1, 100_000):
        store.write_state(_expected(i))
        store.write_summary(_expected(i))
        os.write(progress, b".")


def _spawn_writer(root: Path) -> tuple[int, int]:
    """Fork a writer (modules already imported: no start-up cost); return (pid, progress fd)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never return into the test runner
        try:
            os.close(read_end)
            _writer(root, write_end)
        finally:
            os._exit(0)
    os.close(write_end)
    return pid, read_end


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork and SIGKILL")
def test_kill_9_never_leaves_unloadable_state_or_summary(tmp_path: Path) -> None:
    rng = random.Random(20260301)
    root = tmp_path / "root"
    store = StateStore(root)
    store.write_state(_expected(0))
    store.write_summary(_expected(0))
    torn_temp_files = 0
    for trial in range(TRIALS):
        pid, progress = _spawn_writer(root)
        try:
            for _ in range(rng.randrange(0, 4)):  # let it finish 0..3 rounds, then kill mid-round
                if not os.read(progress, 1):
                    break
        finally:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(progress)
        state = store.read_state()  # raises on a torn file
        assert state is not None
        i = int(state.next_action.split()[1])
        assert state == _expected(i), trial
        summary = store.read_summary()
        assert summary is not None
        j = int(summary.split("**Next action:** step ", 1)[1].split("\n", 1)[0])
        assert summary == render_summary(_expected(j)), trial
        assert j in (i, i - 1)  # the summary is written right after its state
        assert inspect(store).status is Status.OK, trial
        torn_temp_files += sum(1 for p in root.rglob("*.tmp"))
        for leftover in root.rglob("*.tmp"):  # what a kill mid-write leaves: never read by anyone
            leftover.unlink()
    print(f"kill -9 trials: {TRIALS}, killed mid-write (temp file left): {torn_temp_files}")


# Each concurrent writer records ledger rows and writes transcript checkpoints into one root.
CONCURRENT_WRITER = r"""
import sys
from pathlib import Path
from ctxhealth.model import Format, Message, Role, Session, TextBlock, ToolCall, ToolResult
from ctxhealth.state.checkpoint import write_transcript_checkpoint
from ctxhealth.state.ledger import Ledger, TailState
from ctxhealth.state.store import StateStore

worker, rounds, root, home = int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4])
secret = "sk-" + "proj-" + "Qw3Er4Ty5Ui6Op7As8Df9Gh0Jk"
session = Session(path=f"w{worker}.json", format=Format.OPENAI_CHAT, session_id=f"w{worker}", messages=(
    Message(Role.USER, (TextBlock(f"worker {worker}: fix the build, key {secret}"),)),
    Message(Role.ASSISTANT, (ToolCall("c1", "bash", {"command": "make"}),)),
    Message(Role.TOOL, (ToolResult("c1", f"ok {secret}"),)),
))
store = StateStore(root)
print("ready", flush=True)
sys.stdin.readline()
with Ledger.open(home) as ledger:
    for r in range(rounds):
        write_transcript_checkpoint(store, session, ledger=ledger, encoding=None)
        ledger.record_hook_event("PostToolUse", f"w{worker}", f"round {r} {secret}")
        ledger.record_assessment(f"w{worker}", r, tokens=r * 100, pressure=r / 100)
        ledger.record_decision(f"w{worker}", r, "continue", "fine")
        ledger.set_tail(f"/t/w{worker}.jsonl", TailState(offset=r * 10, line=r, state={"r": r}))
print("done", flush=True)
"""


def test_eight_concurrent_writers_lose_and_corrupt_nothing(tmp_path: Path) -> None:
    root, home = tmp_path / "root", tmp_path / "home"
    env = _env()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CONCURRENT_WRITER, str(w), str(ROUNDS), str(root), str(home)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            text=True,
        )
        for w in range(WRITERS)
    ]
    try:
        for p in procs:  # all imported and waiting: release them together
            assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        for p in procs:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        for p in procs:
            out, err = p.communicate(timeout=TIMEOUT)
            assert p.returncode == 0, err
            assert out.strip() == "done"
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(timeout=TIMEOUT)

    total = WRITERS * ROUNDS
    with Ledger.open(home) as ledger:
        assert ledger.integrity_ok()
        assert ledger.counts() == {
            "sessions": WRITERS,
            "assessments": total,
            "decisions": total,
            "checkpoints": total,
            "hook_events": total,
            "errors": 0,
        }
        for w in range(WRITERS):
            tail = ledger.get_tail(f"/t/w{w}.jsonl")
            assert tail is not None and (tail.offset, tail.line, tail.state) == (
                (ROUNDS - 1) * 10,
                ROUNDS - 1,
                {"r": ROUNDS - 1},
            )
            assert sorted(a.turn for a in ledger.assessments(f"w{w}")) == list(range(ROUNDS))
        rows = ledger.checkpoints()
    paths = {Path(r.json_path) for r in rows}
    assert len(paths) == total  # every checkpoint got its own file
    for path in paths:
        doc = orjson.loads(path.read_bytes())
        assert doc["schema"] == "ctxhealth/checkpoint"
        assert Path(path.with_suffix(".md")).read_text().startswith("## Checkpoint:")
    orjson.loads((root / "checkpoints" / "latest-checkpoint.json").read_bytes())
    secret = b"Qw3Er4Ty5Ui6Op7As8Df9Gh0Jk"
    for path in [*root.rglob("*"), *home.rglob("*")]:
        if path.is_file():
            assert secret not in path.read_bytes(), path
