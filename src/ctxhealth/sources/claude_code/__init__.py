"""Reader for Claude Code native JSONL transcripts (``~/.claude/projects/<dir>/<session>.jsonl``).

A file becomes a :class:`ctxhealth.model.Session` in one direction, each step in its own module:

* :mod:`.detect` — does a file's head look like a Claude Code transcript;
* :mod:`.schema` — the typed msgspec schema of a line (only the fields read) and its decoder;
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

from ctxhealth.sources.claude_code.detect import detect
from ctxhealth.sources.claude_code.records import _typed_node as _typed_node
from ctxhealth.sources.claude_code.schema import _DECODE as _DECODE
from ctxhealth.sources.claude_code.session import parse
from ctxhealth.sources.claude_code.tail import ClaudeCodeTail, TailState

__all__ = ["ClaudeCodeTail", "TailState", "detect", "parse"]
