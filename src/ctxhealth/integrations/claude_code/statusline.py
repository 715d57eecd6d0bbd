"""The one-line status Claude Code shows under the prompt: zone, fill / usable window, drift, spiral,
a low prompt-cache hit rate, cost.

Input is the status-line JSON Claude Code pipes in. The fill comes from its ``context_window`` block
when present (newer versions), else from the transcript's latest reported usage. Drift and the
failure counters come from the session's cached counters (kept fresh by the hooks); the transcript's
new tail is read here only when no hook has run for the session, when nothing is cached yet, or when
the payload has no fill, so a refresh normally costs a payload parse and one small file read.

Colour is ANSI, one colour per zone, off when ``color`` is False (the CLI honours ``NO_COLOR``).
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable

from ctxhealth.integrations.claude_code.assess import Reading, low_cache_hit_rate, read_counters
from ctxhealth.integrations.claude_code.payloads import StatusPayload, parse_status_payload
from ctxhealth.integrations.claude_code.tailstate import (
    SessionCounters,
    SessionLock,
    load_counters,
    save_counters,
)
from ctxhealth.integrations.claude_code.transcript import transcript_problem
from ctxhealth.signals.zones import Zone

__all__ = ["LOCK_SECONDS", "format_status", "has_data", "render_status", "status_counters"]

LOCK_SECONDS = 0.5
"""How long the status line waits for the session's lock before drawing without saving."""

_COLOURS = {
    Zone.GREEN: "32",
    Zone.YELLOW: "33",
    Zone.ORANGE: "38;5;208",
    Zone.RED: "31",
    Zone.CRITICAL: "1;97;41",
}
_RED = "31"
_DIM = "2"


def _paint(text: str, code: str, color: bool) -> str:
    return f"\x1b[{code}m{text}\x1b[0m" if color else text


def _tokens(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1_000_000:.2f}M"
    if n >= 1_000:
        return f"{n / 1_000:.1f}K"
    return str(n)


def status_counters(
    payload: StatusPayload, *, home: str, before_save: Callable[[SessionCounters], None] | None = None
) -> SessionCounters:
    """The session's counters, brought up to date from the transcript only when that is needed.

    The new tail is read when the transcript grew and either no hook keeps the counters fresh or the
    payload carries no fill; the model's thresholds are resolved when none are cached yet. Updating
    happens under the session's lock (a short wait, :data:`LOCK_SECONDS`), reloading the counters
    there so nothing a hook saved meanwhile is overwritten; without the lock the line is drawn from
    what was read, and nothing is saved. A transcript that is not a regular file is never opened.
    ``before_save`` receives the updated counters just before they are saved (under the lock).
    """
    path = os.path.abspath(os.path.expanduser(payload.transcript_path or ""))
    cached = load_counters(home, path) if payload.transcript_path else None
    counters = cached if cached is not None else SessionCounters(path)
    if payload.session_id:
        counters.session_id = payload.session_id
    if not _needs_update(payload, counters, cached is not None):
        return counters
    if not payload.transcript_path:
        _refresh(payload, counters, cached is not None)
        return counters
    with SessionLock(home, path, timeout=LOCK_SECONDS) as lock:
        if lock.acquired:
            fresh = load_counters(home, path)  # what a hook may have saved since the first load
            if fresh is not None:
                counters, cached = fresh, fresh
                if payload.session_id:
                    counters.session_id = payload.session_id
            if not _needs_update(payload, counters, cached is not None):
                return counters
        _refresh(payload, counters, cached is not None)
        if lock.acquired:
            if before_save is not None:
                before_save(counters)
            with contextlib.suppress(OSError):  # a full disk costs the cache, never the line
                save_counters(home, counters)
    return counters


def _transcript_size(path: str) -> int | None:
    """The transcript's size, None when it is missing or not a regular file (never opened here)."""
    try:
        status = os.stat(path)
    except OSError:
        return None
    return status.st_size if stat.S_ISREG(status.st_mode) else None


def _payload_fill(payload: StatusPayload) -> int | None:
    """The fill the payload states: its ``current_usage``, else ``used_percentage`` of the window.
    Right after a ``/compact`` the payload has no usage yet, or a usage of zeros, and says 0%: that is
    no fill — no prompt is empty, the system prompt alone is thousands of tokens — so the transcript's
    (what the compaction left) is shown instead."""
    window = payload.context_window
    if window is None:
        return None
    if window.used_tokens:
        return window.used_tokens
    if window.used_percentage and window.size:
        return round(window.used_percentage / 100 * window.size)
    return None


def _has_fill(payload: StatusPayload) -> bool:
    return _payload_fill(payload) is not None


def _needs_read(payload: StatusPayload, counters: SessionCounters, cached: bool) -> bool:
    size = _transcript_size(counters.path) if payload.transcript_path else None
    grew = size is not None and size != counters.offset
    return grew and (not cached or not counters.hooks_seen or not _has_fill(payload))


def _needs_update(payload: StatusPayload, counters: SessionCounters, cached: bool) -> bool:
    # thresholds resolved before the model was known (a first PostToolUse): the payload names it
    unnamed = bool(payload.model_id) and not counters.model
    return _needs_read(payload, counters, cached) or counters.thresholds is None or unnamed


def _refresh(payload: StatusPayload, counters: SessionCounters, cached: bool) -> None:
    from ctxhealth.integrations.claude_code.tail import read_tail, resolve_thresholds

    window = payload.context_window
    if _needs_read(payload, counters, cached):
        read_tail(counters, counters.path)
    if payload.model_id and not counters.model:
        counters.model = payload.model_id
    resolve_thresholds(counters, window=window.size if window is not None else None)


def has_data(payload: StatusPayload, counters: SessionCounters) -> bool:
    """Whether there is anything to show: a fill in the payload, or counters that read something."""
    return _has_fill(payload) or counters.turns > 0 or counters.fill > 0 or counters.tool_calls > 0


def _reading(payload: StatusPayload, counters: SessionCounters) -> Reading:
    window = payload.context_window
    size = window.size if window is not None else None
    return read_counters(counters, fill=_payload_fill(payload), window=size)


def _no_data(payload: StatusPayload, color: bool) -> str:
    path = payload.transcript_path
    if not path:
        why = "no transcript_path in the payload"
    else:
        problem = transcript_problem(os.path.abspath(os.path.expanduser(path)))
        known = {None: "nothing read yet", "missing": "transcript not found"}
        why = known.get(problem, f"transcript is {problem}")
    return _paint(f"ctxhealth: no data ({why})", _DIM, color)


def format_status(payload: StatusPayload, counters: SessionCounters, *, color: bool) -> str:
    """The status line for this payload and these counters ("no data" and why, when there is none:
    never a zone drawn from nothing)."""
    if not has_data(payload, counters):
        return _no_data(payload, color)
    r = _reading(payload, counters)
    parts = [
        _paint(f"● {r.zone.value}", _COLOURS[r.zone], color),
        f"{_tokens(r.fill)}/{_tokens(r.usable)} {r.percent:.0f}%",
    ]
    if r.drift is not None:
        drift = f"drift {r.drift:.2f}"
        parts.append(_paint(drift + " ↯", _RED, color) if r.drifting else drift)
    if counters.tool_calls:
        fails = f"fail {counters.tool_errors}/{counters.tool_calls}"
        parts.append(_paint(f"spiral: {r.spiral_reason}", _RED, color) if r.spiral else fails)
    if r.doom_loop:
        parts.append(_paint(f"loop ×{counters.doom_loops}", _RED, color))
    window = payload.context_window
    if window is not None:
        low = low_cache_hit_rate(counters, window.cache_read_tokens, window.used_tokens)
        if low is not None:
            parts.append(_paint(f"cache {low:.0%}", _RED, color))
        if window.exceeds_200k:  # past 200K the request is priced at the long-context rate
            parts.append(_paint("200K+", _RED, color))
    cost = payload.cost_usd if payload.cost_usd is not None else counters.cost_usd
    if cost is not None:
        parts.append(f"${cost:.2f}")
    if (counters.thresholds or {}).get("model_known") is False and counters.model:
        parts.append(_paint(f"unknown model {counters.model}", _DIM, color))  # `ctxhealth models ID`
    sep = _paint(" · ", _DIM, color)
    return sep.join(parts)


def render_status(
    raw: bytes | str, *, home: str, color: bool, answer: Callable[[str], None] | None = None
) -> str:
    """Parse the payload, refresh the counters if needed, return the line (raises on bad input).

    ``answer``, when given, receives the line as soon as it is known: before the refreshed counters
    are saved (the per-turn helper hands it to the waiting command there), else at the end."""
    payload = parse_status_payload(raw)
    given: list[str] = []

    def early(counters: SessionCounters) -> None:
        if answer is not None:
            given.append(format_status(payload, counters, color=color))
            answer(given[0])

    counters = status_counters(payload, home=home, before_save=early if answer is not None else None)
    line = given[0] if given else format_status(payload, counters, color=color)
    if answer is not None and not given:
        answer(line)
    return line
