"""Token counting: exact offline BPE counts where an encoding exists, else a documented estimate.

Owns how text and whole messages are turned into token counts:

* :func:`count_tokens` — one text; exact (``toktok``, tiktoken-identical ids) when an
  encoding such as ``o200k_base`` / ``cl100k_base`` is given and ``toktok`` can be
  imported, otherwise an estimate of about 4 characters per token (the spec). Never
  raises because a tokenizer is missing: the result says which source it used.
* :func:`count_batch` — many texts in one call (the exact tokenizer runs them in parallel).
* :func:`message_text_for_count` / :func:`message_chars` / :func:`message_tokens` — what of a
  message occupies the context: visible text, thinking, the JSON of tool-call inputs (the spec), tool-result
  text and compaction summaries, plus a small fixed framing overhead per message and per
  tool block (see the constants below).

``toktok`` is imported lazily, on the first exact count, so importing this module is cheap.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

import msgspec

from ctxhealth.accounting.types import FillSource
from ctxhealth.model import (
    CompactionSummary,
    ImageBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolCall,
    ToolResult,
)

DEFAULT_CHARS_PER_TOKEN = 4.0
"""The spec's estimate: about 4 characters per token (within ~10% for English)."""

MESSAGE_OVERHEAD_TOKENS = 4
"""Framing every message costs in a chat prompt (role marker, separators): OpenAI documents
3-4 tokens per message for its chat format; Anthropic's framing is of the same order."""

TOOL_BLOCK_OVERHEAD_TOKENS = 8
"""Framing per tool call / tool result block (ids, names, wrapper keys) beyond its payload."""

IMAGE_BLOCK_TOKENS = 1_500
"""An image occupies roughly (width x height) / 750 tokens on Anthropic models, capped near
1.6K for a full-size image; without the dimensions we charge a typical full-size image."""

KNOWN_ENCODINGS = frozenset({"o200k_base", "cl100k_base", "o200k_harmony"})

TokenCounter = Callable[[str], int]
"""Counts the tokens of one text (exact or estimated)."""


class TokenCount(msgspec.Struct, frozen=True):
    """A token count and where it came from (``EXACT`` tokenizer or ``ESTIMATED``)."""

    tokens: int
    source: FillSource


_UNSET: Any = object()
_toktok: ModuleType | None = _UNSET


def _load_toktok() -> ModuleType | None:
    """The ``toktok`` module, or None when it cannot be imported (cached either way)."""
    global _toktok
    if _toktok is _UNSET:
        try:
            import toktok  # type: ignore[import-untyped]
        except ImportError:
            _toktok = None
        else:
            _toktok = toktok
    return _toktok


def exact_available(encoding: str | None) -> bool:
    """True when ``encoding`` can be counted exactly on this machine."""
    return encoding in KNOWN_ENCODINGS and _load_toktok() is not None


def estimate_tokens(text: str, chars_per_token: float = DEFAULT_CHARS_PER_TOKEN) -> int:
    """Estimated tokens of ``text``: characters / ``chars_per_token``, rounded up (0 for "")."""
    if not text:
        return 0
    if chars_per_token <= 0:
        chars_per_token = DEFAULT_CHARS_PER_TOKEN
    return math.ceil(len(text) / chars_per_token)


def count_batch(
    texts: Sequence[str],
    encoding: str | None = None,
    *,
    chars_per_token: float = DEFAULT_CHARS_PER_TOKEN,
) -> tuple[list[int], FillSource]:
    """Token counts of ``texts`` in order, and their source.

    Exact when ``encoding`` is a known BPE encoding and ``toktok`` imports; otherwise
    estimated with ``chars_per_token``.
    """
    tk = _load_toktok() if encoding in KNOWN_ENCODINGS else None
    if tk is not None:
        counts: list[int] = tk.batch_count(list(texts), encoding)
        return counts, FillSource.EXACT
    return [estimate_tokens(t, chars_per_token) for t in texts], FillSource.ESTIMATED


def count_tokens(text: str, encoding: str | None = None) -> TokenCount:
    """Tokens of one text: exact for a known encoding when ``toktok`` is present, else estimated."""
    counts, source = count_batch([text], encoding)
    return TokenCount(counts[0], source)


def _input_text(value: Any) -> str:
    """The JSON of a tool-call input as the model saw it (raw text stays raw)."""
    if isinstance(value, str):
        return value
    orjson = _orjson or _load_orjson()
    try:
        data: bytes = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:
        return str(value)
    return data.decode()


def input_chars(value: Any) -> int:
    """A tool call's input size in characters, as the model saw it: the length of its JSON text
    (:func:`_input_text`; raw text as it is), without decoding the JSON when it is ASCII (a
    character a byte; orjson writes UTF-8 as it is, so the usual input is). The one size of a
    tool input: the running fill, the fleet's ``tool_calls.input_chars`` and the insights' steps
    all take it."""
    if isinstance(value, str):
        return len(value)
    orjson = _orjson or _load_orjson()
    try:
        data: bytes = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:
        return len(str(value))
    return len(data) if data.isascii() else len(data.decode())


_orjson: ModuleType | None = None


def _load_orjson() -> ModuleType:
    """orjson, imported on the first tool input counted: the monitor imports this module and must
    not pull orjson in until needed."""
    global _orjson
    import orjson

    _orjson = orjson
    return orjson


def message_text_for_count(message: Message) -> str:
    """Everything of ``message`` that occupies context, as one text.

    Text, thinking, compaction summaries, tool-call name + JSON input, and tool-result
    text, joined by newlines. Images contribute no text (see :func:`message_tokens`).
    """
    parts: list[str] = []
    for block in message.blocks:
        if isinstance(block, (TextBlock, ThinkingBlock, CompactionSummary)):
            parts.append(block.text)
        elif isinstance(block, ToolCall):
            parts.append(block.name)
            parts.append(_input_text(block.input))
        elif isinstance(block, ToolResult):
            parts.append(block.text)
    return "\n".join(parts)


def message_chars(message: Message) -> int:
    """``len(message_text_for_count(message))`` without building the text."""
    total = 0
    parts = 0
    for block in message.blocks:
        if isinstance(block, (TextBlock, ThinkingBlock, CompactionSummary)):
            total += len(block.text)
            parts += 1
        elif isinstance(block, ToolCall):
            value = block.input
            total += len(block.name) + input_chars(value)
            parts += 2
        elif isinstance(block, ToolResult):
            total += len(block.text)
            parts += 1
    return total + parts - 1 if parts else 0


def message_size_parts(message: Message) -> tuple[int, int]:
    """``(message_chars(message), message_overhead(message))`` in one pass over the blocks (what the
    running fill adds for each message)."""
    total = 0
    parts = 0
    extra = MESSAGE_OVERHEAD_TOKENS
    for block in message.blocks:
        if isinstance(block, (TextBlock, ThinkingBlock, CompactionSummary)):
            total += len(block.text)
            parts += 1
        elif isinstance(block, ToolCall):
            total += len(block.name) + input_chars(block.input)
            parts += 2
            extra += TOOL_BLOCK_OVERHEAD_TOKENS
        elif isinstance(block, ToolResult):
            total += len(block.text)
            parts += 1
            extra += TOOL_BLOCK_OVERHEAD_TOKENS
        elif isinstance(block, ImageBlock):
            extra += IMAGE_BLOCK_TOKENS
    return (total + parts - 1 if parts else 0), extra


def message_overhead(message: Message) -> int:
    """Fixed tokens for framing: per message, per tool block, per image (documented constants)."""
    extra = MESSAGE_OVERHEAD_TOKENS
    for block in message.blocks:
        if isinstance(block, (ToolCall, ToolResult)):
            extra += TOOL_BLOCK_OVERHEAD_TOKENS
        elif isinstance(block, ImageBlock):
            extra += IMAGE_BLOCK_TOKENS
    return extra


def message_tokens(message: Message, counter: TokenCounter) -> int:
    """Tokens ``message`` occupies: ``counter`` over its countable text plus the framing overhead."""
    return counter(message_text_for_count(message)) + message_overhead(message)
