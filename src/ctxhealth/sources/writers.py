"""Writers: turn normalised messages back into provider request lists, so recovered context can
be sent to a model.

* :func:`to_openai_messages` — OpenAI Chat Completions ``messages``: ``system`` / ``user`` /
  ``assistant`` (with ``tool_calls``, arguments as a JSON string) / ``tool`` messages; each tool
  result becomes a ``tool`` message placed directly after the assistant message that called it.
* :func:`to_anthropic_request` — Anthropic Messages ``{"system": ..., "messages": [...]}``:
  the system prompt lifted out, consecutive same-role messages merged (the API wants
  alternation), ``tool_result`` blocks first in their user message, tool inputs as objects.
* :func:`to_gemini_contents` — Gemini ``contents``: ``user`` / ``model`` turns of ``parts``
  (``text``, ``functionCall`` with its args as an object, ``functionResponse`` named after the call it
  answers), consecutive same-role turns merged, ``functionResponse`` parts first.

What cannot be sent is left out on purpose: thinking blocks (the APIs need a provider signature
we do not have), images (the model keeps only their size), empty texts. Compaction summaries are
sent as user text. Input should be well paired (see :mod:`ctxhealth.recovery.pairing`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from ctxhealth.model import CompactionSummary, Message, Role, Session, TextBlock, ToolCall

JSONDict = dict[str, Any]


def _messages(source: Session | Iterable[Message]) -> list[Message]:
    return list(source.messages if isinstance(source, Session) else source)


def _arguments(value: Any) -> str:
    if isinstance(value, str):
        return value
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()


def _input_object(value: Any) -> JSONDict:
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            decoded = orjson.loads(value)
        except orjson.JSONDecodeError:
            decoded = None
        if isinstance(decoded, dict):
            return decoded
    return {"input": value}


def _texts(message: Message) -> list[str]:
    return [
        b.text for b in message.blocks if isinstance(b, (TextBlock, CompactionSummary)) and b.text.strip()
    ]


def to_openai_messages(source: Session | Iterable[Message]) -> list[JSONDict]:
    """OpenAI Chat Completions ``messages`` for ``source``.

    Tool results answering an assistant message are emitted as ``tool`` messages right after
    it; user text of the same stretch follows them (the API rejects anything in between).
    """
    out: list[JSONDict] = []
    held: list[JSONDict] = []  # user / system text waiting for the stretch's tool results
    for m in _messages(source):
        texts = _texts(m)
        if m.role is Role.ASSISTANT:
            out.extend(held)
            held = []
            entry: JSONDict = {"role": "assistant", "content": "\n".join(texts) if texts else None}
            calls = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": _arguments(c.input)},
                }
                for c in m.tool_calls
            ]
            if calls:
                entry["tool_calls"] = calls
            if texts or calls:
                out.append(entry)
            continue
        out.extend(
            {"role": "tool", "tool_call_id": r.tool_call_id, "content": r.text} for r in m.tool_results
        )
        if texts:
            role = "system" if m.role is Role.SYSTEM else "user"
            held.append({"role": role, "content": "\n".join(texts)})
    out.extend(held)
    return out


def to_openai_request(source: Session | Iterable[Message]) -> JSONDict:
    """``{"messages": [...]}`` — the message part of a Chat Completions request body."""
    return {"messages": to_openai_messages(source)}


def _anthropic_blocks(m: Message) -> list[JSONDict]:
    blocks: list[JSONDict] = []
    results = [
        {"type": "tool_result", "tool_use_id": r.tool_call_id, "content": r.text, "is_error": r.is_error}
        for r in m.tool_results
    ]
    blocks.extend(results)
    for b in m.blocks:
        if isinstance(b, (TextBlock, CompactionSummary)) and b.text.strip():
            blocks.append({"type": "text", "text": b.text})
        elif isinstance(b, ToolCall):
            blocks.append({"type": "tool_use", "id": b.id, "name": b.name, "input": _input_object(b.input)})
    return blocks


def to_anthropic_request(source: Session | Iterable[Message]) -> JSONDict:
    """Anthropic Messages ``{"system": ..., "messages": [...]}`` (``system`` only when there is one)."""
    system: list[str] = []
    merged: list[JSONDict] = []
    for m in _messages(source):
        if m.role is Role.SYSTEM:
            system.extend(_texts(m))
            continue
        role = "assistant" if m.role is Role.ASSISTANT else "user"
        blocks = _anthropic_blocks(m)
        if not blocks:
            continue
        if merged and merged[-1]["role"] == role:
            previous: list[JSONDict] = merged[-1]["content"]
            combined = previous + blocks
            # tool_result blocks must lead their user message.
            combined.sort(key=lambda b: 0 if b["type"] == "tool_result" else 1)
            merged[-1]["content"] = combined
        else:
            merged.append({"role": role, "content": blocks})
    body: JSONDict = {}
    if system:
        body["system"] = "\n\n".join(system)
    body["messages"] = merged
    return body


def to_anthropic_messages(source: Session | Iterable[Message]) -> list[JSONDict]:
    """The ``messages`` list of :func:`to_anthropic_request` alone."""
    result: list[JSONDict] = to_anthropic_request(source)["messages"]
    return result


GEMINI_SKIP_SIGNATURE = "skip_thought_signature_validator"
"""The thought signature Gemini accepts on a function call it did not produce itself (a rewritten call has
lost the model's own signature; Gemini 3 rejects a function call of the current turn without one)."""


def to_gemini_contents(
    source: Session | Iterable[Message], names: Mapping[str, str] | None = None
) -> list[JSONDict]:
    """Gemini ``contents`` for ``source`` (system messages left out: the request keeps its own
    ``systemInstruction``). A result is named after the call it answers, found in ``source`` or in
    ``names`` (call id -> tool name; ``tool`` when neither has it)."""
    names = dict(names or {})
    merged: list[JSONDict] = []
    for m in _messages(source):
        if m.role is Role.SYSTEM:
            continue
        parts: list[JSONDict] = []
        for r in m.tool_results:
            response = {"name": names.get(r.tool_call_id, "tool"), "response": {"output": r.text}}
            parts.append(
                {"functionResponse": {"id": r.tool_call_id, **response} if r.tool_call_id else response}
            )
        for b in m.blocks:
            if isinstance(b, (TextBlock, CompactionSummary)) and b.text.strip():
                parts.append({"text": b.text})
            elif isinstance(b, ToolCall):
                names[b.id] = b.name
                call = {"name": b.name, "args": _input_object(b.input)}
                parts.append(
                    {
                        "functionCall": {"id": b.id, **call} if b.id else call,
                        "thoughtSignature": GEMINI_SKIP_SIGNATURE,
                    }
                )
        if not parts:
            continue
        role = "model" if m.role is Role.ASSISTANT else "user"
        if merged and merged[-1]["role"] == role:
            combined: list[JSONDict] = merged[-1]["parts"] + parts
            combined.sort(key=lambda p: 0 if "functionResponse" in p else 1)
            merged[-1]["parts"] = combined
        else:
            merged.append({"role": role, "parts": parts})
    return merged
