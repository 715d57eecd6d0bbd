"""The insights section of the HTML report: the slip rate by fill band (a bar per band with its
95% interval), the change-point when there is one, the snowball, where the context goes and what to
change, from the document :class:`ctxhealth.insights.InsightsBuilder` builds."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

_BAR_PX = 220


def _e(value: object) -> str:
    return escape("" if value is None else str(value))


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.1%}"


def _bars(rows: Sequence[Mapping[str, Any]], label: str) -> str:
    shown = [r for r in rows if r["steps"]]
    top = max((r["ci_high"] or 0.0 for r in shown), default=0.0) or 1.0
    out = [
        f"<table><tr><th>{_e(label)}</th><th>steps</th><th>slipped</th><th>rate (bar: 95% interval)</th></tr>"
    ]
    for r in shown:
        lo, hi, rate = r["ci_low"] or 0.0, r["ci_high"] or 0.0, r["rate"] or 0.0
        bar = (
            f'<div style="position:relative;width:{_BAR_PX}px;height:12px;background:#f2f2f2">'
            f'<div style="position:absolute;left:0;width:{rate / top * _BAR_PX:.0f}px;height:12px;'
            'background:#7aa6d6"></div>'
            f'<div style="position:absolute;left:{lo / top * _BAR_PX:.0f}px;width:'
            f'{max(1.0, (hi - lo) / top * _BAR_PX):.0f}px;top:5px;height:2px;background:#333"></div></div>'
        )
        out.append(
            f"<tr><td>{_e(r['band'])}</td><td>{r['steps']:,}</td><td>{r['slips']:,}</td>"
            f"<td>{bar} {_pct(rate)} ({_pct(lo)}–{_pct(hi)})</td></tr>"
        )
    out.append("</table>")
    return "".join(out)


def _band_name(row: Mapping[str, Any], unit: str) -> str:
    low, high = row[f"from_{unit}"], row[f"to_{unit}"]
    if unit == "tokens":
        return f"{low / 1000:g}K–{high / 1000:g}K" if high is not None else f"≥{low / 1000:g}K"
    return f"{low:g}–{high:g}%" if high is not None else f"≥{low:g}%"


def insights_section(doc: Mapping[str, Any]) -> str:
    """The section (empty when no session has a step)."""
    if not doc.get("steps"):
        return ""
    out = [
        '<section id="insights"><h2>Insights: does the agent slip more as its context fills?</h2>',
        f'<p class="muted">{_e(doc["step"])}.</p>',
        f"<p>{doc['sessions']:,} sessions, {doc['steps']:,} steps, {doc['slips']:,} slipped "
        f"({_pct(doc['rate'])}, 95% interval {_pct(doc['ci_low'])}–{_pct(doc['ci_high'])}).</p>",
    ]
    for key, unit, label, point_key in (
        ("bands", "pct", "fill, % of the usable window", "change_point"),
        ("token_bands", "tokens", "fill, tokens", "token_change_point"),
    ):
        rows = [{**r, "band": _band_name(r, unit)} for r in doc[key]]
        out.append(f"<h3>Slip rate by {label}</h3>")
        out.append(_bars(rows, "fill"))
        point = doc.get(point_key)
        if point is None:
            out.append(
                '<p class="muted">No change-point: no fill where the 95% intervals above and below '
                "separate.</p>"
            )
        else:
            edge = point[f"at_{unit}"]
            where = f"{edge:g}% of the usable window" if unit == "pct" else f"{edge:,} tokens"
            out.append(
                f"<p>Slips start rising at {_e(where)}: {_pct(point['below']['rate'])} below, "
                f"{_pct(point['above']['rate'])} above.</p>"
            )
    snow = doc["snowball"]
    rows = [{**r, "band": f"after {r['slips_so_far']} slips"} for r in snow["by_slips_so_far"]]
    rows += [
        {**snow["after_slip"], "band": "after a slipped step"},
        {**snow["after_clean_step"], "band": "after a clean step"},
    ]
    out.append("<h3>Snowball: next-step slip rate given the slips so far</h3>")
    out.append(_bars(rows, "given"))
    comp = doc["composition"]
    out.append("<h3>Where the context goes (average session, share of its last fill)</h3><table>")
    for part, share in sorted(comp["average_shares_of_last_fill"].items(), key=lambda kv: -kv[1]):
        out.append(f"<tr><td>{_e(part.replace('_', ' '))}</td><td>{_pct(share)}</td></tr>")
    out.append("</table>")
    out.append("<h3>What to change</h3><ol>")
    for s in doc["suggestions"]:
        evidence = "".join(
            f"<li>{_e(e['path'])}: {e['figure']:,} {_e(e['unit'])}</li>" for e in s["evidence"]
        )
        out.append(f"<li><b>{_e(s['title'])}</b><br>{_e(s['advice'])}<ul>{evidence}</ul></li>")
    if not doc["suggestions"]:
        out.append("<li>nothing stands out</li>")
    out.append("</ol></section>")
    return "".join(out)
