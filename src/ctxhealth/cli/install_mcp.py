"""``ctxhealth install mcp|skill --agent ...`` and their ``uninstall``: register the MCP server in a
host's own MCP configuration, or write the ``context-health`` Agent Skill folder where it loads skills.

Dry run by default: prints the unified diff of every file and what would happen; ``--apply`` writes
(backup of a shared configuration file first, atomic writes). Idempotent. ``--scope project`` targets
the current project's files instead of the user's (Claude Code ``.mcp.json`` / ``.claude/skills``,
Codex ``.codex/``, Gemini ``.gemini/``). The commands are attached to the ``install`` and
``uninstall`` groups by :func:`register`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from ctxhealth.cli.common import echo_json, guarded
from ctxhealth.integrations.hostconfig import FilePlan, apply_file_plan
from ctxhealth.integrations.mcp_install import Agent

_AGENT = click.option(
    "--agent", type=click.Choice([a.value for a in Agent]), required=True, help="Which agent host."
)
_SCOPE = click.option(
    "--scope",
    type=click.Choice(["user", "project"]),
    default="user",
    show_default=True,
    help="The user's files, or this project's.",
)
_APPLY = click.option("--apply", is_flag=True, help="Write the change (default: show the diff only).")
_JSON = click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
_CONFIG = click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The host's configuration file to edit (default: the host's own for the scope).",
)
_SKILLS_DIR = click.option(
    "--skills-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="The skill folder to write (default: the host's, for the scope).",
)


def _home() -> Path:
    return Path(os.path.expanduser("~"))


def _codex_home() -> Path | None:
    value = os.environ.get("CODEX_HOME")
    return Path(value) if value else None


def _report(plans: Sequence[FilePlan], *, apply: bool, as_json: bool, verb: str, what: str) -> None:
    changed = [p for p in plans if p.changed]
    backups = [apply_file_plan(p) for p in changed] if apply else []
    if as_json:
        echo_json(
            {
                "schema_version": 1,
                "action": verb,
                "what": what,
                "files": [str(p.path) for p in plans],
                "changed": bool(changed),
                "applied": bool(apply and changed),
                "backups": [str(b) for b in backups if b],
                "notes": [n for p in plans for n in p.notes],
                "diff": "".join(p.diff() for p in plans),
            }
        )
        return
    if not changed:
        where = ", ".join(str(p.path) for p in plans) or "nothing there"
        click.echo(f"{where}: nothing to change ({verb} {what} is already done)")
    for plan in changed:
        click.echo(plan.diff(), nl=False)
    for plan in plans:
        for note in plan.notes:
            click.echo(f"note: {note}", err=True)
    if changed and not apply:
        click.echo(f"dry run: re-run with --apply to {verb} {what}", err=True)
    elif changed:
        kept = "".join(f"; backup: {b}" for b in backups if b)
        click.echo(f"{verb}ed {what}: {', '.join(str(p.path) for p in changed)}{kept}", err=True)


def _mcp_target(agent: str, project: bool, config_path: Path | None) -> Any:
    from ctxhealth.integrations.mcp_install import McpTarget, mcp_target

    target = mcp_target(Agent(agent), project=project, home=_home(), cwd=Path.cwd(), codex_home=_codex_home())
    if config_path is not None:
        target = McpTarget(target.agent, config_path, toml=target.toml, env=target.env)
    return target


@click.command("mcp")
@_AGENT
@_SCOPE
@_CONFIG
@_APPLY
@click.option(
    "--python", default=sys.executable, help="Interpreter that runs the server (has ctxhealth[mcp])."
)
@_JSON
@guarded
def install_mcp(
    agent: str, scope: str, config_path: Path | None, apply: bool, python: str, as_json: bool
) -> None:
    """Register the ctxhealth MCP server in the agent's MCP configuration."""
    import dataclasses
    import importlib.util

    from ctxhealth.integrations.mcp_install import plan_mcp_install

    plan = plan_mcp_install(_mcp_target(agent, scope == "project", config_path), python=python)
    if python == sys.executable and importlib.util.find_spec("mcp") is None:
        missing = (
            "the MCP SDK is not installed here, so the server cannot start: pip install 'ctxhealth[mcp]'"
        )
        plan = dataclasses.replace(plan, notes=(*plan.notes, missing))
    _report([plan], apply=apply, as_json=as_json, verb="install", what="the MCP server")


@click.command("mcp")
@_AGENT
@_SCOPE
@_CONFIG
@_APPLY
@_JSON
@guarded
def uninstall_mcp(agent: str, scope: str, config_path: Path | None, apply: bool, as_json: bool) -> None:
    """Take the ctxhealth MCP server out of the agent's MCP configuration."""
    from ctxhealth.integrations.mcp_install import plan_mcp_uninstall

    plan = plan_mcp_uninstall(_mcp_target(agent, scope == "project", config_path))
    _report([plan], apply=apply, as_json=as_json, verb="uninstall", what="the MCP server")


def _skill_folder(agent: str, project: bool, skills_dir: Path | None) -> Path:
    from ctxhealth.integrations.skill import skill_dir

    if skills_dir is not None:
        return skills_dir
    return skill_dir(Agent(agent), project=project, home=_home(), cwd=Path.cwd(), codex_home=_codex_home())


@click.command("skill")
@_AGENT
@_SCOPE
@_SKILLS_DIR
@_APPLY
@_JSON
@guarded
def install_skill(agent: str, scope: str, skills_dir: Path | None, apply: bool, as_json: bool) -> None:
    """Write the context-health Agent Skill (SKILL.md + reference.md) where the agent loads skills."""
    from ctxhealth.integrations.skill import plan_skill_install

    plans = plan_skill_install(_skill_folder(agent, scope == "project", skills_dir))
    _report(plans, apply=apply, as_json=as_json, verb="install", what="the skill")


@click.command("skill")
@_AGENT
@_SCOPE
@_SKILLS_DIR
@_APPLY
@_JSON
@guarded
def uninstall_skill(agent: str, scope: str, skills_dir: Path | None, apply: bool, as_json: bool) -> None:
    """Remove the context-health skill files (those still exactly as installed)."""
    from ctxhealth.integrations.skill import plan_skill_uninstall, remove_if_empty

    folder = _skill_folder(agent, scope == "project", skills_dir)
    plans = plan_skill_uninstall(folder)
    _report(plans, apply=apply, as_json=as_json, verb="uninstall", what="the skill")
    if apply:
        remove_if_empty(folder)


def register(install: click.Group, uninstall: click.Group) -> None:
    """Attach these commands to the ``install`` / ``uninstall`` groups."""
    install.add_command(install_mcp)
    install.add_command(install_skill)
    uninstall.add_command(uninstall_mcp)
    uninstall.add_command(uninstall_skill)
