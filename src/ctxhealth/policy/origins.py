"""Where each threshold of the profile in use comes from: :func:`profile_settings`.

``ctxhealth config show`` prints every threshold the checks will use, not only the ones a config
file sets: each with its value and its origin — the config layer of an inline ``[profile]``
override (``/path/.ctxhealth.toml``, ``env CTXHEALTH_PROFILE__COOLDOWN``), the profile file that
holds it (``profile file my-profile.json``), the shipped fitted risk model, or ``default``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ctxhealth.config import Settings, display_key
from ctxhealth.policy.profile import Profile, resolve_profile

SHIPPED = "shipped with ctxhealth, fitted on labelled runs"
"""The origin of values the built-in profile takes from its package data (the risk model)."""


@dataclass(frozen=True, slots=True)
class Setting:
    """One resolved value: dotted key (``profile.tiers.full.hard_limit``), value, origin."""

    key: str
    value: Any
    origin: str


def profile_settings(settings: Settings) -> list[Setting]:
    """Every value of the profile ``settings`` select, sorted by key, each with its origin.

    Raises :class:`~ctxhealth.errors.ConfigError` when the profile file or an override is invalid,
    as every command using the profile would.
    """
    path = settings.profile
    profile = resolve_profile(path, settings.profile_overrides)
    in_file = _leaf_keys(json.loads(path.read_text("utf-8"))) if path else set()
    out: list[Setting] = []
    for key, value in _leaves(profile):
        if ("profile", *key) in settings.values:
            origin = settings.origin("profile", *key)
        elif key[0] == "slip_rise" and ("slip_rise",) in in_file:
            origin = f"your own sessions (ctxhealth calibrate --zones), profile file {path}"
        elif key in in_file:
            origin = f"profile file {path}"
        elif path is None and key[0] in ("risk", "name") and value is not None:
            origin = SHIPPED
        else:
            origin = "default"
        out.append(Setting(display_key(("profile", *key)), value, origin))
    return sorted(out, key=lambda s: s.key)


def _leaves(profile: Profile) -> Iterator[tuple[tuple[str, ...], Any]]:
    """``(key path, value)`` of every threshold; the risk model as one summary value."""
    for name, value in profile.to_dict().items():
        if name == "schema_version":
            continue
        if name == "tiers":
            for tier, limits in value.items():
                for limit, number in limits.items():
                    yield ("tiers", tier, limit), number
        elif name == "risk":
            yield ("risk",), _risk_summary(value)
        elif name == "slip_rise":
            if not value:
                yield ("slip_rise",), {}
            for family, r in value.items():
                below = f"{r['slips_below']}/{r['steps_below']}"
                above = f"{r['slips_above']}/{r['steps_above']}"
                yield (
                    ("slip_rise", family),
                    f"slips rise at {r['at_tokens']:,} tokens ({below} steps slipped below, "
                    f"{above} above, {r['sessions']} sessions)",
                )
        else:
            yield (name,), value


def _risk_summary(risk: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if risk is None:
        return None
    meta = risk.get("meta", {})
    summary: dict[str, Any] = {"features": list(risk["features"])}
    for key in ("procedure", "runs"):
        if key in meta:
            summary[key] = meta[key]
    return summary


def _leaf_keys(data: Any) -> set[tuple[str, ...]]:
    """The key paths a profile file sets (tiers to their limits; other tables as one key)."""
    if not isinstance(data, Mapping):
        return set()
    keys: set[tuple[str, ...]] = set()
    for name, value in data.items():
        if name == "tiers" and isinstance(value, Mapping):
            keys |= {("tiers", str(t), str(k)) for t, v in value.items() if isinstance(v, Mapping) for k in v}
        else:
            keys.add((str(name),))
    return keys
