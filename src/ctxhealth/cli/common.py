"""Helpers every CLI command shares: error → exit code mapping and JSON output."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

import click
import orjson

from ctxhealth.errors import CtxHealthError

P = ParamSpec("P")
R = TypeVar("R")

SCHEMA_VERSION = 1


def guarded(fn: Callable[P, R]) -> Callable[P, R]:
    """Turn a :class:`CtxHealthError` into one stderr line and its exit code (no traceback)."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except CtxHealthError as exc:
            click.echo(f"ctxhealth: error: {exc.render()}", err=True)
            sys.exit(int(exc.exit_code))

    return wrapper


def dump_json(obj: Any) -> str:
    """Serialise to one compact JSON line (orjson; dataclasses and enums supported)."""
    return orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS).decode()


def echo_json(obj: Any) -> None:
    click.echo(dump_json(obj))


def deprecated_alias(old: str, new: str) -> Callable[[click.Context, click.Parameter, Any], Any]:
    """A click callback for a hidden, deprecated option name: says which name to use instead (on
    stderr, so ``--json`` output stays one document) and passes the value on."""

    def warn(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if value is not None and not ctx.resilient_parsing:
            click.echo(f"ctxhealth: {old} is deprecated; use {new}", err=True)
        return value

    return warn


TRANSCRIPTS_WHERE = (
    "Pass transcript files or folders: Claude Code keeps its sessions in ~/.claude/projects/<project>/, "
    "Codex CLI in ~/.codex/sessions/, mini-swe-agent writes <instance>.traj.json files; - reads stdin"
)


def transcripts_argument(
    name: str, *, many: bool = False, homes: bool = False
) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """A transcript argument (``many``: one or more). When it is missing: with ``homes``, every
    installed agent's own data folder (:func:`agent_home_paths`); else the error says where an agent
    keeps its transcripts."""
    metavar = name.upper() + ("..." if many else "")

    def require(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if not value and not ctx.resilient_parsing:
            if homes:
                return agent_home_paths(metavar, ctx)
            raise click.UsageError(f"Missing argument '{metavar}'. {TRANSCRIPTS_WHERE}.", ctx)
        return value

    return click.argument(name, nargs=-1 if many else 1, required=False, metavar=metavar, callback=require)


def agent_home_paths(metavar: str = "PATH...", ctx: click.Context | None = None) -> tuple[str, ...]:
    """The data folders of every agent installed here (``~/.claude/projects``, ``~/.codex/sessions``,
    ...; ``CLAUDE_CONFIG_DIR`` and ``CODEX_HOME`` honoured), named on stderr; a usage error when
    there is none."""
    import os
    from pathlib import Path

    from ctxhealth.sources.homes import agent_homes, installed_homes

    found = installed_homes(os.environ, Path.home())
    if not found:
        looked = ", ".join(str(h.path) for h in agent_homes(os.environ, Path.home()))
        raise click.UsageError(
            f"Missing argument '{metavar}' and no agent's sessions found (looked in {looked}). "
            f"{TRANSCRIPTS_WHERE}.",
            ctx,
        )
    named = ", ".join(
        f"{h.path} ({h.agent}{'' if h.origin == 'default' else ', $' + h.origin})" for h in found
    )
    click.echo(f"ctxhealth: no path given; reading {named}", err=True)
    return tuple(str(h.path) for h in found)


WARNINGS_ON_STDERR = 20
"""Reader warnings a command lists on stderr before it says how many more there are."""


def echo_read_warnings(session: Any) -> None:
    """The reader's warnings for ``session`` (and its sidechains) on stderr, as ``check`` shows them:
    what the reader stepped over, so a partial read is never silent."""
    found: list[Any] = []
    stack = [session]
    while stack:
        current = stack.pop()
        found.extend(current.warnings)
        stack.extend(current.sidechains)
    for warning in found[:WARNINGS_ON_STDERR]:
        click.echo(f"ctxhealth: warning: {warning}", err=True)
    if len(found) > WARNINGS_ON_STDERR:
        click.echo(f"ctxhealth: warning: ... and {len(found) - WARNINGS_ON_STDERR} more", err=True)
