"""The one turn predicate (:func:`is_turn`) and the one fill estimator (:class:`RunningFill`).

:class:`RunningFill` is fed one message at a time by hosts that see a session grow (hooks, proxy,
SDK, Monitor), and by :func:`~ctxhealth.accounting.fill.account_session`, which accounts a whole
session at once: it feeds the same estimator every message, with the chars-per-token ratio it
calibrated on the session's reported turns (or exact token counts, ratio 1). So there is one fill
account, not two estimators:

* A turn is a model response (:func:`is_turn`: an assistant message that is not a stand-in the
  client wrote itself, ``Message.synthetic``, one per response id over the whole thread, as cost
  counts each response once).
* Its fill is the prompt that response saw: the provider's report when there is one
  (``reported``), or a fill the caller gives (a precomputed series); otherwise the running
  context since the last reported turn, counted the way accounting counts a message
  (:func:`~ctxhealth.accounting.tokens.message_chars` + framing, or the size the caller gives),
  on top of that report (``estimated``, 4 characters per token unless the caller calibrated).
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

from ctxhealth.accounting.cost import is_new_response
from ctxhealth.accounting.tokens import DEFAULT_CHARS_PER_TOKEN, message_size_parts
from ctxhealth.accounting.types import FillSource
from ctxhealth.model import CompactionSummary, Message, Role

__all__ = ["SYNTHETIC_MODEL", "RunningFill", "is_turn", "message_size", "size_of"]

SYNTHETIC_MODEL = "<synthetic>"
"""Claude Code writes this model id on responses it made up itself (errors, interruptions)."""


def is_turn(message: Message, seen: set[str]) -> bool:
    """Whether ``message`` is a model response not counted yet: an assistant message, not a stand-in
    (``Message.synthetic``), whose response id is not in ``seen`` (it joins it). The one turn
    predicate of accounting: ``account_session``, :class:`RunningFill` and so the Monitor use it."""
    if message.role is not Role.ASSISTANT or message.synthetic:
        return False
    return is_new_response(message.response_id, seen)


def message_size(message: Message) -> int:
    """The characters ``message`` adds to the running context: its counted text plus its framing
    tokens at the default ratio (what the estimate divides by chars per token)."""
    return size_of(*message_size_parts(message))


def size_of(chars: int, overhead_tokens: int) -> int:
    """:func:`message_size` from its parts: counted characters and framing tokens (for a caller that
    has the parts already)."""
    return chars + int(overhead_tokens * DEFAULT_CHARS_PER_TOKEN)


LOOK_UP = CompactionSummary("")
"""``RunningFill.observe``'s default ``compaction``: look the message's up (``Message.compaction``)."""


class RunningFill:
    """Fill per turn, fed message by message. ``fill`` / ``source`` are the latest turn's;
    ``peak`` the largest so far; ``turns`` how many turns were seen.

    ``chars_per_token`` turns counted characters into tokens (``account_session`` passes the ratio
    it calibrated, or 1.0 with sizes in exact tokens)."""

    __slots__ = (
        "_anchor_chars",
        "_anchor_fill",
        "_chars",
        "_hidden",
        "_seen",
        "_system_chars",
        "chars_per_token",
        "fill",
        "peak",
        "source",
        "turns",
    )

    def __init__(self, chars_per_token: float = DEFAULT_CHARS_PER_TOKEN) -> None:
        self.chars_per_token = chars_per_token
        self.fill = 0
        self.peak = 0
        self.turns = 0
        self.source = FillSource.ESTIMATED
        self._chars = 0
        self._system_chars = 0
        self._anchor_fill: int | None = None
        self._anchor_chars = 0
        self._hidden = 0.0
        self._seen: set[str] = set()

    def observe(
        self,
        message: Message,
        fill: int | None = None,
        *,
        size: int | None = None,
        compaction: CompactionSummary | None = LOOK_UP,
    ) -> bool:
        """Account ``message``; True when it is a turn (then ``fill`` / ``source`` are its own).

        ``fill`` is the turn's fill when the caller knows it (e.g. ``SessionAccount`` turns or a
        log-level count), taken as reported; given with a message that is not a turn, it is the
        context's size now (a host's own figure) and replaces the fill the same way. ``size`` is
        what the message adds to the context in the estimator's unit (default
        :func:`message_size`). ``compaction`` is ``message.compaction`` when the caller looked
        it up already (the Monitor does), so the blocks are walked once.
        """
        turn = is_turn(message, self._seen)
        cpt = self.chars_per_token
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
                self.fill = max(0, round(self._anchor_fill + since / cpt))
                self.source = FillSource.ESTIMATED
            else:
                self.fill = round(self._hidden + self._chars / cpt)
                self.source = FillSource.ESTIMATED
            self.turns += 1
            if self.fill > self.peak:
                self.peak = self.fill
        if size is None:
            size = message_size(message)
        if compaction is LOOK_UP:
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
            self.fill = round(self._hidden + self._chars / cpt)
            self.source = FillSource.ESTIMATED
        return turn

    @property
    def pending(self) -> int:
        """The context as it stands now, the messages since the latest turn included: the prompt
        the next response will see (estimated on top of the latest report, as a turn's fill is)."""
        if self._anchor_fill is not None:
            since = self._chars - self._anchor_chars
            return max(0, round(self._anchor_fill + since / self.chars_per_token))
        return round(self._hidden + self._chars / self.chars_per_token)

    def set_hidden(self, tokens: float) -> None:
        """What the context holds beyond the counted messages (system prompt, tool definitions,
        files re-attached after a compaction) until the next report: a caller that calibrated it
        on the whole session (``account_session``) gives it at the start and after each
        compaction."""
        self._hidden = max(0.0, tokens)

    def set_fill(self, fill: int) -> None:
        """The context's size now, as the host knows it (e.g. after a recovery): the fill from here
        on, the base of the next estimates."""
        self._report(fill)

    def _report(self, fill: int) -> None:
        self.fill = fill
        self.source = FillSource.REPORTED
        self._anchor_fill = fill
        self._anchor_chars = self._chars
        self._hidden = max(0.0, fill - self._chars / self.chars_per_token)
        if fill > self.peak:
            self.peak = fill

    def dump_state(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__} | {
            "source": self.source.value,
            "_seen": sorted(self._seen),
        }

    def load_state(self, data: dict[str, Any]) -> None:
        """Resume from :meth:`dump_state`; keys it no longer writes (``always_reports`` of states
        saved before the readers marked stand-ins) are ignored; a state that kept only the last
        response id (``_last_response``) starts the set of ids seen with it, a state without a
        ratio uses the default one."""
        data = dict(data)
        if "_seen" not in data:
            last = data.get("_last_response")
            data["_seen"] = [last] if isinstance(last, str) else []
        data.setdefault("chars_per_token", DEFAULT_CHARS_PER_TOKEN)
        for name in self.__slots__:
            value = data[name]
            if name == "source":
                value = FillSource(value)
            elif name == "_anchor_fill":
                if value is not None and not isinstance(value, int):
                    raise TypeError(f"{name} is {type(value).__name__}")
            elif name == "_seen":
                if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                    raise TypeError(f"{name} is not a list of response ids")
                value = set(value)
            elif name in ("_hidden", "chars_per_token"):
                value = float(value)
            elif not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"{name} is {type(value).__name__}, expected an integer")
            setattr(self, name, value)
