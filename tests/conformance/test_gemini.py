"""The real Gemini CLI against the fake Gemini API: what ctxhealth reads from its chat file equals what the
server saw (turns, fill, compression, failures, cost).

Scenarios: tools (a failing command, a file written, text), and a run that crosses the compression threshold
(``model.compressionThreshold``) followed by ``--resume latest``, where the CLI compresses (a
``<state_snapshot>`` request, then its check) and replaces the chat's messages. Each run is recorded as a
fixture with ``CTXHEALTH_RECORD_FIXTURES=1``.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from .agents import agent_or_skip, agent_version
from .fake_gemini import FakeGemini
from .truth import Truth, assert_matches, check_json, record, truth_of

pytestmark = pytest.mark.conformance

MODEL = "gemini-2.5-pro"
FAILING = ("false", "ls /nonexistent")


@pytest.fixture
def server() -> Iterator[FakeGemini]:
    with FakeGemini(model=MODEL) as fake:
        yield fake


def _settings(tmp_path: Path, *, compression: float | None = None) -> None:
    settings: dict[str, object] = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
    }
    if compression is not None:
        settings["model"] = {"compressionThreshold": compression}
    folder = tmp_path / "home" / ".gemini"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "settings.json").write_text(json.dumps(settings), "utf-8")


def _gemini(tmp_path: Path, server: FakeGemini, *args: str) -> subprocess.CompletedProcess[str]:
    exe = agent_or_skip("gemini")
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path / "home"),
        "GEMINI_API_KEY": "fake-key",
        "GOOGLE_GEMINI_BASE_URL": server.url,
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
        "NO_COLOR": "1",
    }
    done = subprocess.run(
        [str(exe), "--yolo", "-m", MODEL, *args[:-1], "-p", args[-1]],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def _chat(tmp_path: Path) -> Path:
    found = sorted((tmp_path / "home" / ".gemini" / "tmp").rglob("session-*.jsonl"))
    assert len(found) == 1, found
    return found[0]


def _failures(server: FakeGemini) -> int:
    count = 0
    for exchange in server.exchanges("turn"):
        for part in exchange.answer or []:
            call = part.get("functionCall") if isinstance(part, dict) else None
            if call and call["name"] == "run_shell_command":
                count += call["args"].get("command") in FAILING
    return count


def _finish(tmp_path: Path, server: FakeGemini, scenario: str) -> tuple[dict[str, object], Truth]:
    chat = _chat(tmp_path)
    truth = truth_of(
        server.log, MODEL, failures=_failures(server), logged=("turn",), compaction_fill="last_turn"
    )
    version = agent_version(agent_or_skip("gemini")).split()[-1]
    files = {"chat.jsonl": chat, "projects.json": tmp_path / "home" / ".gemini" / "projects.json"}
    record("gemini", version, scenario, files, truth, scratch=tmp_path)
    return check_json(chat, "--strict"), truth


def test_tools(tmp_path: Path, server: FakeGemini) -> None:
    _settings(tmp_path)
    _gemini(
        tmp_path, server, "Fix it.\nSTEP shell ls /nonexistent\nSTEP patch hello.txt hi there\nSTEP say done"
    )
    figures, truth = _finish(tmp_path, server, "tools")
    assert truth.turns == 3 and truth.failures == 1
    assert_matches(figures, truth)
    assert figures["tool_calls"] == 2
    assert figures["warnings"] == []


def test_compression_then_resume(tmp_path: Path, server: FakeGemini) -> None:
    _settings(tmp_path, compression=0.013)
    script = "Count.\nSTEP shell seq 1 2500\nSTEP shell seq 1 2500\nSTEP shell false\nSTEP say finished"
    _gemini(tmp_path, server, script)
    _gemini(tmp_path, server, "--resume", "latest", "Again.\nSTEP shell seq 1 2500\nSTEP say finished again")
    figures, truth = _finish(tmp_path, server, "compression-resume")
    assert truth.compactions == 1
    assert_matches(figures, truth)
    assert figures["warnings"] == []
