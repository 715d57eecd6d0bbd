"""Settings precedence, origins, validation and `ctxhealth config show`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import invoke
from ctxhealth.accounting.registry import ModelRegistry
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
    assert settings.registry().lookup("gpt-4.1").window == ModelRegistry.default().lookup("gpt-4.1").window


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
    text = invoke(["config", "show"])
    # the user config names a profile file that does not exist: everything is shown, then the error
    assert text.exit_code == 3, text.output
    assert text.output.rstrip().endswith("check the path or run `ctxhealth calibrate`")
    assert 'model = "env-model"  (env CTXHEALTH_MODEL)' in text.output
    assert f'models."gpt-4.1".window = 600000  ({project / ".ctxhealth.toml"})' in text.output
    assert f"({home / 'config.toml'})" in text.output
    result = invoke(["config", "show", "--json"])
    assert result.exit_code == 3
    doc = json.loads(result.stdout)
    assert "profile not found" in doc["profile_error"]
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
    result = invoke(["config", "show"])
    assert result.exit_code == 3
    assert ".ctxhealth.toml:1" in result.output


def test_config_show_prints_every_profile_threshold_with_its_origin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ctxhealth.policy import Profile

    project = tmp_path / "project"
    write(project / ".ctxhealth.toml", "[profile]\ncooldown = 5\n[profile.tiers.full]\nhard_limit = 150000\n")
    monkeypatch.chdir(project)
    monkeypatch.setenv("CTXHEALTH_PROFILE__PRESSURE_WARNING", "0.5")
    result = invoke(["config", "show"])
    assert result.exit_code == 0, result.output
    config_file = project / ".ctxhealth.toml"
    lines = result.output.splitlines()
    assert f"  profile.cooldown = 5  ({config_file})" in lines
    assert f"  profile.tiers.full.hard_limit = 150000  ({config_file})" in lines
    assert "  profile.pressure_warning = 0.5  (env CTXHEALTH_PROFILE__PRESSURE_WARNING)" in lines
    assert "  profile.pressure_critical = 0.85  (default)" in lines
    assert "  profile.tiers.compact.sweet_spot = 20000  (default)" in lines
    assert any(line.startswith("  profile.risk = {") and "shipped" in line for line in lines)
    # every field of the Profile is shown (tiers per limit), in JSON too
    doc = json.loads(invoke(["config", "show", "--json"]).stdout)
    keys = {e["key"] for e in doc["profile"]}
    fields = set(Profile().to_dict()) - {"schema_version", "tiers"}
    assert {f"profile.{f}" for f in fields} <= keys
    assert {
        f"profile.tiers.{t}.{k}"
        for t in ("full", "compact", "local")
        for k in ("sweet_spot", "compact_zone", "hard_limit")
    } <= keys
    assert doc["profile_error"] is None


def test_config_show_summarises_long_tables_in_text() -> None:
    """The shipped profile's per-format risk models (hundreds of numbers and training-run hashes) are one
    short line in the text; ``--json`` keeps them whole."""
    result = invoke(["config", "show"])
    assert result.exit_code == 0, result.output
    line = next(x for x in result.output.splitlines() if x.startswith("  profile.risk_by_format = "))
    assert len(line) < 200, line
    assert "(whole: --json)" in line and "tau-bench" in line
    doc = json.loads(invoke(["config", "show", "--json"]).stdout)
    whole = next(e["value"] for e in doc["profile"] if e["key"] == "profile.risk_by_format")
    assert "weights" in whole["tau-bench"]


def test_config_show_names_the_profile_file_values_come_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ctxhealth.policy import Profile

    mine = {"name": "mine", "cooldown": 7, "tiers": {"local": {"hard_limit": 40000}}}
    profile_file = write(tmp_path / "mine.json", json.dumps(mine))
    config = f"[profile]\nfile = {json.dumps(str(profile_file))}\nmax_restarts = 1\n"
    write(tmp_path / ".ctxhealth.toml", config)
    monkeypatch.chdir(tmp_path)
    result = invoke(["config", "show"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert f"profile = {profile_file}  ({tmp_path / '.ctxhealth.toml'})" in lines
    assert f"  profile.cooldown = 7  (profile file {profile_file})" in lines
    assert f"  profile.tiers.local.hard_limit = 40000  (profile file {profile_file})" in lines
    assert f"  profile.max_restarts = 1  ({tmp_path / '.ctxhealth.toml'})" in lines
    assert "  profile.risk = null  (default)" in lines
    assert Profile().cooldown != 7
