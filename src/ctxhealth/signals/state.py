"""The saved state of every detector, one :class:`msgspec.Struct` each, so a monitor can be saved in one
process and resumed in another.

Each detector writes its struct with ``serialize()`` and reads one back with ``restore(state)``: the
fields are named here, so a new attribute is saved only when someone adds it to its struct (an
attribute left out is configuration or a cache, rebuilt from the profile). The monitor composes
them into :class:`MonitorState`; ``msgspec.to_builtins`` / ``msgspec.convert`` turn it into
JSON-safe data and back, and refuse data of the wrong shape. Windows keep their order: bounded maps
are saved as ``[key, value]`` pairs oldest first, sets sorted.

States saved before this format (version 3, a tagged encoding of the attributes) are read by
:mod:`~ctxhealth.signals.legacy_state` into these structs. This module is imported only to save or
resume a monitor.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Any, TypeVar

import msgspec

from ctxhealth.model import Usage
from ctxhealth.signals.base import BoundedDict, TurnWindow

K = TypeVar("K")
V = TypeVar("V")


class WindowState(msgspec.Struct, array_like=True, forbid_unknown_fields=True):
    """A :class:`~ctxhealth.signals.base.TurnWindow`: its occurrences ``[turn, index]`` and total."""

    items: list[tuple[int, int]]
    total: int


class CallState(msgspec.Struct, forbid_unknown_fields=True):
    """A parsed tool call (:class:`~ctxhealth.signals.calls.CallInfo`)."""

    key: int
    tool: str
    kinds: list[str]
    reads: list[str]
    edits: list[str]
    deletes: list[str]
    mentions: list[str]
    change: tuple[str, str] | None
    runs: list[str]


class PendingCall(msgspec.Struct, array_like=True, forbid_unknown_fields=True):
    """A call still waiting for its result: its id, the call and the message it was made in."""

    call_id: str
    call: CallState
    index: int


class TaskState(msgspec.Struct, forbid_unknown_fields=True):
    """A :class:`~ctxhealth.signals.requests.TaskTracker`."""

    min_words: int
    original: str
    original_index: int | None
    current: str
    current_index: int | None
    follow_ups: list[int]
    words: list[str]
    requests: int


class PressureState(msgspec.Struct, forbid_unknown_fields=True):
    fill: int
    peak: int
    first_fill: int
    quality: float
    capacity: float
    tier_zone: str
    window_zone: str
    zone: str
    zone_since: int
    peak_index: int


class DriftRun(msgspec.Struct, array_like=True, forbid_unknown_fields=True):
    """One reply's words in the drift window (see :mod:`~ctxhealth.signals.drift`)."""

    stems: list[str]
    cut: int
    each: int
    extra: int
    index: int
    base: int


class DriftState(msgspec.Struct, forbid_unknown_fields=True):
    sweet_spot: int
    task: TaskState
    instruction: str
    instruction_index: int | None
    request: str
    request_index: int | None
    pinned: bool
    instruction_words: list[str]
    runs: list[DriftRun]
    chars: int
    count: int
    next: int
    last: list[tuple[str, int]]
    heap: list[tuple[int, str]]
    hits: int
    segments: list[tuple[str, list[str] | None]]
    segment_chars: int
    similarity: float
    fill: int
    last_output: int
    since_request: int = 1 << 62
    """Output characters since the current request; a state saved before it was kept counts as a
    whole window (drift read as it was then)."""


class FailureState(msgspec.Struct, forbid_unknown_fields=True):
    window: list[tuple[str, bool, int]]
    window_failures: int
    tool_failures: list[tuple[str, int]]
    streak: list[int]
    streak_len: int
    max_streak: int
    total_calls: int
    total_failures: int
    mistakes: list[tuple[str, list[tuple[int, int]]]]
    worst_mistake: str
    worst_history: list[tuple[int, int]]
    worst_shared: bool
    """The worst mistake's history is the one kept in ``mistakes`` (one deque, not a copy)."""
    turn: int


class RepetitionState(msgspec.Struct, forbid_unknown_fields=True):
    seen_calls: list[tuple[int, int]]
    read_since_edit: list[tuple[str, int]]
    changes: list[tuple[tuple[str, int], int]]
    edit_turns: list[tuple[str, list[int]]]
    repeats: WindowState
    rereads: WindowState
    thrash: WindowState
    total_edits: int
    turn: int
    files_edited: list[str]
    depends: list[tuple[str, list[int]]]


class IndicatorState(msgspec.Struct, forbid_unknown_fields=True):
    contradictions: WindowState
    missing: WindowState
    over_explained: WindowState
    stale: WindowState
    sentences: list[tuple[int, int]]
    deleted: list[tuple[str, int]]
    repeated_sentences: int
    assistant_chars: int
    turn: int


class FidelityState(msgspec.Struct, forbid_unknown_fields=True):
    block_start: int
    cur_files: list[str]
    prev_files: int
    prev_files_index: int
    cur_chars: int
    cur_turns: int
    early_plan: float
    early_done: bool
    early_chars: int
    early_turns: int
    last_verify_turn: int
    last_verify_index: int | None
    verifications: int
    turn: int
    turn_index: int


class CacheState(msgspec.Struct, forbid_unknown_fields=True):
    rate: float | None
    read_tokens: int
    prompt_tokens: int
    seen_hit: bool
    run: int
    run_start: int | None
    last_index: int | None


class AccountState(msgspec.Struct, forbid_unknown_fields=True):
    """The fill account (:class:`~ctxhealth.accounting.running.RunningFill`, its ``dump_state``)."""

    chars_per_token: float
    fill: int
    peak: int
    turns: int
    source: str
    chars: int
    system_chars: int
    anchor_fill: int | None
    anchor_chars: int
    hidden: float
    seen: list[str]


class CountersState(msgspec.Struct, array_like=True, forbid_unknown_fields=True):
    """The policy's counters: restarts, truncations, cooldown turns left, turns since a reset."""

    restarts: int
    truncations: int
    cooldown: int
    steps: int


class OpenResponseState(msgspec.Struct, forbid_unknown_fields=True):
    """The response a message may still continue (``Monitor.update``; a snapshot from before it has
    none, as if every response was complete)."""

    response_id: str
    at: int
    """Its message index."""
    usage: Usage | None


class MonitorState(msgspec.Struct, forbid_unknown_fields=True):
    """Everything a :class:`~ctxhealth.monitor.Monitor` needs to go on where it was saved (with the
    same profile): its counts, the fill account, the calls waiting for results and each detector."""

    index: int
    turn: int
    output_tokens: int
    reasoning_tokens: int
    usage_seen: bool
    hedges: int
    source_format: str | None
    track_hedges: bool
    counters: CountersState
    account: AccountState
    pending_calls: list[PendingCall]
    pressure: PressureState
    drift: DriftState
    failures: FailureState
    repetition: RepetitionState
    indicators: IndicatorState
    fidelity: FidelityState
    cache: CacheState
    pending_prompt: int | None = None
    """The prompt pending since the latest response, for the next ``assess`` (see ``Monitor.update``)."""
    cooldown_ran: bool = False
    """Whether the cooldown ran down after the latest message (``assess`` reads it one higher)."""
    open_response: OpenResponseState | None = None
    """The latest response while a message may still continue it."""
    prompt_seen: int = 0
    """The largest prompt a response reported (it may prove the model's window larger)."""


# ---------------------------------------------------------------------- helpers for the detectors


def window_state(window: TurnWindow) -> WindowState:
    return WindowState(list(window._items), window.total)


def load_window(window: TurnWindow, state: WindowState) -> None:
    """Fill the (fresh) ``window`` with the saved occurrences; its size and limit stay the profile's."""
    window.clear()
    window._items.extend((int(t), int(i)) for t, i in state.items[-window.limit :])
    window.total = state.total
    window._ev = None


def pairs(mapping: BoundedDict[K, V]) -> list[tuple[K, V]]:
    return list(mapping.items())


def bounded(limit: int, items: Iterable[tuple[K, V]]) -> BoundedDict[K, V]:
    """A :class:`BoundedDict` of ``limit`` holding ``items`` in order (the oldest dropped beyond it)."""
    out: BoundedDict[K, V] = BoundedDict(limit)
    for k, v in items:
        out.put(k, v)
    return out


def queue(items: Iterable[Any], maxlen: int | None = None) -> deque[Any]:
    return deque(items, maxlen=maxlen)


def to_data(state: MonitorState) -> dict[str, Any]:
    """``state`` as JSON-safe data."""
    data: dict[str, Any] = msgspec.to_builtins(state)
    return data


def from_data(data: Any) -> MonitorState:
    """The :class:`MonitorState` in ``data``; :class:`msgspec.ValidationError` when it has another shape."""
    return msgspec.convert(data, MonitorState, strict=True)
