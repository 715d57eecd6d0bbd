"""The agent CLIs the suite runs are the versions pinned in ``.ci/agents.txt`` (unless run against latest)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .agents import agent_or_skip, agent_version

PINNED = Path(__file__).resolve().parents[2] / ".ci" / "agents.txt"
CLIS = {"@anthropic-ai/claude-code": "claude", "@openai/codex": "codex", "@google/gemini-cli": "gemini"}


def pinned_versions() -> dict[str, str]:
    """CLI name -> pinned version, from ``.ci/agents.txt``."""
    versions = {}
    for line in PINNED.read_text("utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        package, _, version = line.rpartition("@")
        versions[CLIS[package]] = version
    return versions


@pytest.mark.conformance
@pytest.mark.parametrize("cli", sorted(CLIS.values()))
def test_installed_cli_is_the_pinned_version(cli: str) -> None:
    path = agent_or_skip(cli)
    if os.environ.get("CTXHEALTH_AGENT_VERSIONS") == "latest":
        pytest.skip("running against @latest: any version is accepted")
    assert pinned_versions()[cli] in agent_version(path)
