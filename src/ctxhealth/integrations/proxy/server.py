"""Running the proxy: uvicorn on the configured host and port until interrupted."""

from __future__ import annotations

from ctxhealth.integrations.proxy.app import create_app
from ctxhealth.integrations.proxy.config import ProxyConfig


def serve(config: ProxyConfig, *, log_level: str = "warning") -> None:
    """Serve the proxy (blocks). Binds ``config.host`` (loopback by default)."""
    import uvicorn

    uvicorn.run(
        create_app(config),
        host=config.host,
        port=config.port,
        log_level=log_level,
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=5,
        timeout_keep_alive=5,
        limit_concurrency=config.max_connections,
    )
