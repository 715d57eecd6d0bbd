"""A fake OpenAI API on loopback: the Responses API (Codex CLI), chat completions (mini-swe-agent, litellm).

What the model does is scripted in the request itself, so an answer is computed from the request alone: the
person's message lists steps, one a line::

    STEP shell <command>          run a shell command (a function call to the agent's shell tool)
    STEP patch <file> <text>      create <file> holding <text> (an ``apply_patch`` custom tool call)
    STEP say <text>               answer with text (ends the turn)

The k-th model request after that message (k = tool outputs seen since it) answers step k; past the last step
the model says ``done``. Every response carries a reasoning item (Responses API) and usage computed from the
request: ``input`` = the request's tokens (:func:`fake_http.estimate_tokens`), ``cached`` = the part of it the
previous request of the same conversation already had (a prefix cache), ``output`` = the answer's tokens plus
``REASONING`` reasoning tokens.

Compaction: ``POST /v1/responses/compact`` (what Codex calls with the OpenAI provider) answers an encrypted
compaction item; a Responses request whose instructions or last message ask for a summary (Codex's local
compaction, used with other providers) answers the summary text ``SUMMARY``. Both are logged with kind
``compaction``.

Prices: :data:`PRICES` is what a test uses to compute the truth's cost (USD per million tokens).
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

from .fake_http import Exchange, FakeServer, estimate_tokens, send_websocket_text, serve_websocket

REASONING = 7
"""Reasoning tokens every fake response reports."""
SUMMARY = "SUMMARY: the shell steps ran; the last one failed with exit code 1."
_MARKER = re.compile(r"ENC:(\d+):([0-9a-f]{8})")
_STEP = re.compile(r"(?m)^STEP (shell|patch|say) (.*)$")
_SUMMARY_ASK = ("summary", "summarize", "compact", "handoff")


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def marker(script: str, done: int) -> str:
    """What a compaction carries of the script's progress: ``ENC:<steps done>:<script hash>``."""
    return f"ENC:{done}:{zlib.crc32(script.encode()):08x}"


def _last_user_text(items: list[Any]) -> str:
    for item in reversed(items):
        if isinstance(item, dict) and item.get("type", "message") == "message" and item.get("role") == "user":
            return _text_of(item.get("content"))
    return ""


def _last_script(items: list[Any]) -> str:
    for item in reversed(items):
        if isinstance(item, dict) and item.get("type", "message") == "message" and item.get("role") == "user":
            text = _text_of(item.get("content"))
            if steps_of(text):
                return text
    return ""


def progress(items: list[Any]) -> tuple[str, int]:
    """The script (the last person's message with ``STEP`` lines) of a Responses request, and how many of
    its steps are done: tool outputs since it, or since a compaction whose marker names it (a compacted
    history no longer holds the earlier outputs)."""
    script = _last_script(items)
    tag = f"{zlib.crc32(script.encode()):08x}"
    done = 0
    marked: int | None = None
    for item in items:
        if not isinstance(item, dict):
            continue
        kind = item.get("type", "message")
        text = (
            _text_of(item.get("content")) if kind == "message" else str(item.get("encrypted_content") or "")
        )
        found = _MARKER.search(text)
        if found and found.group(2) == tag:
            marked = done = int(found.group(1))
        elif kind == "message" and item.get("role") == "user" and text == script:
            done = marked or 0
        elif kind in ("function_call_output", "custom_tool_call_output"):
            done += 1
    return script, done


def steps_of(text: str) -> list[tuple[str, str]]:
    """The ``STEP`` lines of a person's message."""
    return [(m.group(1), m.group(2).strip()) for m in _STEP.finditer(text)]


class FakeOpenAI(FakeServer):
    """``/v1/responses`` (SSE), ``/v1/responses/compact``, ``/v1/chat/completions``, ``/v1/models``.

    A chat-completions request that offers tools is answered with a tool call; one that offers none with the
    command fenced in text as ``text_fence`` (mini-swe-agent 2.x text mode: ``mswea_bash_command``; 1.x:
    ``bash``).
    """

    def __init__(
        self, *, text_fence: str = "mswea_bash_command", model: str = "gpt-5.5", websocket: bool = True
    ) -> None:
        super().__init__()
        self.text_fence = text_fence
        self.websocket = websocket
        self._contexts: dict[str, list[Any]] = {}
        """Response id -> the items of its context and its output (for ``previous_response_id``)."""
        self.model = model
        self._previous_input: dict[str, str] = {}
        self._counter = 0

    def next_id(self, prefix: str) -> str:
        with self._lock:
            self._counter += 1
            return f"{prefix}_{self._counter:04d}"

    def answer(self, exchange: Exchange, handler: BaseHTTPRequestHandler) -> None:
        path = exchange.path.rstrip("/")
        if path.endswith("/responses/compact"):
            self._compact(exchange, handler)
        elif path.endswith("/responses") and exchange.method == "GET":
            exchange.kind = "other"
            if self.websocket and exchange.headers.get("upgrade", "").lower() == "websocket":
                self._websocket(exchange, handler)
            else:  # refused: Codex falls back to HTTPS (after five retries)
                exchange.status = 404
                self.send_json(handler, {"error": {"message": "no websocket here"}}, 404)
        elif path.endswith("/responses"):
            self._responses(exchange, handler)
        elif path.endswith("/chat/completions"):
            self._chat(exchange, handler)
        elif path.endswith("/models"):
            exchange.kind = "other"
            self.send_json(handler, {"object": "list", "data": [], "models": []})
        else:
            exchange.kind = "other"
            exchange.status = 404
            self.send_json(handler, {"error": {"message": f"no route {path}"}}, 404)

    # --- usage -----------------------------------------------------------------------------------

    def _usage(self, conversation: str, prompt: str, output_tokens: int) -> dict[str, int]:
        """Usage for a request whose prompt text is ``prompt``; the cache holds the previous prompt's
        common prefix (by conversation)."""
        previous = self._previous_input.get(conversation, "")
        common = 0
        for a, b in zip(previous, prompt, strict=False):
            if a != b:
                break
            common += 1
        self._previous_input[conversation] = prompt
        total = estimate_tokens(prompt)
        cached = min(total, (common // 4) // 64 * 64)  # providers cache whole blocks
        return {"input": total, "cached": cached, "output": output_tokens + REASONING, "reasoning": REASONING}

    # --- Responses API ---------------------------------------------------------------------------

    def _responses(self, exchange: Exchange, handler: BaseHTTPRequestHandler) -> None:
        self.send_sse(handler, self._response_stream(exchange))

    def _websocket(self, upgrade: Exchange, handler: BaseHTTPRequestHandler) -> None:
        """The Responses API over a WebSocket (what Codex uses with the OpenAI provider): each text
        message ``{"type": "response.create", ...request}`` is one request, logged as its own exchange
        (method ``WS``), answered with the same events as the SSE stream, one message each."""
        for message in serve_websocket(handler, upgrade.headers):
            request = dict(message) if isinstance(message, dict) else {}
            if request.pop("type", None) != "response.create":
                continue
            exchange = Exchange("WS", upgrade.path, {}, upgrade.headers, request)
            with self._lock:
                self.log.append(exchange)
            for _name, data in self._response_stream(exchange):
                send_websocket_text(handler, json.dumps(data))

    def _response_stream(self, exchange: Exchange) -> Iterator[tuple[str | None, Any]]:
        """Answer a Responses request (logging what it took it for and what it reported).

        A request naming ``previous_response_id`` (Codex over a WebSocket) sends only what is new: its
        context is that response's context and output, then its ``input``. ``generate: false`` is a
        warm-up (Codex's first WebSocket request): no output, nothing billed, kind ``warmup``.
        """
        body = exchange.body if isinstance(exchange.body, dict) else {}
        previous = body.get("previous_response_id")
        items = [*self._contexts.get(str(previous), []), *(body.get("input") or [])]
        if body.get("generate") is False:
            exchange.kind = "warmup"
            response_id = self.next_id("resp")
            self._contexts[response_id] = items
            zero = {"input": 0, "cached": 0, "output": 0, "reasoning": 0}
            return self._response_events(response_id, body.get("model") or self.model, [], zero)
        instructions = str(body.get("instructions") or "")
        conversation = str(body.get("prompt_cache_key") or exchange.headers.get("session_id") or "")
        prompt = json.dumps({"instructions": instructions, "tools": body.get("tools"), "input": items})
        script, done = progress(items)
        last = _last_user_text(items)
        asks_summary = (
            not steps_of(last)
            and not _MARKER.search(last)
            and any(w in last.lower()[:600] for w in _SUMMARY_ASK)
        )
        trigger = any(isinstance(i, dict) and i.get("type") == "compaction_trigger" for i in items)
        out: list[dict[str, Any]] = []
        if trigger:
            # Codex's remote compaction (v2): the answer is one encrypted compaction item
            exchange.kind = "compaction"
            out.append(
                {"type": "compaction", "id": self.next_id("cmp"), "encrypted_content": marker(script, done)}
            )
        elif asks_summary:
            exchange.kind = "compaction"
            out.append(self._message(f"{SUMMARY} {marker(script, done)}"))
        else:
            exchange.kind = "turn"
            steps = steps_of(script)
            if done < len(steps):
                out.append(self._step(steps[done], body))
            else:
                out.append(self._message("done"))
        reasoning = {
            "type": "reasoning",
            "id": self.next_id("rs"),
            "summary": [{"type": "summary_text", "text": "**Planning** the next step"}],
            "encrypted_content": None,
        }
        output = out if trigger else [reasoning, *out]
        usage = self._usage(conversation, prompt, sum(estimate_tokens(o) for o in out))
        exchange.usage = usage
        exchange.answer = output
        response_id = self.next_id("resp")
        self._contexts[response_id] = [*items, *output]
        return self._response_events(response_id, body.get("model") or self.model, output, usage)

    def _message(self, text: str) -> dict[str, Any]:
        return {
            "type": "message",
            "id": self.next_id("msg"),
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }

    def _step(self, step: tuple[str, str], body: dict[str, Any]) -> dict[str, Any]:
        verb, rest = step
        call_id = self.next_id("call")
        if verb == "say":
            return self._message(rest)
        if verb == "patch":
            name, _, text = rest.partition(" ")
            patch = f"*** Begin Patch\n*** Add File: {name}\n+{text}\n*** End Patch\n"
            return {
                "type": "custom_tool_call",
                "id": self.next_id("ctc"),
                "call_id": call_id,
                "name": "apply_patch",
                "input": patch,
                "status": "completed",
            }
        tool = _shell_tool(body.get("tools") or [])
        if tool == "exec_command":
            arguments: dict[str, Any] = {"cmd": rest, "yield_time_ms": 10000}
        else:
            arguments = {"command": ["bash", "-lc", rest], "timeout_ms": 10000}
        return {
            "type": "function_call",
            "id": self.next_id("fc"),
            "call_id": call_id,
            "name": tool,
            "arguments": json.dumps(arguments),
            "status": "completed",
        }

    def _response_events(
        self, response_id: str, model: str, output: list[dict[str, Any]], usage: dict[str, int]
    ) -> Iterator[tuple[str | None, Any]]:
        base = {"id": response_id, "object": "response", "model": model, "output": []}
        yield "response.created", {"type": "response.created", "response": {**base, "status": "in_progress"}}
        for index, item in enumerate(output):
            started = {**item, "status": "in_progress"}
            if item["type"] == "message":
                started["content"] = []
            yield (
                "response.output_item.added",
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": started,
                },
            )
            if item["type"] == "message":
                text = item["content"][0]["text"]
                for k in range(0, len(text), 16):
                    yield (
                        "response.output_text.delta",
                        {
                            "type": "response.output_text.delta",
                            "item_id": item["id"],
                            "output_index": index,
                            "content_index": 0,
                            "delta": text[k : k + 16],
                        },
                    )
            yield (
                "response.output_item.done",
                {
                    "type": "response.output_item.done",
                    "output_index": index,
                    "item": item,
                },
            )
        yield (
            "response.completed",
            {
                "type": "response.completed",
                "response": {
                    **base,
                    "status": "completed",
                    "output": output,
                    "usage": _responses_usage(usage),
                },
            },
        )

    def _compact(self, exchange: Exchange, handler: BaseHTTPRequestHandler) -> None:
        body = exchange.body if isinstance(exchange.body, dict) else {}
        exchange.kind = "compaction"
        prompt = json.dumps({"instructions": body.get("instructions"), "input": body.get("input")})
        usage = self._usage("compact", prompt, 50)
        exchange.usage = usage
        item = {"type": "compaction", "id": self.next_id("cmp"), "encrypted_content": "ENC:0:00000000"}
        exchange.answer = [item]
        self.send_json(
            handler, {"id": self.next_id("resp"), "output": [item], "usage": _responses_usage(usage)}
        )

    # --- chat completions (litellm / mini-swe-agent) ------------------------------------------------

    def _chat(self, exchange: Exchange, handler: BaseHTTPRequestHandler) -> None:
        body = exchange.body if isinstance(exchange.body, dict) else {}
        messages = body.get("messages") or []
        exchange.kind = "turn"
        first_user = next((m for m in messages if isinstance(m, dict) and m.get("role") == "user"), {})
        steps = steps_of(_text_of(first_user.get("content")))
        answered = _steps_done(messages, steps)
        message: dict[str, Any]
        verb, rest = steps[answered] if answered < len(steps) else ("shell", _SUBMIT)
        if verb != "shell":
            verb, rest = "shell", f"echo {rest!r}"
        tools = body.get("tools") or []
        if tools:
            name = str(tools[0].get("function", {}).get("name", "bash"))
            message = {
                "role": "assistant",
                "content": f"Running step {answered + 1}.",
                "tool_calls": [
                    {
                        "id": self.next_id("call"),
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps({"command": rest})},
                    }
                ],
            }
        else:
            fence = self.text_fence
            message = {
                "role": "assistant",
                "content": f"THOUGHT: step {answered + 1}.\n\n```{fence}\n{rest}\n```",
            }
        prompt = json.dumps({"messages": messages, "tools": tools})
        usage = self._usage("chat", prompt, estimate_tokens(message))
        exchange.usage = usage
        exchange.answer = message
        self.send_json(
            handler,
            {
                "id": self.next_id("chatcmpl"),
                "object": "chat.completion",
                "created": 1_760_000_000,
                "model": body.get("model") or self.model,
                "choices": [
                    {"index": 0, "message": message, "finish_reason": "tool_calls" if tools else "stop"}
                ],
                "usage": {
                    "prompt_tokens": usage["input"],
                    "completion_tokens": usage["output"],
                    "total_tokens": usage["input"] + usage["output"],
                    "prompt_tokens_details": {"cached_tokens": usage["cached"]},
                    "completion_tokens_details": {"reasoning_tokens": usage["reasoning"]},
                },
            },
        )


_SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
CHECKPOINT = "[CONTEXT CHECKPOINT"


def _head(command: str) -> str:
    return " ".join(command.split()[:2])


def _steps_done(messages: list[Any], steps: list[tuple[str, str]]) -> int:
    """How many of the script's steps a model reading these messages takes as done: its own turns (one step
    each); after a checkpoint, as a model reads one, the steps up to the latest whose command the checkpoint
    names (`` `seq 4` ``) plus its turns since that are not named there. Only text the request holds."""
    turns = [m for m in messages if isinstance(m, dict) and m.get("role") == "assistant"]
    at = next(
        (
            i
            for i, m in enumerate(messages)
            if isinstance(m, dict) and m.get("role") == "user" and CHECKPOINT in _text_of(m.get("content"))
        ),
        None,
    )
    if at is None:
        return len(turns)
    text = _text_of(messages[at].get("content"))
    named = [i for i, (_, rest) in enumerate(steps) if f"`{_head(rest)}`" in text]
    done = max(named) + 1 if named else 0
    for m in messages[at + 1 :]:
        if not (isinstance(m, dict) and m.get("role") == "assistant"):
            continue
        calls = m.get("tool_calls") or []
        command = ""
        if calls:
            try:
                command = str(json.loads(calls[0]["function"]["arguments"]).get("command", ""))
            except (KeyError, TypeError, ValueError):
                command = ""
        if not any(i in named for i, (_, rest) in enumerate(steps) if rest == command):
            done += 1
    return done


def _shell_tool(tools: list[Any]) -> str:
    names = [str(t.get("name")) for t in tools if isinstance(t, dict) and t.get("name")]
    for preferred in ("exec_command", "shell_command", "shell"):
        if preferred in names:
            return preferred
    return names[0] if names else "shell"


def _responses_usage(usage: dict[str, int]) -> dict[str, Any]:
    return {
        "input_tokens": usage["input"],
        "input_tokens_details": {"cached_tokens": usage["cached"]},
        "output_tokens": usage["output"],
        "output_tokens_details": {"reasoning_tokens": usage["reasoning"]},
        "total_tokens": usage["input"] + usage["output"],
    }
