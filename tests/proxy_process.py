"""Run ``ctxhealth proxy`` as a real process on a free loopback port, for the tests and benchmark."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from wire_upstream import free_port


class ProxyProcess:
    def __init__(self, upstream: str, *args: str, home: Path | None = None) -> None:
        self.port = free_port()
        env = dict(os.environ)
        if home is not None:
            env["CTXHEALTH_HOME"] = str(home)
        command = [sys.executable, "-c", "from ctxhealth.cli.main import main; main()", "proxy"]
        command += ["--upstream", upstream, "--port", str(self.port), *args]
        if home is None:
            command.append("--no-ledger")
        self.process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 20
        while True:
            try:
                httpx.get(self.url + "/ctxhealth/status", timeout=1).raise_for_status()
                return
            except httpx.HTTPError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    _out, err = self.process.communicate(timeout=5)
                    raise RuntimeError(f"proxy did not start: {err.decode()[-2000:]}") from None
                time.sleep(0.05)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def status(self) -> dict[str, object]:
        doc: dict[str, object] = httpx.get(self.url + "/ctxhealth/status", timeout=5).json()
        return doc

    def stop(self) -> str:
        """Stop gracefully (SIGINT, as Ctrl-C); the proxy's stderr."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        err = self.process.stderr.read().decode() if self.process.stderr else ""
        return err
