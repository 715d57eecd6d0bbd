"""Detector state as JSON-safe data, so a monitor can be saved in one process and resumed in another.

A small tagged encoding of the containers detectors keep: tuples, deques (with their ``maxlen``),
counters, bounded maps (with their limit), sets, non-string dict keys, enums and the few value
classes that appear in state. Anything else is a programming error and raises :class:`TypeError`,
so a new kind of state cannot be dropped silently.

Detectors save ``vars(self)`` minus their transient attributes (the profile, cached snapshots,
values derived from the model) through :func:`dump_object` and read it back with
:func:`load_object`; the monitor composes them into one versioned document.
"""

from __future__ import annotations

import math
from collections import Counter, deque
from collections.abc import Callable, Iterable
from dataclasses import fields, is_dataclass
from enum import Enum
from typing import Any

from ctxhealth.accounting.types import FillSource
from ctxhealth.signals.base import BoundedDict, TurnWindow
from ctxhealth.signals.calls import CallInfo, CallKind
from ctxhealth.signals.pressure import Zone
from ctxhealth.signals.requests import TaskTracker

_ENUMS: dict[str, type[Enum]] = {cls.__name__: cls for cls in (Zone, FillSource, CallKind)}
# value classes of layers above (the policy's counters) register themselves with register_value
_VALUES: dict[str, Callable[..., Any]] = {"CallInfo": CallInfo, "TaskTracker": TaskTracker}


def register_value(cls: type[Any]) -> None:
    """Allow instances of the frozen dataclass ``cls`` in saved state."""
    _VALUES[cls.__name__] = cls


def _pairs(items: Iterable[tuple[Any, Any]]) -> list[list[Any]]:
    return [[encode(k), encode(v)] for k, v in items]


def _sorted(values: Iterable[Any]) -> list[Any]:
    items = [encode(v) for v in values]
    try:
        return sorted(items)
    except TypeError:
        return items


def encode(value: Any) -> Any:
    """``value`` as JSON-safe data (see the module docstring for what is supported)."""
    if isinstance(value, Enum):  # before str: zones are string enums
        return {"$e": type(value).__name__, "v": value.value}
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"$f": repr(value)}
    if isinstance(value, tuple):
        return {"$t": [encode(v) for v in value]}
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, deque):
        return {"$q": [encode(v) for v in value], "m": value.maxlen}
    if isinstance(value, BoundedDict):
        return {"$b": _pairs(value.items()), "l": value.limit}
    if isinstance(value, Counter):
        return {"$c": _pairs(value.items())}
    if isinstance(value, dict):
        return {"$d": _pairs(value.items())}
    if isinstance(value, frozenset):
        return {"$fs": _sorted(value)}
    if isinstance(value, set):
        return {"$s": _sorted(value)}
    if isinstance(value, TurnWindow):
        return {"$w": [value.size, value.limit, value.total, encode(value._items)]}
    name = type(value).__name__
    if is_dataclass(value) and _VALUES.get(name) is type(value):
        return {"$o": name, "v": {f.name: encode(getattr(value, f.name)) for f in fields(value)}}
    raise TypeError(f"cannot save a {name} in monitor state")


def decode(data: Any) -> Any:
    """The value :func:`encode` turned into ``data``."""
    if isinstance(data, list):
        return [decode(v) for v in data]
    if not isinstance(data, dict):
        return data
    if "$t" in data:
        return tuple(decode(v) for v in data["$t"])
    if "$q" in data:
        return deque((decode(v) for v in data["$q"]), maxlen=data["m"])
    if "$b" in data:
        out: BoundedDict[Any, Any] = BoundedDict(int(data["l"]))
        for k, v in data["$b"]:
            out[decode(k)] = decode(v)
        return out
    if "$c" in data:
        return Counter({decode(k): decode(v) for k, v in data["$c"]})
    if "$d" in data:
        return {decode(k): decode(v) for k, v in data["$d"]}
    if "$fs" in data:
        return frozenset(decode(v) for v in data["$fs"])
    if "$s" in data:
        return {decode(v) for v in data["$s"]}
    if "$e" in data:
        return _ENUMS[data["$e"]](data["v"])
    if "$f" in data:
        return float(data["$f"])
    if "$w" in data:
        size, limit, total, items = data["$w"]
        window = TurnWindow(int(size), int(limit))
        window._items = decode(items)
        window.total = int(total)
        window._ev = None
        return window
    if "$o" in data:
        cls = _VALUES[data["$o"]]
        return cls(**{k: decode(v) for k, v in data["v"].items()})
    raise ValueError(f"unknown state tag in {sorted(data)[:3]}")


def dump_object(obj: object, transient: Iterable[str] = ()) -> dict[str, Any]:
    """The attributes of ``obj`` (its ``__dict__``) except ``transient`` ones, encoded."""
    skip = set(transient)
    return {k: encode(v) for k, v in vars(obj).items() if k not in skip}


def load_object(obj: object, state: dict[str, Any]) -> None:
    """Set the attributes saved by :func:`dump_object` back on ``obj`` (a freshly built one: each
    saved attribute must exist on it already, with a value of the same kind)."""
    for k, v in state.items():
        setattr(obj, k, checked(obj, k, decode(v)))


def checked(obj: object, name: str, value: Any) -> Any:
    """``value``, if it may replace attribute ``name`` of ``obj``; else :class:`ValueError`.

    A damaged or foreign snapshot must fail here, where it can be refused, rather than later in the
    middle of an update.
    """
    if not hasattr(obj, name):
        raise ValueError(f"unexpected attribute {name!r} in saved state")
    current = getattr(obj, name)
    if current is None or value is None or type(current) is type(value):
        return value
    if isinstance(current, (int, float)) and isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    raise ValueError(f"saved {name!r} is a {type(value).__name__}, not a {type(current).__name__}")
