"""A model API that misbehaves on request, run as its own process (``python fault_upstream.py``).

It prints its port on the first line of stdout, then answers every request on 127.0.0.1 with the
recorded Anthropic stream (``tests/fixtures/wire/anthropic-messages.sse``, chunked), every response
carrying ``x-seen-authorization`` (the ``Authorization`` header it received, or ``-``). The request
header ``x-fault`` picks a misbehaviour:

* ``die``: the status, headers and the first part of the stream, then the socket is closed;
* ``stall``: the same first part, then nothing (the connection stays open for a minute).

Plain asyncio streams, no framework: what the proxy sees is exactly what is written here.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

STREAM = (Path(__file__).resolve().parent / "fixtures" / "wire" / "anthropic-messages.sse").read_bytes()
PART = STREAM[: len(STREAM) // 3]


def chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            headers = {}
            for line in lines[1:]:
                name, _, value = line.partition(":")
                if name:
                    headers[name.strip().lower()] = value.strip()
            length = int(headers.get("content-length", "0") or 0)
            if length:
                await reader.readexactly(length)
            seen = headers.get("authorization", "-")
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n"
                + f"x-seen-authorization: {seen}\r\n\r\n".encode("latin-1")
            )
            fault = headers.get("x-fault")
            if fault in ("die", "stall"):
                writer.write(chunk(PART))
                await writer.drain()
                if fault == "stall":
                    await asyncio.sleep(60)
                writer.transport.abort()
                return
            for i in range(0, len(STREAM), 200):
                writer.write(chunk(STREAM[i : i + 200]))
            writer.write(b"0\r\n\r\n")
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        writer.close()


async def main() -> None:
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
