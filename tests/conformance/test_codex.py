"""The real Codex CLI against the fake OpenAI Responses API: what ctxhealth reads from its rollout equals what
the server saw (turns, fill, compactions, failures, cost).

Scenarios: tools (a failing command, an ``apply_patch``, text) then ``codex exec resume --last``; a forced
compaction (``model_auto_compact_token_limit``) with a custom provider (Codex compacts locally: a summary
request) and with the default OpenAI provider pointed at the fake with ``openai_base_url`` (Codex compacts
remotely: an encrypted compaction item). Each run is recorded as a fixture with
``CTXHEALTH_RECORD_FIXTURES=1``.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from .agents import agent_or_skip, agent_version
from .fake_openai import FakeOpenAI
from .truth import Truth, assert_matches, check_json, record, truth_of

pytestmark = pytest.mark.conformance

MODEL = "gpt-5.5"
FAILING = ("false", "ls /nonexistent")
"""Commands of the scripts that exit non-zero."""


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(model=MODEL) as fake:
        yield fake


def _config(home: Path, server: FakeOpenAI, *, provider: str, compact_limit: int | None) -> None:
    lines = [f'model = "{MODEL}"']
    if compact_limit is not None:
        lines.append(f"model_auto_compact_token_limit = {compact_limit}")
    if provider == "default":
        lines.append(f'openai_base_url = "{server.url}/v1"')
    else:
        lines += [
            'model_provider = "fake"',
            "[model_providers.fake]",
            'name = "Fake"',
            f'base_url = "{server.url}/v1"',
            'env_key = "FAKE_OPENAI_KEY"',
            'wire_api = "responses"',
            "supports_websockets = false",
        ]
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("\n".join(lines) + "\n", "utf-8")


def _codex(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    exe = agent_or_skip("codex")
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path / "home"),
        "CODEX_HOME": str(tmp_path / "codex"),
        "OPENAI_API_KEY": "sk-fake",
        "FAKE_OPENAI_KEY": "sk-fake",
        "NO_COLOR": "1",
    }
    command = [
        str(exe),
        "exec",
        *args[:-1],
        "--skip-git-repo-check",
        "--dangerously-bypass-approvals-and-sandbox",
    ]
    done = subprocess.run(
        [*command, args[-1]], cwd=work, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def _rollout(tmp_path: Path) -> Path:
    found = sorted((tmp_path / "codex" / "sessions").rglob("rollout-*.jsonl"))
    assert len(found) == 1, found
    return found[0]


def _failures(server: FakeOpenAI) -> int:
    """Shell calls the server asked for whose command fails."""
    count = 0
    for exchange in server.exchanges("turn"):
        for item in exchange.answer or []:
            if item.get("type") == "function_call":
                command = json.loads(item["arguments"]).get("cmd")
                count += command in FAILING
    return count


def _finish(tmp_path: Path, server: FakeOpenAI, scenario: str) -> tuple[dict[str, object], Truth]:
    rollout = _rollout(tmp_path)
    truth = truth_of(server.log, MODEL, failures=_failures(server))
    version = agent_version(agent_or_skip("codex")).split()[-1]
    record("codex", version, scenario, {"rollout.jsonl": rollout}, truth, scratch=tmp_path)
    return check_json(rollout, "--strict"), truth


def test_tools_then_resume(tmp_path: Path, server: FakeOpenAI) -> None:
    _config(tmp_path / "codex", server, provider="custom", compact_limit=None)
    _codex(
        tmp_path, "Fix it.\nSTEP shell ls /nonexistent\nSTEP patch hello.txt hi there\nSTEP say first done"
    )
    _codex(tmp_path, "resume", "--last", "Again.\nSTEP shell false\nSTEP say second done")
    figures, truth = _finish(tmp_path, server, "tools-resume")
    assert truth.turns == 5 and truth.failures == 2
    assert_matches(figures, truth)
    assert figures["tool_calls"] == 3
    assert figures["warnings"] == []


def test_compaction_custom_provider(tmp_path: Path, server: FakeOpenAI) -> None:
    _config(tmp_path / "codex", server, provider="custom", compact_limit=14000)
    script = "Count.\nSTEP shell seq 1 2500\nSTEP shell seq 1 2500\nSTEP shell false\nSTEP shell seq 1 2500"
    _codex(tmp_path, script + "\nSTEP say finished")
    figures, truth = _finish(tmp_path, server, "compaction-custom-provider")
    assert truth.compactions >= 1
    assert_matches(figures, truth)
    assert figures["warnings"] == []


def test_compaction_default_provider(tmp_path: Path, server: FakeOpenAI) -> None:
    _config(tmp_path / "codex", server, provider="default", compact_limit=14000)
    script = "Count.\nSTEP shell seq 1 2500\nSTEP shell seq 1 2500\nSTEP shell false\nSTEP shell seq 1 2500"
    _codex(tmp_path, script + "\nSTEP say finished")
    figures, truth = _finish(tmp_path, server, "compaction-default-provider")
    assert truth.compactions >= 1
    assert_matches(figures, truth)
    assert figures["warnings"] == []
