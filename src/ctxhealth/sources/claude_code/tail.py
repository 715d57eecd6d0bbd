"""Incremental parsing of a growing Claude Code transcript (hooks, status line).

:class:`ClaudeCodeTail` reuses the line decoding and message building of the full reader but
skips the tree walk, so a hook stays O(new bytes); its docstring lists how it differs.
"""

from __future__ import annotations

import msgspec

from ctxhealth.model import CompactionSummary, Message, ReadWarning
from ctxhealth.sources.claude_code.builder import _Boundary, _Builder
from ctxhealth.sources.claude_code.records import _iter_nodes
from ctxhealth.sources.lines import WarningSink

_TYPED_FEED_BYTES = 4 * 1024 * 1024
"""Feeds at least this long take the typed (msgspec) path first; shorter ones lenient-first.

Importing msgspec and the schema costs a hook process about 20 ms; the typed path saves about
2 ms per MB over the lenient one, so only a very large feed earns the import back.
"""


class TailState(msgspec.Struct):
    """What :class:`ClaudeCodeTail` has seen so far besides main-thread messages."""

    session_id: str | None = None
    model: str | None = None
    sidechain_lines: int = 0
    compactions: int = 0
    last_compaction: CompactionSummary | None = None
    warnings: list[ReadWarning] = msgspec.field(default_factory=list)


class ClaudeCodeTail:
    """Incremental parser for a growing Claude Code transcript (hooks, status line).

    Feed it the bytes appended since the last call; it returns main-thread messages for the
    complete lines and keeps a trailing partial line for the next call. ``consumed`` is the
    number of bytes of complete lines processed so far (add it to a cached start offset).

    Differences from :func:`parse` (kept simple so a hook stays O(new bytes)):

    * no branch resolution: every non-sidechain user/assistant line is taken in file order,
      so after a rewind the abandoned branch's lines are still returned;
    * responses are merged only within one :meth:`feed` call; a response whose lines span two
      calls comes out as two messages with the same ``response_id`` (dedupe usage by it);
    * sidechain lines are counted in ``state.sidechain_lines``, not returned; compactions are
      returned as USER messages with a :class:`CompactionSummary` and counted in ``state``.
    """

    def __init__(self, path: str = "<transcript>") -> None:
        self.path = path
        self.state = TailState()
        self.consumed = 0
        self.next_line = 1
        self._partial = b""
        self._boundary: _Boundary | None = None

    @property
    def pending(self) -> bytes:
        """The partial last line held back for the next call."""
        return self._partial

    def feed(self, data: bytes, start_line: int | None = None) -> list[Message]:
        """Parse the complete lines in ``data``; ``start_line`` numbers its first line (1-based).

        ``start_line`` is honoured only when no partial line is pending (a resumed hook passes
        the line count it cached with its byte offset, plus one).
        """
        if start_line is not None and not self._partial:
            self.next_line = start_line
        buffer = self._partial + data
        cut = buffer.rfind(b"\n")
        if cut == -1:
            self._partial = buffer
            return []
        complete, self._partial = buffer[: cut + 1], buffer[cut + 1 :]
        self.consumed += len(complete)
        first = self.next_line
        self.next_line += complete.count(b"\n")
        sink = WarningSink(self.path)
        builder = _Builder(sink, sidechain=False)
        builder.boundary = self._boundary
        # A feed below a few MB (a hook's new turn, even a cold read) reads lenient-first: the
        # same nodes, and msgspec is not imported (it costs more than the typed path saves).
        typed = len(complete) >= _TYPED_FEED_BYTES
        for node in _iter_nodes(complete, sink, first, typed=typed, retry_typed=not typed):
            sid = node.sessionId
            if sid and self.state.session_id is None:
                self.state.session_id = sid
            if node.isSidechain:
                self.state.sidechain_lines += 1
                continue
            builder.add(node)
        messages = builder.finish(flush=False)
        self._boundary = builder.boundary
        for m in messages:
            summary = m.compaction
            if summary is not None:
                self.state.compactions += 1
                self.state.last_compaction = summary
        if builder.model:
            self.state.model = builder.model
        self.state.warnings.extend(sink.result())
        return messages
