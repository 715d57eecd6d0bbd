"""Hooks and the status line on hostile transcripts: never wait on a FIFO, socket or device, read a
bounded amount of any file, keep a checkpoint within the time budget, and never mix up sessions.

Whole processes are run where blocking or memory is the question (a hang shows up as the subprocess
timeout, memory as the child's peak RSS); everything else runs in process.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import invoke
from ctxhealth.integrations.claude_code import checkpointing
from ctxhealth.integrations.claude_code.checkpointing import build_within
from ctxhealth.integrations.claude_code.hooks import handle_hook, session_root
from ctxhealth.integrations.claude_code.statusline import render_status
from ctxhealth.integrations.claude_code.tailstate import SessionCounters, load_counters, tail_cache_path
from ctxhealth.integrations.claude_code.transcript import HookLimits, read_window, transcript_problem
from ctxhealth.labels import session_folder, session_label

CLI = ["-c", "import sys; from ctxhealth.cli.main import main; sys.argv[0] = 'ctxhealth'; main()"]
INSTRUCTION = "Fix the parser bug in src/parse.py so that nested brackets parse correctly"
# A hostile file must be refused or read in bounded memory: far below the 1 GB it holds.
MAX_RSS_KB = 400 * 1024
FIXTURE_CODEX = (Path(__file__).parent / "fixtures" / "codex-rollout.jsonl").read_bytes()


def _line(kind: str, n: int, **extra: Any) -> str:
    base = {"type": kind, "uuid": f"u{n}", "parentUuid": f"u{n - 1}" if n else None, "sessionId": "s1"}
    return json.dumps({**base, **extra})


def _user(n: int, text: str) -> str:
    return _line("user", n, message={"role": "user", "content": text})


def _assistant(n: int, text: str, fill: int = 5000) -> str:
    usage = {"input_tokens": 10, "cache_read_input_tokens": fill - 10, "output_tokens": 7}
    message = {
        "id": f"m{n}",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": [{"type": "text", "text": text}],
        "usage": usage,
    }
    return _line("assistant", n, message=message)


def _summary(n: int) -> str:
    text = "This session is being continued from a previous conversation that ran out of context."
    return _line("user", n, isCompactSummary=True, parentUuid=None, message={"role": "user", "content": text})


def _payload(event: str, transcript: Path | str, **extra: Any) -> bytes:
    body = {"hook_event_name": event, "session_id": "s1", "transcript_path": str(transcript), **extra}
    return json.dumps(body).encode()


def _fire(
    event: str, home: Path, transcript: Path | str, limits: HookLimits | None = None, **extra: Any
) -> str:
    return handle_hook(None, _payload(event, transcript, **extra), home=str(home), limits=limits)


# -- hostile file types, as whole processes --------------------------------------------------------


def _hostile(tmp_path: Path, kind: str) -> Path:
    path = tmp_path / f"{kind}.jsonl"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        import tempfile

        short = Path(tempfile.mkdtemp(prefix="ch")) / "s"  # AF_UNIX paths are short
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(short))
        _SOCKETS.append(server)
        path.symlink_to(short)
    elif kind in ("dev-zero", "dev-urandom"):
        path.symlink_to("/dev/zero" if kind == "dev-zero" else "/dev/urandom")
    elif kind == "directory":
        path.mkdir()
    elif kind == "sparse-1gb":
        with path.open("wb") as handle:
            handle.truncate(1024**3)
    return path


_SOCKETS: list[socket.socket] = []
HOSTILE = ["fifo", "socket", "dev-zero", "dev-urandom", "directory", "sparse-1gb"]


# Runs a module as ``python -m`` does and, at exit, writes its peak RSS (``VmHWM``, kB: the
# process's own, not the forked parent's, which ``ru_maxrss`` would include) to the file in argv[1].
PEAK_RSS_WRAPPER = """
import atexit, runpy, sys
out = sys.argv.pop(1)
def peak():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                with open(out, "w") as handle:
                    handle.write(line.split()[1])
atexit.register(peak)
module = sys.argv.pop(1)
runpy.run_module(module, run_name="__main__", alter_sys=True)
"""


def _run(args: list[str], stdin: bytes, home: Path) -> tuple[int, bytes, bytes, int]:
    """Run a ctxhealth entry point; return (exit code, stdout, stderr, its peak RSS in kB, 0 if unknown).

    A child still running after 60 s is killed (then its exit code is not 0): a hook that blocks fails.
    """
    import threading

    env = {**os.environ, "CTXHEALTH_HOME": str(home)}
    peak_file = home.parent / f"peak-{os.urandom(4).hex()}"
    proc = subprocess.Popen(
        [sys.executable, "-c", PEAK_RSS_WRAPPER, str(peak_file), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    watchdog = threading.Timer(60, proc.kill)
    watchdog.start()
    try:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        proc.stdin.write(stdin)
        proc.stdin.close()
        out, err = proc.stdout.read(), proc.stderr.read()
        proc.wait()
    finally:
        watchdog.cancel()
    peak = int(peak_file.read_text()) if peak_file.exists() else 0
    return proc.returncode, out, err, peak


@pytest.mark.parametrize("kind", HOSTILE)
def test_hooks_and_status_line_never_block_or_read_a_hostile_file_whole(tmp_path: Path, kind: str) -> None:
    transcript = _hostile(tmp_path, kind)
    home = tmp_path / "home"
    calls = [
        (["ctxhealth.cli.hook", "PreCompact"], _payload("PreCompact", transcript, trigger="auto")),
        (["ctxhealth.cli.hook", "SessionStart"], _payload("SessionStart", transcript, source="compact")),
        (["ctxhealth.cli.hook", "UserPromptSubmit"], _payload("UserPromptSubmit", transcript, prompt="go")),
        (["ctxhealth.cli.hook", "Stop"], _payload("Stop", transcript)),
        (
            ["ctxhealth.cli.statusline"],
            json.dumps({"session_id": "s1", "transcript_path": str(transcript)}).encode(),
        ),
    ]
    for args, stdin in calls:
        code, out, err, rss = _run(args, stdin, home)
        assert code == 0, (args, err)
        assert 0 < rss < MAX_RSS_KB, (args, rss)
        if args[-1] == "PreCompact":
            message = json.loads(out)["systemMessage"]
            assert message.startswith("ctxhealth: no checkpoint saved"), message
        if args[-1] == "SessionStart":
            assert out == b"", out  # nothing to give back: nothing injected
        if args[0] == "ctxhealth.cli.statusline":
            assert b"no data" in out and b"green" not in out, out


def test_a_gigabyte_sparse_transcript_with_real_lines_gets_a_checkpoint_in_bounded_memory(
    tmp_path: Path,
) -> None:
    transcript = tmp_path / "big.jsonl"
    head = _user(0, INSTRUCTION) + "\n" + _assistant(1, "Reading src/parse.py first.") + "\n"
    tail = _assistant(2, "Fixed the bracket depth counter in src/parse.py; running tests next.") + "\n"
    with transcript.open("wb") as handle:
        handle.write(head.encode())
        handle.truncate(1024**3)
        handle.seek(0, os.SEEK_END)
        handle.write(b"\n" + tail.encode())
    code, out, err, rss = _run(
        ["ctxhealth.cli.hook", "PreCompact"],
        _payload("PreCompact", transcript, trigger="auto"),
        tmp_path / "home",
    )
    assert code == 0 and 0 < rss < MAX_RSS_KB, (err, rss)
    message = json.loads(out)["systemMessage"]
    assert message.startswith("ctxhealth: checkpoint saved") and "1024.0 MB" in message, message
    counters = load_counters(str(tmp_path / "home"), str(transcript))
    assert counters is not None and counters.checkpoint_text is not None
    assert INSTRUCTION[:40] in counters.checkpoint_text  # the head: the original request
    assert "bracket depth counter" in counters.checkpoint_text  # the tail: the latest progress


def test_transcript_checks_never_open_and_name_what_they_found(tmp_path: Path) -> None:
    fifo = _hostile(tmp_path, "fifo")
    assert transcript_problem(str(fifo)) == "a FIFO (named pipe)"
    assert transcript_problem(str(tmp_path / "gone.jsonl")) == "missing"
    assert transcript_problem(str(_hostile(tmp_path, "dev-zero"))) == "a character device"
    regular = tmp_path / "t.jsonl"
    regular.write_text(_user(0, INSTRUCTION) + "\n")
    assert transcript_problem(str(regular)) is None


def test_read_window_keeps_whole_lines_of_head_and_tail(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    lines = [f'{{"n": {i}, "pad": "{"x" * 50}"}}' for i in range(1000)]
    path.write_text("\n".join(lines) + "\n")
    window = read_window(str(path), tail_bytes=2000, head_bytes=500)
    head, tail = window.head.decode().splitlines(), window.tail.decode().splitlines()
    assert head == lines[: len(head)] and tail == lines[-len(tail) :]
    assert len(window.tail) <= 2000 and len(window.head) <= 500 and window.skipped > 0
    assert window.skipped + len(window.head) + len(window.tail) == window.size
    # One huge line without a break in the window: nothing whole to read, nothing read past the window.
    one_line = tmp_path / "one.jsonl"
    one_line.write_bytes(b"x" * 100_000)
    window = read_window(str(one_line), tail_bytes=1000, head_bytes=100)
    assert window.head == b"" and window.tail == b""


def test_a_large_append_is_read_from_its_last_window_only(tmp_path: Path) -> None:
    from ctxhealth.integrations.claude_code.tail import read_tail

    path = tmp_path / "t.jsonl"
    path.write_text(_user(0, INSTRUCTION) + "\n" + _assistant(1, "start", 1000) + "\n")
    counters = SessionCounters(str(path))
    read_tail(counters, str(path))
    filler = "".join(_assistant(i, "filler " * 40, 2000) + "\n" for i in range(2, 400))
    last = _assistant(400, "the end", 3000) + "\n"
    with path.open("a") as handle:
        handle.write(filler + last)
    messages = read_tail(counters, str(path), max_bytes=4096)
    assert messages and messages[-1].text == "the end" and len(messages) < 20
    assert counters.offset == path.stat().st_size and counters.fill == 3000


# -- the time budget -------------------------------------------------------------------------------


def test_build_within_interrupts_a_build_past_its_deadline() -> None:
    def forever() -> None:
        while True:
            time.sleep(0.001)

    assert build_within(0.05, forever) is None
    assert build_within(5.0, lambda: 42) == 42
    assert build_within(0.0, lambda: 42) is None  # no time left: not even started


def _long_transcript(path: Path, turns: int) -> None:
    lines = [_user(0, INSTRUCTION)]
    lines += [
        _assistant(i, f"Step {i}: looked at src/module_{i}.py and its tests. " * 20) for i in range(1, turns)
    ]
    path.write_text("\n".join(lines) + "\n")


def test_precompact_keeps_the_smaller_checkpoint_when_the_fuller_one_runs_out_of_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    transcript, home = tmp_path / "t.jsonl", tmp_path / "home"
    _long_transcript(transcript, 600)
    limits = HookLimits(head_bytes=4096, fallback_tail_bytes=16 * 1024, tail_bytes=64 * 1024 * 1024)
    real = checkpointing.build_within
    calls: list[float] = []

    def second_runs_out(seconds: float, build: Any) -> Any:
        calls.append(seconds)
        return real(seconds, build) if len(calls) == 1 else None

    monkeypatch.setattr(checkpointing, "build_within", second_runs_out)
    out = json.loads(_fire("PreCompact", home, transcript, limits, trigger="auto"))
    assert len(calls) == 2  # the smaller one first, then the fuller one (which ran out of time)
    message = out["systemMessage"]
    assert "from the start and the last 0.0" in message, message  # 16 KB + 4 KB of a ~1 MB file
    counters = load_counters(str(home), str(transcript))
    assert counters is not None and counters.checkpoint_pending and counters.checkpoint_text
    assert INSTRUCTION[:40] in counters.checkpoint_text and "module_599" in counters.checkpoint_text


def test_precompact_on_a_large_transcript_ends_with_the_fuller_checkpoint(tmp_path: Path) -> None:
    transcript, home = tmp_path / "t.jsonl", tmp_path / "home"
    _long_transcript(transcript, 600)
    limits = HookLimits(head_bytes=4096, fallback_tail_bytes=16 * 1024)
    out = json.loads(_fire("PreCompact", home, transcript, limits, trigger="auto"))
    assert (
        out["systemMessage"].startswith("ctxhealth: checkpoint saved (") and "MB" not in out["systemMessage"]
    )
    root = Path(session_root(str(home), _counters_for("s1", transcript)))
    written = sorted((root / "checkpoints").glob("s1-*.json"))
    assert len(written) == 2  # the smaller one, then the fuller one
    latest = json.loads((root / "checkpoints" / "latest-checkpoint.json").read_text())
    assert latest == json.loads(written[-1].read_text())


def _counters_for(session_id: str | None, transcript: Path) -> SessionCounters:
    counters = SessionCounters(str(transcript))
    counters.session_id = session_id
    return counters


# -- SessionStart after a compaction ---------------------------------------------------------------


def test_session_start_compact_without_precompact_checkpoints_what_came_before_the_compaction(
    tmp_path: Path,
) -> None:
    transcript, home = tmp_path / "t.jsonl", tmp_path / "home"
    lines = [_user(0, INSTRUCTION), _assistant(1, "Edited src/parse.py: the depth counter now resets.")]
    transcript.write_text("\n".join([*lines, _summary(2)]) + "\n")
    out = json.loads(_fire("SessionStart", home, transcript, source="compact"))
    context = out["hookSpecificOutput"]["additionalContext"]
    assert "[CONTEXT CHECKPOINT -- PREVIOUS PROGRESS]" in context and INSTRUCTION in context
    assert "depth counter" in context
    assert "being continued from a previous conversation" not in context  # the summary is not "progress"


def test_a_second_compaction_without_precompact_never_gives_back_the_first_checkpoint(tmp_path: Path) -> None:
    transcript, home = tmp_path / "t.jsonl", tmp_path / "home"
    transcript.write_text(_user(0, INSTRUCTION) + "\n" + _assistant(1, "First: read src/alpha.py.") + "\n")
    _fire("PreCompact", home, transcript, trigger="auto")
    first = json.loads(_fire("SessionStart", home, transcript, source="compact"))
    assert "alpha.py" in first["hookSpecificOutput"]["additionalContext"]
    with transcript.open("a") as handle:
        handle.write(_summary(2) + "\n" + _assistant(3, "Second: now working in src/omega.py.") + "\n")
        handle.write(_summary(4) + "\n")  # the second compaction, with no PreCompact before it
    second = json.loads(_fire("SessionStart", home, transcript, source="compact"))
    context = second["hookSpecificOutput"]["additionalContext"]
    assert "omega.py" in context  # built afresh from the transcript, not the first checkpoint


def test_session_start_with_neither_checkpoint_nor_transcript_injects_nothing(tmp_path: Path) -> None:
    assert _fire("SessionStart", tmp_path / "home", tmp_path / "gone.jsonl", source="compact") == ""
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert _fire("SessionStart", tmp_path / "home", empty, source="compact") == ""


# -- the status line without data ------------------------------------------------------------------


def test_status_line_without_a_transcript_says_it_has_no_data(tmp_path: Path) -> None:
    payload = json.dumps({"session_id": "s1", "transcript_path": str(tmp_path / "gone.jsonl")})
    line = render_status(payload, home=str(tmp_path / "home"), color=False)
    assert line == "ctxhealth: no data (transcript not found)"
    # With a fill in the payload there is data, transcript or not.
    payload = json.dumps(
        {
            "session_id": "s1",
            "transcript_path": str(tmp_path / "gone.jsonl"),
            "context_window": {"context_window_size": 200000, "current_usage": {"input_tokens": 50000}},
        }
    )
    line = render_status(payload, home=str(tmp_path / "home"), color=False)
    assert line.startswith("● ") and "50.0K/" in line


# -- sessions never share a folder -----------------------------------------------------------------


def test_session_ids_that_sanitise_alike_never_share_a_folder(tmp_path: Path) -> None:
    ids = [".", "..", "", "../../x", "..-..-x", "a/b", "a-b", "a b", "A", "a", "x" * 300, "x" * 301, "é", "e"]
    folders = [session_root(str(tmp_path), _counters_for(i, tmp_path / "t.jsonl")) for i in ids]
    assert len(set(folders)) == len(ids)
    parent = tmp_path / "claude-code" / "sessions"
    for folder in folders:
        path = Path(folder)
        assert path.parent == parent and path.name not in (".", "..") and len(path.name) <= 80
    assert session_folder("id:x") == session_folder("id:x")
    no_id = session_root(str(tmp_path), _counters_for(None, tmp_path / "t.jsonl"))
    assert no_id != session_root(str(tmp_path), _counters_for(None, tmp_path / "other" / "t.jsonl"))


@pytest.mark.parametrize("raw", [".", "..", "", "../../x", "/", "a\x00b", "-", "--x--"])
def test_session_label_is_a_plain_name(raw: str) -> None:
    label = session_label(raw)
    assert label and label not in (".", "..") and set(label) <= set("abcdefghijklmnopqrstuvwxyz0123456789-_x")
    assert not label.startswith("-") and not label.endswith("-")


def test_hooks_for_colliding_ids_write_to_different_folders(tmp_path: Path) -> None:
    home = tmp_path / "home"
    roots = []
    for i, session_id in enumerate(["../../x", "..-..-x"]):
        transcript = tmp_path / f"t{i}.jsonl"
        transcript.write_text(_user(0, f"{INSTRUCTION} #{i}") + "\n")
        body = {"hook_event_name": "PreCompact", "session_id": session_id, "transcript_path": str(transcript)}
        handle_hook(None, json.dumps(body).encode(), home=str(home))
        roots.append(Path(session_root(str(home), _counters_for(session_id, transcript))))
    assert roots[0] != roots[1]
    for i, root in enumerate(roots):
        latest = json.loads((root / "checkpoints" / "latest-checkpoint.json").read_text())
        assert f"#{i}" in latest["text"]
    assert not (tmp_path / "x").exists()  # nothing escaped the home


# -- private files whatever the umask; temp files of killed writers ---------------------------------


@pytest.mark.parametrize("umask", [0o000, 0o022, 0o077])
def test_everything_written_is_private_whatever_the_umask(tmp_path: Path, umask: int) -> None:
    transcript, home, root = tmp_path / "t.jsonl", tmp_path / "home", tmp_path / "state"
    transcript.write_text(_user(0, INSTRUCTION) + "\n" + _assistant(1, "Reading src/parse.py.") + "\n")
    env = {**os.environ, "CTXHEALTH_HOME": str(home)}
    runs = [
        (["-m", "ctxhealth.cli.hook", "PreCompact"], _payload("PreCompact", transcript)),
        (["-m", "ctxhealth.cli.hook", "Stop"], _payload("Stop", transcript)),
        ([*CLI, "checkpoint", "--root", str(root), str(transcript)], b""),
        ([*CLI, "state", "remember", "--root", str(root), "learnings", "x"], b""),
    ]
    for args, stdin in runs:
        done = subprocess.run(
            [sys.executable, *args],
            input=stdin,
            capture_output=True,
            env=env,
            timeout=60,
            preexec_fn=lambda: os.umask(umask),
        )
        assert done.returncode == 0, done.stderr
    seen = 0
    for base in (home, root):
        assert stat.S_IMODE(base.stat().st_mode) == 0o700
        for path in base.rglob("*"):
            mode = stat.S_IMODE(path.lstat().st_mode)
            assert mode == (0o700 if path.is_dir() else 0o600), (path, oct(mode))
            seen += 1
    assert (home / "ledger.db").exists() and seen > 10


def test_the_next_writer_removes_temp_files_a_killed_writer_left(tmp_path: Path) -> None:
    transcript, home = tmp_path / "t.jsonl", tmp_path / "home"
    transcript.write_text("")
    _fire("PostToolUse", home, transcript, tool_name="Read", tool_use_id="t1")
    cache = Path(tail_cache_path(str(home), str(transcript)))
    stale = cache.parent / f".{cache.name}.deadbeef0001.tmp"
    stale.write_text("{half a write")
    other = cache.parent / ".someone-else.json.deadbeef0002.tmp"
    other.write_text("{not ours")
    _fire("PostToolUse", home, transcript, tool_name="Read", tool_use_id="t2")
    assert not stale.exists() and other.exists()
    counters = load_counters(str(home), str(transcript))
    assert counters is not None and counters.pending_events  # the second writer saved the state


# -- watch on what it cannot follow -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "what"),
    [
        (b"\x1f\x8b\x08\x00junk", "gzip"),
        (b"\x00\x01\x02 binary junk \xff", "unrecognised content"),
    ],
)
def test_watch_says_what_a_file_is_and_what_it_supports(tmp_path: Path, content: bytes, what: str) -> None:

    path = tmp_path / "session.jsonl"
    path.write_bytes(content)
    done = invoke(["watch", "--once", str(path)])
    assert done.exit_code == 3
    assert what in done.output and "follows any transcript ctxhealth reads" in done.output


@pytest.mark.parametrize(
    ("content", "shown"),
    [
        (FIXTURE_CODEX, "(codex)"),
        (b'[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]', "(openai-chat)"),
    ],
)
def test_watch_follows_other_agents_formats(tmp_path: Path, content: bytes, shown: str) -> None:

    path = tmp_path / "session.jsonl"
    path.write_bytes(content)
    done = invoke(["watch", "--once", str(path)])
    assert done.exit_code == 0, done.output
    assert shown in done.output


def test_watch_refuses_a_fifo_at_once_and_follows_an_empty_new_session(tmp_path: Path) -> None:

    done = invoke(["watch", "--once", str(_hostile(tmp_path, "fifo"))])
    assert done.exit_code == 3 and "FIFO" in done.output
    empty = tmp_path / "new.jsonl"
    empty.write_text("")
    done = invoke(["watch", "--once", str(empty)])
    assert done.exit_code == 0 and "ctxhealth watch" in done.output


# -- configured limits -----------------------------------------------------------------------------


def test_checkpoint_limits_come_from_the_hooks_table_of_the_configuration(tmp_path: Path) -> None:
    transcript, home = tmp_path / "t.jsonl", tmp_path / "home"
    _long_transcript(transcript, 300)
    home.mkdir()
    (home / "config.toml").write_text(
        "[hooks]\ncheckpoint_tail_mb = 0.05\ncheckpoint_head_kb = 4\nfallback_tail_mb = 0.01\n"
    )
    payload = _payload("PreCompact", transcript, trigger="auto")
    code, out, err, _ = _run(["ctxhealth.cli.hook", "PreCompact"], payload, home)
    assert code == 0 and err == b"", err
    message = json.loads(out)["systemMessage"]
    assert "from the start and the last 0.1 of" in message, message  # 50 KB + 4 KB of ~0.6 MB


def test_a_broken_hooks_table_is_reported_and_the_defaults_apply(tmp_path: Path) -> None:
    transcript, home = tmp_path / "t.jsonl", tmp_path / "home"
    transcript.write_text(_user(0, INSTRUCTION) + "\n")
    home.mkdir()
    (home / "config.toml").write_text('[hooks]\ncheckpoint_seconds = "soon"\n')
    code, out, err, _ = _run(["ctxhealth.cli.hook", "PreCompact"], _payload("PreCompact", transcript), home)
    assert code == 0
    assert b"configuration ignored" in err and b"hooks.checkpoint_seconds" in err
    assert json.loads(out)["systemMessage"].startswith("ctxhealth: checkpoint saved")


@pytest.mark.parametrize(
    "table",
    [{"checkpoint_seconds": 0}, {"checkpoint_tail_mb": True}, {"tail": 3}, {"lock_seconds": "1"}],
)
def test_hook_limits_refuse_bad_values_naming_the_key(table: dict[str, object]) -> None:
    from ctxhealth.errors import ConfigError

    with pytest.raises(ConfigError) as raised:
        HookLimits.from_config(table)
    assert f"hooks.{next(iter(table))}" in str(raised.value.render())
