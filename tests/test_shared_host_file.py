"""Two installers in one host file: the hook installer (``ctxhealth install gemini``) and the MCP
installer (``ctxhealth install mcp --agent gemini``) both edit Gemini CLI's settings.json and share its
backup/manifest pair. Each uninstall must take out only its own entries, keep the other's and the
user's, and the last one restore the original byte for byte when nothing else changed the file, in
either order, and from a pair written by the previous version."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from conftest import invoke
from ctxhealth.integrations.claude_code.agents import Agent as HookAgent
from ctxhealth.integrations.claude_code.install import (
    TARGETS,
    Scope,
    default_settings_dir,
    find_installation,
    hook_command,
)
from ctxhealth.integrations.hostconfig import RESTORED_NOTE, SHARED_NOTE
from ctxhealth.integrations.mcp_install import Agent as McpAgent
from ctxhealth.integrations.mcp_install import mcp_target

PY = "/usr/bin/python3"
ORIGINAL = '{\n  "theme": "Dracula",\n  "general": {"vimMode": true}\n}\n'
INSTALL = {"hooks": ["gemini"], "mcp": ["mcp", "--agent", "gemini"]}
FIXTURE = Path(__file__).parent / "fixtures" / "install" / "gemini-main-hooks-and-mcp"


def _shared_files(home: Path, cwd: Path) -> set[tuple[str, str]]:
    """(agent, scope) where the hook file and the MCP file are the same file."""
    shared = set()
    for agent in HookAgent:
        for scope in Scope:
            hooks = default_settings_dir(scope, home=home, cwd=cwd, agent=agent) / TARGETS[agent].file_name
            mcp = mcp_target(McpAgent(agent.value), project=scope is Scope.PROJECT, home=home, cwd=cwd).path
            if hooks == mcp:
                shared.add((agent.value, scope.value))
    return shared


def test_only_gemini_shares_one_file_between_the_hook_and_the_mcp_installer(tmp_path: Path) -> None:
    # the tests below cover every host where the two installers meet; if a host starts sharing, they must grow
    assert _shared_files(tmp_path / "home", tmp_path / "project") == {
        ("gemini", "user"),
        ("gemini", "project"),
    }


def _pair(path: Path) -> list[Path]:
    return sorted(path.parent.glob(path.name + ".ctxhealth-*"))


def _run(verb: str, installer: str, scope: str) -> dict[str, Any]:
    python = ["--python", PY] if verb == "install" else []
    done = invoke(verb, *INSTALL[installer], "--scope", scope, *python, "--apply", "--json")
    assert done.exit_code == 0, done.output
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def _has(path: Path, installer: str) -> bool:
    if installer == "hooks":
        return bool(find_installation(path.parent, HookAgent.GEMINI)[0])
    return "ctxhealth" in json.loads(path.read_text()).get("mcpServers", {})


def _settings(home: Path, tmp_path: Path, scope: str) -> Path:
    return (home if scope == "user" else tmp_path) / ".gemini" / "settings.json"


@pytest.mark.parametrize("scope", ["user", "project"])
@pytest.mark.parametrize("original", [ORIGINAL, None], ids=["file", "no-file"])
@pytest.mark.parametrize(
    ("first", "removed_first"),
    [("hooks", "hooks"), ("hooks", "mcp"), ("mcp", "hooks"), ("mcp", "mcp")],
    ids=["hooks-then-mcp/uninstall-hooks", "hooks-then-mcp/uninstall-mcp",
         "mcp-then-hooks/uninstall-hooks", "mcp-then-hooks/uninstall-mcp"],
)  # fmt: skip
def test_each_uninstall_removes_only_its_own_entries_and_the_last_restores_the_original(
    home: Path, tmp_path: Path, scope: str, original: str | None, first: str, removed_first: str
) -> None:
    settings = _settings(home, tmp_path, scope)
    settings.parent.mkdir(parents=True)
    if original is not None:
        settings.write_text(original)
    second = "mcp" if first == "hooks" else "hooks"
    _run("install", first, scope)
    _run("install", second, scope)
    assert _has(settings, "hooks") and _has(settings, "mcp")

    removed_last = "mcp" if removed_first == "hooks" else "hooks"
    assert _run("uninstall", removed_first, scope)["notes"] == [SHARED_NOTE]
    assert not _has(settings, removed_first)
    assert _has(settings, removed_last)  # the other installer's entry is still there
    if original is not None:
        assert json.loads(settings.read_text())["theme"] == "Dracula"
    assert _pair(settings)  # kept for the last uninstall

    result = _run("uninstall", removed_last, scope)
    if original is None:
        assert not settings.exists()
    else:
        assert settings.read_text() == original  # byte for byte
    assert result["notes"] == [RESTORED_NOTE]
    assert _pair(settings) == []


@pytest.mark.parametrize("removed_first", ["hooks", "mcp"])
def test_the_user_edit_between_is_kept_and_each_removes_only_its_own(
    home: Path, tmp_path: Path, removed_first: str
) -> None:
    settings = _settings(home, tmp_path, "user")
    settings.parent.mkdir(parents=True)
    settings.write_text(ORIGINAL)
    _run("install", "hooks", "user")
    _run("install", "mcp", "user")
    data = json.loads(settings.read_text())
    settings.write_text(json.dumps({**data, "mine": 1}, indent=2))
    removed_last = "mcp" if removed_first == "hooks" else "hooks"
    _run("uninstall", removed_first, "user")
    assert not _has(settings, removed_first) and _has(settings, removed_last)
    _run("uninstall", removed_last, "user")
    assert json.loads(settings.read_text()) == {**json.loads(ORIGINAL), "mine": 1}
    assert _pair(settings) == []


@pytest.mark.parametrize("installed", ["hooks", "mcp"])
def test_uninstalling_the_one_that_is_not_installed_changes_nothing(
    home: Path, tmp_path: Path, installed: str
) -> None:
    settings = _settings(home, tmp_path, "user")
    settings.parent.mkdir(parents=True)
    settings.write_text(ORIGINAL)
    _run("install", installed, "user")
    written = settings.read_bytes()
    pair = {p: p.read_bytes() for p in _pair(settings)}
    _run("uninstall", "mcp" if installed == "hooks" else "hooks", "user")
    assert settings.read_bytes() == written
    assert {p: p.read_bytes() for p in _pair(settings)} == pair
    _run("uninstall", installed, "user")
    assert settings.read_text() == ORIGINAL and _pair(settings) == []


def test_reinstalling_between_still_restores_the_original(home: Path, tmp_path: Path) -> None:
    settings = _settings(home, tmp_path, "user")
    settings.parent.mkdir(parents=True)
    settings.write_text(ORIGINAL)
    _run("install", "hooks", "user")
    _run("install", "mcp", "user")
    _run("uninstall", "hooks", "user")
    _run("install", "hooks", "user")
    _run("uninstall", "mcp", "user")
    assert _has(settings, "hooks") and not _has(settings, "mcp")
    _run("uninstall", "hooks", "user")
    assert settings.read_text() == ORIGINAL and _pair(settings) == []


@pytest.mark.parametrize("removed_first", ["hooks", "mcp"])
def test_a_pair_written_by_the_previous_version_uninstalls_each_on_its_own(
    home: Path, removed_first: str
) -> None:
    # The fixture is the file, backup and manifest the previous version wrote after `install gemini`
    # then `install mcp --agent gemini` (both with --python /usr/bin/python3).
    folder = home / ".gemini"
    shutil.copytree(FIXTURE, folder)
    settings = folder / "settings.json"
    original = (folder / "settings.json.ctxhealth-backup").read_text()
    manifest = json.loads((folder / "settings.json.ctxhealth-install.json").read_text())
    assert set(manifest) == {"schema_version", "original_existed", "installed_sha256"}
    assert _has(settings, "hooks") and _has(settings, "mcp")
    removed_last = "mcp" if removed_first == "hooks" else "hooks"
    _run("uninstall", removed_first, "user")
    assert not _has(settings, removed_first) and _has(settings, removed_last)
    _run("uninstall", removed_last, "user")
    assert settings.read_text() == original and _pair(settings) == []


def test_this_version_writes_the_same_pair_the_previous_version_did(home: Path) -> None:
    """The same backup, manifest and settings; the hook commands in the form this version writes
    (the previous one wrote ``python -m ctxhealth.cli.hook``), which the manifest's digest follows."""
    folder = home / ".gemini"
    folder.mkdir()
    (folder / "settings.json").write_bytes((FIXTURE / "settings.json.ctxhealth-backup").read_bytes())
    _run("install", "hooks", "user")
    _run("install", "mcp", "user")
    assert sorted(f.name for f in folder.iterdir()) == sorted(f.name for f in FIXTURE.iterdir())
    backup = "settings.json.ctxhealth-backup"
    assert (folder / backup).read_bytes() == (FIXTURE / backup).read_bytes()
    expected = (FIXTURE / "settings.json").read_text()
    for event, _, _ in TARGETS[HookAgent.GEMINI].events:
        earlier = f"{PY} -m ctxhealth.cli.hook --agent gemini {event}"
        assert earlier in expected
        expected = expected.replace(earlier, json.dumps(hook_command(PY, event, HookAgent.GEMINI))[1:-1])
    written = (folder / "settings.json").read_bytes()
    assert written.decode() == expected
    manifest = json.loads((folder / "settings.json.ctxhealth-install.json").read_text())
    earlier_manifest = json.loads((FIXTURE / "settings.json.ctxhealth-install.json").read_text())
    assert manifest == {**earlier_manifest, "installed_sha256": hashlib.sha256(written).hexdigest()}


@pytest.mark.parametrize("removed_first", ["hooks", "mcp"])
@pytest.mark.parametrize("force", [False, True], ids=["add-statusline", "replace-statusline"])
def test_any_file_both_installers_write_shares_the_same_way(
    home: Path, removed_first: str, force: bool
) -> None:
    # --config can point the MCP installer at Claude Code's settings.json (the hook file, status line too)
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    original = '{"statusLine": {"type": "command", "command": "mine"}, "model": "opus"}\n' if force else "{}"
    settings.write_text(original)
    hooks = ["claude-code", "--python", PY, *(["--force"] if force else [])]
    mcp = ["mcp", "--agent", "claude-code", "--config", str(settings)]
    assert invoke("install", *hooks, "--apply").exit_code == 0
    assert invoke("install", *mcp, "--python", PY, "--apply").exit_code == 0
    first, last = (hooks[:1], mcp) if removed_first == "hooks" else (mcp, hooks[:1])
    assert invoke("uninstall", *first, "--apply").exit_code == 0
    data = json.loads(settings.read_text())
    assert ("ctxhealth" in data.get("mcpServers", {})) is (removed_first == "hooks")
    assert bool(find_installation(settings.parent)[0]) is (removed_first == "mcp")
    if removed_first == "hooks" and force:
        assert data["statusLine"] == {"type": "command", "command": "mine"}
    assert invoke("uninstall", *last, "--apply").exit_code == 0
    assert settings.read_text() == original and _pair(settings) == []
