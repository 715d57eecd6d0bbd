"""The per-turn helper: it answers the status line and the per-turn hooks as the commands would,
declines what is not its own, exits by itself, and the commands work without it."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import CLIENT_MODULES
from ctxhealth.integrations.claude_code.helper import ask, helper_paths, serve
from ctxhealth.integrations.claude_code.hooks import run_hook
from ctxhealth.integrations.claude_code.statusline import render_status
from ctxhealth.integrations.claude_code.tailstate import SessionLock, load_counters

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "claude-code-session.jsonl"
BOUND = 30.0


def _wait(condition: object, what: str) -> None:
    deadline = time.monotonic() + BOUND
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


@pytest.fixture
def helper_home(tmp_path: Path) -> Iterator[str]:
    """A helper serving a home of its own in a thread of this process; stopped by removing its socket."""
    home = str(tmp_path / "h")
    sock = helper_paths(home)[0]
    thread = threading.Thread(target=serve, args=(home,), kwargs={"tick": 0.05}, daemon=True)
    thread.start()
    _wait(lambda: os.path.exists(helper_paths(home)[2]), "the helper never came up")
    yield home
    if os.path.lexists(sock):
        os.unlink(sock)
    thread.join(BOUND)
    assert not thread.is_alive(), "the helper did not exit when its socket was removed"
    assert not os.path.exists(helper_paths(home)[2]), "the helper left its pid file behind"


def _turns(transcript: Path) -> Iterator[None]:
    """Grow ``transcript`` line by line from the example session (one step per line)."""
    lines = EXAMPLE.read_bytes().splitlines(keepends=True)
    transcript.write_bytes(b"")
    for line in lines:
        with transcript.open("ab") as sink:
            sink.write(line)
        yield


def _payload(transcript: Path, event: str | None) -> bytes:
    body: dict[str, object] = {"session_id": "s1", "transcript_path": str(transcript)}
    if event is None:
        body["model"] = {"id": "claude-sonnet-4-5"}
    else:
        body["hook_event_name"] = event
        if event.startswith("PostToolUse"):
            body |= {"tool_name": "Bash", "tool_input": {"command": "make test"}, "tool_use_id": "x1"}
    return json.dumps(body).encode()


def test_the_helper_answers_as_the_commands_would(helper_home: str, tmp_path: Path) -> None:
    here, there = tmp_path / "local", tmp_path / "helped"
    here.mkdir()
    there.mkdir()
    home_here = str(tmp_path / "in-process")
    events = [None, "UserPromptSubmit", "PostToolUse", "Stop"]
    steps = 0
    for i, _ in enumerate(zip(_turns(here / "t.jsonl"), _turns(there / "t.jsonl"), strict=True)):
        event = events[i % len(events)]
        mine = _payload(here / "t.jsonl", event)
        theirs = _payload(there / "t.jsonl", event)
        if event is None:
            expected = (render_status(mine, home=home_here, color=False), "")
            answer = ask(helper_home, "status", "", theirs)
        else:
            result = run_hook(event, mine, home=home_here)
            expected = (result.stdout, result.stderr)
            answer = ask(helper_home, "hook", event, theirs)
        assert answer == expected, (i, event)
        steps += 1
    assert steps > 10
    local = load_counters(home_here, str(here / "t.jsonl"))
    with SessionLock(helper_home, str(there / "t.jsonl"), timeout=BOUND):  # written after the answer
        helped = load_counters(helper_home, str(there / "t.jsonl"))
    assert local is not None and helped is not None
    assert helped.assessment == local.assessment and helped.assessment is not None
    for field in ("fill", "turns", "observed", "notices", "drift", "instruction", "offset"):
        assert getattr(helped, field) == getattr(local, field), field


def test_no_helper_means_the_command_does_the_work(tmp_path: Path) -> None:
    home = tmp_path / "h"
    assert ask(str(home), "status", "", b"{}") is None  # no socket at all
    sock_path = helper_paths(str(home))[0]
    os.makedirs(os.path.dirname(sock_path))
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(sock_path)  # a socket left behind by a helper that died: nobody listens
    dead.close()
    started = time.monotonic()
    assert ask(str(home), "hook", "Stop", b"{}") is None
    assert time.monotonic() - started < 1.0
    os.unlink(sock_path)
    Path(sock_path).write_text("not a socket")
    assert ask(str(home), "hook", "Stop", b"{}") is None


def test_the_helper_declines_what_is_not_its_own(helper_home: str, tmp_path: Path) -> None:
    other_home = str(tmp_path / "other")
    os.makedirs(os.path.join(other_home, "claude-code"))
    os.symlink(helper_paths(helper_home)[0], helper_paths(other_home)[0])  # reached under another home
    assert ask(other_home, "status", "", b"{}") is None
    assert ask(helper_home, "hook", "PreCompact", b"{}") is None  # checkpoints stay in the command
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as raw:  # another installation's request
        raw.connect(helper_paths(helper_home)[0])
        header = "\0".join(("ctxhealth-helper-1", "/elsewhere|3.0", helper_home, "status", "", "0")).encode()
        raw.sendall(b"%08d" % len(header) + header + b"{}")
        raw.shutdown(socket.SHUT_WR)
        assert raw.recv(100) == b""


def test_a_bad_payload_through_the_helper_fails_open_like_the_command(helper_home: str) -> None:
    line, err = ask(helper_home, "status", "", b"garbage") or ("", "")
    assert line == "ctxhealth: n/a" and err.startswith("ctxhealth: statusline:")
    out, err = ask(helper_home, "hook", "Stop", b"garbage") or ("?", "")
    assert out == "" and "skipped" in err


def test_a_command_starts_a_helper_on_demand_which_exits_when_its_socket_goes(tmp_path: Path) -> None:
    home = tmp_path / "h"
    transcript = tmp_path / "t.jsonl"
    shutil.copyfile(EXAMPLE, transcript)
    env = {**os.environ, "CTXHEALTH_HOME": str(home)}
    env.pop("CTXHEALTH_HELPER", None)
    cmd = [sys.executable, "-m", "ctxhealth.cli.statusline", "--no-color"]
    first = subprocess.run(cmd, input=_payload(transcript, None), capture_output=True, env=env, timeout=60)
    assert first.returncode == 0 and first.stderr == b"" and b"ctxhealth" not in first.stdout[:10]
    sock, _, pid_file = helper_paths(str(home))
    _wait(lambda: os.path.exists(pid_file), "no helper was started")
    pid = int(Path(pid_file).read_text())
    try:
        assert ask(str(home), "status", "", _payload(transcript, None)) == (first.stdout.decode().strip(), "")
        payload = _payload(transcript, None)
        again = subprocess.run(cmd, input=payload, capture_output=True, env=env, timeout=60)
        assert again.stdout == first.stdout
    finally:
        os.unlink(sock)
    _wait(lambda: not _alive(pid), "the helper outlived its socket")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie until its parent (the command, long gone) is reaped by init: read its state
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][:1] != "Z"
    except (OSError, IndexError):
        return True


def test_the_helper_exits_when_idle(tmp_path: Path) -> None:
    home = str(tmp_path / "h")
    started = time.monotonic()
    assert serve(home, idle_seconds=0.2, tick=0.05) == 0
    assert time.monotonic() - started < BOUND
    assert not os.path.lexists(helper_paths(home)[0])


def test_one_helper_per_home(helper_home: str) -> None:
    assert serve(helper_home, idle_seconds=0.1, tick=0.05) == 0  # returns at once: the lock is held
    assert os.path.exists(helper_paths(helper_home)[0])  # and left the running helper's socket alone


def test_commands_answered_by_the_helper_import_none_of_the_pipeline(
    helper_home: str, tmp_path: Path
) -> None:
    transcript = tmp_path / "t.jsonl"
    shutil.copyfile(EXAMPLE, transcript)
    env = {**os.environ, "CTXHEALTH_HOME": helper_home}
    env.pop("CTXHEALTH_HELPER", None)
    code = (
        "import sys; from ctxhealth.cli.{module} import main; main({args}); "
        "names = sorted(sys.modules); import json; sys.stderr.write(json.dumps(names))"
    )
    for module, args, event in (("hook", "['Stop']", "Stop"), ("statusline", "['--no-color']", None)):
        done = subprocess.run(
            [sys.executable, "-c", code.format(module=module, args=args)],
            input=_payload(transcript, event),
            capture_output=True,
            env=env,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        loaded = set(json.loads(done.stderr))
        ours = {m for m in loaded if m.startswith("ctxhealth.") and not m.startswith("ctxhealth.cli")}
        expected = {
            m for m in CLIENT_MODULES if m.startswith("ctxhealth.") and not m.startswith("ctxhealth.cli")
        }
        assert ours == expected, ours
        for heavy in ("re", "json", "dataclasses", "typing", "socket", "sqlite3", "msgspec", "subprocess"):
            assert heavy not in loaded, (module, heavy)


def _imported(command: list[str], stdin: bytes, env: dict[str, str]) -> set[str]:
    """The modules ``command`` (a Python interpreter and its arguments) imports, from ``-X importtime``."""
    done = subprocess.run(
        [command[0], "-X", "importtime", *command[1:]], input=stdin, capture_output=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    lines = done.stderr.decode().splitlines()
    rows = [line.rsplit("|", 1)[-1].strip() for line in lines if line.startswith("import time:")]
    return set(rows[1:])  # the first row is the header


def test_the_installed_commands_answered_by_the_helper_add_only_their_own_modules_to_start_up(
    helper_home: str, tmp_path: Path
) -> None:
    """What the settings run (``hook_command``, ``statusline_command``), exactly as an agent's shell
    splits it: beyond bare ``python -c pass`` it imports ctxhealth's client modules, ``_socket`` and
    ``__future__``, nothing else (``python -m``'s ``runpy`` would add ``importlib.util``,
    ``contextlib``, ``collections`` and ``functools``)."""
    import shlex

    from ctxhealth.integrations.claude_code.install import hook_command, statusline_command

    transcript = tmp_path / "t.jsonl"
    shutil.copyfile(EXAMPLE, transcript)
    env = {**os.environ, "CTXHEALTH_HOME": helper_home}
    env.pop("CTXHEALTH_HELPER", None)
    bare = _imported([sys.executable, "-c", "pass"], b"", env)
    for command, event in (
        (hook_command(sys.executable, "Stop"), "Stop"),
        (hook_command(sys.executable, "PostToolUse"), "PostToolUse"),
        (statusline_command(sys.executable) + " --no-color", None),
    ):
        added = _imported(shlex.split(command), _payload(transcript, event), env) - bare
        assert "ctxhealth.integrations.claude_code.helper" in added, added  # the client asked the helper
        assert {m for m in added if not m.startswith("ctxhealth")} <= {"_socket", "__future__"}, (
            command,
            added,
        )
        assert {m for m in added if m.startswith("ctxhealth")} <= CLIENT_MODULES, (command, added)


def test_a_helper_is_started_only_where_it_can_help(helper_home: str, tmp_path: Path) -> None:
    from ctxhealth.integrations.claude_code.helper import worth_starting

    fresh = str(tmp_path / "fresh")
    assert ask(fresh, "status", "", b"{}") is None
    assert worth_starting(fresh)  # nobody there: a helper would answer the next command
    assert ask(helper_home, "hook", "PreCompact", b"{}") is None  # a live helper declined
    assert not worth_starting(helper_home)  # another would only find the home taken
    assert not worth_starting(str(tmp_path / ("x" * 120)))  # no socket path that long


def test_a_helper_stopped_with_sigterm_cleans_up(tmp_path: Path) -> None:
    home = str(tmp_path / "h")
    env = {k: v for k, v in os.environ.items() if k != "CTXHEALTH_HELPER"}
    proc = subprocess.Popen([sys.executable, "-m", "ctxhealth.cli.helper", home], env=env)
    sock, _, pid_file = helper_paths(home)
    try:
        _wait(lambda: os.path.exists(pid_file), "the helper never came up")
        assert oct(os.stat(sock).st_mode & 0o777) == oct(0o600)
    finally:
        proc.terminate()
        assert proc.wait(timeout=BOUND) == 0
    assert not os.path.lexists(sock) and not os.path.exists(pid_file)


def test_a_hook_hands_its_answer_on_before_it_saves(tmp_path: Path) -> None:
    home, transcript = str(tmp_path / "h"), tmp_path / "t.jsonl"
    shutil.copyfile(EXAMPLE, transcript)
    seen: list[tuple[str, object]] = []

    def early(stdout: str) -> None:
        saved = load_counters(home, str(transcript))
        seen.append((stdout, None if saved is None else saved.offset))

    result = run_hook("UserPromptSubmit", _payload(transcript, "UserPromptSubmit"), home=home, answer=early)
    saved = load_counters(home, str(transcript))
    assert saved is not None and saved.offset == transcript.stat().st_size
    assert seen == [(result.stdout, None)]  # the answer came first, the counters were written after


def test_the_status_line_is_handed_on_before_the_counters_are_saved(tmp_path: Path) -> None:
    home, transcript = str(tmp_path / "h"), tmp_path / "t.jsonl"
    shutil.copyfile(EXAMPLE, transcript)
    seen: list[tuple[str, object]] = []

    def early(line: str) -> None:
        saved = load_counters(home, str(transcript))
        seen.append((line, None if saved is None else saved.offset))

    line = render_status(_payload(transcript, None), home=home, color=False, answer=early)
    assert seen == [(line, None)] and "ctxhealth: no data" not in line
    assert render_status(_payload(transcript, None), home=home, color=False) == line  # saved after
