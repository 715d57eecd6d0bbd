"""The real Gemini CLI after ``ctxhealth uninstall gemini`` in a settings.json that also holds the MCP
server ``ctxhealth install mcp --agent gemini`` wrote: the CLI still lists and connects the server
(the hooks' uninstall took out only the hooks), and the server's uninstall then gives the user's file
back byte for byte."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .agents import agent_or_skip, run_agent, scratch_env
from .claude_harness import ctxhealth
from .run_gemini import write_settings

pytestmark = pytest.mark.conformance


def _ctxhealth(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    done = ctxhealth(list(args), env=env)
    assert done.returncode == 0, done.stderr
    return done


def test_gemini_keeps_the_mcp_server_when_the_hooks_are_uninstalled(tmp_path: Path) -> None:
    exe = agent_or_skip("gemini")
    settings = write_settings(tmp_path)
    env = {"GEMINI_API_KEY": "fake-key", "GEMINI_CLI_TRUST_WORKSPACE": "true"}
    # Gemini CLI rewrites a settings.json with deprecated keys (general.disableAutoUpdate becomes
    # enableAutoUpdate) when it starts: let it, so the original is the file as Gemini keeps it
    run_agent(tmp_path, exe, ["mcp", "list"], env, timeout=60)
    original = settings.read_bytes()
    cli_env = scratch_env(tmp_path, {})
    _ctxhealth(cli_env, "install", "gemini", "--python", sys.executable, "--apply")
    _ctxhealth(cli_env, "install", "mcp", "--agent", "gemini", "--python", sys.executable, "--apply")
    _ctxhealth(cli_env, "uninstall", "gemini", "--apply")
    assert b"ctxhealth.cli.hook" not in settings.read_bytes()

    listed = run_agent(tmp_path, exe, ["mcp", "list"], env, timeout=60)
    shown = listed.stdout + listed.stderr  # the list goes to stderr in 0.61
    line = next((ln for ln in shown.splitlines() if "ctxhealth:" in ln), "")
    assert "ctxhealth.cli.mcp" in line and "Connected" in line, shown

    _ctxhealth(cli_env, "uninstall", "mcp", "--agent", "gemini", "--apply")
    assert settings.read_bytes() == original
    assert not list(settings.parent.glob("settings.json.ctxhealth-*"))
