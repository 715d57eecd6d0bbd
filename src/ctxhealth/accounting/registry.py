"""The model registry: window, reserved output, auto-compact buffer, tier, prices and encoding per model.

Models are matched by the longest id prefix after normalising the id (lower case, provider
prefixes such as ``google/`` or Bedrock's ``us.anthropic.`` removed, a ``[1m]`` suffix
turned into a 1M-token window). Unknown ids get a conservative compact-tier entry with
``known=False``. Entries can be replaced or added from config (:meth:`ModelRegistry.with_overrides`).

Prices are public list prices in USD per million tokens as we understood them in January 2026
(standard tier, prompts under any long-context surcharge threshold). ``cache_write`` is the
price of writing a prompt-cache entry (Anthropic: 1.25x input for the 5-minute cache, and
``cache_write_1h`` 2x input for the 1-hour cache; OpenAI and Gemini have no write surcharge, so
it equals input); ``cache_read`` the price of a cache hit. Where a provider charges more for a
long prompt (Anthropic Sonnet 4 / 4.5 and Gemini Pro above 200K prompt tokens) the entry holds
that tier too (``Prices.long_context``), applied to every token of such a request.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from ctxhealth.accounting.types import ModelInfo, Prices, Tier
from ctxhealth.errors import ConfigError

CLAUDE_CODE_AUTOCOMPACT_BUFFER = 13_000
"""Claude Code compacts at window - 13K (187K of 200K), per the spec."""

ONE_MILLION_WINDOW = 1_000_000
_ONE_M_SUFFIX = "[1m]"

O200K = "o200k_base"
CL100K = "cl100k_base"


@dataclass(frozen=True, slots=True)
class ModelEntry:
    """One registry row, keyed by id prefix (the ``ModelInfo`` minus the concrete id)."""

    prefix: str
    family: str
    window: int
    tier: Tier
    reserved_output: int = 0
    autocompact_buffer: int = 0
    prices: Prices | None = None
    encoding: str | None = None

    def info(self, model_id: str, *, window: int | None = None) -> ModelInfo:
        return ModelInfo(
            id=model_id,
            family=self.family,
            window=window if window is not None else self.window,
            tier=self.tier,
            reserved_output=self.reserved_output,
            autocompact_buffer=self.autocompact_buffer,
            prices=self.prices,
            encoding=self.encoding,
            known=True,
        )


def _p(inp: float, out: float, write: float | None = None, read: float | None = None) -> Prices:
    """Prices with OpenAI-style defaults: writes cost input, reads a tenth of input."""
    return Prices(
        input=inp,
        output=out,
        cache_write=inp if write is None else write,
        cache_read=round(inp / 10, 6) if read is None else read,
    )


def _claude(prefix: str, family: str, tier: Tier, prices: Prices) -> ModelEntry:
    # Anthropic: 5-minute cache writes cost 1.25x input, cache hits 0.1x input.
    return ModelEntry(
        prefix,
        family,
        200_000,
        tier,
        autocompact_buffer=CLAUDE_CODE_AUTOCOMPACT_BUFFER,
        prices=prices,
    )


LONG_CONTEXT_ABOVE = 200_000
"""Anthropic and Google charge long-context rates for a request whose prompt exceeds 200K tokens."""


def _anthropic_prices(inp: float, out: float, *, long_inp: float = 0, long_out: float = 0) -> Prices:
    # 5-minute cache writes 1.25x input, 1-hour writes 2x input, cache hits 0.1x input; above
    # 200K prompt tokens (1M-context models) every token of the request at the long rates.
    prices = Prices(
        input=inp,
        output=out,
        cache_write=round(inp * 1.25, 6),
        cache_read=round(inp / 10, 6),
        cache_write_1h=round(inp * 2, 6),
    )
    if long_inp:
        long = _anthropic_prices(long_inp, long_out)
        prices = replace(prices, long_context_above=LONG_CONTEXT_ABOVE, long_context=long)
    return prices


def _long(prices: Prices, inp: float, out: float, read: float) -> Prices:
    """``prices`` with a long-context tier above 200K prompt tokens (Gemini Pro)."""
    tier = Prices(input=inp, output=out, cache_write=inp, cache_read=read)
    return replace(prices, long_context_above=LONG_CONTEXT_ABOVE, long_context=tier)


F, C, L = Tier.FULL, Tier.COMPACT, Tier.LOCAL

_BUILTIN: tuple[ModelEntry, ...] = (
    # Anthropic (prices as of January 2026)
    _claude("claude-opus-4", "claude-opus-4", F, _anthropic_prices(15, 75)),
    _claude("claude-opus-4-1", "claude-opus-4-1", F, _anthropic_prices(15, 75)),
    _claude("claude-opus-4-5", "claude-opus-4-5", F, _anthropic_prices(5, 25)),
    _claude("claude-opus-4-6", "claude-opus-4-6", F, _anthropic_prices(5, 25)),
    _claude("claude-sonnet-4", "claude-sonnet-4", F, _anthropic_prices(3, 15, long_inp=6, long_out=22.5)),
    _claude("claude-sonnet-4-5", "claude-sonnet-4-5", F, _anthropic_prices(3, 15, long_inp=6, long_out=22.5)),
    _claude("claude-haiku-4", "claude-haiku-4", C, _anthropic_prices(1, 5)),
    _claude("claude-3-7-sonnet", "claude-3-7-sonnet", F, _anthropic_prices(3, 15)),
    _claude("claude-3-5-sonnet", "claude-3-5-sonnet", F, _anthropic_prices(3, 15)),
    _claude("claude-3-5-haiku", "claude-3-5-haiku", C, _anthropic_prices(0.8, 4)),
    _claude("claude-3-opus", "claude-3-opus", F, _anthropic_prices(15, 75)),
    _claude("claude-3-haiku", "claude-3-haiku", C, _anthropic_prices(0.25, 1.25)),
    # OpenAI: "window" is the total context; reserved_output is the maximum response.
    ModelEntry("gpt-5", "gpt-5", 400_000, F, 128_000, prices=_p(1.25, 10), encoding=O200K),
    ModelEntry("gpt-5-mini", "gpt-5-mini", 400_000, C, 128_000, prices=_p(0.25, 2), encoding=O200K),
    ModelEntry("gpt-5-nano", "gpt-5-nano", 400_000, C, 128_000, prices=_p(0.05, 0.4), encoding=O200K),
    ModelEntry("gpt-5.2", "gpt-5.2", 400_000, F, 128_000, prices=_p(1.75, 14), encoding=O200K),
    ModelEntry("gpt-4.1", "gpt-4.1", 1_047_576, F, 32_768, prices=_p(2, 8, read=0.5), encoding=O200K),
    ModelEntry(
        "gpt-4.1-mini", "gpt-4.1-mini", 1_047_576, C, 32_768, prices=_p(0.4, 1.6, read=0.1), encoding=O200K
    ),
    ModelEntry(
        "gpt-4.1-nano", "gpt-4.1-nano", 1_047_576, C, 32_768, prices=_p(0.1, 0.4, read=0.025), encoding=O200K
    ),
    ModelEntry("gpt-4o", "gpt-4o", 128_000, F, 16_384, prices=_p(2.5, 10, read=1.25), encoding=O200K),
    ModelEntry(
        "gpt-4o-mini", "gpt-4o-mini", 128_000, C, 16_384, prices=_p(0.15, 0.6, read=0.075), encoding=O200K
    ),
    ModelEntry("gpt-4-turbo", "gpt-4-turbo", 128_000, F, 4_096, prices=_p(10, 30, read=10), encoding=CL100K),
    ModelEntry("gpt-4", "gpt-4", 8_192, F, 0, prices=_p(30, 60, read=30), encoding=CL100K),
    ModelEntry(
        "gpt-3.5-turbo", "gpt-3.5-turbo", 16_385, C, 4_096, prices=_p(0.5, 1.5, read=0.5), encoding=CL100K
    ),
    ModelEntry("gpt-oss", "gpt-oss", 131_072, L, 0, encoding="o200k_harmony"),
    ModelEntry("o1", "o1", 200_000, F, 100_000, prices=_p(15, 60, read=7.5), encoding=O200K),
    ModelEntry("o1-mini", "o1-mini", 128_000, C, 65_536, prices=_p(1.1, 4.4, read=0.55), encoding=O200K),
    ModelEntry("o3", "o3", 200_000, F, 100_000, prices=_p(2, 8, read=0.5), encoding=O200K),
    ModelEntry("o3-mini", "o3-mini", 200_000, C, 100_000, prices=_p(1.1, 4.4, read=0.55), encoding=O200K),
    ModelEntry("o4-mini", "o4-mini", 200_000, C, 100_000, prices=_p(1.1, 4.4, read=0.275), encoding=O200K),
    ModelEntry(
        "codex-mini", "codex-mini", 200_000, C, 100_000, prices=_p(1.5, 6, read=0.375), encoding=O200K
    ),
    # Google: the input limit is separate from the output limit, so nothing is reserved.
    ModelEntry("gemini-3-pro", "gemini-3-pro", 1_048_576, F, prices=_long(_p(2, 12, read=0.2), 4, 18, 0.4)),
    ModelEntry("gemini-3-flash", "gemini-3-flash", 1_048_576, C, prices=_p(0.5, 3, read=0.05)),
    ModelEntry(
        "gemini-2.5-pro",
        "gemini-2.5-pro",
        1_048_576,
        F,
        prices=_long(_p(1.25, 10, read=0.125), 2.5, 15, 0.25),
    ),
    ModelEntry("gemini-2.5-flash", "gemini-2.5-flash", 1_048_576, C, prices=_p(0.3, 2.5, read=0.03)),
    ModelEntry(
        "gemini-2.5-flash-lite", "gemini-2.5-flash-lite", 1_048_576, C, prices=_p(0.1, 0.4, read=0.01)
    ),
    ModelEntry("gemini-2.0-flash", "gemini-2.0-flash", 1_048_576, C, prices=_p(0.1, 0.4, read=0.025)),
    ModelEntry("gemini-1.5-pro", "gemini-1.5-pro", 2_097_152, F, prices=_p(1.25, 5)),
    # Others: compact or local tier per the spec.
    ModelEntry("deepseek", "deepseek", 128_000, C, 8_192, prices=_p(0.28, 0.42, read=0.028)),
    ModelEntry("grok", "grok", 256_000, C),
    ModelEntry("codestral", "codestral", 256_000, C),
    ModelEntry("mistral", "mistral", 131_072, C),
    ModelEntry("mistral-7b", "mistral-7b", 32_768, L),
    ModelEntry("llama", "llama", 131_072, L),
    ModelEntry("meta-llama", "llama", 131_072, L),
    ModelEntry("codellama", "codellama", 16_384, L),
    ModelEntry("qwen", "qwen", 131_072, L),
    ModelEntry("phi-", "phi", 16_384, L),
)

UNKNOWN_WINDOW = 128_000
"""Window assumed for a model nobody knows: common across current providers, and conservative."""

_UNKNOWN = ModelEntry("", "unknown", UNKNOWN_WINDOW, Tier.COMPACT)

_CACHE_SIZE = 256

_BEDROCK_VENDORS = ("anthropic.", "meta.", "mistral.", "amazon.", "cohere.", "deepseek.")


def normalise_model_id(model_id: str) -> tuple[str, bool]:
    """``(key, one_m)``: the id as the registry matches it, and whether it asked for a 1M window."""
    key = model_id.strip().lower()
    one_m = key.endswith(_ONE_M_SUFFIX)
    if one_m:
        key = key[: -len(_ONE_M_SUFFIX)]
    key = key.rsplit("/", 1)[-1]  # google/gemini-3-pro-preview, openrouter/x/y
    for vendor in _BEDROCK_VENDORS:  # us.anthropic.claude-..., anthropic.claude-...
        at = key.find(vendor)
        if at != -1 and (at == 0 or key[at - 1] == "."):
            key = key[at + len(vendor) :]
            break
    if "@" in key:  # Vertex: claude-sonnet-4@20250514
        key = key.split("@", 1)[0]
    return key, one_m


_ENTRY_FIELDS = {
    "window": int,
    "reserved_output": int,
    "autocompact_buffer": int,
    "encoding": str,
    "family": str,
}
_PRICE_FIELDS = ("input", "output", "cache_write", "cache_read", "cache_write_1h")


class ModelRegistry:
    """Model facts by id prefix. Immutable: overrides return a new registry."""

    __slots__ = ("_by_prefix", "_cache", "_prefixes")

    def __init__(self, entries: Mapping[str, ModelEntry] | tuple[ModelEntry, ...]) -> None:
        if isinstance(entries, tuple):
            entries = {e.prefix: e for e in entries}
        self._by_prefix: dict[str, ModelEntry] = dict(entries)
        # Longest first, so the first startswith() hit is the longest matching prefix.
        self._prefixes = sorted(self._by_prefix, key=len, reverse=True)
        # lookup() runs per message in hooks; ModelInfo is frozen, so answers can be shared.
        self._cache: dict[str | None, ModelInfo] = {}

    @classmethod
    def default(cls) -> ModelRegistry:
        """The built-in entries."""
        return _DEFAULT

    def entries(self) -> tuple[ModelEntry, ...]:
        return tuple(self._by_prefix[p] for p in sorted(self._by_prefix))

    def find_entry(self, model_id: str | None) -> ModelEntry | None:
        """The entry with the longest prefix of the normalised id, or None."""
        if not model_id:
            return None
        key, _ = normalise_model_id(model_id)
        for prefix in self._prefixes:
            if key.startswith(prefix):
                return self._by_prefix[prefix]
        return None

    def lookup(self, model_id: str | None) -> ModelInfo:
        """What the registry knows about ``model_id``; an unknown id gets a compact-tier guess."""
        info = self._cache.get(model_id)
        if info is None:
            if len(self._cache) >= _CACHE_SIZE:
                self._cache.clear()
            info = self._cache[model_id] = self._lookup(model_id)
        return info

    def _lookup(self, model_id: str | None) -> ModelInfo:
        shown = model_id or "unknown"
        one_m = bool(model_id) and normalise_model_id(model_id or "")[1]
        entry = self.find_entry(model_id)
        window = ONE_MILLION_WINDOW if one_m else None
        if entry is None:
            return replace(_UNKNOWN.info(shown, window=window), known=False)
        return entry.info(shown, window=window)

    def with_overrides(
        self, overrides: Mapping[str, Mapping[str, Any]], *, origin: str = "config"
    ) -> ModelRegistry:
        """A new registry with entries replaced or added from config tables keyed by id prefix.

        Each table may set ``window``, ``reserved_output``, ``autocompact_buffer``, ``tier``
        (full/compact/local), ``encoding``, ``family`` and the prices ``input``, ``output``,
        ``cache_write``, ``cache_read``, ``cache_write_1h`` (USD per million tokens). Fields not
        given keep the value of the entry the prefix matches today (or the unknown-model defaults).
        """
        merged = dict(self._by_prefix)
        for raw_prefix, table in overrides.items():
            prefix, _ = normalise_model_id(raw_prefix)
            base = self.find_entry(prefix) or replace(_UNKNOWN, family=prefix)
            merged[prefix] = _apply_override(replace(base, prefix=prefix), table, origin, raw_prefix)
        return ModelRegistry(merged)


def _apply_override(entry: ModelEntry, table: Mapping[str, Any], origin: str, name: str) -> ModelEntry:
    def bad(field: str, why: str) -> ConfigError:
        return ConfigError(
            f"model override {name!r}: {field} {why}",
            hint="model tables take window, reserved_output, autocompact_buffer, tier, encoding, "
            "family, input, output, cache_write, cache_read, cache_write_1h",
            path=origin,
        )

    changes: dict[str, Any] = {}
    price_changes: dict[str, Any] = {}
    for field, value in table.items():
        if field in _ENTRY_FIELDS:
            kind = _ENTRY_FIELDS[field]
            if kind is int and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise bad(field, "must be a non-negative integer")
            if kind is str and not isinstance(value, str):
                raise bad(field, "must be a string")
            changes[field] = value
        elif field == "tier":
            try:
                changes["tier"] = Tier(str(value).lower())
            except ValueError:
                raise bad("tier", "must be one of full, compact, local") from None
        elif field in _PRICE_FIELDS:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise bad(field, "must be a non-negative number (USD per million tokens)")
            price_changes[field] = float(value)
        else:
            raise bad(field, "is not a known field")
    if price_changes:
        if entry.prices is not None:
            changes["prices"] = replace(entry.prices, **price_changes)
        elif "input" in price_changes and "output" in price_changes:
            inp = price_changes["input"]
            changes["prices"] = Prices(
                input=inp,
                output=price_changes["output"],
                cache_write=price_changes.get("cache_write", inp),
                cache_read=price_changes.get("cache_read", inp),
                cache_write_1h=price_changes.get("cache_write_1h"),
            )
        else:
            raise bad("prices", "need both input and output for a model without built-in prices")
    return replace(entry, **changes)


_DEFAULT = ModelRegistry(_BUILTIN)
