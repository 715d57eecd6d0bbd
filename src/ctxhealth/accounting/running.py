"""The fill account fed one message at a time: :class:`RunningFill` (hosts: hooks, proxy, SDK, Monitor).

:func:`~ctxhealth.accounting.fill.account_session` accounts a whole session at once (and can
calibrate on all of it); a host that sees a session grow needs the same account turn by turn.
Both use the same rules, so there is one fill account, not two estimators:

* A turn is a model response (:func:`~ctxhealth.accounting.fill.is_turn`: an assistant message,
  one per response id, not a stand-in the client wrote itself).
* Its fill is the prompt that response saw: the provider's report when there is one
  (``reported``), or a fill the caller gives (a precomputed series); otherwise the running
  context since the last reported turn, counted the way accounting counts a message
  (:func:`~ctxhealth.accounting.tokens.message_chars` + framing), on top of that report
  (``estimated``, about 4 characters per token).
* Between turns the fill does not move: it is the fill at the latest response, as
  ``SessionAccount.current`` is, except at a compaction. A compaction resets the running context
  to the system messages plus the summary; the part of a report the log never shows (system
  prompt, tool definitions) is kept as the base under it, and the fill drops at once to that base
  plus the compacted conversation counted (``estimated``), until the next response reports its own.
  :attr:`RunningFill.pending` is the context with the messages since the latest response (the
  prompt about to be sent, which the Monitor weighs when it reads a worse zone).

The state is a few integers; :meth:`dump_state` / :meth:`load_state` save and resume it.
"""

from __future__ import annotations

from typing import Any

from ctxhealth.accounting.tokens import DEFAULT_CHARS_PER_TOKEN, message_chars, message_overhead
from ctxhealth.accounting.types import FillSource
from ctxhealth.model import Message, Role

__all__ = ["SYNTHETIC_MODEL", "RunningFill"]

SYNTHETIC_MODEL = "<synthetic>"
"""Claude Code writes this model id on responses it made up itself (errors, interruptions)."""


class RunningFill:
    """Fill per turn, fed message by message. ``fill`` / ``source`` are the latest turn's;
    ``peak`` the largest so far; ``turns`` how many turns were seen."""

    __slots__ = (
        "_anchor_chars",
        "_anchor_fill",
        "_chars",
        "_hidden",
        "_last_response",
        "_system_chars",
        "fill",
        "peak",
        "source",
        "turns",
    )

    def __init__(self) -> None:
        self.fill = 0
        self.peak = 0
        self.turns = 0
        self.source = FillSource.ESTIMATED
        self._chars = 0
        self._system_chars = 0
        self._anchor_fill: int | None = None
        self._anchor_chars = 0
        self._hidden = 0.0
        self._last_response: str | None = None

    def observe(self, message: Message, fill: int | None = None) -> bool:
        """Account ``message``; True when it is a turn (then ``fill`` / ``source`` are its own).

        ``fill`` is the turn's fill when the caller knows it (e.g. ``SessionAccount`` turns or a
        log-level count), taken as reported; given with a message that is not a turn, it is the
        context's size now (a host's own figure) and replaces the fill the same way.
        """
        turn = self._is_turn(message)
        if not turn and fill is not None:
            self._report(fill)
        if turn:
            reported = fill
            if reported is None and message.usage is not None and message.usage.context_tokens > 0:
                reported = message.usage.context_tokens
            if reported is not None:
                self._report(reported)
            elif self._anchor_fill is not None:
                since = self._chars - self._anchor_chars
                self.fill = max(0, round(self._anchor_fill + since / DEFAULT_CHARS_PER_TOKEN))
                self.source = FillSource.ESTIMATED
            else:
                self.fill = round(self._hidden + self._chars / DEFAULT_CHARS_PER_TOKEN)
                self.source = FillSource.ESTIMATED
            self.turns += 1
            if self.fill > self.peak:
                self.peak = self.fill
        size = message_chars(message) + int(message_overhead(message) * DEFAULT_CHARS_PER_TOKEN)
        compaction = message.compaction
        if compaction is not None:
            self._chars = self._system_chars
            self._anchor_fill = None
        self._chars += size
        if message.role is Role.SYSTEM:
            self._system_chars += size
        if compaction is not None and self.turns and fill is None:
            # The fill right after a compaction, before the next response reports one: the part no
            # log shows (system prompt, tool definitions, context the agent re-sends) plus the
            # compacted conversation counted. Not Claude Code's ``postTokens``: measured against the
            # next request, it leaves out the system prompt and tool definitions.
            self.fill = round(self._hidden + self._chars / DEFAULT_CHARS_PER_TOKEN)
            self.source = FillSource.ESTIMATED
        return turn

    @property
    def pending(self) -> int:
        """The context as it stands now, the messages since the latest turn included: the prompt
        the next response will see (estimated on top of the latest report, as a turn's fill is)."""
        if self._anchor_fill is not None:
            since = self._chars - self._anchor_chars
            return max(0, round(self._anchor_fill + since / DEFAULT_CHARS_PER_TOKEN))
        return round(self._hidden + self._chars / DEFAULT_CHARS_PER_TOKEN)

    def set_fill(self, fill: int) -> None:
        """The context's size now, as the host knows it (e.g. after a recovery): the fill from here
        on, the base of the next estimates."""
        self._report(fill)

    def _report(self, fill: int) -> None:
        self.fill = fill
        self.source = FillSource.REPORTED
        self._anchor_fill = fill
        self._anchor_chars = self._chars
        self._hidden = max(0.0, fill - self._chars / DEFAULT_CHARS_PER_TOKEN)
        if fill > self.peak:
            self.peak = fill

    def _is_turn(self, message: Message) -> bool:
        if message.role is not Role.ASSISTANT or message.synthetic:
            return False
        rid = message.response_id
        if rid is not None:
            if rid == self._last_response:
                return False
            self._last_response = rid
        return True

    def dump_state(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__} | {"source": self.source.value}

    def load_state(self, data: dict[str, Any]) -> None:
        """Resume from :meth:`dump_state`; keys it no longer writes (``always_reports`` of states
        saved before the readers marked stand-ins) are ignored."""
        for name in self.__slots__:
            value = data[name]
            if name == "source":
                value = FillSource(value)
            elif name in ("_anchor_fill", "_last_response"):
                if value is not None and not isinstance(value, int | str):
                    raise TypeError(f"{name} is {type(value).__name__}")
            elif name == "_hidden":
                value = float(value)
            elif not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"{name} is {type(value).__name__}, expected an integer")
            setattr(self, name, value)
