"""The real Gemini CLI against the fake Gemini API: what ctxhealth reads from its chat file equals what the
server saw (turns, fill, compression, failures, cost).

Scenarios: tools (a failing command, a file written, text), and a run that crosses the compression threshold
(``model.compressionThreshold``) followed by ``--resume latest``, where the CLI compresses (a
``<state_snapshot>`` request, then its check) and replaces the chat's messages. Each run is recorded as a
fixture with ``CTXHEALTH_RECORD_FIXTURES=1``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .fake_gemini import FakeGemini
from .run_gemini import chat_of, gemini_prompt, write_settings
from .truth import Truth, assert_matches, check_json, cli_version, record, recording, truth_of

pytestmark = pytest.mark.conformance

MODEL = "gemini-2.5-pro"
FAILING = ("false", "ls /nonexistent")


@pytest.fixture
def server() -> Iterator[FakeGemini]:
    with FakeGemini(model=MODEL) as fake:
        yield fake


def _failures(server: FakeGemini) -> int:
    count = 0
    for exchange in server.exchanges("turn"):
        for part in exchange.answer or []:
            call = part.get("functionCall") if isinstance(part, dict) else None
            if call and call["name"] == "run_shell_command":
                count += call["args"].get("command") in FAILING
    return count


def _finish(tmp_path: Path, server: FakeGemini, scenario: str) -> tuple[dict[str, object], Truth]:
    chat = chat_of(tmp_path)
    truth = truth_of(
        server.log, MODEL, failures=_failures(server), logged=("turn",), compaction_fill="last_turn"
    )
    if recording():
        files = {f"chat{chat.suffix}": chat, "projects.json": tmp_path / "home" / ".gemini" / "projects.json"}
        record("gemini", cli_version("gemini"), scenario, files, truth, scratch=tmp_path)
    return check_json(chat, "--strict"), truth


def test_tools(tmp_path: Path, server: FakeGemini) -> None:
    write_settings(tmp_path)
    gemini_prompt(
        tmp_path,
        server,
        MODEL,
        "Fix it.\nSTEP shell ls /nonexistent\nSTEP patch hello.txt hi there\nSTEP say done",
    )
    figures, truth = _finish(tmp_path, server, "tools")
    assert truth.turns == 3 and truth.failures == 1
    assert_matches(figures, truth)
    assert figures["tool_calls"] == 2
    assert figures["warnings"] == []


def test_compression_then_resume(tmp_path: Path, server: FakeGemini) -> None:
    write_settings(tmp_path, compression=0.013)
    script = "Count.\nSTEP shell seq 1 2500\nSTEP shell seq 1 2500\nSTEP shell false\nSTEP say finished"
    gemini_prompt(tmp_path, server, MODEL, script)
    gemini_prompt(
        tmp_path,
        server,
        MODEL,
        "--resume",
        "latest",
        "Again.\nSTEP shell seq 1 2500\nSTEP say finished again",
    )
    figures, truth = _finish(tmp_path, server, "compression-resume")
    assert truth.compactions >= 1  # 0.61 compresses once here, 0.45 three times, 0.30 twice
    assert_matches(figures, truth)
    assert figures["warnings"] == []
