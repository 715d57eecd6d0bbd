"""Thread nodes (in order) turned into :class:`Message` values.

* Consecutive assistant lines sharing ``message.id`` are one response: one assistant
  :class:`Message`, usage kept once (max ``output_tokens``, since streamed lines often say 1).
  When tool results sit between two lines of the same response, the response is still merged
  and the results follow it.
* A compaction becomes a USER message holding a :class:`CompactionSummary`; trigger,
  ``preTokens``, ``postTokens`` and ``cumulativeDroppedTokens`` come from the
  ``compact_boundary`` record before it when present.
* ``<synthetic>`` responses (Claude Code's own error stand-ins) keep their text but no model
  and no usage, so they never reset the reported fill to zero. Claude Code reports usage on
  every real response, so an assistant message left with neither model nor usage is a stand-in
  the client wrote itself (an API error, an interruption): it is marked ``Message.synthetic``
  and accounting does not count it as a model response.
* Lines that are not user/assistant messages (``summary``, ``progress``, other system lines)
  are skipped silently.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import msgspec

from ctxhealth.model import Block, CompactionSummary, Message, Role, ToolResult, Usage
from ctxhealth.sources.claude_code.blocks import _blocks, _usage
from ctxhealth.sources.claude_code.plain import _MESSAGE_KINDS
from ctxhealth.sources.lines import WarningSink, make_message

if TYPE_CHECKING:
    from ctxhealth.sources.claude_code.schema import _Msg, _Node

_SYNTHETIC = "<synthetic>"


class _Draft(msgspec.Struct):
    """A message being assembled (assistant responses may span several lines)."""

    role: Role
    blocks: list[Block]
    line: int
    id: str | None = None
    response_id: str | None = None
    model: str | None = None
    usage: Usage | None = None
    timestamp: str | None = None
    sidechain: bool = False
    tool_results_only: bool = False

    def freeze(self) -> Message:
        return make_message(
            self.role,
            tuple(self.blocks),
            self.id,
            self.response_id,
            self.model,
            self.usage,
            self.timestamp,
            self.sidechain,
            self.line,
            self.role is Role.ASSISTANT and self.model is None and self.usage is None,
        )


class _Boundary(msgspec.Struct):
    """A ``compact_boundary`` line waiting for its summary: what its ``compactMetadata`` states."""

    trigger: str | None
    pre: int | None
    post: int | None
    dropped: int | None
    line: int

    def summary(self, text: str) -> CompactionSummary:
        return CompactionSummary(
            text,
            trigger=self.trigger,
            pre_tokens=self.pre,
            post_tokens=self.post,
            dropped_tokens=self.dropped,
        )


class _Builder:
    """Turns thread nodes (in order) into messages: merging responses, attaching compactions."""

    def __init__(self, sink: WarningSink, sidechain: bool) -> None:
        self.sink = sink
        self.sidechain = sidechain
        self.drafts: list[_Draft] = []
        self.last_assistant: int | None = None
        self.boundary: _Boundary | None = None
        self.model: str | None = None

    def add(self, node: _Node) -> None:
        kind = node.type
        if kind == "system":
            if node.subtype == "compact_boundary":
                self._flush_boundary()
                meta = node.compactMetadata
                if meta is None:
                    self.boundary = _Boundary(None, None, None, None, node.line)
                else:
                    self.boundary = _Boundary(
                        meta.trigger, meta.preTokens, meta.postTokens, meta.cumulativeDroppedTokens, node.line
                    )
            return
        message = node.message
        if message is None or kind not in _MESSAGE_KINDS:
            return
        if kind == "assistant":
            if self.boundary is not None:
                self._flush_boundary()
            self._assistant(node, message)
        elif node.isCompactSummary:
            self._compaction(node, message)
        else:
            if self.boundary is not None:
                self._flush_boundary()
            self._user(node, message)

    def finish(self, *, flush: bool = True) -> list[Message]:
        if flush:
            self._flush_boundary()
        return [d.freeze() for d in self.drafts]

    def _flush_boundary(self) -> None:
        """A boundary not followed by its summary still records that a compaction happened."""
        if self.boundary is None:
            return
        boundary = self.boundary
        self.boundary = None
        summary = boundary.summary("")
        self.drafts.append(_Draft(Role.USER, [summary], boundary.line, sidechain=self.sidechain))

    def _compaction(self, node: _Node, message: _Msg) -> None:
        boundary = self.boundary or _Boundary(None, None, None, None, node.line)
        self.boundary = None
        blocks = _blocks(node, message, self.sink)
        text = "\n".join(getattr(b, "text", "") for b in blocks if not isinstance(b, ToolResult))
        summary = boundary.summary(text)
        self.drafts.append(
            _Draft(
                Role.USER, [summary], node.line, node.uuid, timestamp=node.timestamp, sidechain=self.sidechain
            )
        )

    def _user(self, node: _Node, message: _Msg) -> None:
        blocks = message.blocks
        if blocks is None:
            blocks = _blocks(node, message, self.sink)
        only_results = bool(blocks) and all(type(b) is ToolResult for b in blocks)
        self.drafts.append(
            _Draft(
                Role.USER,
                blocks,
                node.line,
                node.uuid,
                None,
                None,
                None,
                node.timestamp,
                self.sidechain,
                only_results,
            )
        )

    def _assistant(self, node: _Node, message: _Msg) -> None:
        blocks = message.blocks
        if blocks is None:
            blocks = _blocks(node, message, self.sink)
        response_id = message.id
        model = message.model
        raw_usage = message.usage
        if model == _SYNTHETIC:
            model = None
            raw_usage = None
        if model:
            self.model = model
        last_index = self.last_assistant
        if response_id is not None and last_index is not None:
            drafts = self.drafts
            last = drafts[last_index]
            if last.response_id == response_id and (
                last_index == len(drafts) - 1
                or all(drafts[i].tool_results_only for i in range(last_index + 1, len(drafts)))
            ):
                last.blocks.extend(blocks)
                last.model = last.model or model
                if last.usage is None:
                    last.usage = _usage(raw_usage)
                elif raw_usage is not None and raw_usage.output_tokens > last.usage.output_tokens:
                    # repeated usage; streamed lines often under-report output (Usage.merged)
                    last.usage = last.usage.merged(_usage(raw_usage))
                return
        usage = _usage(raw_usage)
        self.drafts.append(
            _Draft(
                Role.ASSISTANT,
                blocks,
                node.line,
                node.uuid,
                response_id,
                model,
                usage,
                node.timestamp,
                self.sidechain,
            )
        )
        self.last_assistant = len(self.drafts) - 1


def _messages(nodes: Iterable[_Node], sink: WarningSink, sidechain: bool) -> tuple[list[Message], str | None]:
    builder = _Builder(sink, sidechain)
    add = builder.add
    for n in nodes:
        add(n)
    return builder.finish(), builder.model
