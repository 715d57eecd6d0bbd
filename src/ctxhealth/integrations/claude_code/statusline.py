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

import os

from ctxhealth.integrations.claude_code.assess import Reading, low_cache_hit_rate, read_counters
from ctxhealth.integrations.claude_code.payloads import StatusPayload, parse_status_payload
from ctxhealth.integrations.claude_code.tailstate import SessionCounters, load_counters, save_counters
from ctxhealth.signals.zones import Zone

__all__ = ["format_status", "render_status", "status_counters"]

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


def status_counters(payload: StatusPayload, *, home: str) -> SessionCounters:
    """The session's counters, brought up to date from the transcript only when that is needed.

    The new tail is read when the transcript grew and either no hook keeps the counters fresh or the
    payload carries no fill; the model's thresholds are resolved when none are cached yet.
    """
    path = os.path.abspath(os.path.expanduser(payload.transcript_path or ""))
    cached = load_counters(home, path) if payload.transcript_path else None
    counters = cached if cached is not None else SessionCounters(path)
    if payload.session_id:
        counters.session_id = payload.session_id
    window = payload.context_window
    has_fill = window is not None and (window.used_tokens is not None or window.used_percentage is not None)
    grew = bool(payload.transcript_path) and os.path.exists(path) and os.path.getsize(path) != counters.offset
    need_read = grew and (cached is None or not counters.hooks_seen or not has_fill)
    if need_read or counters.thresholds is None:
        from ctxhealth.integrations.claude_code.tail import read_tail, resolve_thresholds

        if need_read:
            read_tail(counters, path)
        if payload.model_id and not counters.model:
            counters.model = payload.model_id
        resolve_thresholds(counters, window=window.size if window is not None else None)
        if payload.transcript_path:
            save_counters(home, counters)
    return counters


def _reading(payload: StatusPayload, counters: SessionCounters) -> Reading:
    window = payload.context_window
    fill: int | None = None
    size = window.size if window is not None else None
    if window is not None:
        if window.used_tokens is not None:
            fill = window.used_tokens
        elif window.used_percentage is not None and size:
            fill = round(window.used_percentage / 100 * size)
    return read_counters(counters, fill=fill, window=size)


def format_status(payload: StatusPayload, counters: SessionCounters, *, color: bool) -> str:
    """The status line for this payload and these counters."""
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
    cost = payload.cost_usd if payload.cost_usd is not None else counters.cost_usd
    if cost is not None:
        parts.append(f"${cost:.2f}")
    sep = _paint(" · ", _DIM, color)
    return sep.join(parts)


def render_status(raw: bytes | str, *, home: str, color: bool) -> str:
    """Parse the payload, refresh the counters if needed, return the line (raises on bad input)."""
    payload = parse_status_payload(raw)
    counters = status_counters(payload, home=home)
    return format_status(payload, counters, color=color)
