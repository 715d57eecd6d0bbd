"""Reading monitor states saved before :mod:`ctxhealth.signals.state` (snapshot version 3).

That format saved each attribute of the monitor and of its detectors (``vars()`` minus a list of
transient names) through a small tagged encoding of the containers they held: tuples, deques,
counters, bounded maps, sets, non-string dict keys, enums, non-finite floats, turn windows and a
few value classes. The hooks' tail caches and ledgers and the proxy's sessions hold such states, so
they are still read: :func:`monitor_state` decodes one and renames its attributes into the fields
of :class:`~ctxhealth.signals.state.MonitorState` (which then checks every value's shape). Nothing
writes this format any more.
"""

from __future__ import annotations

from typing import Any

from ctxhealth.signals.state import MonitorState, from_data

DEFAULT_CHARS_PER_TOKEN = 4.0
"""What a state saved without a calibrated ratio used (``accounting.running``)."""


def decode(data: Any) -> Any:
    """The plain data (lists, pairs, values) a tagged value of the old encoding stands for: a
    mapping becomes its ``[key, value]`` pairs in order, a set its sorted items, a turn window
    ``[occurrences, total]``, a value class its fields."""
    if isinstance(data, list):
        return [decode(v) for v in data]
    if not isinstance(data, dict):
        return data
    if "$t" in data:
        return [decode(v) for v in data["$t"]]
    if "$q" in data:
        return [decode(v) for v in data["$q"]]
    if "$b" in data:
        return [[decode(k), decode(v)] for k, v in data["$b"]]
    if "$c" in data:
        return [[decode(k), decode(v)] for k, v in data["$c"]]
    if "$d" in data:
        return [[decode(k), decode(v)] for k, v in data["$d"]]
    if "$fs" in data:
        return sorted(decode(v) for v in data["$fs"])
    if "$s" in data:
        return sorted(decode(v) for v in data["$s"])
    if "$e" in data:
        return data["v"]
    if "$f" in data:
        return float(data["$f"])
    if "$w" in data:
        _size, _limit, total, items = data["$w"]
        return [decode(items), total]
    if "$o" in data:
        return {k: decode(v) for k, v in data["v"].items()}
    raise ValueError(f"unknown state tag in {sorted(data)[:3]}")


def _attributes(saved: Any, name: str) -> dict[str, Any]:
    """The decoded attributes of the detector (or other object) saved as ``name``."""
    if not isinstance(saved, dict) or not isinstance(saved.get("$x"), dict):
        raise ValueError(f"saved {name!r} is not an object's state")
    return {k: decode(v) for k, v in saved["$x"].items()}


def _renamed(attrs: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    """``attrs`` with private names turned into the struct's field names."""
    return {names.get(k, k.lstrip("_")): v for k, v in attrs.items()}


def _account(attrs: dict[str, Any]) -> dict[str, Any]:
    attrs.pop("always_reports", None)  # states saved before the readers marked stand-ins
    last = attrs.pop("_last_response", None)
    if "_seen" not in attrs:
        attrs["_seen"] = [last] if isinstance(last, str) else []
    attrs.setdefault("chars_per_token", DEFAULT_CHARS_PER_TOKEN)
    out = _renamed(attrs, {})
    out["seen"] = sorted(out["seen"])
    return out


def _drift(attrs: dict[str, Any]) -> dict[str, Any]:
    return _renamed(attrs, {"_segs": "segments", "_seg_chars": "segment_chars"})


def _failures(attrs: dict[str, Any]) -> dict[str, Any]:
    out = _renamed(attrs, {"_worst_shared": "worst_shared"})
    sig, history = out.pop("worst_mistake")
    out["worst_mistake"], out["worst_history"] = sig, history
    out.setdefault("worst_shared", False)
    return out


def _repetition(attrs: dict[str, Any]) -> dict[str, Any]:
    out = _renamed(attrs, {})
    out["files_edited"] = [path for path, _ in out["files_edited"]]
    return out


def _pending(attrs: dict[str, Any]) -> list[Any]:
    out = []
    for call_id, (call, index) in attrs["pending"]:
        out.append([call_id, {**call, "kinds": sorted(call["kinds"])}, index])
    return out


def monitor_state(state: Any) -> MonitorState:
    """The :class:`MonitorState` a version-3 snapshot's ``state`` holds.

    Raises :class:`ValueError`, :class:`KeyError`, :class:`TypeError` or
    :class:`msgspec.ValidationError` on a damaged or foreign one.
    """
    if not isinstance(state, dict):
        raise ValueError("the saved state is not an object")
    counters = decode(state["counters"])
    data = {
        "index": state["index"],
        "turn": state["turn"],
        "output_tokens": state["output_tokens"],
        "reasoning_tokens": state["reasoning_tokens"],
        "usage_seen": state["usage_seen"],
        "hedges": state["hedges"],
        "source_format": state["source_format"],
        "track_hedges": state["_track_hedges"],
        "counters": [counters["restarts"], counters["truncations"], counters["cooldown"], counters["steps"]],
        "account": _account(_attributes(state["account"], "account")),
        "pending_calls": _pending(_attributes(state["_events"], "_events")),
        "pressure": _renamed(_attributes(state["pressure"], "pressure"), {}),
        "drift": _drift(_attributes(state["drift"], "drift")),
        "failures": _failures(_attributes(state["failures"], "failures")),
        "repetition": _repetition(_attributes(state["repetition"], "repetition")),
        "indicators": _renamed(_attributes(state["indicators"], "indicators"), {}),
        "fidelity": _renamed(_attributes(state["fidelity"], "fidelity"), {}),
        "cache": _renamed(_attributes(state["cache"], "cache"), {}),
    }
    known = {"_events", "_model_fixed", "_track_hedges", "account", "counters", *data}
    unknown = sorted(set(state) - known)
    if unknown:
        raise ValueError(f"unexpected attribute {unknown[0]!r} in saved state")
    return from_data(data)
