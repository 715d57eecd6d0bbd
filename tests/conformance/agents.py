"""Where the conformance suite finds the real agent CLIs, and what it does when one is missing.

A CLI is looked up in the directory ``$CTXHEALTH_AGENT_BIN`` when that is set, else on ``PATH``. A missing
CLI skips its tests with the reason, except under ``CTXHEALTH_CONFORMANCE=require`` (CI sets it), where it
fails them: a suite that silently skips is no conformance suite. :func:`run_agent` runs one in a scratch
``HOME`` (the way every per-agent runner, ``run_codex`` and ``run_gemini``, does).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

REQUIRE_ENV = "CTXHEALTH_CONFORMANCE"
BIN_ENV = "CTXHEALTH_AGENT_BIN"


def find_agent(name: str) -> Path | None:
    """The executable of agent CLI ``name`` (``claude``, ``codex``, ``gemini``), or None."""
    folder = os.environ.get(BIN_ENV)
    if folder:
        candidate = Path(folder) / name
        return candidate if candidate.is_file() and os.access(candidate, os.X_OK) else None
    found = shutil.which(name)
    return Path(found) if found else None


def agent_or_skip(name: str) -> Path:
    """The CLI ``name``; skips the test when it is missing, or fails it when the suite is required."""
    path = find_agent(name)
    if path is not None:
        return path
    where = f"${BIN_ENV}={os.environ[BIN_ENV]}" if os.environ.get(BIN_ENV) else "PATH"
    reason = f"agent CLI {name!r} not found in {where} (install with .ci/install-agents PREFIX)"
    if os.environ.get(REQUIRE_ENV) == "require":
        pytest.fail(f"{reason}; {REQUIRE_ENV}=require")
    pytest.skip(reason)


def agent_version(path: Path) -> str:
    """What ``CLI --version`` prints: its first line holding a version number (an older CLI may warn
    first), else its first line."""
    env = dict(os.environ)
    if not Path(env.get("HOME", "")).is_dir():  # an older CLI cannot even say its version without one
        env["HOME"] = tempfile.gettempdir()
    done = subprocess.run(
        [str(path), "--version"], capture_output=True, text=True, timeout=60, check=False, env=env
    )
    lines = (done.stdout or done.stderr).strip().splitlines()
    return next((line for line in lines if re.search(r"\d+\.\d+\.\d+", line)), lines[0] if lines else "")


def scratch_env(root: Path, env: Mapping[str, str]) -> dict[str, str]:
    """An agent's environment in the scratch tree ``root``: ``PATH``, ``HOME=root/home``, no colour, plus
    ``env`` (its key, its fake server, ...)."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(root / "home"),
        "NO_COLOR": "1",
        **env,
    }


def run_agent(
    root: Path,
    exe: Path,
    argv: Sequence[str],
    env: Mapping[str, str],
    *,
    timeout: float = 120,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    """``exe ARGV...`` in ``root/project`` with :func:`scratch_env` and stdin closed; fails the test
    on a non-zero exit (with the end of its stderr) unless ``check`` is false."""
    work = root / "project"
    work.mkdir(exist_ok=True)
    done = subprocess.run(
        [str(exe), *argv],
        cwd=work,
        env=scratch_env(root, env),
        capture_output=True,
        stdin=subprocess.DEVNULL,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0 or not check, done.stderr[-3000:]
    return done


def run_mini_jobs(
    jobs: Sequence[Sequence[str]], home: Path, *, timeout: float
) -> subprocess.CompletedProcess[str]:
    """Every mini-swe-agent job (``run_mini.py``'s ``[BASE_URL, MODE, TASK, OUTPUT]``) in one process
    (litellm takes seconds to import), with ``home`` as HOME, none of this machine's OpenAI or
    mini-swe-agent settings, and litellm's local price map. The caller checks the exit code."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "MSWEA"))},
        "HOME": str(home),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "MSWEA_CONFIGURED": "true",
    }
    return subprocess.run(
        [sys.executable, str(Path(__file__).with_name("run_mini.py")), json.dumps([list(j) for j in jobs])],
        env=env,
        capture_output=True,
        stdin=subprocess.DEVNULL,
        text=True,
        timeout=timeout,
        check=False,
    )
