"""The :class:`Profile`: every threshold the signals and the policy use, per model tier, plus the
risk model's weights. One place, overridable by config, shown in output.

Defaults are the spec's numbers. ``Profile.with_overrides(mapping)`` returns a new profile from a
config table (unknown keys are an error, so a typo never silently does nothing);
``default_profile()`` is the defaults plus the risk weights fitted on labelled runs and shipped as
package data (``ctxhealth/data/default_profile.json``); ``load_profile(path)`` reads a profile
written by ``ctxhealth calibrate``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

import msgspec
from msgspec.structs import replace

from ctxhealth.accounting.types import ModelInfo, Tier
from ctxhealth.errors import ConfigError
from ctxhealth.policy import defaults
from ctxhealth.risk import RiskModel

PROFILE_SCHEMA_VERSION = 1


class TierThresholds(msgspec.Struct, frozen=True):
    """Absolute-token zones of a model tier: quality degrades with absolute length.

    ``sweet_spot`` ends the sweet spot, ``compact_zone`` starts the compact zone, ``hard_limit``
    is where quality collapses (full tier: 80K / 120K / 180K).
    """

    sweet_spot: int
    compact_zone: int
    hard_limit: int

    def __post_init__(self) -> None:
        if not (0 < self.sweet_spot <= self.compact_zone <= self.hard_limit):
            raise ConfigError(
                f"tier thresholds must rise: {self.sweet_spot} <= {self.compact_zone} <= {self.hard_limit}",
                hint="set sweet_spot < compact_zone < hard_limit",
            )


def fit_zones(
    base: TierThresholds, *, window: int, usable: int, reference: int, exponent: float
) -> TierThresholds:
    """The tier's zones for one model: scaled for a large window, then fitted inside its usable window.

    1. Large windows: the spec's zones are for 200K-class windows. A window larger than
       ``reference`` scales every zone by ``(window / reference) ** exponent`` (0: the absolute
       zones everywhere; 1: in proportion to the window; the default 0.5 gives 2.2x at 1M:
       full tier 179K / 268K / 402K).
    2. Inside the usable window: where the hard limit lies above the usable window (gpt-4o: 180K
       against 111,616; Claude Code at 200K: 180K against 167K) the zones could never fire in order
       before the capacity zones, and the compact zone (truncate) would lie past the critical
       pressure gate (halt). They are scaled down together so the hard limit is the usable window,
       keeping the tier's shape (full tier: the compact zone at 2/3 of it), so a rising fill meets
       sweet spot < approaching < compact zone < hard limit <= usable window.
    """
    scale = (window / reference) ** exponent if reference > 0 and window > reference else 1.0
    hard = base.hard_limit * scale
    if hard > usable:
        scale *= usable / hard
    if scale == 1.0:
        return base
    cap = max(3, usable)
    hard_limit = min(cap, max(3, round(base.hard_limit * scale)))
    compact = min(hard_limit - 1, max(2, round(base.compact_zone * scale)))
    sweet = min(compact - 1, max(1, round(base.sweet_spot * scale)))
    return TierThresholds(sweet, compact, hard_limit)


@lru_cache(maxsize=256)
def _fit_zones_cached(
    base: TierThresholds, window: int, usable: int, reference: int, exponent: float
) -> TierThresholds:
    return fit_zones(base, window=window, usable=usable, reference=reference, exponent=exponent)


DEFAULT_TIERS: dict[Tier, TierThresholds] = {
    Tier.FULL: TierThresholds(*defaults.FULL_TIER),
    Tier.COMPACT: TierThresholds(20_000, 30_000, 50_000),
    Tier.LOCAL: TierThresholds(8_000, 16_000, 32_000),
}


class SlipRise(msgspec.Struct, frozen=True):
    """Where a user's own sessions of one model family start slipping more (``ctxhealth calibrate
    --zones``): the fill ``at_tokens`` above which the slip rate is higher with the Wilson 95%
    intervals apart, and the steps and slipped steps below and above it behind that."""

    at_tokens: int
    steps_below: int
    slips_below: int
    steps_above: int
    slips_above: int
    sessions: int

    def to_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in self.__struct_fields__}

    @classmethod
    def from_dict(cls, family: str, data: Any) -> SlipRise:
        try:
            return cls(**{name: int(data[name]) for name in cls.__struct_fields__})
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(
                f"invalid slip_rise entry for {family!r}: {exc}",
                hint="rewrite it with `ctxhealth calibrate --zones`",
            ) from exc


class Profile(msgspec.Struct, frozen=True):
    """Thresholds and weights. Window zones are fractions of the usable window; pressure gates 0..1.

    Counts (``failure_min_calls`` ...) are numbers of tool calls, turns or occurrences; windows
    (``indicator_window``) are numbers of assistant turns.
    """

    name: str = "default"
    tiers: Mapping[Tier, TierThresholds] = msgspec.field(default_factory=lambda: dict(DEFAULT_TIERS))
    # how the tier zones scale for a window larger than the reference (see fit_zones)
    zone_reference_window: int = defaults.ZONE_REFERENCE_WINDOW
    zone_window_exponent: float = defaults.ZONE_WINDOW_EXPONENT
    # window zones (fraction of the usable window): yellow, orange, critical, auto-compact
    window_yellow: float = defaults.WINDOW_YELLOW
    window_orange: float = defaults.WINDOW_ORANGE
    window_critical: float = defaults.WINDOW_CRITICAL
    window_autocompact: float = defaults.WINDOW_AUTOCOMPACT
    # pressure gates
    pressure_warning: float = defaults.PRESSURE_WARNING
    pressure_compress: float = defaults.PRESSURE_COMPRESS
    pressure_critical: float = defaults.PRESSURE_CRITICAL
    halt_on_critical: bool = True
    # drift
    drift_threshold: float = defaults.DRIFT_THRESHOLD
    drift_window_chars: int = 2_000
    # tool failures
    failure_rate: float = defaults.FAILURE_RATE
    failure_min_calls: int = defaults.FAILURE_MIN_CALLS
    consecutive_failures: int = defaults.CONSECUTIVE_FAILURES
    same_tool_failures: int = 2
    same_mistake: int = 3
    # repetition and indicators
    repeated_calls: int = 2
    rereads: int = 3
    edit_thrash: int = 3
    indicator_window: int = 20
    indicators_to_raise_zone: int = 2
    # fidelity
    fidelity_window: int = 10
    # prompt cache (reset trigger: restructure the prefix)
    cache_hit_min: float = defaults.CACHE_HIT_MIN
    cache_miss_turns: int = 5
    cache_min_prompt: int = defaults.CACHE_MIN_PROMPT
    # policy
    max_restarts: int = 3
    cooldown: int = 3
    truncations_before_restart: int = 2
    max_turns: int = 30
    # risk
    risk_warning: float = 0.5
    risk: RiskModel | None = None
    #: risk models fitted on one agent's labelled runs, by log format (``Format`` value); a session
    #: of that format is scored with its own model, any other with ``risk``
    risk_by_format: Mapping[str, RiskModel] = msgspec.field(default_factory=dict)
    #: the log formats ``risk`` was fitted on (empty: any format, e.g. a model a user fitted on
    #: their own runs before this was recorded); a session of another format with no model of its
    #: own in ``risk_by_format`` is scored by :func:`~ctxhealth.risk.model.fill_fallback`
    risk_formats: tuple[str, ...] = ()
    #: where the user's own slip rate rises, by model family (``ctxhealth calibrate --zones``): a
    #: session of that family leaves the sweet spot (zone yellow, drift checked) there when it is
    #: below the tier's sweet spot
    slip_rise: Mapping[str, SlipRise] = msgspec.field(default_factory=dict)

    def for_format(self, format: str | None) -> Profile:
        """This profile with the risk model that scores ``format`` (a log format): its own model,
        else ``risk`` when ``risk`` was fitted on that format (or on any), else the fill fallback."""
        model, _ = self.risk_for(format)
        return self if model is self.risk else replace(self, risk=model)

    def risk_for(self, format: str | None) -> tuple[RiskModel | None, str]:
        """The risk model that scores a session of ``format``, and its name for output: ``"<format>"``
        (a model fitted on that agent's runs), the formats ``risk`` was fitted on, or ``"fill"``
        (:func:`~ctxhealth.risk.model.fill_fallback`: no model was calibrated for this agent)."""
        from ctxhealth.risk.model import FILL_FALLBACK, fill_fallback

        own = self.risk_by_format.get(format) if format else None
        if own is not None:
            return own, str(format)
        if self.risk is None:
            return None, "none"
        if not self.risk_formats or format is None or format in self.risk_formats:
            return self.risk, "+".join(self.risk_formats) or "profile"
        return fill_fallback(self.risk), FILL_FALLBACK

    def thresholds(self, tier: Tier, family: str | None = None) -> TierThresholds:
        """The tier's zones; for a model ``family`` with a calibrated :class:`SlipRise` below the
        sweet spot, the sweet spot ends where the user's slips rise."""
        base = self.tiers.get(tier, self.tiers.get(Tier.COMPACT, DEFAULT_TIERS[Tier.COMPACT]))
        rise = self.slip_rise.get(family) if family and self.slip_rise else None
        if rise is None or rise.at_tokens >= base.sweet_spot:
            return base
        return replace(base, sweet_spot=max(1, rise.at_tokens))

    def zones(self, info: ModelInfo) -> TierThresholds:
        """The zones of ``info``'s tier for its window: scaled for a large window, fitted inside the
        usable window (:func:`fit_zones`), then, for a family with a calibrated :class:`SlipRise`
        below the sweet spot, the sweet spot ending where the user's slips rise (measured in tokens on
        the user's own sessions, so it is not scaled). Every zone check uses these."""
        return self.zones_for(info.tier, info.window, info.usable_window, info.family)

    def zones_for(self, tier: Tier, window: int, usable: int, family: str | None = None) -> TierThresholds:
        """:meth:`zones` from plain numbers (a fleet table row)."""
        fitted = _fit_zones_cached(
            self.tiers.get(tier, self.tiers.get(Tier.COMPACT, DEFAULT_TIERS[Tier.COMPACT])),
            window,
            usable,
            self.zone_reference_window,
            self.zone_window_exponent,
        )
        rise = self.slip_rise.get(family) if family and self.slip_rise else None
        if rise is None or rise.at_tokens >= fitted.sweet_spot:
            return fitted
        return replace(fitted, sweet_spot=max(1, rise.at_tokens))

    def with_overrides(self, table: Mapping[str, Any]) -> Profile:
        """A copy with values from a config table (``tiers`` is ``{tier: {sweet_spot: ...}}``)."""
        known = self.__struct_fields__
        changes: dict[str, Any] = {}
        for key, value in table.items():
            if key not in known:
                raise ConfigError(
                    f"unknown profile key {key!r}",
                    hint=f"use one of: {', '.join(sorted(k for k in known if k not in _MODEL_KEYS))}",
                )
            if key == "tiers":
                changes["tiers"] = _merge_tiers(self.tiers, value)
            elif key == "risk":
                changes["risk"] = None if value is None else RiskModel.from_dict(value)
            elif key == "slip_rise":
                if not isinstance(value, Mapping):
                    raise ConfigError(
                        "profile key 'slip_rise' must be a table by model family",
                        hint="rewrite it with `ctxhealth calibrate --zones`",
                    )
                changes[key] = {str(k): SlipRise.from_dict(str(k), v) for k, v in value.items()}
            elif key == "risk_formats":
                if isinstance(value, str) or not isinstance(value, list | tuple):
                    raise ConfigError(
                        "profile key 'risk_formats' must be a list of log formats",
                        hint='write risk_formats = ["mini-swe-agent"]',
                    )
                changes[key] = tuple(str(v) for v in value)
            elif key == "risk_by_format":
                if not isinstance(value, Mapping):
                    raise ConfigError(
                        "profile key 'risk_by_format' must be a table of risk models by log format",
                        hint="rewrite it with `ctxhealth calibrate --by agent`",
                    )
                changes[key] = {str(k): RiskModel.from_dict(v) for k, v in value.items()}
            else:
                current = getattr(self, key)
                changes[key] = _coerce(key, current, value)
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"schema_version": PROFILE_SCHEMA_VERSION}
        for name in self.__struct_fields__:
            value = getattr(self, name)
            if name == "tiers":
                out["tiers"] = {
                    str(t): {
                        "sweet_spot": th.sweet_spot,
                        "compact_zone": th.compact_zone,
                        "hard_limit": th.hard_limit,
                    }
                    for t, th in sorted(value.items())
                }
            elif name == "risk":
                out["risk"] = None if value is None else value.to_dict()
            elif name == "risk_by_format":
                out[name] = {k: m.to_dict() for k, m in sorted(value.items())}
            elif name == "risk_formats":
                out[name] = list(value)
            elif name == "slip_rise":
                out[name] = {k: r.to_dict() for k, r in sorted(value.items())}
            else:
                out[name] = value
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Profile:
        table = {k: v for k, v in data.items() if k != "schema_version"}
        return cls().with_overrides(table)


def _coerce(key: str, current: Any, value: Any) -> Any:
    try:
        if isinstance(current, bool):
            if not isinstance(value, bool):
                raise TypeError("expected true or false")
            return value
        if isinstance(current, int):
            if isinstance(value, bool) or int(value) != value:
                raise TypeError("expected an integer")
            return int(value)
        if isinstance(current, float):
            if isinstance(value, bool):
                raise TypeError("expected a number")
            return float(value)
        return str(value)
    except (TypeError, ValueError) as exc:
        raise ConfigError(
            f"invalid value for profile key {key!r}: {value!r} ({exc})", hint="fix the value"
        ) from exc


def _merge_tiers(current: Mapping[Tier, TierThresholds], table: Any) -> dict[Tier, TierThresholds]:
    if not isinstance(table, Mapping):
        raise ConfigError("profile key 'tiers' must be a table", hint="write tiers.full.sweet_spot = 80000")
    merged = dict(current)
    for name, values in table.items():
        try:
            tier = Tier(str(name))
        except ValueError as exc:
            raise ConfigError(f"unknown tier {name!r}", hint="use full, compact or local") from exc
        base = merged.get(tier, DEFAULT_TIERS[tier])
        if not isinstance(values, Mapping) or set(values) - {"sweet_spot", "compact_zone", "hard_limit"}:
            raise ConfigError(
                f"invalid thresholds for tier {name!r}", hint="use sweet_spot, compact_zone, hard_limit"
            )
        merged[tier] = TierThresholds(
            sweet_spot=int(values.get("sweet_spot", base.sweet_spot)),
            compact_zone=int(values.get("compact_zone", base.compact_zone)),
            hard_limit=int(values.get("hard_limit", base.hard_limit)),
        )
    return merged


#: Profile keys that hold fitted models, not thresholds a person sets.
_MODEL_KEYS = ("risk", "risk_by_format", "risk_formats", "slip_rise")


@lru_cache(maxsize=1)
def default_profile() -> Profile:
    """The built-in thresholds plus the shipped, fitted risk model (when the package data is present)."""
    # The data file next to the package, read directly: ``importlib.resources`` costs about as much as
    # Python's own start-up, and hooks load this profile in a fresh process. Resources are the fallback
    # (a package imported from a zip file).
    try:
        text = (Path(__file__).resolve().parent.parent / "data" / "default_profile.json").read_text("utf-8")
    except OSError:
        from importlib import resources

        try:
            text = resources.files("ctxhealth").joinpath("data/default_profile.json").read_text("utf-8")
        except (FileNotFoundError, OSError):
            return Profile()
    return Profile.from_dict(json.loads(text))


def load_profile(path: str | Path) -> Profile:
    """Read a profile JSON file written by ``ctxhealth calibrate`` (or by hand)."""
    p = Path(path)
    try:
        data = json.loads(p.read_text("utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(
            f"profile not found: {p}", hint="check the path or run `ctxhealth calibrate`"
        ) from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(
            f"cannot read profile {p}: {exc}", hint="rewrite it with `ctxhealth calibrate`"
        ) from exc
    if not isinstance(data, Mapping):
        raise ConfigError(f"profile {p} is not a JSON object", hint="rewrite it with `ctxhealth calibrate`")
    return Profile.from_dict(data)


def resolve_profile(path: str | Path | None = None, overrides: Mapping[str, Any] | None = None) -> Profile:
    """The profile to use: ``path`` (a calibrated profile file) or the default, then ``overrides``."""
    profile = load_profile(path) if path else default_profile()
    return profile.with_overrides(overrides) if overrides else profile
