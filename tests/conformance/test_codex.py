"""The real Codex CLI against the fake OpenAI Responses API: what ctxhealth reads from its rollout equals what
the server saw (turns, fill, compactions, failures, cost).

Scenarios: tools (a failing command, an ``apply_patch``, text) then ``codex exec resume --last``; a forced
compaction (``model_auto_compact_token_limit``) with a custom provider (over HTTPS; Codex compacts locally:
a summary request) and with the default OpenAI provider pointed at the fake with ``openai_base_url`` (over
a WebSocket, as with OpenAI; Codex compacts remotely: an encrypted compaction item). Each run is recorded
as a fixture with ``CTXHEALTH_RECORD_FIXTURES=1``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from .fake_openai import FakeOpenAI
from .run_codex import codex_exec, rollout_of, write_config
from .truth import Truth, assert_matches, check_json, cli_version, record, recording, truth_of

pytestmark = pytest.mark.conformance

MODEL = "gpt-5.5"
FAILING = ("false", "ls /nonexistent")
"""Commands of the scripts that exit non-zero."""


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(model=MODEL) as fake:
        yield fake


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
    rollout = rollout_of(tmp_path)
    truth = truth_of(server.log, MODEL, failures=_failures(server))
    if recording():
        record("codex", cli_version("codex"), scenario, {"rollout.jsonl": rollout}, truth, scratch=tmp_path)
    return check_json(rollout, "--strict"), truth


def test_tools_then_resume(tmp_path: Path, server: FakeOpenAI) -> None:
    write_config(tmp_path, server, model=MODEL, provider="custom", compact_limit=None)
    codex_exec(
        tmp_path, "Fix it.\nSTEP shell ls /nonexistent\nSTEP patch hello.txt hi there\nSTEP say first done"
    )
    codex_exec(tmp_path, "resume", "--last", "Again.\nSTEP shell false\nSTEP say second done")
    figures, truth = _finish(tmp_path, server, "tools-resume")
    assert truth.turns == 5 and truth.failures == 2
    assert_matches(figures, truth)
    assert figures["tool_calls"] == 3
    assert figures["warnings"] == []


def test_compaction_custom_provider(tmp_path: Path, server: FakeOpenAI) -> None:
    write_config(tmp_path, server, model=MODEL, provider="custom", compact_limit=14000)
    script = "Count.\nSTEP shell seq 1 2500\nSTEP shell seq 1 2500\nSTEP shell false\nSTEP shell seq 1 2500"
    codex_exec(tmp_path, script + "\nSTEP say finished")
    figures, truth = _finish(tmp_path, server, "compaction-custom-provider")
    assert truth.compactions >= 1
    assert_matches(figures, truth)
    assert figures["warnings"] == []


def test_compaction_default_provider(tmp_path: Path, server: FakeOpenAI) -> None:
    write_config(tmp_path, server, model=MODEL, provider="default", compact_limit=14000)
    script = "Count.\nSTEP shell seq 1 2500\nSTEP shell seq 1 2500\nSTEP shell false\nSTEP shell seq 1 2500"
    codex_exec(tmp_path, script + "\nSTEP say finished")
    figures, truth = _finish(tmp_path, server, "compaction-default-provider")
    assert truth.compactions >= 1
    assert_matches(figures, truth)
    assert figures["warnings"] == []
