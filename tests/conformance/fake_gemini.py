"""A fake Gemini API (``generativelanguage`` v1beta) on loopback, for the Gemini CLI.

Routes: ``models/<model>:streamGenerateContent?alt=sse`` (the agent's turns),
``models/<model>:generateContent`` (the CLI's utility calls: the model router, the next-speaker check,
compression), ``models/<model>:countTokens``. Answers follow the same ``STEP`` script as :mod:`fake_openai`
(``shell`` -> ``run_shell_command``, ``patch`` -> ``write_file``, ``say`` -> text), taken from the last
person's message of ``contents``; the step is the number of ``functionResponse`` parts since it (or since a
compression summary's marker). Every answer carries a thought part and ``usageMetadata`` computed from the
request (``promptTokenCount`` the request's tokens, ``cachedContentTokenCount`` the prefix the previous turn
had, ``thoughtsTokenCount`` :data:`REASONING`; the logged ``output`` is what is billed as output: candidates
+ thoughts).

A ``generateContent`` request that asks for a ``<state_snapshot>`` (compression) is logged with kind
``compaction`` and answers a snapshot holding the script's progress; other utility calls are kind ``router``.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

from .fake_http import Exchange, FakeServer, estimate_tokens
from .fake_openai import _MARKER, marker, steps_of

REASONING = 5


def _parts_text(content: Any) -> str:
    parts = content.get("parts") if isinstance(content, dict) else None
    return "\n".join(str(p.get("text", "")) for p in parts or [] if isinstance(p, dict) and "text" in p)


def progress(contents: list[Any]) -> tuple[str, int]:
    """The script of a Gemini request and how many of its steps are done."""
    script = ""
    for content in reversed(contents):
        if isinstance(content, dict) and content.get("role") == "user" and steps_of(_parts_text(content)):
            script = _parts_text(content)
            break
    tag = f"{zlib.crc32(script.encode()):08x}"
    done = 0
    marked: int | None = None
    for content in contents:
        if not isinstance(content, dict):
            continue
        text = _parts_text(content)
        found = _MARKER.search(text)
        if found and found.group(2) == tag:
            marked = done = int(found.group(1))
        elif content.get("role") == "user" and text == script:
            done = marked or 0
        for part in content.get("parts") or []:
            if isinstance(part, dict) and "functionResponse" in part:
                done += 1
    return script, done


class FakeGemini(FakeServer):
    """The Gemini API routes the CLI calls; ``model`` is what responses name as ``modelVersion``. ``view``
    is what the scripted model reads of a request's ``contents`` to find its step (the whole request is
    still what is billed): a test can hide text the model should not take for the person's."""

    def __init__(
        self, *, model: str = "gemini-2.5-pro", view: Callable[[list[Any]], list[Any]] | None = None
    ) -> None:
        super().__init__()
        self.model = model
        self.view = view or (lambda contents: contents)
        self._previous = ""

    def answer(self, exchange: Exchange, handler: BaseHTTPRequestHandler) -> None:
        path = exchange.path
        body = exchange.body if isinstance(exchange.body, dict) else {}
        if path.endswith(":countTokens"):
            exchange.kind = "other"
            self.send_json(handler, {"totalTokens": estimate_tokens(body.get("contents") or [])})
        elif path.endswith(":streamGenerateContent"):
            self._stream(exchange, handler, body)
        elif path.endswith(":generateContent"):
            self._utility(exchange, handler, body)
        else:
            exchange.kind = "other"
            exchange.status = 404
            self.send_json(handler, {"error": {"code": 404, "message": f"no route {path}"}}, 404)

    def _usage(self, body: dict[str, Any], parts: list[dict[str, Any]], *, cache: bool) -> dict[str, int]:
        prompt = json.dumps(
            {
                "system": body.get("systemInstruction"),
                "tools": body.get("tools"),
                "contents": body.get("contents"),
            }
        )
        common = 0
        if cache:
            for a, b in zip(self._previous, prompt, strict=False):
                if a != b:
                    break
                common += 1
            self._previous = prompt
        total = estimate_tokens(prompt)
        output = sum(estimate_tokens(p) for p in parts if not p.get("thought"))
        cached = min(total, common // 4 // 64 * 64)
        return {"input": total, "cached": cached, "output": output + REASONING, "reasoning": REASONING}

    @staticmethod
    def _metadata(usage: dict[str, int]) -> dict[str, int]:
        return {
            "promptTokenCount": usage["input"],
            "candidatesTokenCount": usage["output"] - usage["reasoning"],
            "cachedContentTokenCount": usage["cached"],
            "thoughtsTokenCount": usage["reasoning"],
            "totalTokenCount": usage["input"] + usage["output"],
        }

    def _model(self, exchange: Exchange) -> str:
        name = exchange.path.rsplit("/", 1)[-1].split(":", 1)[0]
        exchange.model = name or self.model
        return exchange.model

    def _stream(self, exchange: Exchange, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        exchange.kind = "turn"
        script, done = progress(self.view(body.get("contents") or []))
        steps = steps_of(script)
        verb, rest = steps[done] if done < len(steps) else ("say", "done")
        parts: list[dict[str, Any]] = []
        if verb == "shell":
            parts.append({"functionCall": {"name": "run_shell_command", "args": {"command": rest}}})
        elif verb == "patch":
            name, _, text = rest.partition(" ")
            parts.append(
                {"functionCall": {"name": "write_file", "args": {"file_path": name, "content": text}}}
            )
        else:
            parts.append({"text": rest})
        usage = self._usage(body, parts, cache=True)
        exchange.usage = usage
        exchange.answer = parts
        model = self._model(exchange)
        thought = {"text": "**Planning** the next step", "thought": True}

        def events() -> Iterator[tuple[str | None, Any]]:
            yield (
                None,
                {
                    "candidates": [{"content": {"role": "model", "parts": [thought]}, "index": 0}],
                    "modelVersion": model,
                },
            )
            yield (
                None,
                {
                    "candidates": [
                        {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
                    ],
                    "usageMetadata": self._metadata(usage),
                    "modelVersion": model,
                },
            )

        self.send_sse(handler, events())

    def _utility(self, exchange: Exchange, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        contents = body.get("contents") or []
        asked = json.dumps(contents[-1:]) + json.dumps(body.get("systemInstruction") or "")
        if "state_snapshot" in asked:
            exchange.kind = "compaction"
            script, done = progress(self.view(contents))
            text = f"<state_snapshot>SUMMARY: steps ran. {marker(script, done)}</state_snapshot>"
        else:
            exchange.kind = "router"
            text = json.dumps(
                {
                    "reasoning": "a fake router",
                    "model_choice": "pro",
                    "complexity_reasoning": "scripted",
                    "complexity_score": 50,
                    "next_speaker": "user",
                }
            )
        parts = [{"text": text}]
        usage = self._usage(body, parts, cache=False)
        exchange.usage = usage
        exchange.answer = parts
        model = self._model(exchange)
        self.send_json(
            handler,
            {
                "candidates": [
                    {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
                ],
                "usageMetadata": self._metadata(usage),
                "modelVersion": model,
            },
        )
