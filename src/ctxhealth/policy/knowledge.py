"""What ctxhealth knows about a model and where each fact comes from: :func:`describe_model`.

``ctxhealth models [ID]`` prints these documents. A model's facts come from three places (the
price package for its window and prices, our family table for its tier, reserve and buffer, the
config's ``[models]`` tables over both) and, for one session, a fourth: the window its log or
payload states. The zones are the profile's for that model (scaled for a large window, fitted
inside the usable window: :meth:`~ctxhealth.policy.profile.Profile.zones`).
"""

from __future__ import annotations

from typing import Any

import msgspec

from ctxhealth.accounting.catalog import PACKAGE
from ctxhealth.accounting.registry import (
    CLAUDE_CODE_AUTOCOMPACT_BUFFER,
    CLAUDE_CODE_MAX_RESERVE,
    FAMILIES,
    ModelRegistry,
    normalise_model_id,
    unknown_facts,
)
from ctxhealth.accounting.types import ModelInfo
from ctxhealth.policy.profile import Profile

__all__ = ["describe_model", "describe_registry", "usable_window_rule"]


def _package(registry: ModelRegistry) -> dict[str, Any]:
    catalog = registry.catalog
    return {
        "name": PACKAGE,
        "version": catalog.version,
        "models": len(catalog),
        "table": catalog.origin,
    }


def describe_model(
    model_id: str,
    registry: ModelRegistry,
    profile: Profile,
    *,
    window: int | None = None,
    window_is_usable: bool = False,
) -> dict[str, Any]:
    """Everything known about ``model_id``, each fact with its origin. ``window``: one a log or
    payload states (``window_is_usable``: already what the prompt may fill, as Codex states it)."""
    info: ModelInfo = registry.lookup(model_id)
    if window:
        info = info.with_window(window, usable=window_is_usable, origin="stated (--window)")
    key, _ = normalise_model_id(model_id)
    override = registry.find_override(key)
    zones = profile.zones(info)
    base = profile.thresholds(info.tier)
    return {
        "id": model_id,
        "key": key,
        "known": info.known,
        "family": info.family,
        "tier": {"value": info.tier.value, "from": info.tier_from},
        "window": {"value": info.window, "from": info.window_from},
        "reserved_output": info.reserved_output,
        "autocompact_buffer": info.autocompact_buffer,
        "usable_window": info.usable_window,
        "prices": {
            "value": None if info.prices is None else msgspec.to_builtins(info.prices),
            "from": info.prices_from or None,
            "priced_as": info.priced_as,
        },
        "encoding": info.encoding,
        "zones": {
            "sweet_spot": zones.sweet_spot,
            "compact_zone": zones.compact_zone,
            "hard_limit": zones.hard_limit,
            "tier_zones": [base.sweet_spot, base.compact_zone, base.hard_limit],
            "reference_window": profile.zone_reference_window,
            "window_exponent": profile.zone_window_exponent,
        },
        "override": None
        if override is None
        else {"prefix": override.prefix, "origin": override.origin, "fields": dict(override.fields)},
        "package": _package(registry),
        "notes": unknown_facts(info),
    }


def describe_registry(registry: ModelRegistry) -> dict[str, Any]:
    """The package catalog in use, our family table and the config overrides."""
    return {
        "package": _package(registry),
        "families": [
            {
                "name": f.name,
                "pattern": f.pattern,
                "tier": f.tier.value,
                "reserved_output": f.reserved_output,
                "autocompact_buffer": f.autocompact_buffer,
                "fallback_window": f.window,
                "encoding": f.encoding,
            }
            for f in FAMILIES
        ],
        "overrides": [
            {"prefix": o.prefix, "origin": o.origin, "fields": dict(o.fields)} for o in registry.overrides()
        ],
    }


def usable_window_rule(registry: ModelRegistry, model: str | None = None) -> dict[str, Any]:
    """Where windows come from and how the usable window is computed (``config show``); with
    ``model`` (the configured one), its figures."""
    info = registry.lookup(model) if model else None
    return {
        "for_model": None
        if info is None
        else {
            "id": info.id,
            "window": info.window,
            "reserved_output": info.reserved_output,
            "autocompact_buffer": info.autocompact_buffer,
            "usable_window": info.usable_window,
        },
        "package": _package(registry),
        "usable_window": "window - reserved output - auto-compact buffer (never more than half held)",
        "claude_code": {
            "reserved_output": f"min(the model's max output, {CLAUDE_CODE_MAX_RESERVE})",
            "max_reserve": CLAUDE_CODE_MAX_RESERVE,
            "autocompact_buffer": CLAUDE_CODE_AUTOCOMPACT_BUFFER,
            "usable_at_200k": 200_000 - CLAUDE_CODE_MAX_RESERVE - CLAUDE_CODE_AUTOCOMPACT_BUFFER,
        },
        "stated_window": "a window the log states (Codex model_context_window) is already usable",
    }
