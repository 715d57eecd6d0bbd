"""Shared fixtures: isolation of the user directory, the location of the real-transcript corpus, and
:func:`invoke`, the one way the tests run the CLI."""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from click.testing import Result

REPO_ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SHARED_DATA = Path(os.environ.get("CTXHEALTH_TEST_DATA", REPO_ROOT.parent / "shared" / "data"))
CLAUDE_CODE_DATA = SHARED_DATA / "claude-code"
MINI_SWE_DATA = SHARED_DATA / "mini-swe-agent"
OPENHANDS_DATA = SHARED_DATA / "openhands" / "claude-3-5-sonnet-20241022_verified"
TAU_BENCH_DATA = SHARED_DATA / "tau-bench"
# What a hook or status-line command imports of ctxhealth before the per-turn helper answers it: the
# package roots, the command's entry and the helper's client.
CLIENT_MODULES = frozenset(
    {
        "ctxhealth",
        "ctxhealth.lazy",
        "ctxhealth.home",
        "ctxhealth.cli",
        "ctxhealth.cli.helper",
        "ctxhealth.cli.hook",
        "ctxhealth.cli.statusline",
        "ctxhealth.integrations",
        "ctxhealth.integrations.claude_code",
        "ctxhealth.integrations.claude_code.helper",
    }
)


@functools.cache
def real_tool_outputs() -> tuple[str, ...]:
    """The text of every tool result in the real sessions of ``SHARED_DATA`` (read once per run)."""
    from ctxhealth.model import ToolResult
    from ctxhealth.sources import read_sessions

    return tuple(
        b.text
        for s in read_sessions([str(SHARED_DATA)])
        for m in s.messages
        for b in m.blocks
        if isinstance(b, ToolResult)
    )


def invoke(*args: str | os.PathLike[str] | Sequence[str | os.PathLike[str]], **kwargs: Any) -> Result:
    """Run ``ctxhealth ARGS...`` in the process, as ``CliRunner().invoke`` does, but with
    ``catch_exceptions=False``: an exception the CLI does not turn into its exit code is raised in
    the test, so ``exit_code == 1`` ("unhealthy") can never pass on a traceback. ``args`` are the
    words, or one list of them; ``kwargs`` go to ``CliRunner.invoke`` (``input``, ``env``, ...)."""
    from click.testing import CliRunner

    from ctxhealth.cli.main import cli

    words = args[0] if len(args) == 1 and isinstance(args[0], list | tuple) else args
    argv = [os.fspath(w) for w in words]  # type: ignore[arg-type]
    return CliRunner().invoke(cli, argv, catch_exceptions=False, **kwargs)


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own ``CTXHEALTH_HOME`` and ``HOME`` so nothing touches the real user directory, and
    commands run without the per-turn helper (no process outlives a test; the helper's own tests
    turn it on and stop what they start)."""
    home = tmp_path / "ctxhealth-home"
    monkeypatch.setenv("CTXHEALTH_HOME", str(home))
    # no command run without a path reads this machine's agent sessions (~/.claude/projects, ...)
    monkeypatch.setenv("HOME", str(tmp_path / "user-home"))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.setenv("CTXHEALTH_HELPER", "off")
    monkeypatch.delenv("CTXHEALTH_ROOT", raising=False)
    return home


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user home made for the test (``tmp_path/home``, the working folder ``tmp_path``): where
    installers write an agent's settings."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.chdir(tmp_path)
    return home


@pytest.fixture
def claude_code_data() -> Path:
    if not CLAUDE_CODE_DATA.is_dir():
        pytest.skip(f"real Claude Code transcripts not found at {CLAUDE_CODE_DATA}")
    return CLAUDE_CODE_DATA


@pytest.fixture
def mini_swe_data() -> Path:
    if not MINI_SWE_DATA.is_dir():
        pytest.skip(f"real mini-swe-agent trajectories not found at {MINI_SWE_DATA}")
    return MINI_SWE_DATA


@pytest.fixture
def openhands_data() -> Path:
    if not OPENHANDS_DATA.is_dir():
        pytest.skip(f"real OpenHands completion logs not found at {OPENHANDS_DATA}")
    return OPENHANDS_DATA


@pytest.fixture
def tau_bench_data() -> Path:
    if not TAU_BENCH_DATA.is_dir():
        pytest.skip(f"real tau-bench results not found at {TAU_BENCH_DATA}")
    return TAU_BENCH_DATA
