"""The window ctxhealth reads a Claude Code session with is the one the real CLI works with.

Claude Code's ``-p --output-format json`` result states, per model, the ``contextWindow`` it works with
(``modelUsage``): the truth here. Its transcript names the plain model whether or not the session asked
for the 1M context (the ``[1m]`` suffix is sent as the ``context-1m`` beta header, which the fake server
logs), so ``check`` reads the model's standard window until a prompt above it proves the 1M one, and the
proxy, which sees the header, reads the 1M window from the first request.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from proxy_process import ProxyProcess

from .agents import agent_or_skip
from .claude_harness import ClaudeBox, check_json
from .fake_anthropic import FakeAnthropic

pytestmark = pytest.mark.conformance


def _stated_windows(stdout: str) -> dict[str, int]:
    result: dict[str, Any] = json.loads(stdout)
    return {model: int(usage["contextWindow"]) for model, usage in result["modelUsage"].items()}


MODELS = ["claude-sonnet-4-6", "claude-opus-4-6", "claude-opus-4-7", "claude-sonnet-5"]


@pytest.mark.parametrize("model", MODELS)
def test_check_reads_a_session_with_the_window_claude_code_works_with(model: str, tmp_path: Path) -> None:
    """Sonnet 4.6 and Opus 4.6: 200K (the price package gives their 1M maximum); Opus 4.7 and Sonnet 5:
    1M natively."""
    with FakeAnthropic() as fake:
        box = ClaudeBox(tmp_path, fake, agent_or_skip("claude"))
        try:
            run = box.print_mode("Say hello.", "--model", model, "--output-format", "json")
            assert run.returncode == 0, run.stderr[-500:]
            stated = _stated_windows(run.stdout)
            assert "context-1m" not in fake.messages("main")[0].headers.get("anthropic-beta", "")
            assert check_json(box.transcript())["window"] == stated[model]
        finally:
            box.close()


def test_a_1m_session_is_read_with_1m_by_the_proxy_that_sees_its_request(tmp_path: Path) -> None:
    model = "claude-sonnet-4-6"
    with FakeAnthropic() as fake:
        proxy = ProxyProcess(fake.url, "--mode", "observe")
        box = ClaudeBox(tmp_path, fake, agent_or_skip("claude"))
        try:
            run = box.print_mode(
                "Say hello.",
                "--model",
                f"{model}[1m]",
                "--output-format",
                "json",
                extra_env={"ANTHROPIC_BASE_URL": proxy.url},
            )
            assert run.returncode == 0, run.stderr[-500:]
            assert _stated_windows(run.stdout) == {f"{model}[1m]": 1_000_000}
            main = fake.messages("main")[0]
            assert main.body["model"] == model and "context-1m" in main.headers.get("anthropic-beta", "")
            sessions = proxy.status()["sessions"]
            assert isinstance(sessions, list) and sessions
            assert {s["usable_window"] for s in sessions} == {1_000_000 - 20_000 - 13_000}
            # the transcript cannot tell under 200K: it names the plain model and no prompt was above it
            transcript = box.transcript().read_text("utf-8")
            assert f'"model":"{model}"' in transcript.replace(" ", "")
            assert check_json(box.transcript())["window"] == 200_000
        finally:
            box.close()
            proxy.stop()
