"""Tokens a session paid to re-send context it did not need, per kind of waste (main thread).

Every message stays in the prompt of every later request until the next compaction, so content
that is never needed costs its size once per later request. Four kinds, each counted as
tokens x later requests in the same stretch between compactions:

* ``unused_tool_output`` — a tool result with distinctive words (identifier-like words of 6+
  characters: paths, ``snake_case``, ``CamelCase``, words with digits, first seen in that result)
  none of which the agent ever wrote again in a later reply, thought or tool call (a result
  without such words cannot be judged and is not counted);
* ``stale_reads`` — a file read (a tool call with a ``file_path`` / ``path`` input, or a shell
  ``cat`` of one file) superseded by a later read of the same file: the earlier copy from then on;
* ``duplicate_paragraphs`` — a paragraph (80+ characters between blank lines) of a tool result
  or user message already in the context, the same paragraph hashing the pack uses to dedupe;
* ``clearing_savings`` — what clearing tool results at the recovery defaults (at 100K prompt
  tokens, keep the last 3 tool uses) would have taken out of each such request's prompt;
* ``compression_savings`` — what compressing the history (:func:`ctxhealth.recovery.compress_history`,
  the spec's light / aggressive levels) once, at the first request of a stretch whose prompt
  reached the policy's compress gate (``compress_at`` tokens), would have taken out of that
  request and every later one of the stretch.

Token sizes are estimates (about 4 characters a token); the USD figure prices the tokens at the
cache-read price of the session's model, the least a re-sent token costs, so it is a floor.
"""

from __future__ import annotations

import hashlib
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from msgspec.structs import replace

from ctxhealth.accounting.tokens import estimate_tokens
from ctxhealth.accounting.types import Prices
from ctxhealth.model import Message, Role, Session, ThinkingBlock, ToolCall
from ctxhealth.recovery.clear import ClearConfig
from ctxhealth.recovery.compress import compress_history

MIN_PARAGRAPH_CHARS = 80

_WORD = re.compile(r"[A-Za-z_][\w./-]{5,}")
_PARAGRAPH = re.compile(r"\n\s*\n")
_IDENTIFIER_MARK = re.compile(r"[_./0-9]|.[A-Z]")


def _distinctive(text: str) -> set[str]:
    """Identifier-like words: containing ``_ . /`` or a digit, or a capital after the first letter."""
    out = set()
    mark = _IDENTIFIER_MARK.search
    for word in set(_WORD.findall(text)):
        word = word.rstrip("./-")
        if len(word) >= 6 and mark(word):
            out.add(word)
    return out


def _read_path(call: ToolCall) -> str | None:
    """The one file a tool call reads, when it is a read: ``file_path`` / ``path`` input or ``cat FILE``."""
    value = call.input
    if isinstance(value, dict):
        if "file_path" in value or ("path" in value and call.name.lower() in {"read", "read_file", "view"}):
            path = value.get("file_path", value.get("path"))
            return path if isinstance(path, str) else None
        command = value.get("command") or value.get("cmd")
        if isinstance(command, list):
            command = " ".join(str(c) for c in command)
        if isinstance(command, str):
            return _cat_path(command)
    return None


def _cat_path(command: str) -> str | None:
    if not command.lstrip().startswith("cat ") or any(c in command for c in "|;&><"):
        return None
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    files = [w for w in words[1:] if not w.startswith("-")]
    return files[0] if len(files) == 1 else None


def _outputs(message: Message) -> str:
    parts = [message.text]
    for block in message.blocks:
        if isinstance(block, ThinkingBlock):
            parts.append(block.text)
        elif isinstance(block, ToolCall):
            parts.append(str(block.input))
    return "\n".join(parts)


@dataclass(frozen=True, slots=True)
class WasteReport:
    """Re-sent tokens per kind of waste, and their floor price in USD."""

    unused_tool_output: int
    stale_reads: int
    duplicate_paragraphs: int
    clearing_savings: int
    compression_savings: int
    usd_floor: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "tokens_source": "estimated",
            "unused_tool_output": self.unused_tool_output,
            "stale_reads": self.stale_reads,
            "duplicate_paragraphs": self.duplicate_paragraphs,
            "clearing_savings": self.clearing_savings,
            "compression_savings": self.compression_savings,
            "usd_floor": self.usd_floor,
        }


def _later_requests(messages: Sequence[Message]) -> list[int]:
    """Per message index: responses after it before the next compaction (it is re-sent to each)."""
    out = [0] * len(messages)
    count = 0
    for i in range(len(messages) - 1, -1, -1):
        out[i] = count
        message = messages[i]
        if message.compaction is not None:
            count = 0
        elif message.role is Role.ASSISTANT:
            count += 1
    return out


def audit_waste(
    session: Session,
    prices: Prices | None,
    clear: ClearConfig | None = None,
    *,
    compress_at: int | None = None,
) -> WasteReport:
    """Waste of the main thread of ``session`` (see the module doc)."""
    clear = clear or ClearConfig()
    messages = session.messages
    later = _later_requests(messages)
    seen_words: set[str] = set()
    pending: dict[str, list[int]] = {}  # word -> ids of unused results it would mark used
    results: list[tuple[int, int, bool]] = []  # (tokens, later requests, has novel words) per result
    used: set[int] = set()
    last_read: dict[str, tuple[int, int]] = {}  # path -> (tokens of that read, message index)
    calls: dict[str, str] = {}  # tool call id -> path read
    paragraphs: set[bytes] = set()
    segment_results: list[int] = []
    stale = duplicate = clearing = compression = 0
    segment_start = 0
    compressed = False
    for index, message in enumerate(messages):
        if message.compaction is not None:
            paragraphs.clear()
            last_read.clear()
            segment_results.clear()
            segment_start, compressed = index, False
        if message.role is Role.ASSISTANT:
            words = _distinctive(_outputs(message))
            for word in words & pending.keys():
                used.update(pending.pop(word))
            seen_words |= words
            for call in message.tool_calls:
                path = _read_path(call)
                if path is not None:
                    calls[call.id] = path
            usage = message.usage
            if usage is not None and usage.context_tokens >= clear.trigger.value and segment_results:
                keep = clear.keep_tool_uses
                clearing += sum(segment_results[:-keep] if keep else segment_results)
            if (
                compress_at is not None
                and not compressed
                and usage is not None
                and usage.context_tokens >= compress_at
            ):
                compressed = True
                before = replace(session, messages=messages[segment_start:index], sidechains=())
                _, report = compress_history(before, encoding=None)  # estimated, like the rest
                compression += report.tokens_removed * (later[index] + 1)
            continue
        if not message.tool_results:
            seen_words |= _distinctive(message.text)  # words a person or the system wrote
        for result in message.tool_results:
            tokens = estimate_tokens(result.text)
            result_id = len(results)
            novel = _distinctive(result.text) - seen_words
            results.append((tokens, later[index], bool(novel)))
            segment_results.append(tokens)
            seen_words |= novel
            for word in novel:
                pending.setdefault(word, []).append(result_id)
            path = calls.get(result.tool_call_id)
            if path is not None:
                earlier = last_read.get(path)
                if earlier is not None:
                    stale += earlier[0] * later[index]
                last_read[path] = (tokens, index)
        if message.role in (Role.USER, Role.TOOL):
            texts = [r.text for r in message.tool_results] or [message.text]
            for text in texts:
                for paragraph in _PARAGRAPH.split(text):
                    paragraph = paragraph.strip()
                    if len(paragraph) < MIN_PARAGRAPH_CHARS:
                        continue
                    key = hashlib.blake2b(paragraph.encode(), digest_size=16).digest()
                    if key in paragraphs:
                        duplicate += estimate_tokens(paragraph) * later[index]
                    else:
                        paragraphs.add(key)
    unused = sum(
        tokens * count for i, (tokens, count, judged) in enumerate(results) if judged and i not in used
    )
    usd = None
    if prices is not None:
        usd = (unused + stale + duplicate) * prices.cache_read / 1e6
    return WasteReport(unused, stale, duplicate, clearing, compression, usd)
