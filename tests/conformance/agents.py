"""Where the conformance suite finds the real agent CLIs, and what it does when one is missing.

A CLI is looked up in the directory ``$CTXHEALTH_AGENT_BIN`` when that is set, else on ``PATH``. A missing
CLI skips its tests with the reason, except under ``CTXHEALTH_CONFORMANCE=require`` (CI sets it), where it
fails them: a suite that silently skips is no conformance suite.
"""

from __future__ import annotations

import os
import shutil
import subprocess
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
    """What ``CLI --version`` prints, first line."""
    done = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=60, check=False)
    return (done.stdout or done.stderr).strip().splitlines()[0] if (done.stdout or done.stderr) else ""
