"""The proxy's settings, as one frozen value the CLI builds from its flags."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ctxhealth.errors import UsageError
from ctxhealth.integrations.guard import Mode

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
    flush_interval: float = 0.25

    def __post_init__(self) -> None:
        if not self.upstream.startswith(("http://", "https://")):
            raise UsageError(
                f"upstream {self.upstream!r} is not an http(s) URL",
                hint="pass the API's base URL, e.g. --upstream https://api.anthropic.com",
            )

    @property
    def upstream_base(self) -> str:
        return self.upstream.rstrip("/")
