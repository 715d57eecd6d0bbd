"""Gemini ``generateContent`` (``POST /v1beta/models/{model}:generateContent`` and
``:streamGenerateContent?alt=sse``): ``systemInstruction`` + ``contents`` of ``parts``.

Items are the ``contents`` (``user`` and ``model`` turns); the system instruction is the head. The
model is named by the path, not the body (:func:`model_in_path`). A ``model`` turn's parts become an
assistant message (``text``, ``thought`` parts as thinking, each ``functionCall`` a tool call); a
``user`` turn's ``functionResponse`` parts become tool results (their output read as Gemini CLI's
chat reader reads it, exit code included), its text parts text, as the chat reader takes them: a
``<state_snapshot>`` part is the compression's summary, Gemini CLI's ``<session_context>`` part its
environment (a system message of its own, not the person's request). A call without an ``id`` is given one
from its position, and a response without one answers the earliest unanswered call of that name.

Rewritten turns are written by :func:`~ctxhealth.sources.writers.to_gemini_contents`; unchanged ones
are sent as the client's own items (thought signatures kept). A note is a text part after the last
user turn's parts (after its function responses), so the prefix before it stays byte-identical.
"""

from __future__ import annotations

import re
from typing import Any

from ctxhealth.integrations.wire.base import (
    FINAL_HEADERS,
    ApiError,
    ApiStyle,
    ErrorKind,
    JSONDict,
    canonical,
    kept_original,
)
from ctxhealth.model import Block, CompactionSummary, Message, Role, TextBlock, ThinkingBlock, ToolCall
from ctxhealth.sources.gemini_cli import ENVIRONMENT, SNAPSHOT, response_text, tool_result
from ctxhealth.sources.writers import to_gemini_contents

_PATH = re.compile(r"/v1[a-z0-9]*/(?:models|tunedModels)/([^/:]+):(?:streamGenerateContent|generateContent)$")
_STATUS = {ErrorKind.HALT: 400, ErrorKind.TOO_LARGE: 413, ErrorKind.BAD_REQUEST: 400}


def is_generate_path(path: str) -> bool:
    """True for a Gemini ``generateContent`` / ``streamGenerateContent`` path (a prefix before the
    version is allowed; ``countTokens`` and the rest are forwarded untouched)."""
    return _PATH.search(path.rstrip("/")) is not None


def model_in_path(path: str) -> str | None:
    """The model a Gemini path names (``/v1beta/models/gemini-2.5-pro:generateContent``)."""
    found = _PATH.search(path.rstrip("/"))
    return found.group(1) if found is not None else None


def _parts(item: Any) -> list[Any]:
    parts = item.get("parts") if isinstance(item, dict) else None
    return parts if isinstance(parts, list) else []


class GeminiContents:
    style = ApiStyle.GEMINI

    def items(self, body: JSONDict) -> list[Any]:
        contents = body.get("contents")
        return list(contents) if isinstance(contents, list) else []

    def head(self, body: JSONDict) -> Any:
        return body.get("systemInstruction")

    def to_messages(self, body: JSONDict, items: list[Any], *, with_head: bool) -> list[Message]:
        out: list[Message] = []
        head = body.get("systemInstruction")
        if with_head and head:
            text = head if isinstance(head, str) else "\n".join(_texts(_parts(head)))
            out.append(Message(role=Role.SYSTEM, blocks=(TextBlock(text),), line=0))
        unanswered: list[tuple[str, str]] = []  # (name, id) of calls not answered yet
        answered: dict[str, str] = {}  # id -> output of the calls answered
        for index, item in enumerate(items, start=1):
            model = isinstance(item, dict) and item.get("role") == "model"
            blocks: list[Block] = []
            for k, part in enumerate(_parts(item)):
                if not isinstance(part, dict):
                    continue
                call, response = part.get("functionCall"), part.get("functionResponse")
                if isinstance(call, dict):
                    name = str(call.get("name") or "")
                    call_id = str(call.get("id") or f"call-{index}-{k}")
                    unanswered.append((name, call_id))
                    blocks.append(ToolCall(call_id, name, call.get("args")))
                elif isinstance(response, dict):
                    name = str(response.get("name") or "")
                    call_id = str(response.get("id") or "")
                    match = next(
                        (c for c in unanswered if (c[1] == call_id if call_id else c[0] == name)), None
                    )
                    if match is not None:
                        unanswered.remove(match)
                        call_id = match[1]
                    output = response_text([part])
                    if match is None and call_id and answered.get(call_id) == output:
                        # the same answer again: Gemini CLI 0.61 restates a resumed history with each
                        # function response twice (the chat reader reads such a repeat once too)
                        continue
                    answered[call_id] = output
                    blocks.append(tool_result(call_id, output, None))
                elif isinstance(part.get("text"), str):
                    text = part["text"]
                    if model:
                        blocks.append(ThinkingBlock(text) if part.get("thought") else TextBlock(text))
                    elif text.lstrip().startswith(SNAPSHOT):
                        blocks.append(CompactionSummary(text, trigger="auto"))
                    elif text.lstrip().startswith(ENVIRONMENT):
                        # the harness's environment text, not the person's request (as the chat reader
                        # takes it); never written back: the item it is part of is kept as sent
                        out.append(Message(role=Role.SYSTEM, blocks=(TextBlock(text),)))
                    else:
                        blocks.append(TextBlock(text))
            out.append(Message(role=Role.ASSISTANT if model else Role.USER, blocks=tuple(blocks), line=index))
        return out

    def with_items(self, body: JSONDict, items: list[Any]) -> JSONDict:
        return {**body, "contents": items}

    def write(self, messages: list[Message], originals: list[Any], parsed: list[Message]) -> list[Any]:
        by_line = {m.line: m for m in parsed if m.line is not None}
        out: list[Any] = []
        pending: list[Message] = []  # rewritten messages, written together
        names = {c.id: c.name for m in messages for c in m.tool_calls}  # a result is named by its call
        for m in messages:
            if m.role is Role.SYSTEM:
                continue  # the body's own systemInstruction is kept as it is
            kept = kept_original(m, originals, by_line)
            if kept is None:
                pending.append(m)
                continue
            if pending:
                out.extend(to_gemini_contents(pending, names))
                pending = []
            out.append(kept)
        if pending:
            out.extend(to_gemini_contents(pending, names))
        return _merge_roles(out)

    def add_note(self, items: list[Any], text: str) -> list[Any]:
        out = list(items)
        note = {"text": text}
        if out and isinstance(out[-1], dict) and out[-1].get("role") == "user":
            out[-1] = {**out[-1], "parts": [*_parts(out[-1]), note]}
        else:
            out.append({"role": "user", "parts": [note]})
        return out

    def session_seed(self, body: JSONDict) -> str:
        # the first user turn only: Gemini CLI's compression request has a system instruction of its
        # own, and it is the same conversation
        first = next(
            (i for i in self.items(body) if isinstance(i, dict) and i.get("role") in ("user", None)), None
        )
        return canonical(first).decode()

    def error(self, kind: ErrorKind, message: str) -> ApiError:
        status = _STATUS[kind]
        name = "INVALID_ARGUMENT"
        headers = dict(FINAL_HEADERS) if kind is ErrorKind.HALT else {}
        return ApiError(status, {"error": {"code": status, "message": message, "status": name}}, headers)


def _texts(parts: list[Any]) -> list[str]:
    return [p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)]


def _merge_roles(items: list[Any]) -> list[Any]:
    """Neighbours of the same role merged into one turn, ``functionResponse`` parts first."""
    out: list[Any] = []
    for item in items:
        if (
            out
            and isinstance(item, dict)
            and isinstance(out[-1], dict)
            and out[-1].get("role") == item.get("role")
        ):
            combined = _parts(out[-1]) + _parts(item)
            combined.sort(key=lambda p: 0 if isinstance(p, dict) and "functionResponse" in p else 1)
            out[-1] = {**out[-1], "parts": combined}
        else:
            out.append(item)
    return out
