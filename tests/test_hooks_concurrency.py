"""No lost events: N hook and status-line processes at once on one session, some killed at random.

Every PostToolUse and UserPromptSubmit of a process that exited normally must be in the ledger, and
the session's monitor must end with every call the transcript holds, as one read of it would; the
ledger passes ``PRAGMA integrity_check``; no process exits non-zero
(except by the SIGKILL it was sent) or outlives its bound; a killed writer's temporary files are
cleaned up by the next writer. The status-line payloads carry no ``context_window`` (older Claude
Code), so the status line reads the transcript tail and saves the counters too: the case that lost
events when it saved without the session lock.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ctxhealth.integrations.claude_code.assess import tool_counts
from ctxhealth.integrations.claude_code.tail import read_tail
from ctxhealth.integrations.claude_code.tailstate import SessionCounters, load_counters, tail_cache_path
from ctxhealth.state.ledger import Ledger

BOUND_SECONDS = 60  # a process still running then has hung (Claude Code's own hook timeout)


def _assistant(n: int) -> str:
    usage = {"input_tokens": 10, "cache_read_input_tokens": 1000 * n, "output_tokens": 5}
    message = {
        "id": f"m{n}",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": [{"type": "text", "text": f"Step {n}: reading src/parse.py."}],
        "usage": usage,
    }
    return json.dumps(
        {"type": "assistant", "uuid": f"a{n}", "parentUuid": None, "sessionId": "s1", "message": message}
    )


def _tool_turn(n: int) -> str:
    """An assistant line with tool call ``t{n}`` and the user line with its (failed) result. Every line
    of a response states its usage, as Claude Code writes it."""
    call = {"type": "tool_use", "id": f"t{n}", "name": f"Tool{n}", "input": {"i": n}}
    usage = {"input_tokens": 10, "cache_read_input_tokens": 1000 * n, "output_tokens": 5}
    message = {
        "id": f"m{n}",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": [call],
        "usage": usage,
    }
    result = {"type": "tool_result", "tool_use_id": f"t{n}", "content": "Error: no", "is_error": True}
    lines = [
        {"type": "assistant", "uuid": f"a{n}", "sessionId": "s1", "message": message},
        {
            "type": "user",
            "uuid": f"r{n}",
            "sessionId": "s1",
            "message": {"role": "user", "content": [result]},
        },
    ]
    return "".join(json.dumps(line) + "\n" for line in lines)


def _start(args: list[str], payload: dict[str, object], env: dict[str, str]) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [sys.executable, "-m", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(payload).encode())
    proc.stdin.close()
    return proc


def _round(tmp: Path, n: int, seed: int, kill_share: float, helper: bool = False) -> None:
    rng = random.Random(seed)
    home, transcript = tmp / "home", tmp / "t.jsonl"
    transcript.write_text(json.dumps({"type": "user", "uuid": "u0", "sessionId": "s1", "message": {
        "role": "user", "content": "Fix the parser bug in src/parse.py"}}) + "\n")  # fmt: skip
    env = {**os.environ, "CTXHEALTH_HOME": str(home)}
    if helper:
        env["CTXHEALTH_HELPER"] = "on"
        server = subprocess.Popen([sys.executable, "-m", "ctxhealth.cli.helper", str(home)], env=env)

        def settle() -> None:
            # a command has its answer before the helper has written the counters: stop the helper
            # (it finishes the work it took) before looking at what is on disk
            server.terminate()
            assert server.wait(timeout=BOUND_SECONDS) == 0

        try:
            _wait_for(home / "claude-code" / "helper.pid")
            _run_round(rng, home, transcript, env, n, kill_share, settle)
        finally:
            if server.poll() is None:
                server.kill()
        return
    _run_round(rng, home, transcript, env, n, kill_share, lambda: None)


def _wait_for(path: Path) -> None:
    deadline = time.monotonic() + BOUND_SECONDS
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


def _run_round(
    rng: random.Random,
    home: Path,
    transcript: Path,
    env: dict[str, str],
    n: int,
    kill_share: float,
    settle: Callable[[], None],
) -> None:
    common = {"session_id": "s1", "transcript_path": str(transcript)}
    procs: list[tuple[str, str, subprocess.Popen[bytes]]] = []
    for i in range(n):
        kind = rng.choice(["PostToolUse", "PostToolUse", "UserPromptSubmit", "statusline"])
        if kind == "statusline":
            proc = _start(["ctxhealth.cli.statusline"], {**common, "model": {"id": "claude-sonnet-4-5"}}, env)
        elif kind == "PostToolUse":
            with transcript.open("a") as handle:  # the call, then its hook (the result comes later)
                handle.write(_tool_turn(i).split("\n", 1)[0] + "\n")
            payload = {**common, "hook_event_name": kind, "tool_name": f"Tool{i}", "tool_use_id": f"t{i}"}
            proc = _start(["ctxhealth.cli.hook", kind], {**payload, "tool_input": {"i": i}}, env)
        else:
            proc = _start(
                ["ctxhealth.cli.hook", kind], {**common, "hook_event_name": kind, "prompt": "go"}, env
            )
        procs.append((kind, f"Tool{i}", proc))
        if kind == "PostToolUse":
            with transcript.open("a") as handle:
                handle.write(_tool_turn(i).split("\n", 1)[1])
        if i % 4 == 3:
            with transcript.open("a") as handle:  # the session goes on meanwhile
                handle.write(_assistant(i) + "\n")
    victims = [p for _, _, p in procs if rng.random() < kill_share]
    for proc in victims:
        time.sleep(rng.uniform(0, 0.05))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
    started = time.monotonic()
    for kind, _, proc in procs:
        proc.wait(timeout=max(1.0, BOUND_SECONDS - (time.monotonic() - started)))
        assert proc.stderr is not None
        err = proc.stderr.read()
        assert proc.returncode == 0 or (proc in victims and proc.returncode == -signal.SIGKILL), (kind, err)
        if proc.returncode == 0:
            assert err == b"", (kind, err)  # no hook or status line skipped its work
    # One more hook, run normally: it flushes the queued events to the ledger and tidies up.
    final = _start(["ctxhealth.cli.hook", "Stop"], {**common, "hook_event_name": "Stop"}, env)
    assert final.wait(timeout=BOUND_SECONDS) == 0
    settle()
    finished = [(kind, tool) for kind, tool, proc in procs if proc.returncode == 0]
    counters = load_counters(str(home), str(transcript))
    assert counters is not None
    with Ledger.open(home) as ledger:
        assert ledger.integrity_ok()
        events = [(row.event, row.payload_summary) for row in ledger.hook_events(limit=10_000)]
    posted = {summary.split("tool=")[1].split()[0] for event, summary in events if event == "PostToolUse"}
    for kind, tool in finished:
        if kind == "PostToolUse":
            assert tool in posted, f"{tool}: event missing from the ledger"
    # the monitor counted every call of the transcript once, whoever read which part of it
    ran = sum(kind == "PostToolUse" for kind, _, _ in procs)
    whole = SessionCounters(str(transcript))
    read_tail(whole, str(transcript))
    assert (tool_counts(counters).calls, tool_counts(counters).failed) == (ran, ran)
    assert counters.assessment == whole.assessment
    prompts = sum(event == "UserPromptSubmit" for event, _ in events)
    assert prompts >= sum(kind == "UserPromptSubmit" for kind, _ in finished)
    cache = Path(tail_cache_path(str(home), str(transcript)))
    assert not list(cache.parent.glob(f".{cache.name}.*.tmp"))  # killed writers' temp files are gone


@pytest.mark.parametrize(("n", "rounds"), [(8, 2), (32, 1)])
def test_concurrent_hooks_and_status_lines_lose_no_event(tmp_path: Path, n: int, rounds: int) -> None:
    for r in range(rounds):
        directory = tmp_path / f"round{r}"
        directory.mkdir()
        _round(directory, n, seed=1000 * n + r, kill_share=0.2)


def test_concurrent_hooks_and_status_lines_through_the_helper_lose_no_event(tmp_path: Path) -> None:
    """The same with the per-turn helper answering: it runs the work of many commands at once (one
    thread each) under the same session lock; a killed command does not stop its work there."""
    _round(tmp_path, 16, seed=77, kill_share=0.2, helper=True)


def test_a_writer_that_cannot_get_the_lock_saves_nothing_but_its_events(tmp_path: Path) -> None:
    """While another process holds the session's lock past a hook's wait, the hook's event still
    reaches the ledger and the holder's counters are not overwritten."""
    from ctxhealth.integrations.claude_code.hooks import handle_hook
    from ctxhealth.integrations.claude_code.tailstate import SessionLock
    from ctxhealth.integrations.claude_code.transcript import HookLimits

    home, transcript = tmp_path / "home", tmp_path / "t.jsonl"
    transcript.write_text("")
    payload = {"hook_event_name": "PostToolUse", "session_id": "s1", "transcript_path": str(transcript)}
    first = json.dumps({**payload, "tool_name": "Read", "tool_use_id": "t1"}).encode()
    handle_hook(None, first, home=str(home))
    cache = Path(tail_cache_path(str(home), str(transcript)))
    saved = cache.read_bytes()
    held = threading.Event()
    release = threading.Event()

    def hold() -> None:
        with SessionLock(str(home), str(transcript), timeout=5) as lock:
            assert lock.acquired
            held.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(5)
    try:
        second = json.dumps({**payload, "tool_name": "Grep", "tool_use_id": "t2"}).encode()
        handle_hook(None, second, home=str(home), limits=HookLimits(lock_seconds=0.05))
    finally:
        release.set()
        holder.join()
    assert cache.read_bytes() == saved  # the cache was not written unlocked
    counters = load_counters(str(home), str(transcript))
    assert counters is not None
    with Ledger.open(home) as ledger:
        summaries = [row.payload_summary for row in ledger.hook_events()]
    assert any("tool=Grep" in s for s in summaries)
    # The events queued by earlier hooks stay queued for the lock holder: none written twice.
    assert not any("tool=Read" in s for s in summaries)
    assert any("tool=Read" in event[2] for event in counters.pending_events)
