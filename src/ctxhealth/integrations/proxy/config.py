"""The proxy's settings, as one frozen value the CLI builds from its flags."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ctxhealth.errors import UsageError
from ctxhealth.integrations.guard import Guard, Mode, SessionStore

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8787
MAX_BODY_BYTES = 32 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class ProxyConfig:
    """``upstream`` is the API's base URL (``https://api.anthropic.com``); ``home`` the ledger's
    directory (None: keep nothing on disk); timeouts in seconds (``read_timeout`` is the longest
    wait between two bytes of a response); ``model`` accounts every session as that model."""

    upstream: str
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    mode: Mode = Mode.OBSERVE
    home: Path | None = None
    connect_timeout: float = 10.0
    read_timeout: float = 600.0
    max_body_bytes: int = MAX_BODY_BYTES
    log_bodies: bool = False
    model: str | None = None
    window: int | None = None
    """The window the agent works with (``--window``), when the requests' model's is not it."""
    window_is_usable: bool = False
    """``window`` is already what the prompt may fill (as Codex states it)."""
    flush_interval: float = 0.25
    body_timeout: float = 30.0
    """Seconds a client may take to send a request body (a stalled client gets 408)."""
    header_timeout: float = 5.0
    """Seconds a client may take to send a request's head (line and headers), from the moment its
    connection opened or its next request began; then the connection is closed (slowloris)."""
    guard_inline: bool = False
    """Observe mode: assess each request before sending it upstream (the default assesses it beside
    the relay, :mod:`~ctxhealth.integrations.proxy.background`); advise and enforce always do."""
    workers: int = 1
    """2: the guard runs in a process of its own (observe mode; :mod:`.worker`). The command's
    default is :func:`default_workers`."""
    max_connections: int = 256
    """Open client connections served at once; beyond, a connection is answered 503 and closed
    (slow clients cannot hold the proxy open without bound)."""

    def guard(self, store: SessionStore | None) -> Guard:
        """The guard that keeps this proxy's sessions in ``store``: its mode, and the model and
        window every session is read against."""
        return Guard(
            self.mode,
            store=store,
            model=self.model,
            window=self.window,
            window_is_usable=self.window_is_usable,
        )

    def __post_init__(self) -> None:
        if not self.upstream.startswith(("http://", "https://")):
            raise UsageError(
                f"upstream {self.upstream!r} is not an http(s) URL",
                hint="pass the API's base URL, e.g. --upstream https://api.anthropic.com",
            )
        if self.workers not in (1, 2):
            raise UsageError(
                f"--workers {self.workers}: 1 or 2", hint="2 runs the guard in a process of its own"
            )
        if self.workers == 2 and self.mode is not Mode.OBSERVE:
            raise UsageError(
                "--workers 2 needs --mode observe",
                hint="advise and enforce change requests before they are sent: their guard runs in the relay",
            )

    @property
    def upstream_base(self) -> str:
        """The upstream URL without credentials (they go in an ``Authorization`` header, see
        :attr:`upstream_auth`: aiohttp refuses a URL with credentials beside such a header)."""
        scheme, _, rest = self.upstream.partition("://")
        host, slash, path = rest.partition("/")
        return f"{scheme}://{host.rpartition('@')[2]}{slash}{path}".rstrip("/")

    @property
    def upstream_auth(self) -> str | None:
        """``Basic ...`` for credentials in the upstream URL (``http://user:pw@host``), or None."""
        rest = self.upstream.partition("://")[2].partition("/")[0]
        if "@" not in rest:
            return None
        import base64
        from urllib.parse import unquote

        user, _, password = rest.rpartition("@")[0].partition(":")
        return "Basic " + base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode()

    @property
    def shown_upstream(self) -> str:
        """The upstream URL as logs and ``/ctxhealth/status`` show it: any password masked."""
        scheme, _, rest = self.upstream.partition("://")
        host, slash, path = rest.partition("/")
        if "@" in host:
            user = host.rpartition("@")[0].partition(":")[0]
            host = f"{user}:***@{host.rpartition('@')[2]}"
        return f"{scheme}://{host}{slash}{path}"

    @property
    def exposed(self) -> bool:
        """Whether the proxy listens beyond this machine (any address but loopback)."""
        return self.host not in ("127.0.0.1", "localhost", "::1") and not self.host.startswith("127.")


def default_workers(mode: Mode, cpus: int | None = None) -> int:
    """The proxy's processes when none are asked for: 2 in observe mode when this process may run
    on two CPUs or more (``cpus``: that number, else read), else 1.

    In observe mode the request goes upstream as sent whatever the guard decides, so the guard can
    work in a process of its own and the relay's process does nothing but move bytes. Advise and
    enforce may change a request, so their guard must see it before it is sent: in another process
    that is a round trip on every request's path, so they keep it in the relay's process. With one
    CPU a second process only takes turns with the relay.
    """
    if mode is not Mode.OBSERVE:
        return 1
    if cpus is None:
        try:
            cpus = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):  # not on Linux
            cpus = os.cpu_count() or 1
    return 2 if cpus >= 2 else 1
