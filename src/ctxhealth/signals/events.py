"""The :class:`Event` every detector is fed: one message, parsed once (tool calls classified, tool
results paired with the call they answer and judged failed or not, an assistant reply's text joined
once and folded into word runs once for every detector that reads words).

:class:`EventBuilder` keeps the only cross-message state this needs, the calls still waiting for
their result, in a bounded map, so building an event is O(size of the message).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from ctxhealth.failures import is_failure
from ctxhealth.model import Message, Role, TextBlock, ToolCall, ToolResult
from ctxhealth.signals.base import BoundedDict
from ctxhealth.signals.calls import CallInfo, CallKind, error_signature, parse_call
from ctxhealth.signals.text import content_words, fold, folded_stems, run_stems

if TYPE_CHECKING:
    from collections.abc import Callable

    from ctxhealth.signals.state import PendingCall

PENDING_LIMIT = 256
PARSE_CACHE_LIMIT = 64
"""Agents repeat commands: the last few parsed shell commands are remembered."""


class ResultInfo(msgspec.Struct, frozen=True):
    """A tool result with the call it answers (when known), where that call was, and its verdict."""

    result: ToolResult
    call: CallInfo | None
    call_index: int | None
    failed: bool

    @property
    def tool(self) -> str:
        return self.call.tool if self.call is not None else "?"

    def signature(self) -> str:
        return error_signature(self.result)


class Event:
    """One message as the detectors see it.

    ``index`` is its position in the session, ``turn`` counts assistant responses so far (this one
    included), ``fill`` is the context fill after it, ``calls`` / ``results`` its parsed tool blocks.
    ``continues``: the message is more of the response that started at ``index`` (the same turn; its
    usage is that response's, already seen; see ``Monitor.update``).
    For an assistant message, ``text`` is its text blocks joined with newlines (joined once). Its
    word features are computed on first use and then shared by every detector that reads them:
    ``folded`` (the text through :func:`~ctxhealth.signals.text.fold`), ``runs`` (the word runs of
    ``folded``) and ``stems`` (their content words, :func:`~ctxhealth.signals.text.run_stems`). A
    reply longer than the drift window is read by drift at its tail only, so its whole text is
    folded only when a reader asks for it (the hedge count, when the risk model uses it).
    """

    __slots__ = (
        "_folded",
        "_runs",
        "_stems",
        "calls",
        "continues",
        "fill",
        "index",
        "message",
        "results",
        "text",
        "turn",
    )

    def __init__(
        self,
        index: int,
        message: Message,
        turn: int,
        fill: int,
        calls: tuple[CallInfo, ...] = (),
        results: tuple[ResultInfo, ...] = (),
        text: str = "",
        continues: bool = False,
    ) -> None:
        self.index = index
        self.continues = continues
        self.message = message
        self.turn = turn
        self.fill = fill
        self.calls = calls
        self.results = results
        self.text = text
        self._folded: bytes | None = None
        self._runs: list[bytes] | None = None
        self._stems: list[str] | None = None

    @property
    def folded(self) -> bytes:
        folded = self._folded
        if folded is None:
            folded = self._folded = fold(self.text) if self.text else b""
        return folded

    @property
    def runs(self) -> list[bytes]:
        runs = self._runs
        if runs is None:
            runs = self._runs = self.folded.split()
        return runs

    def tail_stems(self, limit: int) -> list[str]:
        """``content_words(self.text[-limit:])``: from the folded text when a reader already folded
        it (folding is one byte per character, so the tail of the folded text is the folded tail,
        unless the text holds ``İ``, whose lower case is two characters), else from the tail alone."""
        folded = self._folded
        if folded is None or "\u0130" in self.text:
            return content_words(self.text[-limit:])
        return folded_stems(folded[-limit:])

    @property
    def stems(self) -> list[str]:
        stems = self._stems
        if stems is None:
            # the runs when a reader already split them, else straight from the folded text
            runs = self._runs
            stems = self._stems = run_stems(runs) if runs is not None else folded_stems(self.folded)
        return stems


class EventBuilder:
    """Turns messages into events, pairing results with calls through a bounded pending map."""

    def __init__(self) -> None:
        self.failed: Callable[[ToolResult], bool] = is_failure
        """Judges a result (:func:`ctxhealth.failures.is_failure`; a session's shared
        :class:`ctxhealth.failures.Verdicts` when the Monitor is given one)."""
        self._pending: BoundedDict[str, tuple[CallInfo, int]] = BoundedDict(PENDING_LIMIT)
        self._parsed: BoundedDict[tuple[str, str], CallInfo] = BoundedDict(PARSE_CACHE_LIMIT)

    def serialize(self) -> list[PendingCall]:
        """The calls still waiting for their result, oldest first (the parse cache is not saved)."""
        from ctxhealth.signals.state import CallState, PendingCall

        return [
            PendingCall(
                call_id,
                CallState(
                    key=c.key,
                    tool=c.tool,
                    kinds=sorted(k.value for k in c.kinds),
                    reads=list(c.reads),
                    edits=list(c.edits),
                    deletes=list(c.deletes),
                    mentions=list(c.mentions),
                    change=c.change,
                    runs=list(c.runs),
                ),
                index,
            )
            for call_id, (c, index) in self._pending.items()
        ]

    def restore(self, pending: list[PendingCall]) -> None:
        out: BoundedDict[str, tuple[CallInfo, int]] = BoundedDict(PENDING_LIMIT)
        for p in pending:
            c = p.call
            info = CallInfo(
                key=c.key,
                tool=c.tool,
                kinds=frozenset(CallKind(k) for k in c.kinds),
                reads=tuple(c.reads),
                edits=tuple(c.edits),
                deletes=tuple(c.deletes),
                mentions=tuple(c.mentions),
                change=None if c.change is None else (c.change[0], c.change[1]),
                runs=tuple(c.runs),
            )
            out.put(p.call_id, (info, p.index))
        self._pending = out

    def _parse(self, block: ToolCall) -> CallInfo:
        value = block.input
        raw = value.get("command") if isinstance(value, dict) else None
        if not isinstance(raw, str):
            return parse_call(block)
        key = (block.name, raw)
        info = self._parsed.get(key)
        if info is None:
            info = parse_call(block)
            self._parsed.put(key, info)
        return info

    def build(self, index: int, message: Message, turn: int, fill: int, continues: bool = False) -> Event:
        calls: list[CallInfo] = []
        results: list[ResultInfo] = []
        texts: list[str] = []
        for block in message.blocks:
            if isinstance(block, TextBlock):
                texts.append(block.text)
            elif isinstance(block, ToolCall):
                info = self._parse(block)
                calls.append(info)
                self._pending.put(block.id, (info, index))
            elif isinstance(block, ToolResult):
                found = self._pending.pop(block.tool_call_id, None)
                results.append(
                    ResultInfo(
                        result=block,
                        call=found[0] if found else None,
                        call_index=found[1] if found else None,
                        failed=self.failed(block),
                    )
                )
        if message.role is not Role.ASSISTANT or not texts:
            return Event(index, message, turn, fill, tuple(calls), tuple(results), "", continues)
        text = texts[0] if len(texts) == 1 else "\n".join(texts)
        return Event(index, message, turn, fill, tuple(calls), tuple(results), text, continues)
