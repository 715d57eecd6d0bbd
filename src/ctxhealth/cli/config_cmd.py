"""``ctxhealth config show``: every setting and every threshold in use, its value and where it came from."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from ctxhealth.cli.common import SCHEMA_VERSION, dump_json, echo_json, guarded
from ctxhealth.cli.groups import SuggestingGroup
from ctxhealth.config import PROJECT_FILE, USER_FILE, Settings, load_settings
from ctxhealth.errors import ConfigError
from ctxhealth.policy.knowledge import usable_window_rule
from ctxhealth.policy.origins import profile_settings


@click.group("config", cls=SuggestingGroup)
def config() -> None:
    """Inspect ctxhealth's configuration (flags > CTXHEALTH_* > ./.ctxhealth.toml > user config)."""


@config.command("show")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@guarded
def show(as_json: bool) -> None:
    """Print each setting, and every threshold of the profile in use, with its value and origin."""
    settings = load_settings({}, os.environ, Path.cwd())
    problem: ConfigError | None = None
    try:
        profile = profile_settings(settings)
    except ConfigError as exc:  # show everything else, then fail as every command would
        profile, problem = [], exc
    searched = [str(settings.home / USER_FILE), str(Path.cwd() / PROJECT_FILE)]
    # [profile] overrides are listed once, with the thresholds they change
    general = [(k, v, o) for k, v, o in settings.items() if k != "profile" and not k.startswith("profile.")]
    profile_file = str(settings.profile) if settings.profile else None
    models = usable_window_rule(settings.registry(), settings.model)
    if as_json:
        echo_json(
            {
                "schema_version": SCHEMA_VERSION,
                "files_searched": searched,
                "files_read": [str(p) for p in settings.files],
                "settings": [{"key": k, "value": v, "origin": o} for k, v, o in settings.items()],
                "profile_file": profile_file,
                "profile": [{"key": s.key, "value": s.value, "origin": s.origin} for s in profile],
                "profile_error": problem.render() if problem else None,
                "models": models,
            }
        )
        if problem:
            raise problem
        return
    click.echo("config files (lowest precedence first):")
    for path in searched:
        state = "read" if Path(path) in settings.files else "absent"
        click.echo(f"  {path} ({state})")
    click.echo("settings:")
    for key, value, origin in general:
        click.echo(f"  {key} = {dump_json(value)}  ({origin})")
    if settings.model is None:
        click.echo("  model = (from each transcript)  (default)")
    _echo_models(models)
    where = f"{profile_file}  ({_profile_origin(settings)})" if profile_file else "(built-in)  (default)"
    click.echo(f"profile = {where}")
    for s in profile:
        click.echo(f"  {s.key} = {_brief(s.value)}  ({s.origin})")
    if problem:
        click.echo("  (cannot be read: see the error below)")
        raise problem


SHOWN_WIDTH = 120
"""A value whose JSON is longer than this is summarised in the text output (``--json`` has it whole)."""


def _brief(value: Any) -> str:
    """``value`` as JSON, or, when that is long, its shape: scalars kept, lists and tables counted."""
    text = dump_json(value)
    if len(text) <= SHOWN_WIDTH or not isinstance(value, dict | list):
        return text

    def shape(item: Any) -> str:
        if isinstance(item, dict):
            return f"<{len(item)} keys>"
        if isinstance(item, list):
            return f"<{len(item)} items>"
        short = dump_json(item)
        return short if len(short) <= 40 else short[:37] + "..."

    if isinstance(value, dict):
        inner = ", ".join(f"{k}: {shape(v)}" for k, v in value.items())
        return f"{{{inner}}}  (whole: --json)"
    return f"[{len(value)} items]  (whole: --json)"


def _echo_models(models: dict[str, Any]) -> None:
    package, cc = models["package"], models["claude_code"]
    found = f"{package['name']} {package['version']} ({package['table']})" if package["version"] else "none"
    click.echo("models (`ctxhealth models ID` for one):")
    click.echo(f"  windows and prices = {found}")
    click.echo(f"  usable window = {models['usable_window']}")
    click.echo(
        f"  Claude Code: reserved output = min(the model's max output, {cc['max_reserve']:,}), "
        f"auto-compact buffer {cc['autocompact_buffer']:,} "
        f"(compacts near {cc['usable_at_200k']:,} of 200,000)"
    )
    click.echo(f"  {models['stated_window']}")
    m = models["for_model"]
    if m is not None:
        click.echo(
            f"  {m['id']}: usable window {m['usable_window']:,} = {m['window']:,} - "
            f"{m['reserved_output']:,} - {m['autocompact_buffer']:,}"
        )


def _profile_origin(settings: Settings) -> str:
    key = ("profile",) if ("profile",) in settings.values else ("profile", "file")
    return settings.origin(*key)
