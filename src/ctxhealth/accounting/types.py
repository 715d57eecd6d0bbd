"""Value types of the accounting layer, shared by registry, fill and cost (no logic here)."""

from __future__ import annotations

from enum import StrEnum

import msgspec
from msgspec.structs import replace


class Tier(StrEnum):
    """Quality tier of a model: how early quality degrades with absolute context length."""

    FULL = "full"
    COMPACT = "compact"
    LOCAL = "local"


class FillSource(StrEnum):
    """Where a token count came from."""

    REPORTED = "reported"
    EXACT = "exact"
    ESTIMATED = "estimated"


class Prices(msgspec.Struct, frozen=True):
    """USD per million tokens.

    ``cache_write`` is the default (Anthropic: 5-minute) cache write; ``cache_write_1h`` the
    1-hour cache write where a provider sells one (None: priced as ``cache_write``).
    ``long_context`` are the prices of every token of a request whose prompt (input + cache
    writes + cache reads) exceeds ``long_context_above`` tokens, where a provider has such a
    tier (Anthropic Sonnet 4 / 4.5 and Gemini Pro above 200K).
    """

    input: float
    output: float
    cache_write: float
    cache_read: float
    cache_write_1h: float | None = None
    long_context_above: int | None = None
    long_context: Prices | None = None


class CatalogModel(msgspec.Struct, frozen=True):
    """One model of the price package (:mod:`ctxhealth.accounting.catalog`): its id, provider, window
    (None: the package does not say) and prices."""

    id: str
    provider: str
    window: int | None
    prices: Prices | None


class ModelInfo(msgspec.Struct, frozen=True):
    """What the registry knows about a model id, and where each fact came from.

    ``reserved_output`` is kept free for the response (the harness's reserve: Claude Code keeps
    the model's maximum output, at most 20K); ``autocompact_buffer`` is the margin at which the
    host compacts (Claude Code: 13K). :attr:`usable_window` is the one definition of the usable
    window. ``window_from`` / ``prices_from`` / ``tier_from`` say where the window, the prices and
    the tier came from (``genai-prices 0.2.3``, ``family table``, ``config ...``, ``log``,
    ``default``); ``priced_as`` is the package's model id the prices and window belong to.
    ``known`` is whether the tier is known (a family of the spec's lists, or config).
    """

    id: str
    family: str
    window: int
    tier: Tier
    reserved_output: int = 0
    autocompact_buffer: int = 0
    prices: Prices | None = None
    encoding: str | None = None
    known: bool = True
    window_from: str = ""
    prices_from: str = ""
    tier_from: str = ""
    priced_as: str | None = None
    variant_window: int | None = None
    """The window of the model's larger variant, when it has one a request asks for (Anthropic's
    1M-token context, with the ``context-1m`` beta): :meth:`with_prompt_seen` widens to it."""

    @property
    def usable_window(self) -> int:
        """What the prompt may fill: the window less the reserved output and the auto-compact buffer
        (together never more than half the window, so a reserve meant for a larger window cannot
        leave nothing)."""
        held = min(self.reserved_output + self.autocompact_buffer, self.window // 2)
        return max(1, self.window - held)

    def with_window(self, window: int, *, usable: bool, origin: str = "log") -> ModelInfo:
        """This model with a window a log or payload states. ``usable``: the window is already what
        the prompt may fill (Codex ``model_context_window``: the client took the response's share
        out), so nothing more is reserved; otherwise it is the model's whole window (Claude Code's
        status line) and the reserve and buffer still apply. A stated window is the window: no
        variant is inferred past it (:meth:`with_prompt_seen`)."""
        if usable:
            return replace(
                self,
                window=window,
                reserved_output=0,
                autocompact_buffer=0,
                window_from=origin,
                variant_window=None,
            )
        return replace(self, window=window, window_from=origin, variant_window=None)

    def with_prompt_seen(self, tokens: int) -> ModelInfo:
        """This model after a response reported a prompt of ``tokens``: a prompt above the window
        proves the window larger. A model with a larger variant (:attr:`variant_window`, whose
        responses name the plain model: Sonnet 4.6 in a Claude Code ``[1m]`` session) is read with
        that variant's window. Any other model keeps its window, which the reading then shows
        exceeded. The one rule ``check``, the fleet and the Monitor (hooks, proxy, SDKs) widen by."""
        variant = self.variant_window
        if tokens <= self.window or variant is None or tokens > variant:
            return self
        return replace(
            self,
            window=variant,
            variant_window=None,
            window_from=f"its {variant:,}-token variant (a prompt of {tokens:,}, above {self.window:,})",
        )

    def with_logged_window(self, window: int | None, *, whole: bool = False) -> ModelInfo:
        """This model with the window a log states, when it states one: Codex's
        ``model_context_window`` is already what the prompt may fill, so usable as it is; a ``whole``
        one (Claude Code's ``contextWindow``) is the model's window, the reserve still taken out. The
        one rule ``check`` (:func:`~ctxhealth.accounting.fill.session_model_info`) and the hooks read
        a log by."""
        return self.with_window(window, usable=not whole) if window else self


class TurnFill(msgspec.Struct, frozen=True):
    """Context fill at one model response (turn ``turn``, 0-based, main thread)."""

    turn: int
    message_index: int
    tokens: int
    source: FillSource
    output_tokens: int = 0


class CompactionRecord(msgspec.Struct, frozen=True):
    """One compaction: fill before (last turn before) and after (first turn after). ``encrypted``: the log
    keeps its summary only encrypted (:attr:`ctxhealth.model.CompactionSummary.encrypted`)."""

    index: int
    message_index: int
    pre_tokens: int | None
    post_tokens: int | None
    trigger: str | None
    post_source: FillSource | None = None
    """Set when ``post_tokens`` is not the next response's fill but what the compaction left (no
    response came after it), counted: ``estimated``."""
    log_post_tokens: int | None = None
    """The compacted conversation as the log states it (Claude Code 2.1 ``postTokens``, which
    leaves out the system prompt and tool definitions)."""
    dropped_tokens: int | None = None
    """What the compactions so far dropped, as the log states it (``cumulativeDroppedTokens``)."""
    encrypted: bool = False
    """The log keeps the compaction's summary only encrypted (Codex with the OpenAI provider)."""
