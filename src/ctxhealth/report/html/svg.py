"""Charts as inline SVG strings, built in Python: a session timeline, histograms and bars.

No charting library: every chart here is a few dozen shapes, and SVG written by hand keeps the
report one small file that needs no script to draw (the page's script only shows hover text).
Every shape that explains something carries its text in ``data-tip``; every text is escaped.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ctxhealth.report.html.shown import shown

ZONE_COLOURS = {
    "green": "#e3f4e1",
    "yellow": "#fbf3cf",
    "orange": "#fde2c4",
    "red": "#f9d0cc",
    "critical": "#eab0b0",
}
POINT_COLOURS = {
    "green": "#2e7d32",
    "yellow": "#b08900",
    "orange": "#e06c00",
    "red": "#c62828",
    "critical": "#7b1010",
}
EVENT_STYLES = {
    # kind: (colour, row in the marker strip, glyph)
    "compaction": ("#1565c0", 0, "▼"),
    "decision": ("#6a1b9a", 1, "◆"),
    "drift": ("#00838f", 2, "●"),
    "indicators": ("#ad1457", 3, "▲"),
    "tool_failure": ("#c62828", 4, "✕"),
    "cache_break": ("#ef6c00", 5, "⚡"),
}
MARKER_ROWS = 1 + max(row for _, row, _ in EVENT_STYLES.values())
EVENT_LABELS = {
    "compaction": "compaction",
    "decision": "decision",
    "drift": "off task",
    "indicators": "indicators",
    "tool_failure": "tool failure",
    "cache_break": "cache break",
}
"""What each kind of marker is called on the page (the legend and the marker strip's rows)."""
ROW_LABELS = tuple(
    " / ".join(EVENT_LABELS[k] for k, (_, r, _) in EVENT_STYLES.items() if r == row)
    for row in range(MARKER_ROWS)
)
"""The label at the left of each row of the marker strip."""
X_TICKS = 6
"""At most this many labelled turns on the timeline's x axis (first and last included)."""


def _a(value: object) -> str:
    return shown(value)


def turn_ticks(last: int, most: int = X_TICKS) -> list[int]:
    """Turns to label on an axis from 0 to ``last``: 0, ``last`` and round steps between (1, 2, 5 x
    10^k), at most ``most`` in all; none closer to ``last`` than half a step."""
    if last <= 0:
        return [0]
    raw = last / max(1, most - 1)
    exp = 10 ** math.floor(math.log10(raw)) if raw >= 1 else 1
    step = next((m * exp for m in (1, 2, 5, 10) if m * exp >= raw), 10 * exp)
    step = max(1, int(step))
    ticks = list(range(0, last, step))
    if ticks and last - ticks[-1] < step / 2 and len(ticks) > 1:
        ticks.pop()
    return [*ticks, last]


def _fmt_tokens(n: float) -> str:
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f}M"
    if n >= 1_000:
        return f"{n / 1_000:.0f}K"
    return f"{n:.0f}"


@dataclass(frozen=True, slots=True)
class Band:
    """A shaded horizontal band of the timeline: ``zone`` from ``low`` to ``high`` tokens."""

    zone: str
    low: int
    high: int


@dataclass(frozen=True, slots=True)
class Point:
    turn: int
    fill: int
    zone: str
    tip: str


@dataclass(frozen=True, slots=True)
class Marker:
    kind: str
    turn: int
    tip: str


def timeline(
    points: Sequence[Point],
    bands: Sequence[Band],
    markers: Sequence[Marker],
    *,
    window: int,
    usable: int,
    width: int = 960,
    height: int = 328,
) -> str:
    """Fill against the window, one circle per turn, zones shaded, event markers in a strip below."""
    left, right, top = 84, 12, 10
    strip = MARKER_ROWS * 14 + 8
    plot_h = height - top - 24 - strip
    n = max(1, len(points) - 1)
    y_max = max(window, max((p.fill for p in points), default=0)) or 1

    def x(turn: float) -> float:
        return left + (width - left - right) * (turn / n if len(points) > 1 else 0.5)

    def y(tokens: float) -> float:
        return top + plot_h * (1.0 - min(tokens, y_max) / y_max)

    out = [
        f'<svg class="timeline" viewBox="0 0 {width} {height}" width="100%" role="img" '
        f'xmlns="http://www.w3.org/2000/svg" aria-label="context fill per turn">'
    ]
    for b in bands:
        lo, hi = max(0, b.low), min(y_max, b.high)
        if hi <= lo:
            continue
        out.append(
            f'<rect class="band" x="{left}" y="{y(hi):.1f}" width="{width - left - right}" '
            f'height="{y(lo) - y(hi):.1f}" fill="{ZONE_COLOURS.get(b.zone, "#eee")}" '
            f'data-tip="{_a(f"{b.zone} zone: {b.low:,}–{b.high:,} tokens")}"/>'
        )
    for frac in (0.0, 0.25, 0.5, 0.75, 1.0):
        v = y_max * frac
        out.append(
            f'<line x1="{left - 4}" x2="{left}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#888"/>'
            f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end" class="axis">{_fmt_tokens(v)}</text>'
        )
    out.append(
        f'<line class="usable" x1="{left}" x2="{width - right}" y1="{y(usable):.1f}" y2="{y(usable):.1f}" '
        f'stroke="#555" stroke-dasharray="4 3" data-tip="{_a(f"usable window {usable:,} tokens")}"/>'
    )
    if points:
        path = " ".join(f"{x(i):.1f},{y(p.fill):.1f}" for i, p in enumerate(points))
        out.append(f'<polyline points="{path}" fill="none" stroke="#37474f" stroke-width="1.5"/>')
        radius = 3.0 if len(points) <= 300 else 2.0
        for i, p in enumerate(points):
            out.append(
                f'<circle class="pt" cx="{x(i):.1f}" cy="{y(p.fill):.1f}" r="{radius}" '
                f'fill="{POINT_COLOURS.get(p.zone, "#333")}" data-turn="{p.turn}" data-tip="{_a(p.tip)}"/>'
            )
    base = top + plot_h + 20
    last = max(0, len(points) - 1)
    for i in turn_ticks(last):
        turn = points[i].turn if points else 0
        anchor = "start" if i == 0 and last else "end" if i == last and last else "middle"
        out.append(
            f'<line class="xtick" x1="{x(i):.1f}" x2="{x(i):.1f}" y1="{top + plot_h:.1f}" '
            f'y2="{top + plot_h + 4:.1f}" stroke="#888"/>'
            f'<text class="axis xlabel" x="{x(i):.1f}" y="{base - 6}" text-anchor="{anchor}">'
            f"{'turn ' if i == 0 else ''}{turn}</text>"
        )
    for row, label in enumerate(ROW_LABELS):
        out.append(
            f'<text class="axis rowlabel" x="{left - 6}" y="{base + 8 + row * 14:.1f}" '
            f'text-anchor="end">{_a(label)}</text>'
        )
    position = {p.turn: i for i, p in enumerate(points)}
    for m in markers:
        colour, row, glyph = EVENT_STYLES.get(m.kind, ("#333", 4, "•"))
        i = position.get(m.turn, 0)
        cy = base + 8 + row * 14
        out.append(
            f'<text class="ev ev-{_a(m.kind)}" x="{x(i):.1f}" y="{cy:.1f}" text-anchor="middle" '
            f'fill="{colour}" data-tip="{_a(m.tip)}">{glyph}</text>'
        )
    out.append("</svg>")
    return "".join(out)


def histogram(
    values: Sequence[float], *, bins: int, low: float, high: float, label: str, unit: str = ""
) -> str:
    """Counts of ``values`` in ``bins`` equal bins over [low, high] (values outside are clamped)."""
    width, height, left, bottom = 300, 150, 30, 28
    counts = [0] * bins
    step = (high - low) / bins if high > low else 1.0
    for v in values:
        if v is None or (isinstance(v, float) and math.isnan(v)):
            continue
        k = int((v - low) / step) if step else 0
        counts[min(bins - 1, max(0, k))] += 1
    top = max(counts, default=0) or 1
    bar_w = (width - left - 6) / bins
    out = [
        f'<svg class="hist" viewBox="0 0 {width} {height}" width="{width}" xmlns="http://www.w3.org/2000/svg">'
    ]
    out.append(f'<text x="{left}" y="12" class="title">{_a(label)}</text>')
    plot_h = height - bottom - 18
    for k, c in enumerate(counts):
        h = plot_h * c / top
        a, b = low + k * step, low + (k + 1) * step
        tip = f"{label}: {a:g}–{b:g}{unit}: {c} session{'s' if c != 1 else ''}"
        out.append(
            f'<rect class="bar" x="{left + k * bar_w + 1:.1f}" y="{18 + plot_h - h:.1f}" '
            f'width="{bar_w - 2:.1f}" height="{max(h, 0.5):.1f}" fill="#5c6bc0" data-tip="{_a(tip)}"/>'
        )
    out.append(
        f'<text x="{left}" y="{height - 8}" class="axis">{low:g}{_a(unit)}</text>'
        f'<text x="{width - 6}" y="{height - 8}" class="axis" text-anchor="end">{high:g}{_a(unit)}</text>'
        f'<text x="{left - 4}" y="24" class="axis" text-anchor="end">{top}</text>'
    )
    out.append("</svg>")
    return "".join(out)


def bars(items: Sequence[tuple[str, float, str]], *, width: int = 420) -> str:
    """Horizontal bars: (label, value, tip) each, scaled to the largest value."""
    top = max((v for _, v, _ in items), default=0.0) or 1.0
    row = 18
    height = row * len(items) + 4
    out = [
        f'<svg class="bars" viewBox="0 0 {width} {height}" width="{width}" xmlns="http://www.w3.org/2000/svg">'
    ]
    for i, (label, value, tip) in enumerate(items):
        w = (width - 170) * value / top
        out.append(
            f'<text x="0" y="{i * row + 13}" class="axis">{_a(label[:24])}</text>'
            f'<rect class="bar" x="160" y="{i * row + 3}" width="{max(w, 0.5):.1f}" height="{row - 6}" '
            f'fill="#26a69a" data-tip="{_a(tip)}"/>'
        )
    out.append("</svg>")
    return "".join(out)
