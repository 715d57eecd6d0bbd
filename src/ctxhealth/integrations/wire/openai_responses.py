"""OpenAI Responses (``POST /v1/responses``): ``instructions`` + ``input`` items.

Items are the ``input`` list (a string ``input`` is one user message). A model turn spans several
items (an assistant ``message``, ``reasoning``, ``function_call`` ...): consecutive assistant-side
items become one assistant :class:`Message` whose ``line`` is its first item's position, and a
``function_call_output`` a TOOL message. An unchanged message is written back as its original items;
a rewritten one as an ``EasyInputMessage`` plus ``function_call`` / ``function_call_output`` items
(reasoning items of rewritten turns are left out, as the other writers leave out thinking).

A request that continues a stored response (``previous_response_id``) carries only the new turn:
the conversation lives at the provider, so it can be observed and given notes, not rewritten.
"""

from __future__ import annotations

from typing import Any

import orjson

from ctxhealth.integrations.wire.base import ApiError, ApiStyle, ErrorKind, JSONDict, canonical
from ctxhealth.integrations.wire.openai_chat import openai_error
from ctxhealth.model import Block, ImageBlock, Message, Role, TextBlock, ThinkingBlock, ToolCall, ToolResult

_ROLES = {"system": Role.SYSTEM, "developer": Role.SYSTEM, "user": Role.USER, "assistant": Role.ASSISTANT}
_TEXT_PARTS = frozenset({"input_text", "output_text", "text", "refusal"})
_CALLS = frozenset({"function_call", "custom_tool_call"})
_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output"})


def _content_blocks(content: Any) -> list[Block]:
    if isinstance(content, str):
        return [TextBlock(content)]
    blocks: list[Block] = []
    if isinstance(content, list):
        for part in content:
            if not isinstance(part, dict):
                continue
            kind = part.get("type")
            if kind in _TEXT_PARTS:
                text = part.get("text") if kind != "refusal" else part.get("refusal")
                blocks.append(TextBlock(text if isinstance(text, str) else ""))
            elif kind in ("input_image", "input_file", "input_audio"):
                blocks.append(ImageBlock(media_type=str(kind)))
    return blocks


def _arguments(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return orjson.loads(raw) if raw.strip() else {}
        except orjson.JSONDecodeError:
            return raw
    return raw


def _output_text(raw: Any) -> str:
    if isinstance(raw, str):
        return raw
    return "\n".join(b.text for b in _content_blocks(raw) if isinstance(b, TextBlock))


def _reasoning_text(item: JSONDict) -> str:
    summary = item.get("summary")
    if not isinstance(summary, list):
        return ""
    return "\n".join(
        s.get("text", "") for s in summary if isinstance(s, dict) and isinstance(s.get("text"), str)
    )


def _assistant_blocks(item: JSONDict) -> list[Block] | None:
    """The blocks an assistant-side item adds to its turn (None when the item is not one)."""
    kind = item.get("type")
    if kind in _CALLS:
        raw = item.get("arguments") if kind == "function_call" else item.get("input")
        call_id = item.get("call_id") or item.get("id") or ""
        return [ToolCall(str(call_id), str(item.get("name") or ""), _arguments(raw))]
    if kind == "reasoning":
        return [ThinkingBlock(_reasoning_text(item))]
    if item.get("role") == "assistant" and kind in (None, "message"):
        return _content_blocks(item.get("content"))
    return None


def _arguments_text(value: Any) -> str:
    return value if isinstance(value, str) else orjson.dumps(value).decode()


class OpenAIResponses:
    style = ApiStyle.OPENAI_RESPONSES

    def items(self, body: JSONDict) -> list[Any]:
        raw = body.get("input")
        if isinstance(raw, str):
            return [{"role": "user", "content": raw}]
        return list(raw) if isinstance(raw, list) else []

    def head(self, body: JSONDict) -> Any:
        return body.get("instructions")

    def to_messages(self, body: JSONDict, items: list[Any], *, with_head: bool) -> list[Message]:
        out: list[Message] = []
        instructions = body.get("instructions")
        if with_head and isinstance(instructions, str) and instructions:
            out.append(Message(role=Role.SYSTEM, blocks=(TextBlock(instructions),), line=0))
        turn: list[Block] | None = None  # the blocks of the assistant turn being assembled
        turn_line = 0
        for index, item in enumerate(items, start=1):
            if not isinstance(item, dict):
                continue
            blocks = _assistant_blocks(item)
            if blocks is not None:
                if turn is None:
                    turn, turn_line = [], index
                turn.extend(blocks)
                continue
            if turn is not None:
                out.append(Message(role=Role.ASSISTANT, blocks=tuple(turn), line=turn_line))
                turn = None
            kind = item.get("type")
            if kind in _OUTPUTS:
                result = ToolResult(str(item.get("call_id") or ""), _output_text(item.get("output")))
                out.append(Message(role=Role.TOOL, blocks=(result,), line=index))
            elif kind in (None, "message"):
                role = _ROLES.get(str(item.get("role")), Role.USER)
                out.append(Message(role=role, blocks=tuple(_content_blocks(item.get("content"))), line=index))
        if turn is not None:
            out.append(Message(role=Role.ASSISTANT, blocks=tuple(turn), line=turn_line))
        return out

    def with_items(self, body: JSONDict, items: list[Any]) -> JSONDict:
        return {**body, "input": items}

    def write(self, messages: list[Message], originals: list[Any], parsed: list[Message]) -> list[Any]:
        # a parsed message spans the items from its line up to the next parsed message's line
        starts = [(m, m.line or 0) for m in parsed if m.line]
        spans: dict[int, tuple[Message, int, int]] = {}
        for k, (m, start) in enumerate(starts):
            end = starts[k + 1][1] if k + 1 < len(starts) else len(originals) + 1
            spans[start] = (m, start, end)
        out: list[Any] = []
        for m in messages:
            if m.role is Role.SYSTEM and m.line == 0:
                continue  # the body's own instructions are kept as they are
            span = spans.get(m.line or 0)
            if span is not None and span[0] == m:
                out.extend(originals[span[1] - 1 : span[2] - 1])
            else:
                out.extend(self._written(m))
        return out

    def _written(self, m: Message) -> list[Any]:
        out: list[Any] = []
        text = "\n".join(b.text for b in m.blocks if isinstance(b, TextBlock) and b.text.strip())
        if m.role is Role.ASSISTANT:
            if text:
                out.append({"role": "assistant", "content": text})
            out.extend(
                {
                    "type": "function_call",
                    "call_id": c.id,
                    "name": c.name,
                    "arguments": _arguments_text(c.input),
                }
                for c in m.tool_calls
            )
            return out
        out.extend(
            {"type": "function_call_output", "call_id": r.tool_call_id, "output": r.text}
            for r in m.tool_results
        )
        if text:
            out.append({"role": "system" if m.role is Role.SYSTEM else "user", "content": text})
        return out

    def add_note(self, items: list[Any], text: str) -> list[Any]:
        return [*items, {"role": "user", "content": text}]

    def session_seed(self, body: JSONDict) -> str:
        first = next(
            (i for i in self.items(body) if isinstance(i, dict) and i.get("role") == "user"),
            None,
        )
        return (canonical(body.get("instructions")) + b"\x00" + canonical(first)).decode()

    def error(self, kind: ErrorKind, message: str) -> ApiError:
        return openai_error(kind, message)
