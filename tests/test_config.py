"""Settings precedence, origins, validation and `ctxhealth config show`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxhealth.cli.main import cli
from ctxhealth.config import load_settings
from ctxhealth.errors import ConfigError


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def layers(tmp_path: Path) -> tuple[Path, Path]:
    home, project = tmp_path / "home", tmp_path / "project"
    write(
        home / "config.toml",
        'model = "user-model"\nprofile = "~/user.toml"\n'
        '[models."gpt-4.1"]\nwindow = 500000\ninput = 1.0\n[policy]\ncooldown = 2\nmax_restarts = 3\n',
    )
    write(
        project / ".ctxhealth.toml",
        'model = "project-model"\n[models."gpt-4.1"]\nwindow = 600000\n[policy]\ncooldown = 4\n',
    )
    return home, project


def test_defaults_without_any_layer(tmp_path: Path) -> None:
    settings = load_settings({}, {}, tmp_path)
    assert settings.home == Path("~/.ctxhealth").expanduser()
    assert settings.origin("home") == "default"
    assert (settings.model, settings.profile, settings.files) == (None, None, ())
    assert settings.registry().lookup("gpt-4.1").window == 1_047_576


def test_precedence_flags_env_project_user_default(layers: tuple[Path, Path]) -> None:
    home, project = layers
    env = {"CTXHEALTH_HOME": str(home)}
    settings = load_settings({}, env, project)
    assert settings.model == "project-model"
    assert settings.origin("model") == str(project / ".ctxhealth.toml")
    assert settings.profile == Path("~/user.toml").expanduser()
    assert settings.origin("profile") == str(home / "config.toml")
    # Tables merge key by key: the project changes the window, the user's price stays.
    gpt = settings.registry().lookup("gpt-4.1")
    assert gpt.window == 600_000
    assert gpt.prices is not None and gpt.prices.input == 1.0
    assert settings.section("policy") == {"cooldown": 4, "max_restarts": 3}
    assert settings.origin("policy", "max_restarts") == str(home / "config.toml")

    env["CTXHEALTH_MODEL"] = "env-model"
    env["CTXHEALTH_POLICY__COOLDOWN"] = "9"
    env["CTXHEALTH_ROOT"] = "/unrelated"  # not a settings key: ignored
    settings = load_settings({}, env, project)
    assert (settings.model, settings.origin("model")) == ("env-model", "env CTXHEALTH_MODEL")
    assert settings.get("policy", "cooldown") == 9
    assert ("root",) not in settings.values

    settings = load_settings({"model": "flag-model", "policy.cooldown": 1}, env, project)
    assert (settings.model, settings.origin("model")) == ("flag-model", "flag --model")
    assert settings.get("policy", "cooldown") == 1
    assert settings.home == home and settings.origin("home") == "env CTXHEALTH_HOME"


def test_none_flags_do_not_override(layers: tuple[Path, Path]) -> None:
    home, project = layers
    settings = load_settings({"model": None}, {"CTXHEALTH_HOME": str(home)}, project)
    assert settings.model == "project-model"


def test_home_flag_locates_the_user_config(layers: tuple[Path, Path], tmp_path: Path) -> None:
    home, _ = layers
    settings = load_settings({"home": str(home)}, {"CTXHEALTH_HOME": "/nowhere"}, tmp_path)
    assert settings.model == "user-model"
    assert settings.origin("home") == "flag --home"


def test_bad_toml_reports_file_and_line(tmp_path: Path) -> None:
    bad = write(tmp_path / ".ctxhealth.toml", 'model = "ok"\n\nwindow = = 3\n')
    with pytest.raises(ConfigError) as info:
        load_settings({}, {}, tmp_path)
    assert (info.value.path, info.value.line) == (str(bad), 3)
    assert "invalid TOML" in info.value.message
    assert info.value.hint


@pytest.mark.parametrize(
    "text",
    [
        "model = 3\n",
        'home = "/x"\n',
        "[models]\nwindow = 3\n",
        '[models."acme"]\nwindow = "big"\n',
        "[model]\nx = 1\n",
    ],
)
def test_invalid_values_raise_config_error_naming_the_file(tmp_path: Path, text: str) -> None:
    path = write(tmp_path / ".ctxhealth.toml", text)
    with pytest.raises(ConfigError) as info:
        load_settings({}, {}, tmp_path)
    assert info.value.path == str(path)


def test_non_utf8_config_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / ".ctxhealth.toml").write_bytes(b"model = '\xff'\n")
    with pytest.raises(ConfigError):
        load_settings({}, {}, tmp_path)


def test_config_show_prints_values_and_origins(
    layers: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    home, project = layers
    monkeypatch.setenv("CTXHEALTH_HOME", str(home))
    monkeypatch.setenv("CTXHEALTH_MODEL", "env-model")
    monkeypatch.chdir(project)
    text = CliRunner().invoke(cli, ["config", "show"])
    assert text.exit_code == 0, text.output
    assert 'model = "env-model"  (env CTXHEALTH_MODEL)' in text.output
    assert f'models."gpt-4.1".window = 600000  ({project / ".ctxhealth.toml"})' in text.output
    assert f"({home / 'config.toml'})" in text.output
    result = CliRunner().invoke(cli, ["config", "show", "--json"])
    doc = json.loads(result.output)
    entries = {e["key"]: e for e in doc["settings"]}
    assert entries["policy.cooldown"] == {
        "key": "policy.cooldown",
        "value": 4,
        "origin": str(project / ".ctxhealth.toml"),
    }
    assert entries["home"]["origin"] == "env CTXHEALTH_HOME"
    assert doc["files_read"] == [str(home / "config.toml"), str(project / ".ctxhealth.toml")]


def test_config_show_bad_file_exits_3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / ".ctxhealth.toml", "[[[\n")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["config", "show"])
    assert result.exit_code == 3
    assert ".ctxhealth.toml:1" in result.output
