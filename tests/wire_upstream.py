"""A local model API for the proxy tests: it replays recorded wire-format responses.

Answers ``POST /v1/messages``, ``/v1/chat/completions`` and ``/v1/responses`` with the fixtures in
``tests/fixtures/wire`` (a server-sent event stream when the request says ``"stream": true``, else the
JSON body), in small chunks that cut lines and events anywhere, so a reader must reassemble them.
Every request it receives is recorded (path, headers, body bytes). ``fill`` sets the prompt size the
next responses report (the fixture's cache-read / cached count is changed so the total matches).
``GET /v1/models`` answers JSON; ``POST /v1/slow`` streams slowly and records when the stream is
abandoned; ``status`` makes the model routes answer an error with that status.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

WIRE = Path(__file__).resolve().parent / "fixtures" / "wire"
CHUNK = 37

FIXTURES = {
    "/v1/messages": "anthropic-messages",
    "/v1/chat/completions": "openai-chat",
    "/v1/responses": "openai-responses",
}
# the recorded prompt sizes: uncached part fixed, the cached part adjusted to reach ``fill``
_UNCACHED = {
    "/v1/messages": 412 + 1536,
    "/v1/chat/completions": 20152 - 18176,
    "/v1/responses": 20152 - 18176,
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def fixture_bytes(path: str, stream: bool, fill: int | None = None) -> bytes:
    name = FIXTURES[path] + (".sse" if stream else ".json")
    data = (WIRE / name).read_bytes()
    if fill is None:
        return data
    cached = max(0, fill - _UNCACHED[path])
    text = data.decode()
    if path == "/v1/messages":
        text = re.sub(r'"cache_read_input_tokens": ?\d+', f'"cache_read_input_tokens":{cached}', text)
    else:
        total = _UNCACHED[path] + cached
        key = "prompt_tokens" if path == "/v1/chat/completions" else "input_tokens"
        text = re.sub(rf'"{key}": ?\d+', f'"{key}":{total}', text)
        text = re.sub(r'"cached_tokens": ?\d+', f'"cached_tokens":{cached}', text)
    return text.encode()


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Upstream:
    port: int = 0
    received: list[Received] = field(default_factory=list)
    fill: int | None = None
    status: int | None = None
    abandoned: threading.Event = field(default_factory=threading.Event)
    _server: uvicorn.Server | None = None
    _thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def last(self, path: str) -> Received:
        return [r for r in self.received if r.path == path][-1]

    def count(self, path: str) -> int:
        return sum(1 for r in self.received if r.path == path)

    async def _model(self, request: Request) -> Response:
        body = await request.body()
        self.received.append(Received(request.url.path, dict(request.headers), body))
        if self.status is not None:
            return JSONResponse(
                {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}},
                status_code=self.status,
                headers={"retry-after": "0"},
            )
        stream = bool(json.loads(body).get("stream"))
        data = fixture_bytes(request.url.path, stream, self.fill)
        if not stream:
            return Response(data, media_type="application/json")

        async def chunks() -> Any:
            for i in range(0, len(data), CHUNK):
                yield data[i : i + CHUNK]
                await asyncio.sleep(0)

        return StreamingResponse(chunks(), media_type="text/event-stream")

    async def _models(self, request: Request) -> Response:
        self.received.append(Received(request.url.path, dict(request.headers), b""))
        return JSONResponse({"data": [{"id": "claude-sonnet-4-5", "type": "model"}], "has_more": False})

    async def _slow(self, request: Request) -> Response:
        async def chunks() -> Any:
            try:
                for i in range(200):
                    yield f'data: {{"n": {i}}}\n\n'.encode()
                    await asyncio.sleep(0.05)
            finally:
                self.abandoned.set()

        return StreamingResponse(chunks(), media_type="text/event-stream")

    def start(self) -> Upstream:
        app = Starlette(
            routes=[
                Route("/v1/messages", self._model, methods=["POST"]),
                Route("/v1/chat/completions", self._model, methods=["POST"]),
                Route("/v1/responses", self._model, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
                Route("/v1/slow", self._slow, methods=["POST"]),
            ]
        )
        self.port = free_port()
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="error", lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("upstream did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=5)
