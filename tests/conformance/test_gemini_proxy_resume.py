"""Gemini CLI resumed through the proxy: the proxy's tool counts are the server's.

Gemini CLI 0.61 sends a resumed history with each function response twice in its turn. The proxy reads
the resume as a new conversation (the bytes of the history changed, as the model sees them) and observes
it again; a repeated response is no second result, so the calls and failures it counts are the ones the
scripted model made and the one that failed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from proxy_process import ProxyProcess

from .agents import agent_or_skip
from .fake_gemini import FakeGemini
from .run_gemini import gemini_prompt, write_settings

pytestmark = pytest.mark.conformance

MODEL = "gemini-2.5-pro"
TASK = (
    "Count.\n" + "STEP shell seq 1 30\n" * 2 + "STEP shell false\nSTEP say finished",
    "Again.\nSTEP shell seq 1 30\nSTEP say finished again",
)


def test_a_resumed_session_counts_each_tool_result_once(tmp_path: Path) -> None:
    agent_or_skip("gemini")
    with FakeGemini(model=MODEL) as server:
        proxy = ProxyProcess(server.url, "--mode", "observe")
        try:
            write_settings(tmp_path, compression=0.9)  # no compression: the resume is the only rewrite
            for i, prompt in enumerate(TASK):
                done = gemini_prompt(
                    tmp_path,
                    server,
                    MODEL,
                    *(["--resume", "latest"] if i else []),
                    prompt,
                    env={"GOOGLE_GEMINI_BASE_URL": proxy.url},
                    check=False,
                )
                assert done.returncode == 0, done.stderr[-500:]
            sessions = proxy.status()["sessions"]
        finally:
            proxy.stop()
    calls = [
        part["functionCall"]
        for e in server.exchanges("turn")
        for part in e.answer or []
        if isinstance(part, dict) and "functionCall" in part
    ]
    assert len(calls) == 4
    assert isinstance(sessions, list) and len(sessions) == 1
    assert (sessions[0]["tool_calls"], sessions[0]["tool_errors"]) == (len(calls), 1)
