"""``ctxhealth proxy --upstream URL``: serve the local model API proxy (see ``docs/proxy.md``)."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import click

from ctxhealth.cli.common import guarded
from ctxhealth.config import load_settings
from ctxhealth.errors import EnvironmentProblem


@click.command("proxy", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--upstream", required=True, help="The model API's base URL, e.g. https://api.anthropic.com.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (loopback by default).")
@click.option("--port", type=click.IntRange(0, 65535), default=8787, show_default=True)
@click.option(
    "--mode",
    type=click.Choice(["observe", "advise", "enforce"]),
    default="observe",
    show_default=True,
    help="observe: change nothing; advise: add notes; enforce: apply the decided recovery.",
)
@click.option("--connect-timeout", type=click.FloatRange(min=0.1), default=10.0, show_default=True)
@click.option(
    "--read-timeout",
    type=click.FloatRange(min=0.1),
    default=600.0,
    show_default=True,
    help="Longest wait (s) between two bytes of a response.",
)
@click.option(
    "--header-timeout",
    type=click.FloatRange(min=0.1),
    default=5.0,
    show_default=True,
    help="Longest time (s) a client may take to send a request's headers; then it is disconnected.",
)
@click.option("--max-body-mb", type=click.FloatRange(min=0.001), default=32.0, show_default=True)
@click.option("--log-bodies", is_flag=True, help="Log request bodies (may contain secrets).")
@click.option(
    "--no-ledger", is_flag=True, help="Keep nothing on disk (sessions live as long as the process)."
)
@click.option("--model", help="Account every session as this model (window, tier).")
@click.option(
    "--window",
    type=click.IntRange(min=1),
    help="The context window the agent works with, when it is not its model's (no request states it): "
    "Codex CLI compacts within its own model_context_window.",
)
@click.option(
    "--window-is-usable",
    is_flag=True,
    help="The --window is already what the prompt may fill (as a Codex rollout states it): reserve nothing.",
)
@click.option(
    "--workers",
    type=click.Choice(["auto", "1", "2"]),
    default="auto",
    show_default=True,
    help="2: the guard runs in a second process, beside the one relaying bytes (observe mode only); "
    "auto: 2 in observe mode on two CPUs or more, else 1.",
)
# observe mode assessed before each request is sent, as before it moved beside the relay (benchmarks)
@click.option("--guard-inline", is_flag=True, hidden=True)
@click.option("-v", "--verbose", is_flag=True, help="Log one line per model request to stderr.")
@guarded
def proxy(
    upstream: str,
    host: str,
    port: int,
    mode: str,
    connect_timeout: float,
    read_timeout: float,
    header_timeout: float,
    max_body_mb: float,
    log_bodies: bool,
    no_ledger: bool,
    model: str | None,
    window: int | None,
    window_is_usable: bool,
    workers: str,
    guard_inline: bool,
    verbose: bool,
) -> None:
    """Serve a proxy in front of UPSTREAM that applies the health policy to model requests."""
    try:
        from ctxhealth.integrations.guard import Mode
        from ctxhealth.integrations.proxy.config import ProxyConfig, default_workers
        from ctxhealth.integrations.proxy.server import serve
    except ImportError as exc:
        raise EnvironmentProblem(
            f"the proxy needs packages that are not installed ({exc.name})",
            hint="pip install 'ctxhealth[proxy]'",
        ) from exc
    settings = load_settings({"model": model}, os.environ, Path.cwd())
    config = ProxyConfig(
        upstream=upstream,
        host=host,
        port=port,
        mode=Mode(mode),
        home=None if no_ledger else Path(str(settings.get("home"))).expanduser(),
        connect_timeout=connect_timeout,
        read_timeout=read_timeout,
        header_timeout=header_timeout,
        max_body_bytes=int(max_body_mb * 1024 * 1024),
        log_bodies=log_bodies,
        model=settings.model,
        window=window,
        window_is_usable=window_is_usable,
        guard_inline=guard_inline,
        workers=default_workers(Mode(mode)) if workers == "auto" else int(workers),
    )
    if verbose or log_bodies:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("ctxhealth proxy: %(message)s"))
        logger = logging.getLogger("ctxhealth.proxy")
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
    processes = ", the guard in a second process" if config.workers == 2 else ""
    click.echo(
        f"ctxhealth proxy: {mode} mode{processes}, http://{host}:{port} -> {config.shown_upstream}", err=True
    )
    if config.exposed:
        click.echo(
            f"ctxhealth proxy: warning: listening on {host}, not loopback: anyone who can reach this "
            "machine can send requests through it with your upstream credentials",
            err=True,
        )
    serve(config)
