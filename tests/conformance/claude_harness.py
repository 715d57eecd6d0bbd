"""Run the real Claude Code CLI against :mod:`fake_anthropic` in a scratch HOME and project.

:func:`claude_env` is the environment the CLI needs to run with no account and no network: ``HOME`` (its
``~/.claude.json`` marks onboarding done and the project trusted, so no first-run dialog), the fake server as
``ANTHROPIC_BASE_URL``, a fake ``ANTHROPIC_API_KEY``, ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1`` (no
telemetry, update checks or feedback calls) and ``IS_SANDBOX=1`` (lets ``--dangerously-skip-permissions`` run
as root). :class:`ClaudeRun` holds what a run left: stdout, stderr, exit code, and the transcripts under the
scratch ``~/.claude/projects``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from .agents import REQUIRE_ENV, agent_or_skip
from .fake_anthropic import Exchange, FakeAnthropic, message_text

FAKE_KEY = "sk-ant-api03-fake-conformance-key-000000000000000000000000000000000000000000000000AA"
RUN_TIMEOUT = 90


@dataclass
class ClaudeRun:
    args: list[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float


class ClaudeBox:
    """A scratch HOME + project for one or more runs of the CLI against one fake server."""

    def __init__(self, root: Path, server: FakeAnthropic, cli: Path | None = None) -> None:
        self.cli = cli if cli is not None else agent_or_skip("claude")
        self.server = server
        self.base_url = server.url  # what ANTHROPIC_BASE_URL points at (e.g. a ctxhealth proxy in front)
        self.home = root / "home"
        self.project = root / "project"
        self.home.mkdir(parents=True, exist_ok=True)
        self.project.mkdir(parents=True, exist_ok=True)
        self.runs: list[ClaudeRun] = []
        self._write_state()

    def _write_state(self) -> None:
        """``~/.claude.json``: onboarding done, the project's trust dialog accepted, the key approved."""
        state = {
            "hasCompletedOnboarding": True,
            "lastOnboardingVersion": "2.1.332",
            "bypassPermissionsModeAccepted": True,
            "customApiKeyResponses": {"approved": [FAKE_KEY[-20:]], "rejected": []},
            "projects": {
                str(self.project): {
                    "hasTrustDialogAccepted": True,
                    "hasCompletedProjectOnboarding": True,
                    "allowedTools": [],
                }
            },
        }
        path = self.home / ".claude.json"
        if path.exists():
            old = json.loads(path.read_text("utf-8"))
            old.update({k: v for k, v in state.items() if k != "projects"})
            old.setdefault("projects", {}).update(state["projects"])
            state = old
        path.write_text(json.dumps(state, indent=2), "utf-8")

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "USER": os.environ.get("USER", "root"),
            "LANG": "C.UTF-8",
            "TERM": "xterm-256color",
            "SHELL": "/bin/bash",
            "ANTHROPIC_BASE_URL": self.base_url,
            "ANTHROPIC_API_KEY": FAKE_KEY,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "IS_SANDBOX": "1",
            "TMPDIR": str(self.home / "tmp"),
            "CTXHEALTH_HOME": str(self.home / ".ctxhealth"),
        }
        (self.home / "tmp").mkdir(exist_ok=True)
        # the worktree's python first, so hooks `ctxhealth ...` resolve to the code under test
        env["PATH"] = f"{Path(sys.executable).parent}:{env['PATH']}"
        env.update(extra or {})
        return env

    def run(
        self, *args: str, extra_env: dict[str, str] | None = None, timeout: float = RUN_TIMEOUT
    ) -> ClaudeRun:
        """``claude ARGS --debug-file HOME/debug-N.log`` in the project; waits for it to exit.

        The debug log is where the CLI says which hooks ran (see :func:`hooks_fired`)."""
        debug = self.home / f"debug-{len(self.runs)}.log"
        command = [str(self.cli), *args, "--debug-file", str(debug)]
        started = time.monotonic()
        done = subprocess.run(
            command,
            cwd=self.project,
            env=self.env(extra_env),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        run = ClaudeRun(list(args), done.returncode, done.stdout, done.stderr, time.monotonic() - started)
        self.runs.append(run)
        return run

    def print_mode(self, prompt: str, *flags: str, extra_env: dict[str, str] | None = None) -> ClaudeRun:
        """``claude -p PROMPT --dangerously-skip-permissions FLAGS``; fails the test if the CLI failed."""
        run = self.run("-p", prompt, "--dangerously-skip-permissions", *flags, extra_env=extra_env)
        assert run.returncode == 0, f"claude {run.args} exited {run.returncode}\n{run.stdout}\n{run.stderr}"
        return run

    def install_ctxhealth(self) -> None:
        """``ctxhealth install claude-code --apply`` in the scratch HOME (its hooks run this python)."""
        done = ctxhealth(
            ["install", "claude-code", "--apply"], env=self.env({"CTXHEALTH_HOME": str(self.ctxhealth_home)})
        )
        assert done.returncode == 0, done.stderr

    def close(self) -> None:
        """Stop the per-turn helper the installed hooks started for this HOME (it would idle for minutes)."""
        pid_file = self.ctxhealth_home / "claude-code" / "helper.pid"
        try:
            pid = int(pid_file.read_text("utf-8").strip())
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, ValueError):
            return
        if "ctxhealth.cli.helper" in cmdline and str(self.ctxhealth_home) in cmdline:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)

    @property
    def ctxhealth_home(self) -> Path:
        return self.home / ".ctxhealth"

    @property
    def projects(self) -> Path:
        return self.home / ".claude" / "projects"

    def transcripts(self) -> list[Path]:
        """The main transcripts (not sub-agents'), oldest first."""
        if not self.projects.is_dir():
            return []
        found = [p for p in self.projects.glob("*/*.jsonl")]
        return sorted(found, key=lambda p: p.stat().st_mtime)

    def subagent_files(self) -> list[Path]:
        return sorted(self.projects.glob("*/*/subagents/*")) if self.projects.is_dir() else []

    def transcript(self) -> Path:
        found = self.transcripts()
        assert found, f"no transcript under {self.projects}"
        return found[-1]


HOOK_RAN = re.compile(
    r"\] (?:Hooks: )?(\w+)(?::(\S+))? \[([^\]]*)\] (?:finished|completed) with status (\d+)"
)


@dataclass(frozen=True)
class HookRun:
    event: str
    matcher: str
    command: str
    status: int


def hooks_fired(box: ClaudeBox) -> list[HookRun]:
    """Every command hook the CLI ran, in order, from its debug logs.

    The CLI logs "Hooks: EVENT[:MATCH] [CMD] finished with status N" (PreCompact: "PreCompact:TRIGGER [CMD]
    completed with status N")."""
    out = []
    for log in sorted(box.home.glob("debug-*.log"), key=lambda p: int(p.stem.split("-")[1])):
        for match in HOOK_RAN.finditer(log.read_text("utf-8", errors="replace")):
            out.append(HookRun(match[1], match[2] or "", match[3], int(match[4])))
    return out


CTXHEALTH_NOTE = re.compile(r"\[ctxhealth\][^\n]*")


def injected(exchange: Exchange) -> list[str]:
    """The first line of every ``[ctxhealth]`` note in the request's messages (what the hooks injected that
    the model read), in order, each once."""
    seen: list[str] = []
    for message in exchange.body.get("messages", []):
        for match in CTXHEALTH_NOTE.finditer(message_text(message)):
            if match[0] not in seen:
                seen.append(match[0])
    return seen


def lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def ctxhealth(args: Sequence[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The ctxhealth CLI of the code under test."""
    command = [sys.executable, "-c", "from ctxhealth.cli.main import main; main()", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=env, check=False)


def check_json(path: Path) -> dict[str, Any]:
    """``ctxhealth check --json`` of one log: how it reads on its own (the reading every live surface
    must agree with)."""
    done = ctxhealth(["check", str(path), "--json"])
    assert done.returncode in (0, 1, 2), done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


class TmuxClaude:
    """The interactive CLI in a detached tmux session (its own socket): type, wait, read the screen."""

    def __init__(self, box: ClaudeBox, *args: str, width: int = 160, height: int = 40) -> None:
        self.tmux = shutil.which("tmux")
        if self.tmux is None:
            reason = "tmux not found on PATH (apt-get install tmux)"
            if os.environ.get(REQUIRE_ENV) == "require":
                pytest.fail(f"{reason}; {REQUIRE_ENV}=require")
            pytest.skip(reason)
        self.box = box
        # a short socket path (a unix socket's path is limited to about 100 bytes)
        self._socket_dir = tempfile.mkdtemp(prefix="cc-tmux-")
        self.socket = os.path.join(self._socket_dir, "s")
        debug = box.home / f"debug-{len(list(box.home.glob('debug-*.log')))}.log"
        self.debug = debug
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in box.env().items())
        argv = " ".join(shlex.quote(a) for a in [str(box.cli), *args, "--debug-file", str(debug)])
        command = f"cd {shlex.quote(str(box.project))} && exec env -i {env} {argv}"
        self._tmux("new-session", "-d", "-x", str(width), "-y", str(height), command)
        self._tmux("set-option", "-t", "0", "remain-on-exit", "on")  # a CLI that exits leaves its screen

    def _tmux(self, *args: str) -> str:
        assert self.tmux is not None
        done = subprocess.run(
            [self.tmux, "-S", self.socket, *args], capture_output=True, text=True, timeout=20
        )
        return done.stdout

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p")

    def wait_for(self, predicate: Callable[[str], bool], timeout: float = 60, what: str = "") -> str:
        """The screen once ``predicate(screen)`` holds; fails the test with the screen after ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if predicate(screen):
                return screen
            if time.monotonic() > deadline:
                log = self.debug.read_text("utf-8", errors="replace")[-3000:] if self.debug.exists() else ""
                raise AssertionError(
                    f"timed out waiting for {what or predicate}:\n{screen}\n--- debug log:\n{log}"
                )
            time.sleep(0.2)

    def type(self, text: str) -> None:
        """Type ``text`` literally, then Enter."""
        self._tmux("send-keys", "-l", text)
        time.sleep(0.3)
        self._tmux("send-keys", "Enter")

    def close(self) -> None:
        self._tmux("kill-server")
        shutil.rmtree(self._socket_dir, ignore_errors=True)

    def __enter__(self) -> TmuxClaude:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
