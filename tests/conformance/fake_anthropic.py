"""A fake Anthropic Messages API on loopback: the model the conformance suite drives Claude Code with.

A real HTTP server (``127.0.0.1``, port 0) in a thread. ``POST /v1/messages`` answers streamed (SSE,
the events and field order of Anthropic's API: ``message_start`` with usage, ``content_block_start`` /
``_delta`` / ``_stop`` for ``text``, ``thinking`` (``thinking_delta``, ``signature_delta``) and ``tool_use``
(``input_json_delta``), ``message_delta`` with the final usage, ``message_stop``) or as one JSON message;
``POST /v1/messages/count_tokens`` answers ``{"input_tokens": N}``.

Answers are computed from the request only (a :class:`Scenario` reads the messages), never from how many
requests came before, so a run through ``ctxhealth proxy`` gets the same answers as a direct one.

Token counts are deterministic: the request is cut into blocks in the order the model reads them (each
tool definition, each system block but Claude Code's per-request billing line, each content block of each
message), a block counts ``ceil(len(canonical JSON of the block without cache_control) / 4)`` tokens, plus 4
per message. Prompt caching is simulated the way the API documents it: a ``cache_control`` marker ends a
cacheable prefix; the longest prefix ending at a marker that an earlier request wrote is read from cache
(``cache_read_input_tokens``), the rest up to the last marker is written (``cache_creation_input_tokens``),
what follows the last marker is ``input_tokens``.
Output tokens are ``ceil(len(text + thinking + tool input JSON) / 4)``, at least 1.

Every request is logged (:class:`Exchange`) with its computed usage: the truth the tests assert against.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

JSON = dict[str, Any]

BILLING_HEADER = "x-anthropic-billing-header:"
COMPACT_MARKERS = ("create a detailed summary of the conversation", "summary of the conversation so far")


# ---------------------------------------------------------------- replies


@dataclass
class Text:
    text: str


@dataclass
class Thinking:
    thinking: str


@dataclass
class ToolUse:
    name: str
    input: JSON
    id: str = ""


Block = Text | Thinking | ToolUse


@dataclass
class Reply:
    blocks: list[Block]
    stop_reason: str = ""
    delay: float = 0.0  # seconds before the answer starts (a slow model, to type while it works)

    def stop(self) -> str:
        if self.stop_reason:
            return self.stop_reason
        return "tool_use" if any(isinstance(b, ToolUse) for b in self.blocks) else "end_turn"


# ---------------------------------------------------------------- reading a request


def block_text(block: Any) -> str:
    """The text of a content block (or string), tool results included."""
    if isinstance(block, str):
        return block
    if not isinstance(block, dict):
        return ""
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind == "tool_result":
        content = block.get("content")
        if isinstance(content, list):
            return "\n".join(block_text(b) for b in content)
        return str(content or "")
    return ""


def message_text(message: JSON) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(block_text(b) for b in content)
    return ""


def system_text(body: JSON) -> str:
    system = body.get("system")
    if isinstance(system, str):
        return system
    if isinstance(system, list):
        return "\n".join(block_text(b) for b in system)
    return ""


def user_texts(body: JSON) -> list[str]:
    """The text blocks of every user message (not tool results), in order."""
    out = []
    for message in body.get("messages", []):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            out.extend(
                str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text"
            )
    return out


def tool_results(message: JSON) -> list[JSON]:
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]


def request_kind(body: JSON, headers: dict[str, str] | None = None) -> str:
    """``compact`` (Claude Code's summary request), ``subagent`` (sent with Claude Code's
    ``x-claude-code-agent-id`` header), ``side`` (a tool-less helper call) or ``main``."""
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    last = message_text(users[-1]).lower() if users else ""  # system-role messages may follow it
    if any(marker in last for marker in COMPACT_MARKERS):
        return "compact"
    tools = {t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)}
    if not tools:
        return "side"
    if (headers or {}).get("x-claude-code-agent-id"):
        return "subagent"
    return "main"


# ---------------------------------------------------------------- token counting


def _canonical(value: Any) -> str:
    if isinstance(value, dict):
        value = {k: v for k, v in value.items() if k != "cache_control"}
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def count(text: str) -> int:
    return math.ceil(len(text) / 4)


def prompt_blocks(body: JSON) -> list[tuple[int, bool, str]]:
    """(tokens, ends a cache prefix, digest of the prefix so far) for each block, in reading order."""
    pieces: list[tuple[str, bool]] = []
    for tool in body.get("tools") or []:
        pieces.append((_canonical(tool), isinstance(tool, dict) and "cache_control" in tool))
    system = body.get("system")
    if isinstance(system, str):
        pieces.append((system, False))
    elif isinstance(system, list):
        for block in system:
            if block_text(block).startswith(BILLING_HEADER):
                continue  # Claude Code's per-request attribution line: not part of the prompt the model reads
            pieces.append((_canonical(block), isinstance(block, dict) and "cache_control" in block))
    for message in body.get("messages", []):
        pieces.append((f"<{message.get('role')}>", False))
        content = message.get("content")
        if isinstance(content, str):
            pieces.append((content, False))
        elif isinstance(content, list):
            pieces.extend((_canonical(b), isinstance(b, dict) and "cache_control" in b) for b in content)
    out = []
    digest = hashlib.sha256()
    for text, marker in pieces:
        digest.update(text.encode())
        digest.update(b"\0")
        tokens = 4 if text.startswith("<") and text.endswith(">") and len(text) < 12 else count(text)
        out.append((tokens, marker, digest.hexdigest()))
    return out


def input_tokens(body: JSON) -> int:
    return sum(tokens for tokens, _m, _d in prompt_blocks(body))


class PromptCache:
    """The prefixes written so far (digest of a prefix ending at a cache_control marker)."""

    def __init__(self) -> None:
        self.written: set[str] = set()
        self.lock = threading.Lock()

    def usage(self, body: JSON) -> JSON:
        blocks = prompt_blocks(body)
        total = sum(t for t, _m, _d in blocks)
        running = 0
        read = 0
        last_marker = 0
        marker_digests: list[str] = []
        with self.lock:
            for tokens, marker, digest in blocks:
                running += tokens
                if marker:
                    last_marker = running
                    marker_digests.append(digest)
                    if digest in self.written:
                        read = running
            self.written.update(marker_digests)
        creation = max(0, last_marker - read)
        return {
            "input_tokens": total - read - creation,
            "cache_creation_input_tokens": creation,
            "cache_read_input_tokens": read,
        }


def thinking_tokens(reply: Reply) -> int:
    """The part of the output that is thinking (reported as ``output_tokens_details.thinking_tokens``)."""
    chars = sum(len(b.thinking) for b in reply.blocks if isinstance(b, Thinking))
    return math.ceil(chars / 4)


def output_tokens(reply: Reply) -> int:
    chars = 0
    for block in reply.blocks:
        if isinstance(block, Text):
            chars += len(block.text)
        elif isinstance(block, Thinking):
            chars += len(block.thinking)
        else:
            chars += len(json.dumps(block.input))
    return max(1, math.ceil(chars / 4))


# ---------------------------------------------------------------- scenarios


Scenario = Callable[[JSON, dict[str, str]], Reply]


def summary_reply(body: JSON) -> Reply:
    """What the fake model answers Claude Code's compaction request: an analysis and a summary."""
    asks = [t for t in user_texts(body) if not t.startswith("<") and "summary" not in t.lower()]
    first = asks[0][:200] if asks else "the task"
    return Reply(
        [
            Text(
                "<analysis>The user asked for work; tools ran.</analysis>\n<summary>\n"
                f"1. Primary Request and Intent: {first}\n2. Current Work: continuing the task.\n</summary>"
            )
        ]
    )


def default_scenario(body: JSON, headers: dict[str, str]) -> Reply:
    """A model that follows directives in the latest real user prompt.

    ``BASH: <command> xN`` runs the command with the Bash tool N times (one call per response), then
    answers ``DONE``. ``AGENT: <prompt>`` starts a sub-agent (the Agent tool) once. ``PAD: N`` makes the
    answer N characters long (grows the transcript). ``THINK`` adds a thinking block. ``SLOW: S`` waits S
    seconds before answering (to type while the model works). Else a short answer echoing the prompt.
    A sub-agent runs ``SUB <command> xN`` from its prompt, else ``echo sub`` once.
    """
    kind = request_kind(body, headers)
    if kind == "compact":
        return summary_reply(body)
    messages = body.get("messages", [])
    if kind == "side":
        return Reply([Text("Fake title")])
    prompts = [t for t in user_texts(body) if t.strip() and not t.lstrip().startswith("<")]
    prompt = prompts[-1] if prompts else ""
    # the tool calls answered since the latest real prompt
    since = 0
    for message in reversed(messages):
        if message.get("role") == "user" and prompt and prompt in message_text(message):
            break
        since += len(tool_results(message))
    if kind == "subagent":
        # its task is its first prompt: ``SUB <command> xN`` runs the command N times, else ``echo sub`` once
        task = prompts[0] if prompts else ""
        sub = re.search(r"SUB (.+?) x(\d+)", task)
        command, times = (sub.group(1), int(sub.group(2))) if sub else ("echo sub", 1)
        if since < times:
            return Reply([ToolUse("Bash", {"command": command, "description": "sub-agent step"})])
        return Reply([Text("Sub-agent finished: sub.")])
    blocks: list[Block] = []
    if "THINK" in prompt:
        blocks.append(Thinking("Let me think about " + prompt[:40]))
    bash = re.search(r"BASH: (.+?) x(\d+)", prompt)
    if bash and since < int(bash.group(2)):
        blocks.append(ToolUse("Bash", {"command": bash.group(1), "description": "run it"}))
        return Reply(blocks)
    agent = re.search(r"AGENT: (.+)", prompt)
    if agent and since == 0:
        blocks.append(
            ToolUse(
                "Agent",
                {"description": "sub task", "prompt": agent.group(1), "subagent_type": "general-purpose"},
            )
        )
        return Reply(blocks)
    slow = re.search(r"SLOW: (\d+)", prompt)
    pad = re.search(r"PAD: (\d+)", prompt)
    words = " ".join(prompt.split()[:6])
    text = f"DONE. Answer to: {words}"
    if pad:
        filler = "lorem ipsum dolor sit amet "
        text += "\n" + (filler * (int(pad.group(1)) // len(filler) + 1))[: int(pad.group(1))]
    blocks.append(Text(text))
    return Reply(blocks, delay=float(slow.group(1)) if slow and since == 0 else 0.0)


# ---------------------------------------------------------------- the log


@dataclass
class Exchange:
    """One request the server answered, with what it computed: the truth."""

    index: int
    path: str
    headers: dict[str, str]
    body: JSON
    kind: str
    usage: JSON = field(default_factory=dict)
    reply: Reply | None = None

    @property
    def model(self) -> str:
        return str(self.body.get("model", ""))

    @property
    def fill(self) -> int:
        """The prompt size the model saw: input + cache written + cache read."""
        u = self.usage
        return (
            int(u.get("input_tokens", 0))
            + int(u.get("cache_creation_input_tokens", 0))
            + int(u.get("cache_read_input_tokens", 0))
        )

    @property
    def session_id(self) -> str:
        return self.headers.get("x-claude-code-session-id", "")

    def summary(self) -> JSON:
        return {
            "index": self.index,
            "path": self.path,
            "kind": self.kind,
            "model": self.model,
            "stream": bool(self.body.get("stream")),
            "messages": len(self.body.get("messages", [])),
            "usage": self.usage,
            "session": self.session_id,
            "reply": [type(b).__name__ for b in self.reply.blocks] if self.reply else [],
        }


# ---------------------------------------------------------------- the server


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _json(self, status: int, doc: JSON) -> None:
        data = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("request-id", "req_fake")
        self.end_headers()
        self.wfile.write(data)

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        self.server.fake.record_other("GET", self.path, dict(self.headers.items()))
        if self.path.startswith("/v1/models"):
            self._json(200, {"data": [], "has_more": False, "first_id": None, "last_id": None})
            return
        self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": self.path}})

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._json(
                400, {"type": "error", "error": {"type": "invalid_request_error", "message": "bad JSON"}}
            )
            return
        path = self.path.split("?")[0]
        fake = self.server.fake
        if path.endswith("/v1/messages/count_tokens"):
            fake.record(path, headers, body, "count_tokens", {"input_tokens": input_tokens(body)}, None)
            self._json(200, {"input_tokens": input_tokens(body)})
            return
        if not path.endswith("/v1/messages"):
            fake.record_other("POST", self.path, headers)
            self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": path}})
            return
        kind = request_kind(body, headers)
        reply = fake.scenario(body, headers)
        if reply.delay:
            time.sleep(reply.delay)
        usage = fake.cache.usage(body)
        usage["output_tokens"] = output_tokens(reply)
        usage["thinking_tokens"] = thinking_tokens(reply)
        exchange = fake.record(path, headers, body, kind, usage, reply)
        message_id = f"msg_fake{exchange.index:04d}"
        for n, block in enumerate(reply.blocks):
            if isinstance(block, ToolUse) and not block.id:
                block.id = f"toolu_fake{exchange.index:04d}_{n}"
        if body.get("stream"):
            self._stream(body, reply, usage, message_id)
        else:
            self._json(200, message_json(body, reply, usage, message_id))

    def _stream(self, body: JSON, reply: Reply, usage: JSON, message_id: str) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("request-id", "req_fake")
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True
        for event, data in sse_events(body, reply, usage, message_id):
            self.wfile.write(f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()


def _block_json(block: Block) -> JSON:
    if isinstance(block, Text):
        return {"type": "text", "text": block.text}
    if isinstance(block, Thinking):
        return {"type": "thinking", "thinking": block.thinking, "signature": _signature(block.thinking)}
    return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}


def _signature(text: str) -> str:
    return "sig" + hashlib.sha256(text.encode()).hexdigest()[:32]


def _usage_json(usage: JSON, output: int) -> JSON:
    return {
        "input_tokens": usage["input_tokens"],
        "cache_creation_input_tokens": usage["cache_creation_input_tokens"],
        "cache_read_input_tokens": usage["cache_read_input_tokens"],
        "cache_creation": {
            "ephemeral_5m_input_tokens": usage["cache_creation_input_tokens"],
            "ephemeral_1h_input_tokens": 0,
        },
        "output_tokens": output,
        "output_tokens_details": {"thinking_tokens": usage.get("thinking_tokens", 0)},
        "service_tier": "standard",
    }


def message_json(body: JSON, reply: Reply, usage: JSON, message_id: str) -> JSON:
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": body.get("model", ""),
        "content": [_block_json(b) for b in reply.blocks],
        "stop_reason": reply.stop(),
        "stop_sequence": None,
        "usage": _usage_json(usage, usage["output_tokens"]),
    }


def _chunks(text: str, size: int = 24) -> Iterator[str]:
    for start in range(0, len(text), size):
        yield text[start : start + size]


def _delta(index: int, delta: JSON) -> tuple[str, JSON]:
    return "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}


def _start(index: int, block: JSON) -> tuple[str, JSON]:
    return "content_block_start", {"type": "content_block_start", "index": index, "content_block": block}


def sse_events(body: JSON, reply: Reply, usage: JSON, message_id: str) -> Iterator[tuple[str, JSON]]:
    """The events of one streamed message, as Anthropic sends them."""
    start = message_json(body, Reply([]), usage, message_id)
    start["stop_reason"] = None
    start["usage"] = _usage_json(usage, 1)
    yield "message_start", {"type": "message_start", "message": start}
    for index, block in enumerate(reply.blocks):
        if isinstance(block, Text):
            yield _start(index, {"type": "text", "text": ""})
            if index == 0:
                yield "ping", {"type": "ping"}
            for piece in _chunks(block.text):
                yield _delta(index, {"type": "text_delta", "text": piece})
        elif isinstance(block, Thinking):
            yield _start(index, {"type": "thinking", "thinking": "", "signature": ""})
            for piece in _chunks(block.thinking):
                yield _delta(index, {"type": "thinking_delta", "thinking": piece})
            yield _delta(index, {"type": "signature_delta", "signature": _signature(block.thinking)})
        else:
            yield _start(index, {"type": "tool_use", "id": block.id, "name": block.name, "input": {}})
            yield _delta(index, {"type": "input_json_delta", "partial_json": ""})
            for piece in _chunks(json.dumps(block.input), 16):
                yield _delta(index, {"type": "input_json_delta", "partial_json": piece})
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    final = {
        key: usage[key] for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    }
    final["output_tokens"] = usage["output_tokens"]
    final["output_tokens_details"] = {"thinking_tokens": usage.get("thinking_tokens", 0)}
    delta = {"stop_reason": reply.stop(), "stop_sequence": None}
    yield "message_delta", {"type": "message_delta", "delta": delta, "usage": final}
    yield "message_stop", {"type": "message_stop"}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeAnthropic


class FakeAnthropic:
    """The server, a context manager. ``url`` goes into ``ANTHROPIC_BASE_URL``; ``log`` is the truth."""

    def __init__(self, scenario: Scenario = default_scenario) -> None:
        self.scenario = scenario
        self.cache = PromptCache()
        self.log: list[Exchange] = []
        self.other: list[tuple[str, str, dict[str, str]]] = []
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.fake = self
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> FakeAnthropic:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def record(
        self, path: str, headers: dict[str, str], body: JSON, kind: str, usage: JSON, reply: Reply | None
    ) -> Exchange:
        with self._lock:
            exchange = Exchange(len(self.log), path, headers, body, kind, usage, reply)
            self.log.append(exchange)
        return exchange

    def record_other(self, method: str, path: str, headers: dict[str, str]) -> None:
        with self._lock:
            self.other.append((method, path, headers))

    def messages(self, *kinds: str) -> list[Exchange]:
        """The /v1/messages exchanges (of the given kinds, or all)."""
        return [e for e in self.log if e.kind != "count_tokens" and (not kinds or e.kind in kinds)]
