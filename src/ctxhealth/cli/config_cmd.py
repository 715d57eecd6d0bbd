"""``ctxhealth config show``: every setting, its value and where it came from."""

from __future__ import annotations

import os
from pathlib import Path

import click

from ctxhealth.cli.common import SCHEMA_VERSION, dump_json, echo_json, guarded
from ctxhealth.config import PROJECT_FILE, USER_FILE, load_settings


@click.group("config")
def config() -> None:
    """Inspect ctxhealth's configuration (flags > CTXHEALTH_* > ./.ctxhealth.toml > user config)."""


@config.command("show")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@guarded
def show(as_json: bool) -> None:
    """Print each setting with its value and origin."""
    settings = load_settings({}, os.environ, Path.cwd())
    searched = [str(settings.home / USER_FILE), str(Path.cwd() / PROJECT_FILE)]
    if as_json:
        echo_json(
            {
                "schema_version": SCHEMA_VERSION,
                "files_searched": searched,
                "files_read": [str(p) for p in settings.files],
                "settings": [{"key": k, "value": v, "origin": o} for k, v, o in settings.items()],
            }
        )
        return
    click.echo("config files (lowest precedence first):")
    for path in searched:
        state = "read" if Path(path) in settings.files else "absent"
        click.echo(f"  {path} ({state})")
    click.echo("settings:")
    for key, value, origin in settings.items():
        click.echo(f"  {key} = {dump_json(value)}  ({origin})")
    if settings.model is None:
        click.echo("  model = (from each transcript)  (default)")
    if settings.profile is None:
        click.echo("  profile = (built-in)  (default)")
