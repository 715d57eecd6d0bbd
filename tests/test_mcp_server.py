"""``ctxhealth mcp`` through the official ``mcp`` SDK's own clients: a real stdio subprocess for what a
host sees (the tools, their schemas, results equal to ``check --json``, ``checkpoint`` and ``state``
on the real sessions in ../shared/data), the in-process client for errors and time bounds."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import pytest

from conftest import invoke
from lazy_import import lazy

if importlib.util.find_spec("mcp") is None:
    pytest.skip("the mcp SDK is not installed", allow_module_level=True)

from ctxhealth.config import load_settings
from ctxhealth.mcpserver import tools
from ctxhealth.mcpserver.schemas import TOOLS
from ctxhealth.mcpserver.sessions import Host

if TYPE_CHECKING:
    from mcp.client.stdio import StdioServerParameters

# The SDK (and the server module built on it) load when a test uses them, not at collection.
jsonschema = lazy("jsonschema")
mcp_server = lazy("ctxhealth.mcpserver.server")
mcp_client = lazy("mcp.client.client")
mcp_stdio = lazy("mcp.client.stdio")

LONG_SESSION = "-home-kenth56-vsla/f67ab274-e83b-41ac-ac85-77488d6b5c28.jsonl"
SIDECHAIN_SESSION = "-home-kenth56-vsla/0a725fb5-6378-432a-9e84-9f3f49d4043d.jsonl"


def run(body: Callable[[], Awaitable[None]]) -> None:
    anyio.run(body)


def cli_json(*args: str) -> dict[str, Any]:
    done = invoke(list(args))
    assert done.exit_code in (0, 1), done.output
    doc: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return doc


def stdio_params(cwd: Path, home: Path, **env: str) -> StdioServerParameters:
    return mcp_stdio.StdioServerParameters(
        command=sys.executable,
        args=["-m", "ctxhealth.cli.mcp"],
        cwd=str(cwd),
        env={"HOME": str(home), "CTXHEALTH_HOME": str(home / ".ctxhealth"), "CTXHEALTH_HELPER": "off", **env},
    )


def structured(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content[0].text
    doc: dict[str, Any] = result.structured_content
    return doc


def test_stdio_lists_the_tools_and_assesses_real_sessions_as_check_does(
    claude_code_data: Path, mini_swe_data: Path, tmp_path: Path
) -> None:
    sessions = [
        claude_code_data / LONG_SESSION,
        claude_code_data / SIDECHAIN_SESSION,
        sorted((mini_swe_data / "trajs").glob("*/*.traj.json"))[0],
    ]

    async def body() -> None:
        async with mcp_client.Client(stdio_params(tmp_path, tmp_path / "home")) as client:
            listed = await client.list_tools()
            assert [t.name for t in listed.tools] == list(TOOLS)
            for tool in listed.tools:
                assert tool.input_schema["type"] == "object" and "path" in tool.input_schema["properties"]
                assert tool.output_schema is not None and tool.description
            for path in sessions:
                result = await client.call_tool("context_health", {"path": str(path)})
                doc = structured(result)
                assert doc == cli_json("check", "--json", str(path))
                jsonschema.validate(doc, TOOLS["context_health"]["output"])
                text = result.content[0].text
                assert f"zone         {doc['zone']}" in text or doc["zone"] in text
                assert doc["action"] in text

    run(body)


def test_stdio_checkpoint_and_task_state_equal_the_cli(claude_code_data: Path, tmp_path: Path) -> None:
    session = claude_code_data / LONG_SESSION
    agent_dir, cli_root = tmp_path / "agent", tmp_path / "cli-root"
    agent_dir.mkdir()

    async def body() -> None:
        async with mcp_client.Client(stdio_params(agent_dir, tmp_path / "home")) as client:
            # checkpoint: the same document as `ctxhealth checkpoint --json` writes
            doc = structured(await client.call_tool("checkpoint", {"path": str(session)}))
            jsonschema.validate(doc, TOOLS["checkpoint"]["output"])
            ours = json.loads(Path(doc["json_path"]).read_text())
            theirs_files = cli_json("checkpoint", str(session), "--json", "--root", str(cli_root))
            theirs = json.loads(Path(theirs_files["json_path"]).read_text())
            ours.pop("created_at"), theirs.pop("created_at")
            assert ours == theirs
            assert doc["markdown"] == Path(theirs_files["markdown_path"]).read_text()
            assert Path(doc["json_path"]).parent == agent_dir / ".ctxhealth" / "checkpoints"
            latest = await client.read_resource("ctxhealth://checkpoint/latest")
            assert latest.contents[0].text == doc["markdown"]

            # task_state: ensure, then the gate at critical pressure, as `ctxhealth state ...`
            ensured = structured(
                await client.call_tool("task_state", {"action": "ensure", "goal": "port it"})
            )
            cli_ensured = cli_json("state", "ensure", "--goal", "port it", "--json", "--root", str(cli_root))
            assert ensured["status"] == cli_ensured["status"] == "INITIALISED"
            assert ensured["signal"] == "STATUS:INITIALISED" and ensured["may_continue"] is True
            assert ensured["state"]["goal"] == cli_ensured["state"]["goal"] == "port it"
            assert {k for k in cli_ensured if k != "written"} <= set(ensured)
            summary = await client.read_resource("ctxhealth://summary/latest")
            assert "port it" in summary.contents[0].text

            halted = structured(
                await client.call_tool(
                    "task_state",
                    {"action": "update", "pressure": 0.9, "update": {"next_action": "run the tests"}},
                )
            )
            cli_halted = cli_json(
                "state", "checkpoint", "--pressure", "0.9", "--set", "next_action=run the tests",
                "--json", "--root", str(cli_root),
            )  # fmt: skip
            assert halted["signal"] == "STATUS:HALT_CONTEXT_LIMIT" and halted["may_continue"] is False
            for key in ("status", "zone", "pressure", "halted", "reasons", "thresholds", "detail"):
                assert halted[key] == cli_halted[key], key
            jsonschema.validate(halted, TOOLS["task_state"]["output"])

    run(body)


def test_stdio_recovery_plan_matches_recover(claude_code_data: Path, tmp_path: Path) -> None:
    session = claude_code_data / LONG_SESSION

    async def body() -> None:
        async with mcp_client.Client(stdio_params(tmp_path, tmp_path / "home")) as client:
            result = await client.call_tool("recovery_plan", {"path": str(session), "budget_tokens": 4000})
            doc = structured(result)
            jsonschema.validate(doc, TOOLS["recovery_plan"]["output"])
            check = cli_json("check", "--json", str(session))
            assert doc["decision"]["action"] == check["action"]
            assert doc["recommended"] == "truncate"  # compress_history on this session
            for plan in doc["plans"]:
                done = invoke(
                    ["recover", str(session), "--strategy", plan["strategy"], "--budget", "4000", "--json"],
                )
                body_out = json.loads(done.stdout)
                assert len(body_out["messages"]) + (1 if body_out.get("system") else 0) >= 1
                assert f"{plan['tokens_before']:,} -> {plan['tokens_after']:,} tokens" in done.stderr
                assert plan["tokens_after"] <= 4000
                assert f"{plan['messages_before']} -> {plan['messages_after']} messages" in done.stderr

    run(body)


# -- in-process: errors, bounds, discovery through the server -------------------------------------


def context(tmp_path: Path, cwd: Path | None = None, session_id: str | None = None) -> tools.ToolContext:
    home = tmp_path / "home"
    host = Host(
        cwd=cwd or tmp_path,
        claude_dir=home / ".claude",
        codex_dir=home / ".codex",
        gemini_dir=home / ".gemini",
        session_id=session_id,
    )
    return tools.ToolContext(
        host=host,
        root=tmp_path / ".ctxhealth",
        home=home / ".ctxhealth",
        settings=load_settings({}, {}, tmp_path),
    )


def test_errors_are_tool_errors_with_the_fix_it_text(tmp_path: Path) -> None:
    server = mcp_server.build_server(context(tmp_path))

    async def body() -> None:
        async with mcp_client.Client(server) as client:
            missing = await client.call_tool("context_health", {})
            assert missing.is_error
            assert "no agent session found" in missing.content[0].text
            assert "pass `path`" in missing.content[0].text
            absent = await client.call_tool("checkpoint", {"path": "nope.jsonl"})
            assert absent.is_error and "no transcript file here" in absent.content[0].text
            small = await client.call_tool("checkpoint", {"path": "x.jsonl", "budget_tokens": 10})
            assert small.is_error and "budget_tokens" in small.content[0].text
            extra = await client.call_tool("context_health", {"file": "x"})
            assert extra.is_error and "file" in extra.content[0].text
            bad_action = await client.call_tool("task_state", {"action": "erase"})
            assert bad_action.is_error and "erase" in bad_action.content[0].text
            none_yet = await client.read_resource("ctxhealth://checkpoint/latest")
            assert json.loads(none_yet.contents[0].text)["missing"] is True

    run(body)


def test_a_slow_call_answers_with_an_error_within_the_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def slow(*_args: Any, **_kwargs: Any) -> tools.ToolOutput:
        time.sleep(3)
        raise AssertionError("should have been abandoned")

    monkeypatch.setattr(tools, "context_health", slow)
    server = mcp_server.build_server(context(tmp_path), timeout=0.2)

    async def body() -> None:
        async with mcp_client.Client(server) as client:
            started = time.monotonic()
            result = await client.call_tool("context_health", {})
            elapsed = time.monotonic() - started
            assert result.is_error and "took longer than 0.2 s" in result.content[0].text
            assert elapsed < 2.5  # answered before the work finished, not after it

    run(body)


def test_the_hosts_own_session_is_found_without_arguments(claude_code_data: Path, tmp_path: Path) -> None:
    project = tmp_path / "work" / "my.project"
    project.mkdir(parents=True)
    # Claude Code names a project's folder by its path with every other character than A-Z, a-z, 0-9 as "-"
    folder = tmp_path / "home" / ".claude" / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(project))
    folder.mkdir(parents=True)
    source = claude_code_data / SIDECHAIN_SESSION
    shutil.copyfile(source, folder / source.name)
    server = mcp_server.build_server(context(tmp_path, cwd=project))

    async def body() -> None:
        async with mcp_client.Client(server) as client:
            doc = structured(await client.call_tool("context_health", {}))
            assert doc["path"] == str(folder / source.name)
            assert doc["session_id"] == source.stem

    run(body)


def test_results_are_redacted(tmp_path: Path) -> None:
    key = "sk-ant-api03-" + "A1b2C3d4E5f6G7h8" * 4
    common = {"sessionId": "s1", "timestamp": "2026-01-01T00:00:00Z"}
    lines = [
        {**common, "type": "user", "uuid": "u1", "parentUuid": None,
         "message": {"role": "user", "content": f"deploy with ANTHROPIC_API_KEY={key} please"}},
        {**common, "type": "assistant", "uuid": "a1", "parentUuid": "u1",
         "message": {"id": "m1", "role": "assistant", "model": "claude-sonnet-4-20250514",
                     "content": [{"type": "text", "text": f"Using {key} now."}],
                     "usage": {"input_tokens": 100, "output_tokens": 5}}},
    ]  # fmt: skip
    transcript = tmp_path / "s1.jsonl"
    transcript.write_text("".join(json.dumps(line) + "\n" for line in lines))
    server = mcp_server.build_server(context(tmp_path))

    async def body() -> None:
        async with mcp_client.Client(server) as client:
            for name in ("context_health", "checkpoint", "recovery_plan"):
                result = await client.call_tool(name, {"path": str(transcript)})
                assert not result.is_error, result.content[0].text
                assert key not in json.dumps(result.structured_content), name
                assert key not in result.content[0].text, name

    run(body)


def test_streamable_http_on_loopback_and_a_remote_address_refused(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path), "CTXHEALTH_HELPER": "off"}
    refused = subprocess.run(
        [sys.executable, "-m", "ctxhealth.cli.mcp", "--http", "--host", "0.0.0.0"],
        capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert refused.returncode == 2 and "not a loopback address" in refused.stderr
    server = subprocess.Popen(
        [sys.executable, "-m", "ctxhealth.cli.mcp", "--http", "--port", "0"],
        stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path,
    )  # fmt: skip
    try:
        assert server.stderr is not None
        line = server.stderr.readline()
        match = re.search(r"serving (http://127\.0\.0\.1:\d+/mcp)", line)
        assert match, line

        async def body() -> None:
            async with mcp_client.Client(match.group(1)) as client:
                assert [t.name for t in (await client.list_tools()).tools] == list(TOOLS)
                missing = await client.call_tool("context_health", {})
                assert missing.is_error and "pass `path`" in missing.content[0].text

        run(body)
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_the_hosts_own_session_is_waited_for_before_a_newer_transcript_is_taken(tmp_path: Path) -> None:
    """Claude Code names its session (``CLAUDE_CODE_SESSION_ID``) before it has written the transcript:
    the server waits briefly for that file instead of taking the directory's newest transcript (a decoy)."""
    import threading

    from ctxhealth.mcpserver.sessions import find_transcript, project_dir_name

    cwd = tmp_path / "project"
    cwd.mkdir()
    host = context(tmp_path, cwd=cwd, session_id="own-session").host
    folder = host.claude_dir / "projects" / project_dir_name(cwd)
    folder.mkdir(parents=True)
    (folder / "decoy.jsonl").write_text('{"type":"summary","summary":"x"}\n')
    own = folder / "own-session.jsonl"
    writer = threading.Timer(0.3, lambda: own.write_text('{"type":"summary","summary":"y"}\n'))
    writer.start()
    try:
        assert find_transcript(host) == own
    finally:
        writer.join()
