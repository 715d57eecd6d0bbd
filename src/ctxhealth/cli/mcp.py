"""``ctxhealth mcp``: serve the MCP tools an agent calls on itself (stdio, or HTTP on loopback).

The agent's host starts it (``ctxhealth install mcp`` writes that configuration). Over stdio the
protocol owns stdout, so everything else goes to stderr. ``--http`` serves streamable HTTP at
``http://127.0.0.1:PORT/mcp`` instead; an address that is not loopback is refused unless
``--allow-remote`` (then a warning says that anyone who can reach it can read your sessions).
The SDK is the ``mcp`` extra (``pip install 'ctxhealth[mcp]'``), imported only by this command.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from ctxhealth.cli.common import guarded
from ctxhealth.cli.state import DEFAULT_ROOT, ledger_home
from ctxhealth.errors import EnvironmentProblem, UsageError


@click.command("mcp")
@click.option("--http", "use_http", is_flag=True, help="Serve streamable HTTP instead of stdio.")
@click.option("--host", default="127.0.0.1", show_default=True, help="With --http: address to bind.")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True, help="With --http.")
@click.option("--allow-remote", is_flag=True, help="With --http: allow an address that is not loopback.")
@click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    envvar="CTXHEALTH_ROOT",
    default=DEFAULT_ROOT,
    show_default=True,
    help="Task-state root, relative to the agent's directory (env: CTXHEALTH_ROOT).",
)
@click.option(
    "--cwd",
    "agent_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="The agent's working directory (default: where the host starts the server).",
)
@guarded
def mcp(use_http: bool, host: str, port: int, allow_remote: bool, root: Path, agent_dir: Path | None) -> None:
    """Serve context_health, checkpoint, task_state and recovery_plan to an agent over MCP."""
    from ctxhealth.config import load_settings
    from ctxhealth.mcpserver.sessions import host_from_environment
    from ctxhealth.mcpserver.tools import ToolContext

    try:
        from ctxhealth.mcpserver import server
    except ImportError as exc:
        raise EnvironmentProblem(
            f"the MCP SDK is not installed ({exc})", hint="pip install 'ctxhealth[mcp]'"
        ) from None
    cwd = (agent_dir or Path.cwd()).resolve()
    home = Path(os.path.expanduser("~"))
    ctx = ToolContext(
        host=host_from_environment(os.environ, cwd=cwd, home=home),
        root=root if root.is_absolute() else cwd / root,
        home=ledger_home(),
        settings=load_settings({}, os.environ, cwd),
    )
    if not use_http:
        server.serve_stdio(ctx)
        return
    if not server.check_loopback(host):
        if not allow_remote:
            raise UsageError(
                f"--host {host} is not a loopback address: anyone who reaches it could read your sessions",
                hint="use --host 127.0.0.1, or pass --allow-remote if you mean it",
            )
        click.echo(f"ctxhealth: warning: serving on {host}, reachable beyond this machine", err=True)
    server.serve_http(
        ctx, host=host, port=port, on_ready=lambda url: click.echo(f"ctxhealth mcp: serving {url}", err=True)
    )


if __name__ == "__main__":  # `python -m ctxhealth.cli.mcp`: what `ctxhealth install mcp` registers
    mcp.main(prog_name="ctxhealth mcp")
