"""Reader for Claude Code native JSONL transcripts (``~/.claude/projects/<dir>/<session>.jsonl``).

A file becomes a :class:`ctxhealth.model.Session` in one direction, each step in its own module:

* :mod:`.detect` — does a file's head look like a Claude Code transcript;
* :mod:`.schema` — the typed msgspec schema of a line (only the fields read) and its decoder;
* :mod:`.plain` — the same records as plain classes, built by the lenient path (no msgspec);
* :mod:`.typed` — the typed path: a line decoded by the schema, its blocks made model blocks;
* :mod:`.blocks` — a decoded message's content and usage as model blocks and usage;
* :mod:`.records` — each line decoded into a node, by the fast typed path or the lenient path;
* :mod:`.thread` — the ``parentUuid`` tree: main thread, abandoned branches, compaction roots,
  sidechain groups;
* :mod:`.builder` — thread nodes turned into messages (merged responses, compactions);
* :mod:`.session` — the whole session: main thread, sidechains and ``subagents/`` files;
* :mod:`.tail` — :class:`ClaudeCodeTail`, incremental parsing of a growing transcript (hooks).

``summary``, ``file-history-snapshot``, ``queue-operation``, ``progress`` and other system lines
are not messages; they are skipped silently (those with a ``uuid`` still link the tree).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ctxhealth.sources.claude_code.detect import detect

if TYPE_CHECKING:
    from ctxhealth.sources.claude_code.session import parse
    from ctxhealth.sources.claude_code.tail import ClaudeCodeTail, TailState

__all__ = ["ClaudeCodeTail", "TailState", "detect", "parse"]


def __getattr__(name: str) -> Any:
    """``parse`` (the tree walk, unused by a hook's tail), ``ClaudeCodeTail`` and ``TailState`` (the
    hooks' incremental parse, unused by ``check``) and ``_typed_node`` and ``_DECODE`` (the typed
    path, which needs msgspec), loaded on first use."""
    if name in ("ClaudeCodeTail", "TailState"):
        from ctxhealth.sources.claude_code import tail

        return getattr(tail, name)
    if name == "parse":
        from ctxhealth.sources.claude_code.session import parse

        return parse
    if name == "_typed_node":
        from ctxhealth.sources.claude_code.typed import _typed_node

        return _typed_node
    if name == "_DECODE":
        from ctxhealth.sources.claude_code.schema import _DECODE

        return _DECODE
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
