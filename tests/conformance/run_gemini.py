"""Running the real Gemini CLI against a fake Gemini server in a scratch home (shared by the Gemini tests).

:func:`write_settings` writes ``HOME/.gemini/settings.json`` (API-key auth, no updates, no telemetry;
``extra`` merged in at the top level: hooks, model settings, ...). :func:`gemini_prompt` runs
``gemini --yolo -m MODEL [ARGS...] -p PROMPT`` in ``root/project`` with ``GOOGLE_GEMINI_BASE_URL`` at the
fake, a fake ``GEMINI_API_KEY`` and stdin closed; :func:`chat_of` finds the chat it wrote.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

from .agents import agent_or_skip, run_agent, scratch_env
from .fake_gemini import FakeGemini


def write_settings(
    root: Path, *, compression: float | None = None, extra: dict[str, Any] | None = None
) -> Path:
    settings: dict[str, Any] = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
    }
    if compression is not None:
        settings["model"] = {"compressionThreshold": compression}
    settings.update(extra or {})
    folder = root / "home" / ".gemini"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "settings.json"
    path.write_text(json.dumps(settings), "utf-8")
    return path


def gemini_env(root: Path, server: FakeGemini, env: dict[str, str] | None = None) -> dict[str, str]:
    """What Gemini CLI runs with under ``root`` (a fake key, the fake's URL, the workspace trusted)."""
    return scratch_env(
        root,
        {
            "GEMINI_API_KEY": "fake-key",
            "GOOGLE_GEMINI_BASE_URL": server.url,
            "GEMINI_CLI_TRUST_WORKSPACE": "true",
            **(env or {}),
        },
    )


def gemini_prompt(
    root: Path,
    server: FakeGemini,
    model: str,
    *args: str,
    env: dict[str, str] | None = None,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    """One non-interactive run (the last argument is the prompt); fails the test on a non-zero exit
    unless ``check`` is false (``env`` may point ``GOOGLE_GEMINI_BASE_URL`` elsewhere: a proxy)."""
    exe = agent_or_skip("gemini")
    return run_agent(
        root,
        exe,
        ["--yolo", "-m", model, *args[:-1], "-p", args[-1]],
        gemini_env(root, server, env),
        check=check,
    )


def chat_of(root: Path) -> Path:
    """The session's chat (``session-*.jsonl``; before the JSONL log, one ``session-*.json`` document). A
    resume started in a later minute than the session also leaves a stub: a new file holding only the
    harness context (Gemini CLI 0.61 names files by the minute), not the chat."""
    tmp = root / "home" / ".gemini" / "tmp"
    found = sorted([*tmp.rglob("session-*.jsonl"), *tmp.rglob("session-*.json")])
    chats = [p for p in found if re.search(rb'"type":\s*"gemini"', p.read_bytes())]
    assert len(chats) == 1, found
    return chats[0]
