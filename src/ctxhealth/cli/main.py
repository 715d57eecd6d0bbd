"""The ``ctxhealth`` command group. Sub-commands are imported lazily so hooks start fast.

Each sub-command lives in its own module under ``ctxhealth.cli`` and is registered in
``COMMANDS`` as ``name -> "module:attribute"``.
"""

from __future__ import annotations

import gc
import importlib
import sys

import click

from ctxhealth import __version__
from ctxhealth.cli.groups import SuggestingGroup
from ctxhealth.errors import ExitCode

COMMANDS: dict[str, str] = {
    "audit": "ctxhealth.cli.audit:audit",
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
    "models": "ctxhealth.cli.models:models",
    "watch": "ctxhealth.cli.watch:watch",
    "report": "ctxhealth.cli.report:report",
    "fleet": "ctxhealth.cli.fleet:fleet",
    "insights": "ctxhealth.cli.insights:insights",
    "proxy": "ctxhealth.cli.proxy:proxy",
    "pack": "ctxhealth.cli.pack:pack",
    "mcp": "ctxhealth.cli.mcp:mcp",
}


class LazyGroup(SuggestingGroup):
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
    from ctxhealth.accounting.catalog import configure_cache_dir
    from ctxhealth.home import default_home

    # the model catalog's derived table is cached under this invocation's ctxhealth home (the hooks
    # name theirs too; a process that names none takes the default home's)
    configure_cache_dir(default_home())


def load_command(name: str | None) -> None:
    """A process's start-up: import command ``name``'s module (when it is one), then move every object
    imported so far into the collector's permanent generation (``gc.freeze``). Those objects live as
    long as the process; frozen, no collection during the run walks them again (for ``check`` of a
    few sessions that walk was about a twentieth of its CPU). The collector is off while the module
    is imported: an import allocates a great deal and frees almost nothing."""
    target = COMMANDS.get(name) if name else None
    if target is None:
        return
    enabled = gc.isenabled()
    gc.disable()
    try:
        importlib.import_module(target.partition(":")[0])
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def main() -> None:
    """Console-script entry point. An exception no command expected exits 5 (internal error) with its
    traceback, never 1, which means "unhealthy" to scripts."""
    try:
        load_command(sys.argv[1] if len(sys.argv) > 1 else None)
        cli.main(args=sys.argv[1:], prog_name="ctxhealth")
    except Exception as exc:  # the CLI's last resort; click handles its own errors and exits
        import traceback  # only on this path: every command starts through here

        traceback.print_exc()
        click.echo(
            f"ctxhealth: internal error: {type(exc).__name__}: {exc}. "
            "This is a bug: please report it with the traceback above",
            err=True,
        )
        sys.exit(int(ExitCode.INTERNAL))
