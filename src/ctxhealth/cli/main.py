"""The ``ctxhealth`` command group. Sub-commands are imported lazily so hooks start fast.

Each sub-command lives in its own module under ``ctxhealth.cli`` and is registered in
``COMMANDS`` as ``name -> "module:attribute"``.
"""

from __future__ import annotations

import importlib
import sys

import click

from ctxhealth import __version__

COMMANDS: dict[str, str] = {
    "check": "ctxhealth.cli.check:check",
    "checkpoint": "ctxhealth.cli.state:checkpoint",
    "state": "ctxhealth.cli.state:state",
    "config": "ctxhealth.cli.config_cmd:config",
    "recover": "ctxhealth.cli.recover:recover",
    "retention": "ctxhealth.cli.retention:retention",
    "install": "ctxhealth.cli.install:install",
    "uninstall": "ctxhealth.cli.install:uninstall",
    "hook": "ctxhealth.cli.hook:hook",
    "statusline": "ctxhealth.cli.statusline:statusline",
    "calibrate": "ctxhealth.cli.calibrate:calibrate",
    "validate": "ctxhealth.cli.validate:validate",
    "doctor": "ctxhealth.cli.doctor:doctor",
    "watch": "ctxhealth.cli.watch:watch",
    "pack": "ctxhealth.cli.pack:pack",
}


class LazyGroup(click.Group):
    """A click group that imports a sub-command's module only when it is invoked."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attribute = target.split(":")
        command = getattr(importlib.import_module(module_name), attribute)
        assert isinstance(command, click.Command)
        return command


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ctxhealth")
def cli() -> None:
    """Keep long-running LLM agents healthy: fill, pressure, drift, failure spirals, recovery."""


def main() -> None:
    """Console-script entry point."""
    cli.main(args=sys.argv[1:], prog_name="ctxhealth")
