"""Terminal rendering of the ``ctxhealth insights`` document: the curve, the snowball, the groups,
where the context goes and what to change, as tables (rich when it is installed, plain columns
otherwise). Takes the dictionary :meth:`ctxhealth.insights.InsightsBuilder.document` returns and
returns text; printing is the CLI's job.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

GROUPS_SHOWN = 8


def _pct(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value:.{digits}%}"


def _ci(row: Mapping[str, Any]) -> str:
    if row.get("ci_low") is None:
        return "—"
    return f"{row['ci_low']:.1%}–{row['ci_high']:.1%}"


def _band(row: Mapping[str, Any], unit: str) -> str:
    low, high = row[f"from_{unit}"], row[f"to_{unit}"]
    if unit == "tokens":
        return f"{low / 1000:g}K–{high / 1000:g}K" if high is not None else f"≥{low / 1000:g}K"
    return f"{low:g}–{high:g}%" if high is not None else f"≥{low:g}%"


def table(title: str, headers: Sequence[str], rows: Sequence[Sequence[str]], width: int = 110) -> str:
    """One table as text: rich's box drawing when rich is installed, else aligned columns."""
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        cells = [list(headers), *[list(r) for r in rows]]
        widths = [max(len(str(row[i])) for row in cells) for i in range(len(headers))]
        lines = [title] + [
            "  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)) for row in cells
        ]
        return "\n".join(lines)
    t = Table(title=title, title_justify="left")
    for i, h in enumerate(headers):
        t.add_column(h, justify="left" if i == 0 else "right")
    for r in rows:
        t.add_row(*r)
    import io

    console = Console(width=width, record=True, file=io.StringIO(), color_system=None)
    console.print(t)
    return console.export_text().rstrip()


def _rate_row(name: str, row: Mapping[str, Any]) -> list[str]:
    return [name, f"{row['steps']:,}", f"{row['slips']:,}", _pct(row["rate"]), _ci(row)]


def render_insights(doc: Mapping[str, Any]) -> str:
    """The whole document as text."""
    out: list[str] = []
    out.append(
        f"{doc['sessions']} sessions, {doc['steps']:,} steps, {doc['slips']:,} slipped "
        f"({_pct(doc['rate'])}, 95% CI {_ci(doc)})"
    )
    out.append(f"a step: {doc['step']}")
    kinds = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in doc["slip_events"].items())
    out.append(f"slips seen: {kinds}")
    head = ["fill", "steps", "slipped", "rate", "95% CI"]
    out.append("")
    out.append(
        table(
            "slip rate by fill (% of the usable window)",
            head,
            [_rate_row(_band(b, "pct"), b) for b in doc["bands"] if b["steps"]],
        )
    )
    out.append(_change_line(doc.get("change_point"), "pct"))
    out.append("")
    out.append(
        table(
            "slip rate by fill (tokens)",
            head,
            [_rate_row(_band(b, "tokens"), b) for b in doc["token_bands"] if b["steps"]],
        )
    )
    out.append(_change_line(doc.get("token_change_point"), "tokens"))
    snow = doc["snowball"]
    rows = [_rate_row(f"after {r['slips_so_far']} slips", r) for r in snow["by_slips_so_far"]]
    rows.append(_rate_row("after a slipped step", snow["after_slip"]))
    rows.append(_rate_row("after a clean step", snow["after_clean_step"]))
    out.append("")
    out.append(
        table("snowball: next-step slip rate given the slips so far", head[1:] and ["given", *head[1:]], rows)
    )
    for key, label in (("by_model", "model"), ("by_agent", "agent"), ("by_project", "project")):
        groups = doc[key][:GROUPS_SHOWN]
        if len(doc[key]) < 1:
            continue
        out.append("")
        rows = [
            [
                *_rate_row(str(g[label]), g),
                str(g["sessions"]),
                "—" if g["change_point"] is None else f"{g['change_point']['at_pct']:g}%",
            ]
            for g in groups
        ]
        out.append(table(f"by {label}", [label, *head[1:], "sessions", "slips rise at"], rows))
    out.append("")
    out.extend(_composition(doc["composition"]))
    out.append("")
    out.append("what to change (ranked by measured effect on these sessions):")
    if not doc["suggestions"]:
        out.append("  nothing stands out")
    for s in doc["suggestions"]:
        out.append(f"  {s['rank']}. {s['title']}")
        out.append(f"     {s['advice']}")
        for e in s["evidence"]:
            out.append(f"     - {e['path']}: {e['figure']:,} {e['unit']}")
    return "\n".join(out)


def _change_line(point: Mapping[str, Any] | None, unit: str) -> str:
    if point is None:
        return (
            "no change-point: no fill where the slip rate above is higher than below "
            "with the 95% intervals apart"
        )
    edge = point[f"at_{unit}"]
    where = f"{edge:g}% of the usable window" if unit == "pct" else f"{edge:,} tokens"
    return (
        f"slips start rising at {where}: {_pct(point['below']['rate'])} below "
        f"({point['below']['steps']:,} steps), {_pct(point['above']['rate'])} above "
        f"({point['above']['steps']:,} steps)"
    )


def _composition(comp: Mapping[str, Any]) -> list[str]:
    shares = comp["average_shares_of_last_fill"]
    rows = [[k.replace("_", " "), _pct(v)] for k, v in sorted(shares.items(), key=lambda kv: -kv[1])]
    lines = [
        table("where the context goes (average session, share of its last fill)", ["part", "share"], rows)
    ]
    prefix = comp["fixed_prefix"]
    if prefix["mean_tokens"] is not None:
        lines.append(
            "fixed prefix (system prompt, tool definitions, instruction files): "
            f"{prefix['mean_tokens']:,} tokens on average, {_pct(prefix['mean_share_of_window'])} of the "
            f"window ({prefix['sessions_known']} sessions with a reported first prompt)"
        )
    tools = list(comp["tools"].items())[:6]
    total = sum(comp["tools"].values())
    if tools and total:
        lines.append(
            "tool output by tool (share of all tool output): "
            + ", ".join(f"{t} {v / total:.0%}" for t, v in tools)
        )
    return lines
