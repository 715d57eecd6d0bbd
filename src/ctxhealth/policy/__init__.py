"""The policy: what to do on this turn, and every threshold behind it.

- :mod:`~ctxhealth.policy.decision` — :func:`decide`, the decision tree from a signal
  :class:`Snapshot` and the session's recovery :class:`Counters` to an :class:`Action` with its
  reasons, and how the counters change (:func:`record`, :func:`tick`);
- :mod:`~ctxhealth.policy.profile` — the :class:`Profile`: every threshold the signals and the
  policy use, per model tier, the cooldown and restart limits, and the risk model it binds;
- :mod:`~ctxhealth.policy.defaults` — the spec's default thresholds as plain numbers, importing
  nothing (the status line reads them without loading the rest);
- :mod:`~ctxhealth.policy.origins` — every threshold of the profile a configuration selects, with
  where it came from (``ctxhealth config show``).

Hooks import parts of this package on every agent turn, so nothing is imported here: each name is
imported from its module on first access (``_LAZY``: name -> module).
"""

from __future__ import annotations

from ctxhealth.lazy import load_export

# typing costs a noticeable share of a hook's start-up; it is needed only by the type checker here.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ctxhealth.policy.decision import Action as Action
    from ctxhealth.policy.decision import Counters as Counters
    from ctxhealth.policy.decision import Decision as Decision
    from ctxhealth.policy.decision import Rule as Rule
    from ctxhealth.policy.decision import Snapshot as Snapshot
    from ctxhealth.policy.decision import decide as decide
    from ctxhealth.policy.decision import record as record
    from ctxhealth.policy.decision import snapshot_of as snapshot_of
    from ctxhealth.policy.decision import tick as tick
    from ctxhealth.policy.profile import DEFAULT_TIERS as DEFAULT_TIERS
    from ctxhealth.policy.profile import PROFILE_SCHEMA_VERSION as PROFILE_SCHEMA_VERSION
    from ctxhealth.policy.profile import Profile as Profile
    from ctxhealth.policy.profile import TierThresholds as TierThresholds
    from ctxhealth.policy.profile import default_profile as default_profile
    from ctxhealth.policy.profile import load_profile as load_profile
    from ctxhealth.policy.profile import resolve_profile as resolve_profile

_LAZY: dict[str, str] = {
    "Action": "decision",
    "Counters": "decision",
    "Decision": "decision",
    "Rule": "decision",
    "Snapshot": "decision",
    "decide": "decision",
    "record": "decision",
    "snapshot_of": "decision",
    "tick": "decision",
    "DEFAULT_TIERS": "profile",
    "PROFILE_SCHEMA_VERSION": "profile",
    "Profile": "profile",
    "TierThresholds": "profile",
    "default_profile": "profile",
    "load_profile": "profile",
    "resolve_profile": "profile",
}

__all__ = sorted(_LAZY)
_EXPORTS = {name: f".{module}" for name, module in _LAZY.items()}


def __getattr__(name: str) -> Any:
    return load_export(globals(), _EXPORTS, __name__, name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
