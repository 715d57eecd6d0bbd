"""Running the real Codex CLI against a fake OpenAI server in a scratch home (shared by the Codex tests).

:func:`write_config` writes ``CODEX_HOME/config.toml`` pointing Codex at the fake, either through the default
OpenAI provider (``openai_base_url``: Codex then speaks WebSocket and compacts remotely) or through a custom
provider (HTTPS, local compaction); ``extra`` is appended as is (hooks, features, ...). :func:`codex_exec`
runs ``codex exec`` there (scratch ``HOME`` and ``CODEX_HOME`` under ``root``, a fake key, stdin closed) and
:func:`rollout_of` finds the rollout it wrote.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from .agents import agent_or_skip, run_agent, scratch_env
from .fake_openai import FakeOpenAI


def write_config(
    root: Path,
    server: FakeOpenAI,
    *,
    model: str,
    provider: str = "custom",
    compact_limit: int | None = None,
    extra: str = "",
) -> Path:
    """``root/codex/config.toml`` for ``provider`` ``default`` (the OpenAI provider) or ``custom``."""
    lines = [f'model = "{model}"']
    if compact_limit is not None:
        lines.append(f"model_auto_compact_token_limit = {compact_limit}")
    if provider == "default":
        lines.append(f'openai_base_url = "{server.url}/v1"')
    else:
        lines.append('model_provider = "fake"')
    if extra:
        lines.append(extra.strip())
    if provider != "default":
        lines += [
            "[model_providers.fake]",
            'name = "Fake"',
            f'base_url = "{server.url}/v1"',
            'env_key = "FAKE_OPENAI_KEY"',
            'wire_api = "responses"',
            "supports_websockets = false",
        ]
    home = root / "codex"
    home.mkdir(parents=True, exist_ok=True)
    path = home / "config.toml"
    path.write_text("\n".join(lines) + "\n", "utf-8")
    return path


def codex_env(root: Path, env: dict[str, str] | None = None) -> dict[str, str]:
    """What Codex runs with under ``root`` (``CODEX_HOME=root/codex``, fake keys), beside the scratch
    ``HOME``; also the environment ``ctxhealth install`` needs to find the same files."""
    return scratch_env(
        root,
        {
            "CODEX_HOME": str(root / "codex"),
            "OPENAI_API_KEY": "sk-fake",
            "FAKE_OPENAI_KEY": "sk-fake",
            **(env or {}),
        },
    )


def codex_exec(root: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``codex exec [ARGS...] PROMPT`` (the last argument is the prompt) in ``root/project``; fails the
    test on a non-zero exit."""
    exe = agent_or_skip("codex")
    flags = ["--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox"]
    return run_agent(root, exe, ["exec", *args[:-1], *flags, args[-1]], codex_env(root, env))


def rollout_of(root: Path) -> Path:
    """The one rollout Codex wrote under ``root/codex/sessions``."""
    found = sorted((root / "codex" / "sessions").rglob("rollout-*.jsonl"))
    assert len(found) == 1, found
    return found[0]


def stated_windows(rollout: Path) -> set[int]:
    """Every ``model_context_window`` the rollout's ``token_count`` events state (the window Codex
    works with: the truth the hooks, ``watch`` and a told proxy must read)."""
    import json

    return {
        json.loads(line)["payload"]["info"]["model_context_window"]
        for line in rollout.read_text("utf-8").splitlines()
        if '"token_count"' in line and '"model_context_window"' in line
    }
