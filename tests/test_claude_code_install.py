"""Install / uninstall of the Claude Code integration: diff, backup, idempotence, byte-identical restore."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import invoke
from ctxhealth.errors import ConfigError
from ctxhealth.integrations.claude_code.install import (
    HOOK_EVENTS,
    Scope,
    StatusLineChange,
    apply_plan,
    default_settings_dir,
    find_installation,
    hook_command,
    is_ours,
    plan_install,
    plan_uninstall,
    statusline_command,
)

FIXTURES = Path(__file__).parent / "fixtures"
PY = "/opt/py/bin/python3"
SETTINGS_FIXTURES = [
    "claude-settings-with-hooks.json",
    "claude-settings-with-statusline.json",
    "claude-settings-empty.json",
]


def _settings_dir(tmp_path: Path, fixture: str | None) -> Path:
    d = tmp_path / ".claude"
    d.mkdir()
    if fixture is not None:
        shutil.copy(FIXTURES / fixture, d / "settings.json")
    return d


def _commands(data: dict[str, object]) -> list[str]:
    out = []
    hooks = data.get("hooks", {})
    assert isinstance(hooks, dict)
    for groups in hooks.values():
        for group in groups:
            out += [h["command"] for h in group["hooks"]]
    return out


@pytest.mark.parametrize("fixture", [*SETTINGS_FIXTURES, None])
def test_install_then_uninstall_restores_bytes(tmp_path: Path, fixture: str | None) -> None:
    d = _settings_dir(tmp_path, fixture)
    path = d / "settings.json"
    original = path.read_bytes() if path.exists() else None

    plan = plan_install(d, python=PY)
    assert plan.changed and plan.diff().startswith("--- ")
    assert (path.read_bytes() if path.exists() else None) == original  # planning writes nothing
    apply_plan(plan)
    installed = json.loads(path.read_bytes())
    events, status = find_installation(d)
    assert set(events) == {e.value for e in HOOK_EVENTS}
    assert is_ours(status) == (fixture != "claude-settings-with-statusline.json")
    assert all(is_ours(c) for c in _commands(installed) if "ctxhealth" in c)

    undo = plan_uninstall(d)
    assert undo.restore_backup
    apply_plan(undo)
    assert (path.read_bytes() if path.exists() else None) == original
    assert not (d / "settings.json.ctxhealth-backup").exists()
    assert not (d / "settings.json.ctxhealth-install.json").exists()


def test_install_preserves_other_hooks_and_keys(tmp_path: Path) -> None:
    d = _settings_dir(tmp_path, "claude-settings-with-hooks.json")
    before = json.loads((d / "settings.json").read_bytes())
    apply_plan(plan_install(d, python=PY))
    after = json.loads((d / "settings.json").read_bytes())
    for key in ("$schema", "model", "permissions", "env"):
        assert after[key] == before[key]
    theirs = _commands(before)
    assert [c for c in _commands(after) if not is_ours(c)] == theirs
    # Their PreCompact group is still first, ours appended after it.
    assert after["hooks"]["PreCompact"][0] == before["hooks"]["PreCompact"][0]
    assert after["hooks"]["Notification"] == before["hooks"]["Notification"]


def test_install_is_idempotent(tmp_path: Path) -> None:
    d = _settings_dir(tmp_path, "claude-settings-with-hooks.json")
    apply_plan(plan_install(d, python=PY))
    once = (d / "settings.json").read_bytes()
    again = plan_install(d, python=PY)
    assert not again.changed and again.diff() == ""
    apply_plan(again)
    assert (d / "settings.json").read_bytes() == once
    # The backup still holds the user's own file, not ours.
    assert (d / "settings.json.ctxhealth-backup").read_bytes() == (
        FIXTURES / "claude-settings-with-hooks.json"
    ).read_bytes()


def test_installing_over_the_earlier_python_m_commands_replaces_each_of_them(tmp_path: Path) -> None:
    """Settings written by a version that ran ``python -m ctxhealth.cli.hook EVENT``: an install
    leaves one hook per event in the current form and the user's own hooks as they were."""
    d = _settings_dir(tmp_path, "claude-settings-with-hooks.json")
    apply_plan(plan_install(d, python=PY))
    current = (d / "settings.json").read_text()
    earlier = current.replace(json.dumps(statusline_command(PY))[1:-1], f"{PY} -m ctxhealth.cli.statusline")
    for event in HOOK_EVENTS:
        earlier = earlier.replace(
            json.dumps(hook_command(PY, event))[1:-1], f"{PY} -m ctxhealth.cli.hook {event}"
        )
    assert "-c " not in earlier and earlier.count("-m ctxhealth.cli.") == len(HOOK_EVENTS) + 1
    (d / "settings.json").write_text(earlier)
    assert sorted(find_installation(d)[0]) == sorted(e.value for e in HOOK_EVENTS)
    apply_plan(plan_install(d, python=PY))
    assert (d / "settings.json").read_text() == current


def test_existing_statusline_kept_unless_forced(tmp_path: Path) -> None:
    d = _settings_dir(tmp_path, "claude-settings-with-statusline.json")
    plan = plan_install(d, python=PY)
    assert plan.statusline is StatusLineChange.KEEP_THEIRS
    assert any("--then" in note for note in plan.notes)
    apply_plan(plan)
    assert (
        json.loads((d / "settings.json").read_bytes())["statusLine"]["command"]
        == "~/.claude/my-statusline.sh"
    )

    forced = plan_install(d, python=PY, force=True)
    assert forced.statusline is StatusLineChange.REPLACE
    apply_plan(forced)
    assert is_ours(json.loads((d / "settings.json").read_bytes())["statusLine"]["command"])
    apply_plan(plan_uninstall(d))
    assert (d / "settings.json").read_bytes() == (
        FIXTURES / "claude-settings-with-statusline.json"
    ).read_bytes()


def test_uninstall_after_user_edit_removes_only_ours(tmp_path: Path) -> None:
    d = _settings_dir(tmp_path, "claude-settings-with-statusline.json")
    apply_plan(plan_install(d, python=PY, force=True))
    data = json.loads((d / "settings.json").read_bytes())
    data["hooks"]["Stop"].append({"hooks": [{"type": "command", "command": "echo later"}]})
    data["theme"] = "dark"
    (d / "settings.json").write_text(json.dumps(data))
    undo = plan_uninstall(d)
    assert not undo.restore_backup
    apply_plan(undo)
    after = json.loads((d / "settings.json").read_bytes())
    assert not any(is_ours(c) for c in _commands(after))
    assert after["statusLine"]["command"] == "~/.claude/my-statusline.sh"  # theirs put back
    assert after["theme"] == "dark"
    assert [c for c in _commands(after)] == ["say done", "echo later"]


def test_uninstall_when_not_installed_changes_nothing(tmp_path: Path) -> None:
    d = _settings_dir(tmp_path, "claude-settings-with-hooks.json")
    plan = plan_uninstall(d)
    assert not plan.changed
    apply_plan(plan)
    assert (d / "settings.json").read_bytes() == (FIXTURES / "claude-settings-with-hooks.json").read_bytes()


def test_invalid_settings_is_a_clear_error(tmp_path: Path) -> None:
    d = _settings_dir(tmp_path, "claude-settings-invalid.json")
    with pytest.raises(ConfigError, match="not valid JSON"):
        plan_install(d, python=PY)


def test_default_settings_dir_by_scope(tmp_path: Path) -> None:
    assert (
        default_settings_dir(Scope.USER, home=tmp_path / "h", cwd=tmp_path / "p")
        == tmp_path / "h" / ".claude"
    )
    assert (
        default_settings_dir(Scope.PROJECT, home=tmp_path / "h", cwd=tmp_path / "p")
        == tmp_path / "p" / ".claude"
    )


def test_is_ours_recognises_only_ctxhealth_commands() -> None:
    assert is_ours(hook_command("/usr/bin/python3", "Stop"))
    assert is_ours(statusline_command("'/my venv/bin/python'") + " --then 'x'")
    assert is_ours("/usr/bin/python3 -m ctxhealth.cli.hook Stop")  # what earlier versions wrote
    assert is_ours("ctxhealth hook PreCompact")
    assert is_ours("'/my venv/bin/python' -m ctxhealth.cli.statusline --then 'x'")
    assert not is_ours("npx prettier --write")
    assert not is_ours("echo ctxhealth is nice")
    assert not is_ours(None)


def test_cli_dry_run_then_apply_then_uninstall(tmp_path: Path) -> None:
    d = _settings_dir(tmp_path, "claude-settings-with-hooks.json")
    original = (d / "settings.json").read_bytes()
    dry = invoke(["install", "claude-code", "--claude-dir", str(d), "--python", PY])
    assert dry.exit_code == 0, dry.output
    assert "+++ " in dry.output and json.dumps(hook_command(PY, "PreCompact"))[1:-1] in dry.output
    assert (d / "settings.json").read_bytes() == original
    applied = invoke(["install", "claude-code", "--claude-dir", str(d), "--python", PY, "--apply", "--json"])
    assert applied.exit_code == 0, applied.output
    doc = json.loads(applied.output)
    assert doc["applied"] and doc["backup"].endswith(".ctxhealth-backup")
    # --settings, the option's old name, still works: hidden from --help, with a note on stderr
    gone = invoke(["uninstall", "claude-code", "--settings", str(d / "settings.json"), "--apply"])
    assert gone.exit_code == 0, gone.output
    assert "--settings is deprecated; use --claude-dir" in gone.stderr
    assert (d / "settings.json").read_bytes() == original
    help_text = invoke(["uninstall", "claude-code", "--help"]).output
    assert "--claude-dir" in help_text and "--settings" not in help_text


def test_cli_invalid_settings_exit_code(tmp_path: Path) -> None:
    d = _settings_dir(tmp_path, "claude-settings-invalid.json")
    result = invoke(["install", "claude-code", "--claude-dir", str(d)])
    assert result.exit_code == 3


_json_leaf = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=8))
_json = st.recursive(
    _json_leaf,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=12,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    extra=st.dictionaries(
        st.text(min_size=1, max_size=8).filter(lambda k: k not in ("hooks", "statusLine")), _json, max_size=4
    ),
    indent=st.sampled_from([None, 2, 4]),
)
def test_round_trip_any_settings(
    tmp_path_factory: pytest.TempPathFactory, extra: dict[str, object], indent: int | None
) -> None:
    d = tmp_path_factory.mktemp("claude") / ".claude"
    d.mkdir()
    data = {**extra, "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}}
    raw = json.dumps(data, indent=indent).encode()
    (d / "settings.json").write_bytes(raw)
    apply_plan(plan_install(d, python=PY))
    assert not plan_install(d, python=PY).changed
    apply_plan(plan_uninstall(d))
    assert (d / "settings.json").read_bytes() == raw


def test_installed_commands_really_run(tmp_path: Path) -> None:
    """Run each command exactly as written into settings.json, as Claude Code would (a shell)."""
    import os
    import subprocess
    import sys

    d = _settings_dir(tmp_path, None)
    apply_plan(plan_install(d, python=sys.executable))
    settings = json.loads((d / "settings.json").read_bytes())
    transcript = tmp_path / "s1.jsonl"
    usage = {"input_tokens": 5, "cache_read_input_tokens": 30_000, "output_tokens": 2}
    lines = [
        {
            "type": "user",
            "uuid": "u0",
            "sessionId": "s1",
            "message": {"role": "user", "content": "Fix the parser"},
        },
        {
            "type": "assistant",
            "uuid": "a1",
            "sessionId": "s1",
            "message": {
                "id": "m1",
                "role": "assistant",
                "model": "claude-sonnet-4-5-20250929",
                "content": [],
                "usage": usage,
            },
        },
    ]
    transcript.write_text("".join(json.dumps(x) + "\n" for x in lines))
    env = {**os.environ, "CTXHEALTH_HOME": str(tmp_path / "home"), "NO_COLOR": "1"}
    common = {"session_id": "s1", "transcript_path": str(transcript), "cwd": str(tmp_path)}
    extra = {
        "PreCompact": {"trigger": "manual"},
        "SessionStart": {"source": "compact"},
        "UserPromptSubmit": {"prompt": "go"},
        "PostToolUse": {"tool_name": "Read", "tool_input": {"file_path": "/a"}, "tool_use_id": "t1"},
        "PostToolUseFailure": {
            "tool_name": "Bash",
            "tool_input": {"command": "x"},
            "tool_use_id": "t2",
            "error": "1",
        },
        "Stop": {"stop_hook_active": False},
        "PostCompact": {"trigger": "manual", "compact_summary": "The user asked to fix the parser."},
    }
    outputs = {}
    for event, groups in settings["hooks"].items():
        command = groups[-1]["hooks"][0]["command"]
        payload = json.dumps({**common, "hook_event_name": event, **extra[event]}).encode()
        done = subprocess.run(
            command, shell=True, input=payload, capture_output=True, env=env, timeout=60, check=False
        )
        assert done.returncode == 0 and done.stderr == b"", (event, done.stderr)
        outputs[event] = done.stdout.decode()
    assert "additionalContext" in outputs["SessionStart"] and "Fix the parser" in outputs["SessionStart"]
    status = subprocess.run(
        settings["statusLine"]["command"],
        shell=True,
        input=json.dumps({**common, "model": {"id": "claude-sonnet-4-5-20250929"}}).encode(),
        capture_output=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert status.returncode == 0 and status.stdout.decode().startswith("● green · 30.0K/")
