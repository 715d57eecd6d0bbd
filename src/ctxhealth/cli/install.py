"""``ctxhealth install claude-code|codex|gemini`` and ``uninstall ...``: edit an agent's hook settings.

Claude Code: ``settings.json`` (hooks and status line); Codex CLI: ``hooks.json`` in ``$CODEX_HOME`` or
``~/.codex`` (``./.codex`` with ``--scope project``); Gemini CLI: ``settings.json`` in ``~/.gemini``
(``./.gemini``). ``--dir`` names another directory (or the file itself).

Dry run by default: prints the unified diff of settings.json and what would happen; ``--apply`` writes
it (backup first, atomic write). Idempotent. The settings directory is ``~/.claude`` (``--scope user``,
default), ``./.claude`` (``--scope project``) or ``--claude-dir DIR`` (``--settings``, its old name, still
works).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from ctxhealth.cli.common import deprecated_alias, echo_json, guarded
from ctxhealth.cli.groups import SuggestingGroup
from ctxhealth.integrations.claude_code.agents import Agent
from ctxhealth.integrations.claude_code.install import (
    InstallPlan,
    Scope,
    apply_plan,
    default_settings_dir,
    plan_install,
    plan_uninstall,
)

_SCOPE = click.Choice([s.value for s in Scope])

_SCOPE_OPTION = click.option(
    "--scope", type=_SCOPE, default=Scope.USER.value, show_default=True, help="Which settings file."
)
_CLAUDE_DIR_OPTION = click.option(
    "--claude-dir",
    type=click.Path(path_type=Path),
    help="Claude Code directory whose settings.json to edit, or that settings.json "
    "(default: ~/.claude; ./.claude with --scope project).",
)
# the name this option had before doctor and watch settled on --claude-dir
_SETTINGS_ALIAS = click.option(
    "--settings",
    "settings_alias",
    type=click.Path(path_type=Path),
    hidden=True,
    callback=deprecated_alias("--settings", "--claude-dir"),
)
_APPLY_OPTION = click.option("--apply", is_flag=True, help="Write the change (default: show the diff only).")
_JSON_OPTION = click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")


def _settings_target(command: Any) -> Any:
    """The options install and uninstall share: which settings file, and whether to write it."""
    return _SCOPE_OPTION(_CLAUDE_DIR_OPTION(_SETTINGS_ALIAS(_APPLY_OPTION(command))))


def _settings_dir(scope: str, claude_dir: Path | None, settings_alias: Path | None) -> Path:
    chosen = claude_dir or settings_alias
    if chosen is not None:
        return chosen.parent if chosen.name == "settings.json" else chosen
    return default_settings_dir(Scope(scope), home=Path(os.path.expanduser("~")), cwd=Path.cwd())


def _report(plan: InstallPlan, *, apply: bool, as_json: bool, verb: str) -> None:
    backup = apply_plan(plan) if apply and plan.changed else None
    if as_json:
        echo_json(
            {
                "schema_version": 1,
                "action": verb,
                "settings": str(plan.settings_path),
                "changed": plan.changed,
                "applied": bool(apply and plan.changed),
                "statusline": plan.statusline.value,
                "backup": str(backup) if backup else None,
                "restored_backup": plan.restore_backup,
                "notes": list(plan.notes),
                "diff": plan.diff(),
            }
        )
        return
    if not plan.changed:
        click.echo(f"{plan.settings_path}: nothing to change ({verb} is already done)")
    else:
        click.echo(plan.diff(), nl=False)
    for note in plan.notes:
        click.echo(f"note: {note}", err=True)
    if plan.changed and not apply:
        click.echo(f"dry run: re-run with --apply to {verb} (a backup is kept)", err=True)
    elif plan.changed:
        where = f"; backup: {backup}" if backup else ""
        click.echo(f"{verb}ed: {plan.settings_path}{where}", err=True)


@click.group("install", cls=SuggestingGroup, context_settings={"help_option_names": ["-h", "--help"]})
def install() -> None:
    """Install ctxhealth into an agent host (dry run unless --apply)."""


@install.command("claude-code")
@_settings_target
@click.option("--force", is_flag=True, help="Replace an existing status line (uninstall restores it).")
@click.option(
    "--python", "python", default=sys.executable, show_default=False, help="Interpreter the hooks run."
)
@_JSON_OPTION
@guarded
def claude_code(
    scope: str,
    claude_dir: Path | None,
    settings_alias: Path | None,
    apply: bool,
    force: bool,
    python: str,
    as_json: bool,
) -> None:
    """Add ctxhealth's hooks and status line to Claude Code's settings.json."""
    plan = plan_install(_settings_dir(scope, claude_dir, settings_alias), python=python, force=force)
    _report(plan, apply=apply, as_json=as_json, verb="install")
    if apply:
        from ctxhealth.accounting.catalog import default_catalog

        default_catalog()  # derive the model table now, so the hooks' first run only reads it


_DIR_OPTION = click.option(
    "--dir",
    "settings_dir",
    type=click.Path(path_type=Path),
    help="The agent's directory whose hook file to edit, or that file.",
)
_PYTHON_OPTION = click.option(
    "--python", "python", default=sys.executable, show_default=False, help="Interpreter the hooks run."
)


def _agent_dir(agent: Agent, scope: str, settings_dir: Path | None) -> Path:
    from ctxhealth.integrations.claude_code.install import TARGETS

    if settings_dir is not None:
        return settings_dir.parent if settings_dir.name == TARGETS[agent].file_name else settings_dir
    return default_settings_dir(
        Scope(scope),
        home=Path(os.path.expanduser("~")),
        cwd=Path.cwd(),
        agent=agent,
        codex_home=os.environ.get("CODEX_HOME"),
    )


def _agent_install(agent: Agent, help_text: str) -> Any:
    @install.command(agent.value, help=help_text)
    @_SCOPE_OPTION
    @_DIR_OPTION
    @_APPLY_OPTION
    @_PYTHON_OPTION
    @_JSON_OPTION
    @guarded
    def command(scope: str, settings_dir: Path | None, apply: bool, python: str, as_json: bool) -> None:
        plan = plan_install(_agent_dir(agent, scope, settings_dir), python=python, agent=agent)
        _report(plan, apply=apply, as_json=as_json, verb="install")

    return command


codex = _agent_install(
    Agent.CODEX,
    "Add ctxhealth's hooks to Codex CLI's hooks.json: per-turn notices, a checkpoint before "
    "compaction and its re-injection after.",
)
gemini = _agent_install(
    Agent.GEMINI,
    "Add ctxhealth's hooks to Gemini CLI's settings.json: per-turn notices, a checkpoint before "
    "compression and its re-injection with the next prompt.",
)


@click.group("uninstall", cls=SuggestingGroup, context_settings={"help_option_names": ["-h", "--help"]})
def uninstall() -> None:
    """Remove ctxhealth from an agent host (dry run unless --apply)."""


def _register_mcp_and_skill() -> None:
    """``install|uninstall mcp`` and ``install|uninstall skill`` (:mod:`ctxhealth.cli.install_mcp`)."""
    from ctxhealth.cli.install_mcp import register

    register(install, uninstall)


_register_mcp_and_skill()


@uninstall.command("claude-code")
@_settings_target
@_JSON_OPTION
@guarded
def claude_code_uninstall(
    scope: str, claude_dir: Path | None, settings_alias: Path | None, apply: bool, as_json: bool
) -> None:
    """Take ctxhealth out of Claude Code's settings.json (byte-identical restore when untouched since)."""
    plan = plan_uninstall(_settings_dir(scope, claude_dir, settings_alias))
    _report(plan, apply=apply, as_json=as_json, verb="uninstall")


def _agent_uninstall(agent: Agent, help_text: str) -> Any:
    @uninstall.command(agent.value, help=help_text)
    @_SCOPE_OPTION
    @_DIR_OPTION
    @_APPLY_OPTION
    @_JSON_OPTION
    @guarded
    def command(scope: str, settings_dir: Path | None, apply: bool, as_json: bool) -> None:
        plan = plan_uninstall(_agent_dir(agent, scope, settings_dir), agent)
        _report(plan, apply=apply, as_json=as_json, verb="uninstall")

    return command


codex_uninstall = _agent_uninstall(
    Agent.CODEX, "Take ctxhealth out of Codex CLI's hooks.json (your own hooks stay)."
)
gemini_uninstall = _agent_uninstall(
    Agent.GEMINI, "Take ctxhealth out of Gemini CLI's settings.json (your own hooks stay)."
)
