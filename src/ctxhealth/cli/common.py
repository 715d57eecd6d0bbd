"""Helpers every CLI command shares: error → exit code mapping and JSON output."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, BinaryIO, ParamSpec, TypeVar

import click
import orjson

from ctxhealth.errors import CtxHealthError, EnvironmentProblem

P = ParamSpec("P")
R = TypeVar("R")

SCHEMA_VERSION = 1


INTERRUPTED = 130
"""The exit code after Ctrl-C (128 + SIGINT, as shells report it): never 1, which means "unhealthy"."""


def guarded(fn: Callable[P, R]) -> Callable[P, R]:
    """Turn a :class:`CtxHealthError` into one stderr line and its exit code (no traceback); an
    error of the machine (``OSError``: a full disk, a folder that is not there, a read-only file
    system) into the same line and exit 4; Ctrl-C into exit 130 (every write is atomic, so
    nothing is left half-written)."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except CtxHealthError as exc:
            click.echo(f"ctxhealth: error: {exc.render()}", err=True)
            sys.exit(int(exc.exit_code))
        except OSError as exc:
            problem = os_problem(exc)
            click.echo(f"ctxhealth: error: {problem.render()}", err=True)
            sys.exit(int(problem.exit_code))
        except KeyboardInterrupt:
            click.echo("ctxhealth: interrupted", err=True)
            sys.exit(INTERRUPTED)

    return wrapper


def os_problem(exc: OSError, doing: str = "cannot complete") -> EnvironmentProblem:
    """An ``OSError`` as an :class:`EnvironmentProblem` that names the file and what to do."""
    path = exc.filename if isinstance(exc.filename, str) else None
    reason = exc.strerror or str(exc)
    return EnvironmentProblem(
        f"{doing}: {reason}", hint="check the path, its folder, permissions and free space", path=path
    )


def write_output(path: str, data: str | bytes, what: str = "output") -> str:
    """Write a file the user named (``-o``): ``-`` is stdout; a FIFO or device is written into,
    never replaced; a missing folder is an error, not created. Returns where it went."""
    if path == "-":
        stream: BinaryIO = sys.stdout.buffer
        stream.write(data.encode("utf-8") if isinstance(data, str) else data)
        stream.flush()
        return "stdout"
    from ctxhealth.atomic import write_atomic  # only a command that writes a file needs it

    try:
        write_atomic(path, data, create_parents=False)
    except OSError as exc:
        raise os_problem(exc, f"cannot write the {what}") from None
    return path


def dump_json(obj: Any) -> str:
    """Serialise to one compact JSON line (orjson; dataclasses, ``msgspec.Struct`` values and enums
    supported: a Struct is written as orjson writes a dataclass, its fields in order)."""
    return orjson.dumps(obj, default=_struct_fields, option=orjson.OPT_NON_STR_KEYS).decode()


def _struct_fields(value: Any) -> dict[str, Any]:
    import msgspec  # only called for a value orjson cannot write itself

    if isinstance(value, msgspec.Struct):
        return {name: getattr(value, name) for name in value.__struct_fields__}
    raise TypeError(f"Type is not JSON serializable: {type(value).__name__}")


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
