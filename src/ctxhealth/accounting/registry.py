"""The model registry: what ctxhealth knows about a model id, and where each fact comes from.

Two sources, each holding what it is good at:

* windows and prices come from a maintained offline package (``genai-prices``, see
  :mod:`.catalog`): it is updated every release, where a table in our code went stale in weeks;
* the rest comes from our family table (:data:`FAMILIES`): the quality tier, the output a harness
  keeps free for the response (``reserved_output``), the host's auto-compact buffer and the
  offline tokenizer. Families are matched by the spec's family words (``opus``, ``sonnet``,
  ``haiku``, ``gpt-4o-mini``, ``gemini ... flash`` ...), so a new version of a known family keeps
  its tier. A family also holds a fallback window for models the package lists without one.

A model the package does not know has no prices (its cost is unknown, never another model's) and
the family's fallback window; a model no family matches gets the compact tier and a 128K window
with ``known=False`` (the spec: unknown models are compact tier), and commands name it.

Claude Code (2.1 source: ``autocompact threshold = window - min(max output, 20K) - 13K``) compacts
at 167K of a 200K window: every Claude family reserves ``min(max output, 20K)``
(:func:`claude_code_reserve`) and holds the 13K buffer. OpenAI's windows count the response, so
those families reserve the model's maximum output; Gemini's input limit excludes the output.

Ids are normalised before matching (lower case, provider prefixes such as ``google/`` or Bedrock's
``us.anthropic.`` removed, Vertex's ``@date`` cut, a ``[1m]`` suffix turned into a 1M-token window).
Config tables (``[models."<id prefix>"]``, :meth:`ModelRegistry.with_overrides`) replace any field
for the ids they prefix, and win over both sources.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import msgspec
from msgspec.structs import replace

from ctxhealth import lazy
from ctxhealth.accounting.catalog import Catalog, default_catalog
from ctxhealth.accounting.types import ModelInfo, Prices, Tier
from ctxhealth.errors import ConfigError

CLAUDE_CODE_AUTOCOMPACT_BUFFER = 13_000
"""Claude Code compacts 13K below its effective window (2.1 source: ``AUTOCOMPACT_BUFFER``)."""

CLAUDE_CODE_MAX_RESERVE = 20_000
"""Claude Code's effective window is the window less the model's maximum output, at most 20K."""

ONE_MILLION_WINDOW = 1_000_000
"""The window of a Claude model's 1M-token variant."""

_ONE_M_SUFFIX = "[1m]"

STANDARD_WINDOW_OF_1M_OPT_IN = 200_000
_OPT_IN_1M = r"claude-(?:opus|sonnet)-4(?:[-.][0-6])?(?:-\d{8})?(?![-.]?[0-9])"
"""Claude models whose 1M-token context is a variant a request asks for (Anthropic's ``context-1m``
beta header; Claude Code's ``[1m]`` suffix): Sonnet 4 to 4.6 and Opus 4 to 4.6. Without it they
answer within 200K, and Claude Code works (and compacts) within 200K: its own model table gives them a
200K window with a 1M maximum, and its ``modelUsage.contextWindow`` is 200,000 for a plain
``claude-sonnet-4-6`` or ``claude-opus-4-6`` and 1,000,000 with ``[1m]`` (2.1.332). The price package
gives their maximum. Later models (Opus 4.7, Sonnet 5 ...) have 1M natively."""

O200K = "o200k_base"
CL100K = "cl100k_base"

UNKNOWN_WINDOW = 128_000
"""Window assumed for a model nobody knows: common across current providers, and conservative."""

FAMILY_TABLE = "family table"


def claude_code_reserve(max_output: int) -> int:
    """What Claude Code keeps free for the response of a model with ``max_output`` output tokens."""
    return min(max_output, CLAUDE_CODE_MAX_RESERVE)


class Family(msgspec.Struct, frozen=True):
    """One row of our table: a family of models by the words in their ids, and what no price
    package knows about it. ``window`` is used only when the package gives none."""

    name: str
    pattern: str
    tier: Tier
    reserved_output: int = 0
    autocompact_buffer: int = 0
    window: int | None = None
    encoding: str | None = None
    variant_window: int | None = None
    """The window of the family's larger variant a request may ask for (Claude's 1M context)."""

    def matches(self, key: str) -> bool:
        return lazy.search(self.pattern, key) is not None  # compiled only for keys holding its words


def _word(*words: str) -> str:
    """A pattern for ``words`` in this order as whole words of an id (``-``, ``.``, ``_`` separate)."""
    return r"(?<![a-z0-9])" + r"[-._ ]?".join(re.escape(w) for w in words) + r"(?![a-z])"


def _claude(name: str, pattern: str, tier: Tier, max_output: int, window: int = 200_000) -> Family:
    return Family(
        name,
        pattern,
        tier,
        reserved_output=claude_code_reserve(max_output),
        autocompact_buffer=CLAUDE_CODE_AUTOCOMPACT_BUFFER,
        window=window,
        variant_window=ONE_MILLION_WINDOW,
    )


CLAUDE_1M_NATIVE = (
    r"claude-(?:(?:opus|sonnet|haiku)-(?:[5-9]|\d\d)(?![0-9])|opus-4[-.](?:[7-9]|\d\d)(?![0-9])|fable|mythos)"
)
"""Claude models with 1M natively, for one the price package does not list yet: every model after
the 4.6 generation (Opus 4.7 and 4.8, the 5 generation of every family, Fable, Mythos) in Claude Code's
own model table (2.1.332); earlier ones have 200K (the 1M context a request asks for, see
:data:`_OPT_IN_1M`)."""


F, C, L = Tier.FULL, Tier.COMPACT, Tier.LOCAL

FAMILIES: tuple[Family, ...] = (
    # Anthropic: older generations with small maximum outputs first, then the family words.
    _claude("claude-3-opus", _word("claude", "3", "opus"), F, 4_096),
    _claude("claude-3-haiku", _word("claude", "3", "haiku"), C, 4_096),
    _claude("claude-3-sonnet", _word("claude", "3", "sonnet"), F, 4_096),
    _claude("claude-3-5-haiku", r"claude-3[-.]5-haiku", C, 8_192),
    _claude("claude-3-5-sonnet", r"claude-3[-.]5-sonnet", F, 8_192),
    _claude("claude-fable", _word("fable"), F, 64_000, window=ONE_MILLION_WINDOW),
    _claude("claude-mythos", _word("mythos"), F, 64_000, window=ONE_MILLION_WINDOW),
    _claude("claude-opus", _word("opus"), F, 32_000),
    _claude("claude-sonnet", _word("sonnet"), F, 64_000),
    _claude("claude-haiku", _word("haiku"), C, 64_000),
    # OpenAI: the window counts the response, so the maximum output is reserved.
    Family("gpt-4o-mini", _word("gpt", "4o", "mini"), C, 16_384, window=128_000, encoding=O200K),
    Family("gpt-4o", _word("gpt", "4o"), F, 16_384, window=128_000, encoding=O200K),
    Family("gpt-4.1-mini", r"gpt-4\.1-(mini|nano)", C, 32_768, window=1_047_576, encoding=O200K),
    Family("gpt-4.1", r"gpt-4\.1", F, 32_768, window=1_047_576, encoding=O200K),
    Family("gpt-4-turbo", r"gpt-4-turbo", F, 4_096, window=128_000, encoding=CL100K),
    Family("gpt-3.5-turbo", r"gpt-3\.5", C, 4_096, window=16_385, encoding=CL100K),
    Family(
        "gpt-5-mini", r"gpt-([5-9]|\d\d).*-(mini|nano)(?![a-z])", C, 128_000, window=400_000, encoding=O200K
    ),
    Family("gpt-5", r"gpt-([5-9]|\d\d)(?![0-9])", F, 128_000, window=400_000, encoding=O200K),
    Family("gpt-4", _word("gpt", "4"), F, 0, window=8_192, encoding=CL100K),
    Family("gpt-oss", r"gpt-oss", L, 0, window=131_072, encoding="o200k_harmony"),
    Family("o-mini", r"^o[1-9]-mini", C, 100_000, window=200_000, encoding=O200K),
    Family("o-series", r"^o[1-9](?![a-z0-9])", F, 100_000, window=200_000, encoding=O200K),
    Family("codex-mini", r"codex-mini", C, 100_000, window=200_000, encoding=O200K),
    # Google: the input limit excludes the output, so nothing is reserved.
    Family("gemini-pro", r"gemini.*(?<![a-z0-9])pro(?![a-z])", F, window=1_048_576),
    Family("gemini-flash", r"gemini.*(?<![a-z0-9])flash(?![a-z])", C, window=1_048_576),
    # Others: compact or local tier per the spec.
    Family("deepseek", r"deepseek", C, 8_192, window=128_000),
    Family("grok", r"grok", C, window=256_000),
    Family("codestral", r"codestral", C, window=256_000),
    Family("mistral-7b", r"mistral-7b", L, window=32_768),
    Family("mistral", r"mistral", C, window=131_072),
    Family("codellama", r"codellama", L, window=16_384),
    Family("llama", r"llama", L, window=131_072),
    Family("qwen", r"qwen", L, window=131_072),
    # Google's open models (Gemini CLI runs Gemma 4 with a 256K token limit, 0.61)
    Family("gemma-4", _word("gemma", "4"), L, window=256_000),
    Family("gemma", _word("gemma"), L, window=131_072),
    Family("phi", r"^phi-", L, window=16_384),
)
"""First match wins: the more specific rows come before the family words they contain."""

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


class Override(msgspec.Struct, frozen=True):
    """One config table: the fields it sets for ids with this prefix, and where it was set."""

    prefix: str
    fields: Mapping[str, Any]
    origin: str


def find_family(key: str) -> Family | None:
    """The first family of :data:`FAMILIES` whose words a normalised id holds, or None."""
    for family in FAMILIES:
        if family.matches(key):
            return family
    return None


class ModelRegistry:
    """Model facts: the package catalog, our family table and config overrides. Immutable:
    :meth:`with_overrides` returns a new registry. ``catalog`` defaults to the process's
    (:func:`~ctxhealth.accounting.catalog.default_catalog`), loaded on the first lookup."""

    __slots__ = ("_cache", "_catalog", "_overrides", "_prefixes")

    def __init__(
        self, overrides: Mapping[str, Override] | None = None, *, catalog: Catalog | None = None
    ) -> None:
        self._overrides: dict[str, Override] = dict(overrides or {})
        # Longest first, so the first startswith() hit is the longest matching prefix.
        self._prefixes = sorted(self._overrides, key=len, reverse=True)
        self._catalog = catalog
        # lookup() runs per message in hooks; ModelInfo is frozen, so answers can be shared.
        self._cache: dict[str | None, ModelInfo] = {}

    @classmethod
    def default(cls) -> ModelRegistry:
        """The package catalog and our family table, no overrides."""
        return _DEFAULT

    @property
    def catalog(self) -> Catalog:
        return self._catalog if self._catalog is not None else default_catalog()

    def overrides(self) -> tuple[Override, ...]:
        return tuple(self._overrides[p] for p in sorted(self._overrides))

    def find_override(self, key: str) -> Override | None:
        for prefix in self._prefixes:
            if key.startswith(prefix):
                return self._overrides[prefix]
        return None

    def lookup(self, model_id: str | None) -> ModelInfo:
        """What is known about ``model_id``; an unknown id gets a compact-tier guess (``known=False``)."""
        info = self._cache.get(model_id)
        if info is None:
            if len(self._cache) >= _CACHE_SIZE:
                self._cache.clear()
            info = self._cache[model_id] = self._lookup(model_id)
        return info

    def _lookup(self, model_id: str | None) -> ModelInfo:
        shown = model_id or "unknown"
        key, one_m = normalise_model_id(model_id) if model_id else ("", False)
        family = find_family(key) if key else None
        hit = self.catalog.find(key) if key else None
        source = self.catalog.source
        if hit is not None and hit.window:
            window, window_from = hit.window, source
        elif family is not None and family.window:
            window, window_from = family.window, FAMILY_TABLE
            if (
                family.variant_window
                and window < family.variant_window
                and lazy.search(CLAUDE_1M_NATIVE, key)
            ):
                # a Claude model after the 4.6 generation: 1M natively
                window = family.variant_window
        else:
            window, window_from = UNKNOWN_WINDOW, "default (unknown model)"
        variant = family.variant_window if family is not None else None
        if variant and window > STANDARD_WINDOW_OF_1M_OPT_IN and lazy.search(_OPT_IN_1M, key):
            # the package gives the 1M maximum: without the request asking for it, 200K
            window, window_from = STANDARD_WINDOW_OF_1M_OPT_IN, f"{window_from} (1M with the context-1m beta)"
        info = ModelInfo(
            id=shown,
            family=family.name if family is not None else (hit.id if hit is not None else "unknown"),
            window=window,
            tier=family.tier if family is not None else Tier.COMPACT,
            reserved_output=family.reserved_output if family is not None else 0,
            autocompact_buffer=family.autocompact_buffer if family is not None else 0,
            prices=hit.prices if hit is not None else None,
            encoding=family.encoding if family is not None else None,
            known=family is not None,
            window_from=window_from,
            prices_from=source if hit is not None and hit.prices is not None else "",
            tier_from=FAMILY_TABLE if family is not None else "default (unknown model)",
            priced_as=hit.id if hit is not None and hit.prices is not None else None,
            variant_window=variant if variant and variant > window else None,
        )
        override = self.find_override(key) if key else None
        if override is not None:
            info = _apply_override(info, override)
        if one_m:
            info = replace(
                info, window=ONE_MILLION_WINDOW, window_from="the id's [1m] suffix", variant_window=None
            )
        return info

    def with_overrides(
        self, overrides: Mapping[str, Mapping[str, Any]], *, origin: str = "config"
    ) -> ModelRegistry:
        """A new registry with config tables keyed by id prefix added (a later table for the same
        prefix replaces the fields it sets).

        Each table may set ``window``, ``reserved_output``, ``autocompact_buffer``, ``tier``
        (full/compact/local), ``encoding``, ``family`` and the prices ``input``, ``output``,
        ``cache_write``, ``cache_read``, ``cache_write_1h`` (USD per million tokens). Fields not
        given keep what the package and the family table say. Invalid values raise
        :class:`~ctxhealth.errors.ConfigError` now, with ``origin``.
        """
        merged = dict(self._overrides)
        for raw_prefix, table in overrides.items():
            prefix, _ = normalise_model_id(raw_prefix)
            _apply_override(self.lookup(raw_prefix), Override(prefix, table, origin))  # fail now
            previous = merged.get(prefix)
            fields = {**previous.fields, **table} if previous is not None else dict(table)
            merged[prefix] = Override(prefix, fields, origin)
        return ModelRegistry(merged, catalog=self._catalog)


def _apply_override(info: ModelInfo, override: Override) -> ModelInfo:
    """``info`` with the fields of a config table applied (each marked as coming from its origin)."""
    table, origin, name = override.fields, override.origin, override.prefix

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
        if info.prices is not None:
            changes["prices"] = replace(info.prices, **price_changes)
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
            raise bad("prices", "need both input and output for a model without known prices")
    where = f"config {origin}"
    if "prices" in changes:
        changes["prices_from"] = where
        changes["priced_as"] = None
    if "window" in changes:
        changes["window_from"] = where
    if "tier" in changes:
        changes["tier_from"] = where
    if info.family == "unknown" and "family" not in changes:
        changes["family"] = name
    return replace(info, known=True, **changes)


_DEFAULT = ModelRegistry()


def unknown_facts(info: ModelInfo) -> list[str]:
    """What is not known about ``info``'s model, each with how to configure it ([] when all is known)."""
    if not info.id or info.id == "unknown":
        return []
    table = f'[models."{normalise_model_id(info.id)[0]}"]'
    out = []
    if not info.known:
        out.append(
            f'{info.id}: tier unknown (compact tier assumed); set {table} tier = "full" '
            "(or compact, local) in .ctxhealth.toml"
        )
    if info.window_from.startswith("default"):
        out.append(f"{info.id}: window unknown ({info.window:,} assumed); set {table} window = N")
    elif info.window_from == FAMILY_TABLE and info.prices is None:
        out.append(
            f"{info.id}: not in the price package; window {info.window:,} from its family "
            f"({info.family}); set {table} window = N if it differs"
        )
    if info.prices is None:
        out.append(f"{info.id}: prices unknown (no cost); set {table} input = ... and output = ... (USD/M)")
    return out
