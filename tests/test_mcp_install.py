"""``ctxhealth install mcp|skill`` and their uninstall: each host's own file, dry run first, backup,
idempotence, byte-identical restore; the skill against each host's rules; host session discovery."""

from __future__ import annotations

import json
import os
import re
import tomllib
from pathlib import Path

import pytest
import yaml

from conftest import invoke
from ctxhealth.integrations.mcp_install import Agent, McpTarget, plan_mcp_install
from ctxhealth.integrations.skill import SKILL_NAME, front_matter, skill_files, validate_skill
from ctxhealth.mcpserver.sessions import Host, find_transcript, host_from_environment

CODEX_CONFIG = 'model = "gpt-5"\n\n[mcp_servers.other]\ncommand = "other-server"\nargs = ["--x"]\n'


def test_codex_config_round_trip_keeps_the_users_file_byte_for_byte(home: Path) -> None:
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text(CODEX_CONFIG)

    dry = invoke("install", "mcp", "--agent", "codex", "--python", "/usr/bin/python3")
    assert "+[mcp_servers.ctxhealth]" in dry.stdout and "dry run" in dry.stderr
    assert config.read_text() == CODEX_CONFIG  # a dry run writes nothing

    invoke("install", "mcp", "--agent", "codex", "--python", "/usr/bin/python3", "--apply")
    parsed = tomllib.loads(config.read_text())
    assert parsed["mcp_servers"]["ctxhealth"]["command"] == "/usr/bin/python3"
    assert parsed["mcp_servers"]["ctxhealth"]["args"] == ["-m", "ctxhealth.cli.mcp"]
    assert parsed["mcp_servers"]["other"] == {"command": "other-server", "args": ["--x"]}
    assert config.read_text().startswith(CODEX_CONFIG)

    again = invoke("install", "mcp", "--agent", "codex", "--python", "/usr/bin/python3", "--apply")
    assert "nothing to change" in again.stdout

    invoke("uninstall", "mcp", "--agent", "codex", "--apply")
    assert config.read_text() == CODEX_CONFIG
    assert not list(config.parent.glob("*.ctxhealth-*"))


def test_codex_uninstall_after_the_user_edited_removes_only_our_block(home: Path) -> None:
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text(CODEX_CONFIG)
    invoke("install", "mcp", "--agent", "codex", "--python", "py", "--apply")
    config.write_text(config.read_text() + '\n[profiles.fast]\nmodel = "gpt-5-mini"\n')
    done = invoke("uninstall", "mcp", "--agent", "codex", "--apply")
    parsed = tomllib.loads(config.read_text())
    assert "ctxhealth" not in parsed["mcp_servers"] and parsed["profiles"]["fast"]["model"] == "gpt-5-mini"
    assert "removed only ctxhealth's entries" in done.stderr


def test_codex_refuses_a_server_of_the_same_name_that_is_not_ours(home: Path) -> None:
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text('[mcp_servers.ctxhealth]\ncommand = "mine"\n')
    done = invoke(["install", "mcp", "--agent", "codex", "--apply"])
    assert done.exit_code == 3 and "already defined, not by ctxhealth" in done.stderr
    assert config.read_text() == '[mcp_servers.ctxhealth]\ncommand = "mine"\n'


@pytest.mark.parametrize(
    ("agent", "relative", "key_type"),
    [("claude-code", ".claude.json", "stdio"), ("gemini", ".gemini/settings.json", None)],
)
def test_json_hosts_install_and_uninstall(
    home: Path, agent: str, relative: str, key_type: str | None
) -> None:
    config = home / relative
    config.parent.mkdir(exist_ok=True)
    original = json.dumps({"theme": "dark", "mcpServers": {"other": {"command": "x"}}}, indent=4)
    config.write_text(original)
    invoke("install", "mcp", "--agent", agent, "--python", "/opt/py", "--apply")
    data = json.loads(config.read_text())
    entry = data["mcpServers"]["ctxhealth"]
    assert entry["command"] == "/opt/py" and entry["args"] == ["-m", "ctxhealth.cli.mcp"]
    assert entry.get("type") == key_type
    assert data["theme"] == "dark" and data["mcpServers"]["other"] == {"command": "x"}
    assert (config.parent / (config.name + ".ctxhealth-backup")).read_text() == original
    invoke("uninstall", "mcp", "--agent", agent, "--apply")
    assert config.read_text() == original


def test_claude_code_project_scope_writes_mcp_json(home: Path, tmp_path: Path) -> None:
    invoke("install", "mcp", "--agent", "claude-code", "--scope", "project", "--python", "py", "--apply")
    data = json.loads((tmp_path / ".mcp.json").read_text())
    entry = {
        "type": "stdio",
        "command": "py",
        "args": ["-m", "ctxhealth.cli.mcp"],
        "env": {},
        "alwaysLoad": True,
    }
    assert data == {"mcpServers": {"ctxhealth": entry}}
    assert not (home / ".claude.json").exists()
    invoke("uninstall", "mcp", "--agent", "claude-code", "--scope", "project", "--apply")
    assert not (tmp_path / ".mcp.json").exists()  # install created it: uninstall removes it


def test_invalid_host_json_is_a_clear_error_and_untouched(tmp_path: Path) -> None:
    config = tmp_path / "settings.json"
    config.write_text("{not json")
    with pytest.raises(Exception, match="not valid JSON") as raised:
        plan_mcp_install(McpTarget(Agent.GEMINI, config), python="py")
    assert "gemini" in str(raised.value) and config.read_text() == "{not json"


# -- the skill -----------------------------------------------------------------------------------


@pytest.mark.parametrize("agent", list(Agent))
def test_the_skill_passes_each_hosts_rules(agent: Agent) -> None:
    text = skill_files()["SKILL.md"]
    assert validate_skill(text, SKILL_NAME, agent) == []
    # the front matter is real YAML (Codex and Gemini parse it with a YAML parser)
    head = yaml.safe_load(text.split("---")[1])
    assert head == front_matter(text) == {"name": SKILL_NAME, "description": head["description"]}
    assert len(head["description"]) <= 1024 and "\n" not in head["description"]
    for trigger in ("long", "multi-step", "checkpoint", "restart or halt"):
        assert trigger in head["description"]
    assert "reference.md" in text and "reference.md" in skill_files()


@pytest.mark.parametrize(
    ("agent", "text", "folder", "problem"),
    [
        (Agent.CODEX, "---\nname: " + "a" * 65 + "\ndescription: d\n---\n", "a" * 65, "at most 64"),
        (Agent.GEMINI, "---\nname: Context_Health\ndescription: d\n---\n", "Context_Health", "lower-case"),
        (Agent.CLAUDE_CODE, "---\nname: claude-helper\ndescription: d\n---\n", "claude-helper", "'claude'"),
        (Agent.CLAUDE_CODE, "---\nname: x\ndescription: use <tool> here\n---\n", "x", "XML"),
        (Agent.GEMINI, "---\nname: x\ndescription: " + "d" * 1025 + "\n---\n", "x", "1025 characters"),
        (Agent.CODEX, "---\nname: x\ndescription: d\n---\n", "y", "match the folder"),
        (Agent.GEMINI, "no front matter", "x", "front matter"),
    ],
)
def test_the_rules_reject_what_the_hosts_reject(agent: Agent, text: str, folder: str, problem: str) -> None:
    problems = validate_skill(text, folder, agent)
    assert any(problem in p for p in problems), problems


@pytest.mark.parametrize(
    ("agent", "relative"),
    [("claude-code", ".claude/skills"), ("codex", ".codex/skills"), ("gemini", ".gemini/skills")],
)
def test_install_skill_writes_the_folder_and_uninstall_removes_it(
    home: Path, agent: str, relative: str
) -> None:
    folder = home / relative / SKILL_NAME
    dry = invoke("install", "skill", "--agent", agent)
    assert "+name: context-health" in dry.stdout and not folder.exists()
    invoke("install", "skill", "--agent", agent, "--apply")
    assert sorted(p.name for p in folder.iterdir()) == ["SKILL.md", "reference.md"]
    assert validate_skill((folder / "SKILL.md").read_text(), folder.name, Agent(agent)) == []
    assert "nothing to change" in invoke("install", "skill", "--agent", agent, "--apply").stdout
    invoke("uninstall", "skill", "--agent", agent, "--apply")
    assert not folder.exists() and folder.parent.is_dir()


def test_skill_uninstall_keeps_a_file_the_user_edited(home: Path) -> None:
    invoke("install", "skill", "--agent", "claude-code", "--apply")
    folder = home / ".claude" / "skills" / SKILL_NAME
    (folder / "reference.md").write_text("my notes\n")
    done = invoke("uninstall", "skill", "--agent", "claude-code", "--apply")
    assert "edited since install" in done.stderr
    assert (folder / "reference.md").read_text() == "my notes\n" and not (folder / "SKILL.md").exists()


def test_install_skill_will_not_overwrite_another_skill(home: Path) -> None:
    folder = home / ".claude" / "skills" / SKILL_NAME
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: something-else\ndescription: mine\n---\n")
    done = invoke(["install", "skill", "--agent", "claude-code", "--apply"])
    assert done.exit_code == 3 and "is another skill" in done.stderr
    assert "something-else" in (folder / "SKILL.md").read_text()


# -- finding the host's session --------------------------------------------------------------------


def claude_folder(cwd: Path) -> str:
    """Claude Code's project folder name: every character but A-Z, a-z, 0-9 becomes "-"."""
    return re.sub(r"[^A-Za-z0-9]", "-", str(cwd))


def host(tmp_path: Path, cwd: Path, session_id: str | None = None) -> Host:
    return host_from_environment(
        {"CLAUDE_CODE_SESSION_ID": session_id} if session_id else {}, cwd=cwd, home=tmp_path / "home"
    )


def write(path: Path, text: str = "{}\n", mtime: float | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def test_the_newest_transcript_of_the_agents_directory_wins_across_hosts(tmp_path: Path) -> None:
    cwd = tmp_path / "proj"
    home = tmp_path / "home"
    claude = write(home / ".claude/projects" / claude_folder(cwd) / "a.jsonl", mtime=1_000)
    meta = json.dumps({"type": "session_meta", "payload": {"id": "019a", "cwd": str(cwd)}}) + "\n"
    codex = write(home / ".codex/sessions/2026/12/01/rollout-2026-12-01T10-00-00-019a.jsonl", meta, 2_000)
    other = json.dumps({"type": "session_meta", "payload": {"id": "019b", "cwd": "/elsewhere"}}) + "\n"
    write(home / ".codex/sessions/2026/12/01/rollout-2026-12-01T11-00-00-019b.jsonl", other, 3_000)
    assert find_transcript(host(tmp_path, cwd)) == codex
    os.utime(claude, (4_000, 4_000))
    assert find_transcript(host(tmp_path, cwd)) == claude
    write(home / ".gemini/projects.json", json.dumps({"projects": {str(cwd): "proj"}}))
    gemini = write(home / ".gemini/tmp/proj/chats/session-2026-12-01T12-00-abcd1234.json", mtime=5_000)
    assert find_transcript(host(tmp_path, cwd)) == gemini


def test_the_hosts_session_id_and_the_arguments_choose_the_session(tmp_path: Path) -> None:
    cwd = tmp_path / "proj"
    home = tmp_path / "home"
    mine = write(home / ".claude/projects/-other/11111111-aaaa.jsonl", mtime=1_000)
    write(home / ".claude/projects" / claude_folder(cwd) / "newer.jsonl", mtime=9_000)
    assert find_transcript(host(tmp_path, cwd, session_id="11111111-aaaa")) == mine
    assert find_transcript(host(tmp_path, cwd), session_id="11111111-aaaa") == mine
    explicit = write(cwd / "logs" / "t.jsonl")
    assert find_transcript(host(tmp_path, cwd), path="logs/t.jsonl") == explicit
    with pytest.raises(Exception, match="no transcript of session"):
        find_transcript(host(tmp_path, cwd), session_id="../../etc/passwd")
    with pytest.raises(Exception, match="no agent session found"):
        find_transcript(host(tmp_path, tmp_path / "empty"))


def test_the_hooks_and_the_installers_never_import_the_mcp_sdk() -> None:
    """The SDK costs seconds to import: only ``ctxhealth mcp`` may load it."""
    import subprocess
    import sys

    probe = (
        "import sys, ctxhealth.cli.hook, ctxhealth.cli.statusline, ctxhealth.cli.install, "
        "ctxhealth.mcpserver.tools, ctxhealth.mcpserver.schemas, ctxhealth.cli.mcp; "
        "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith(('mcp.', 'mcp_types'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"


def test_a_codex_home_elsewhere_is_passed_to_the_server(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    codex_home = tmp_path / "codex-elsewhere"
    monkeypatch.setenv("CODEX_HOME", str(codex_home))
    invoke("install", "mcp", "--agent", "codex", "--python", "py", "--apply")
    server = tomllib.loads((codex_home / "config.toml").read_text())["mcp_servers"]["ctxhealth"]
    assert server["env"] == {"CODEX_HOME": str(codex_home)}
    monkeypatch.delenv("CODEX_HOME")
    invoke("install", "mcp", "--agent", "codex", "--python", "py", "--apply")
    assert (
        "env" not in tomllib.loads((home / ".codex" / "config.toml").read_text())["mcp_servers"]["ctxhealth"]
    )


def test_install_says_when_the_sdk_is_missing(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "mcp" else real(name, *a)
    )
    done = invoke("install", "mcp", "--agent", "gemini")
    assert "pip install 'ctxhealth[mcp]'" in done.stderr


def test_recorded_mcp_calls_are_read_with_their_servers_name() -> None:
    """Codex 0.171 puts an MCP tool's server in the call's ``namespace`` (``mcp__ctxhealth``); the reader
    names the call as Codex's model sees it, ``mcp__ctxhealth__context_health``, so two servers' tools of
    the same name stay apart. Gemini CLI names it ``mcp_ctxhealth_context_health`` itself."""
    from ctxhealth.sources import read_session

    agents = Path(__file__).parent / "fixtures" / "agents"
    names = {
        agent: [
            c.name
            for m in read_session(agents / agent / "mcp-context-health" / log).messages
            for c in m.tool_calls
        ]
        for agent, log in (("codex-0.171.0", "rollout.jsonl"), ("gemini-0.61.0", "chat.jsonl"))
    }
    assert names == {
        "codex-0.171.0": ["exec_command", "mcp__ctxhealth__context_health"],
        "gemini-0.61.0": ["mcp_ctxhealth_context_health"],
    }


@pytest.mark.parametrize("edited", [False, True])
def test_hook_and_mcp_installers_share_one_file_core(home: Path, edited: bool) -> None:
    # One plan/backup/manifest core for every installer: the same situation reads the same to the user,
    # and a hook file keeps the same backup and manifest pair an MCP file does.
    for cmd in (["claude-code"], ["mcp", "--agent", "claude-code"]):
        invoke("install", *cmd, "--python", "/usr/bin/python3", "--apply")
    hooks, mcp = home / ".claude" / "settings.json", home / ".claude.json"
    for path in (hooks, mcp):
        assert path.with_name(path.name + ".ctxhealth-install.json").exists()
        if edited:
            data = json.loads(path.read_text())
            path.write_text(json.dumps({**data, "mine": 1}))
    notes = []
    for cmd in (["claude-code"], ["mcp", "--agent", "claude-code"]):
        done = invoke("uninstall", *cmd, "--apply", "--json")
        notes.append(json.loads(done.stdout)["notes"])
    assert notes[0] == notes[1] and len(notes[0]) == 1
    for path in (hooks, mcp):
        assert not list(path.parent.glob(path.name + ".ctxhealth-*"))
