"""mini-swe-agent 2.x (the pip package, its own agent, litellm model and local environment) against the fake
chat-completions server: what ctxhealth reads from its trajectory equals what the server saw.

Both action styles: tool calls (the default config, ``role: tool`` observations) and text mode (actions fenced
as ``mswea_bash_command``). The script fails the same way four times, then submits, as the run in the issue
did. Recorded as fixtures with ``CTXHEALTH_RECORD_FIXTURES=1``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from .agents import REQUIRE_ENV, run_mini_jobs
from .fake_openai import FakeOpenAI
from .truth import Truth, assert_matches, check_json, record, truth_of

pytestmark = pytest.mark.conformance

MODEL = "gpt-5.5"
TASK = "Fix it.\nSTEP shell false\nSTEP shell false\nSTEP shell false\nSTEP shell false"
MODES = ("toolcall", "text")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, tuple[Path, FakeOpenAI, Path]]]:
    """Both modes, run by one process; mode -> (trajectory, server, scratch directory)."""
    try:
        import minisweagent
    except ImportError:
        minisweagent = None
    version = getattr(minisweagent, "__version__", "") if minisweagent is not None else ""
    if not version.startswith("2."):
        reason = f"mini-swe-agent 2.x not installed ({version or 'none'}; it is in the test extra)"
        if os.environ.get(REQUIRE_ENV) == "require":
            pytest.fail(f"{reason}; {REQUIRE_ENV}=require")
        pytest.skip(reason)
    scratch = tmp_path_factory.mktemp("mini")
    servers = {mode: FakeOpenAI(model=MODEL) for mode in MODES}
    for server in servers.values():
        server.__enter__()
    try:
        jobs = []
        for mode, server in servers.items():
            (scratch / mode).mkdir()
            jobs.append([f"{server.url}/v1", mode, TASK, str(scratch / mode / "traj.json")])
        done = run_mini_jobs(jobs, scratch, timeout=180)
        assert done.returncode == 0, done.stderr[-3000:]
        yield {mode: (scratch / mode / "traj.json", server, scratch) for mode, server in servers.items()}
    finally:
        for server in servers.values():
            server.__exit__()


def _truth(server: FakeOpenAI) -> Truth:
    failures = sum(1 for e in server.exchanges("turn") if "false" in json.dumps(e.answer))
    return truth_of(server.log, "openai/" + MODEL, failures=failures)


@pytest.mark.parametrize("mode", MODES)
def test_failing_run_reads_as_the_server_saw_it(
    runs: dict[str, tuple[Path, FakeOpenAI, Path]], mode: str
) -> None:
    import minisweagent

    trajectory, server, scratch = runs[mode]
    truth = _truth(server)
    record(
        "mini-swe-agent", minisweagent.__version__, mode, {"traj.json": trajectory}, truth, scratch=scratch
    )
    figures = check_json(trajectory, "--strict")
    assert truth.turns == 5 and truth.failures == 4
    assert_matches(figures, truth)
    assert figures["tool_calls"] == 5
    assert figures["warnings"] == []
    assert figures["healthy"] is False
