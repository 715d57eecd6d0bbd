"""The HTML report: an overview of many sessions, then one timeline and signal table per session.

Two inputs, one page:

* analysed sessions (:class:`~ctxhealth.analysis.SessionAnalysis`, ``ctxhealth report PATH...``):
  the overview plus each session's timeline (fill against the window, zones shaded, one point per
  turn, markers for compactions, tool failures, drift, indicators and the policy's decisions) and
  its final signals with their evidence message indices;
* fleet tables (``ctxhealth report --from FILE.duckdb``): the overview from the ``sessions``,
  ``costs``, ``responses`` and ``cache_breaks`` tables, then timelines from ``turns``,
  ``decisions`` and ``cache_breaks``.

Cost, the prompt-cache hit rate and the cache breaks in the overview are the audit's totals
(:class:`~ctxhealth.report.html.totals.AuditTotals`): the same figures ``ctxhealth audit --json``
prints for the same inputs.

The overview works on rows as dictionaries keyed by the fleet schema's column names (the
records' field names), whichever input they came from; a timeline reads turn records
(:class:`~ctxhealth.analysis.TurnRecord`) and cache-break records, from either input. Sessions
are ranked by how unhealthy they got (ever unhealthy first, then the largest pressure) and when
(the earlier turn first).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from typing import Any

import msgspec

from ctxhealth.accounting.types import Tier
from ctxhealth.analysis import CacheBreakRow, SessionAnalysis, TurnRecord
from ctxhealth.model import Message
from ctxhealth.policy.profile import Profile, default_profile
from ctxhealth.report.check_report import DEPRECATED_DRIFT
from ctxhealth.report.html.page import document
from ctxhealth.report.html.shown import clean, shown
from ctxhealth.report.html.svg import (
    EVENT_LABELS,
    EVENT_STYLES,
    ZONE_COLOURS,
    Band,
    Marker,
    Point,
    bars,
    histogram,
    timeline,
)
from ctxhealth.report.html.totals import AuditTotals, totals_of

Rows = list[dict[str, Any]]

MAX_TIMELINES = 50
"""Sessions that get a timeline of their own (the most unhealthy first); the overview covers all."""
RANKED_SHOWN = 100
"""Rows of the ranked session table."""
COST_ROWS_SHOWN = 60
"""Rows of the cost by project and week table (the costliest)."""
SNIPPET = 200


def _e(value: object) -> str:
    return shown(value)


def _money(value: float | None) -> str:
    if value is None:
        return "–"
    return f"${value:,.4f}" if value < 0.01 else f"${value:,.2f}"


def _when(value: datetime | date | None) -> str:
    if value is None:
        return "–"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    return value.isoformat()


def _snippet(message: Message | None) -> str:
    if message is None:
        return ""
    text = clean(" ".join(message.text.split()))
    if not text:
        calls = [c.name for c in message.tool_calls]
        results = message.tool_results
        if calls:
            text = "calls " + ", ".join(calls)
        elif results:
            text = clean(" ".join(results[0].text.split()))
    return text if len(text) <= SNIPPET else text[: SNIPPET - 1] + "…"


# ------------------------------------------------------------------------------------------- rows


def rows_of(analyses: Sequence[SessionAnalysis]) -> tuple[Rows, Rows]:
    """``sessions`` and ``costs`` rows (as dictionaries) of analysed sessions."""
    sessions: Rows = []
    costs: Rows = []
    for a in analyses:
        path = a.session.path
        sessions.append(msgspec.structs.asdict(a.session_row(path, 0)))
        costs.extend({"path": path, **msgspec.structs.asdict(r)} for r in a.rows.costs)
    return sessions, costs


def severity(row: Mapping[str, Any]) -> tuple[int, float, float]:
    """Sort key: ever unhealthy first, then the largest pressure, then the earliest unhealthy turn."""
    first = row.get("first_unhealthy_turn")
    return (
        0 if first is not None or not row.get("healthy", True) else 1,
        -float(row.get("max_pressure") or 0.0),
        float(first) if first is not None else math.inf,
    )


# --------------------------------------------------------------------------------------- overview


def _figure(key: str, label: str, shown: str, value: object) -> tuple[str, str, str, str]:
    return key, label, shown, "" if value is None else repr(value) if isinstance(value, float) else str(value)


def overview(sessions: Rows, costs: Rows, totals: AuditTotals, linked: frozenset[str] = frozenset()) -> str:
    """Headline figures, distributions, the ranked sessions, cache breaks by cause and cost by
    project and week; sessions whose path is in ``linked`` have a section of their own to link to.
    Cost, hit rate and breaks are ``totals`` (the audit's); each figure carries its exact value in
    ``data-value``."""
    n = len(sessions)
    unhealthy = [s for s in sessions if not s.get("healthy", True)]
    ever = [s for s in sessions if s.get("first_unhealthy_turn") is not None]
    known_cost = [s["cost_usd"] for s in sessions if s.get("cost_usd") is not None]
    # ``waste_tokens``: prompt tokens sent from a session's first unhealthy turn on (not the audit's
    # waste, which is re-sent tool output the agent never used)
    after = sum(int(s.get("waste_tokens") or 0) for s in sessions)
    sent = sum(int(s.get("prompt_tokens") or 0) for s in sessions)
    by_action: dict[str, int] = defaultdict(int)
    for s in unhealthy:
        by_action[str(s.get("action"))] += 1
    ledger = totals.ledger
    rate = totals.hit_rate
    causes = ", ".join(f"{c} {k}" for c, k in sorted(totals.breaks_by_cause.items()))
    figures = [
        _figure("sessions", "sessions", f"{n:,}", n),
        _figure(
            "unhealthy",
            "unhealthy at the end",
            f"{len(unhealthy):,}"
            + (f" ({', '.join(f'{k} {v}' for k, v in sorted(by_action.items()))})" if by_action else ""),
            len(unhealthy),
        ),
        _figure("ever-unhealthy", "unhealthy at some turn", f"{len(ever):,}", len(ever)),
        _figure(
            "cost",
            "total cost",
            (_money(ledger.usd) if ledger.requests > ledger.unpriced else "unknown")
            + (f" ({ledger.unpriced:,} requests unpriced)" if ledger.unpriced else ""),
            ledger.usd,
        ),
        _figure("requests", "requests", f"{ledger.requests:,}", ledger.requests),
        _figure("hit-rate", "cache hit rate", "–" if rate is None else f"{100.0 * rate:.1f}%", rate),
        _figure(
            "breaks",
            "cache breaks (not compactions or clears)",
            f"{totals.breaks:,}" + (f" ({causes})" if causes else ""),
            totals.breaks,
        ),
        _figure("usd-breaks", "what the breaks cost", _money(totals.usd_breaks), totals.usd_breaks),
        _figure(
            "after-unhealthy",
            "sent after unhealthy",
            f"{100.0 * after / sent:.1f}% of prompt tokens" if sent else "–",
            None,
        ),
    ]
    out = ['<section id="overview"><h2>Overview</h2><div class="figures">']
    out += [
        f'<div data-figure="{k}" data-value="{_e(v)}">'
        f'<span class="muted">{_e(label)}</span><b>{_e(shown)}</b></div>'
        for k, label, shown, v in figures
    ]
    out.append("</div>")
    risks = [float(s["risk"]) for s in sessions if s.get("risk") is not None]
    costs_known = [float(c) for c in known_cost]
    after_pct = [
        100.0 * int(s["waste_tokens"] or 0) / int(s["prompt_tokens"])
        for s in sessions
        if s.get("prompt_tokens")
    ]
    top_cost = max(costs_known, default=0.0)
    out.append('<div class="charts">')
    out.append(
        histogram(
            [float(s.get("peak_pct") or 0.0) for s in sessions],
            bins=10,
            low=0,
            high=100,
            label="peak fill, % of window",
            unit="%",
        )
    )
    out.append(histogram(risks, bins=10, low=0, high=1, label="final risk"))
    out.append(
        histogram(costs_known, bins=10, low=0, high=_nice(top_cost), label="cost per session", unit=" USD")
    )
    out.append(
        histogram(
            after_pct, bins=10, low=0, high=100, label="sent after unhealthy, % of prompt tokens", unit="%"
        )
    )
    out.append("</div>")
    out.append(_ranked(sessions, linked))
    out.append(_breaks_by_cause(totals))
    out.append(_cost_by_project_week(totals))
    out.append("</section>")
    return "".join(out)


def _breaks_by_cause(totals: AuditTotals) -> str:
    out = ["<h3>Cache breaks by cause</h3>"]
    if not totals.breaks_by_cause:
        out.append('<p class="muted">No response in these sessions lost its cached prefix.</p>')
        return "".join(out)
    out.append(
        '<table class="breaks"><tr><th>cause</th><th>breaks</th><th>tokens lost</th><th>cost</th></tr>'
    )
    for cause, count in sorted(totals.breaks_by_cause.items(), key=lambda kv: (-kv[1], kv[0])):
        out.append(
            f'<tr data-cause="{_e(cause)}"><td>{_e(cause)}</td><td class="num">{count:,}</td>'
            f'<td class="num">{totals.tokens_by_cause[cause]:,}</td>'
            f'<td class="num">{_money(totals.usd_by_cause.get(cause, 0.0))}</td></tr>'
        )
    out.append("</table>")
    out.append(
        '<p class="muted">Compactions and clears rewrite the context on purpose: they are listed but not '
        "counted in the breaks or their cost above.</p>"
    )
    return "".join(out)


def _nice(value: float) -> float:
    if value <= 0:
        return 1.0
    exp = 10 ** math.floor(math.log10(value))
    for m in (1, 2, 5, 10):
        if value <= m * exp:
            return float(m * exp)
    return float(10 * exp)


def _ranked(sessions: Rows, linked: frozenset[str]) -> str:
    ranked = sorted(sessions, key=severity)[:RANKED_SHOWN]
    head = (
        "session",
        "project",
        "started",
        "turns",
        "peak",
        "max pressure",
        "risk",
        "final action",
        "first unhealthy",
        "cost",
    )
    header = "".join(f"<th>{h}</th>" for h in head)
    out = [f'<h3>Sessions by how unhealthy they got, and when</h3><table class="ranked"><tr>{header}</tr>']
    for s in ranked:
        first = s.get("first_unhealthy_turn")
        at = s.get("first_unhealthy_at")
        when = "–" if first is None else f"turn {first}" + (f", {_when(at)}" if at else "")
        name = s.get("session_id") or str(s.get("path", "")).rsplit("/", 1)[-1]
        cls = "bad" if not s.get("healthy", True) else "ok"
        path = str(s.get("path"))
        cell = f'<a href="#{_anchor(path)}">{_e(name)}</a>' if path in linked else _e(name)
        risk = "–" if s.get("risk") is None else f"{float(s['risk']):.2f}"
        pressure = float(s.get("max_pressure") or 0.0)
        cells = [
            f'<td title="{_e(path)}">{cell}</td>',
            f"<td>{_e(s.get('project'))}</td>",
            f"<td>{_e(_when(s.get('started_at')))}</td>",
            f'<td class="num">{_e(s.get("turns"))}</td>',
            f'<td class="num">{_e(s.get("peak_pct"))}%</td>',
            f'<td class="num">{pressure:.2f}</td>',
            f'<td class="num">{risk}</td>',
            f'<td class="{cls}">{_e(s.get("action"))}</td>',
            f"<td>{_e(when)}</td>",
            f'<td class="num">{_money(s.get("cost_usd"))}</td>',
        ]
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    if len(sessions) > RANKED_SHOWN:
        out.append(f'<p class="muted">The {RANKED_SHOWN} most unhealthy of {len(sessions):,} sessions.</p>')
    return "".join(out)


def _cost_by_project_week(totals: AuditTotals) -> str:
    ledger = totals.ledger
    out = ["<h3>Cost by project and week</h3>"]
    if not ledger.by_project:
        out.append('<p class="muted">No priced usage in these sessions.</p>')
        return "".join(out)
    items = sorted(ledger.by_project.items(), key=lambda kv: -kv[1])[:20]
    out.append(bars([(p, v, f"{p}: {_money(v)}") for p, v in items]))
    out.append('<table class="projects"><tr><th>project</th><th>cost</th></tr>')
    for project, value in sorted(ledger.by_project.items(), key=lambda kv: -kv[1])[:COST_ROWS_SHOWN]:
        out.append(
            f'<tr data-project="{_e(project)}" data-value="{value!r}"><td>{_e(project)}</td>'
            f'<td class="num">{_money(value)}</td></tr>'
        )
    out.append("</table>")
    if len(ledger.by_project) > COST_ROWS_SHOWN:
        out.append(
            f'<p class="muted">The {COST_ROWS_SHOWN} costliest of {len(ledger.by_project):,} projects.</p>'
        )
    out.append('<table class="weeks"><tr><th>ISO week</th><th>cost</th><th>over the week before</th></tr>')
    for t in ledger.trend()[-COST_ROWS_SHOWN:]:
        growth = "–" if t.growth is None else f"{100.0 * t.growth:+.0f}%"
        cls = ' class="bad"' if t.alert else ""
        out.append(
            f'<tr data-week="{_e(t.week)}" data-value="{t.usd!r}"><td>{_e(t.week)}</td>'
            f'<td class="num">{_money(t.usd)}</td><td{cls}>{_e(growth)}</td></tr>'
        )
    out.append("</table>")
    undated = ledger.usd - sum(ledger.by_week.values())
    if undated > 1e-9:
        out.append(f'<p class="muted">{_money(undated)} of requests without a timestamp are in no week.</p>')
    if ledger.unpriced:
        out.append(
            f'<p class="muted">{ledger.unpriced:,} requests of models without prices are left out.</p>'
        )
    return "".join(out)


# --------------------------------------------------------------------------------------- sessions


def _anchor(path: str) -> str:
    return "s-" + "".join(ch if ch.isalnum() else "-" for ch in path)[-120:]


def zone_bands(tier: Tier, window: int, usable: int, peak: int, profile: Profile) -> list[Band]:
    """The zones in tokens for a model of ``tier``: each zone starts where the first of the tier
    zone and the window zone reaches it (the zone shown is the worse of the two)."""
    th = profile.zones_for(tier, window, usable)
    starts = [
        ("yellow", min(th.sweet_spot, round(profile.window_yellow * usable))),
        ("orange", min(th.compact_zone, round(profile.window_orange * usable))),
        ("red", min(th.hard_limit, round(profile.window_critical * usable))),
        ("critical", round(profile.window_autocompact * usable)),
    ]
    bands = []
    low, zone = 0, "green"
    for name, start in starts:
        start = max(low, start)
        bands.append(Band(zone, low, start))
        low, zone = start, name
    bands.append(Band(zone, low, max(window, peak)))
    return bands


def turn_points(
    turns: Sequence[TurnRecord], window: int, reasons_at: Mapping[int, str], snippet_at: Mapping[int, str]
) -> list[Point]:
    """One point per turn, with its hover text."""
    points = []
    for r in turns:
        turn, index, fill, source, pressure = r.turn, r.message_index, r.fill, r.fill_source, r.pressure
        zone, risk, action = r.zone, r.risk, r.action
        pct = 100.0 * fill / window if window else 0.0
        lines = [
            f"turn {turn} (message {index}): {fill:,} tokens, {pct:.1f}% of window [{source}]",
            f"zone {zone}, pressure {pressure:.2f}" + ("" if risk is None else f", risk {risk:.2f}"),
            f"decision: {action}",
        ]
        if reasons_at.get(turn):
            lines.append(reasons_at[turn])
        if snippet_at.get(index):
            lines.append(f"“{snippet_at[index]}”")
        points.append(Point(turn, fill, zone, "\n".join(lines)))
    return points


def _legend() -> str:
    legend = [
        f'<span><span style="color:{c}">{g}</span> {EVENT_LABELS.get(k, k.replace("_", " "))}</span>'
        for k, (c, _, g) in EVENT_STYLES.items()
    ]
    legend += [
        f'<span><span style="background:{c}">&nbsp;&nbsp;&nbsp;</span> {z}</span>'
        for z, c in ZONE_COLOURS.items()
    ]
    return f'<div class="legend muted">{"".join(legend)}</div>'


def _figures(figures: Sequence[tuple[str, str]]) -> str:
    cells = "".join(f'<div><span class="muted">{_e(k)}</span><b>{_e(v)}</b></div>' for k, v in figures)
    return f'<div class="figures">{cells}</div>'


def session_section(analysis: SessionAnalysis, profile: Profile) -> str:
    """One session: figures, timeline, legend and the final signals with their evidence."""
    a, s, final = analysis.account, analysis.session, analysis.final
    messages = s.messages
    reasons_at = {r.turn: r.reasons for r in analysis.rows.decisions}
    snippet_at = {
        r.message_index: _snippet(messages[r.message_index])
        for r in analysis.rows.turns
        if r.message_index < len(messages)
    }
    points = turn_points(analysis.rows.turns, a.window, reasons_at, snippet_at)
    markers = []
    previous_action = "continue"
    for event in analysis.rows.events:
        if event.kind == "decision":
            if event.label == previous_action:
                continue
            previous_action = event.label
        evidence = ", ".join(str(i) for i in event.evidence)
        where = f"message {event.message_index}" + ("" if event.turn is None else f", turn {event.turn}")
        tip = f"{event.label} ({where})\n{event.detail}\nevidence: messages {evidence}"
        snippet = _snippet(messages[event.message_index]) if event.message_index < len(messages) else ""
        if snippet and event.kind not in ("tool_failure", "compaction"):
            tip += f"\n“{snippet}”"
        markers.append(Marker(event.kind, event.turn if event.turn is not None else 0, tip))
    title = s.session_id or s.path
    figures = [
        ("model", f"{a.model.id} ({a.model.tier.value})"),
        ("turns", f"{len(a.turns):,}"),
        ("peak fill", f"{a.peak:,} ({100.0 * a.peak / a.window:.1f}%)" if a.window else f"{a.peak:,}"),
        ("compactions", f"{len(a.compactions)}"),
        ("tool calls", f"{a.tool_calls:,} ({a.tool_errors:,} failed)"),
        ("cost", _money(a.cost_usd)),
        ("cache hit rate", _rate(analysis.rows.cache_hit_rate)),
        ("cache breaks", f"{len(analysis.rows.cache_breaks):,}"),
        ("final", f"{final.zone.value}, {final.action.value}"),
    ]
    out = [
        f'<section class="session" id="{_anchor(s.path)}"><h3>{_e(title)}</h3>',
        f'<div class="muted">{_e(s.path)} · {_e(s.format.value)}</div>',
        _figures(figures),
    ]
    if final.reasons:
        out.append("<ul>" + "".join(f"<li>{_e(r)}</li>" for r in final.reasons) + "</ul>")
    bands = zone_bands(a.model.tier, a.window, a.usable_window, a.peak, profile)
    out.append(timeline(points, bands, markers, window=a.window, usable=a.usable_window))
    out.append(_legend())
    out.append(
        '<table class="signals"><tr><th>signal</th><th>value</th><th>fired</th>'
        "<th>evidence (message indices)</th><th>detail</th></tr>"
    )
    for name, sig in final.signals.items():
        cls = ' class="bad"' if sig.fired else ""
        evidence = ", ".join(str(i) for i in sig.evidence)
        out.append(
            f'<tr data-signal="{_e(name)}"><td>{_e(SIGNAL_LABELS.get(name, name))}</td>'
            f'<td class="num">{signal_value(sig.value)}</td>'
            f"<td{cls}>{'yes' if sig.fired else 'no'}</td>"
            f"<td>{_e(evidence)}</td><td>{_e(sig.detail)}</td></tr>"
        )
    out.append("</table></section>")
    return "".join(out)


SIGNAL_LABELS = {DEPRECATED_DRIFT: "on-task", "peak_fill": "peak fill"}
"""Signals shown under another name than the Monitor's: the drift detector's value is the share of
the request's words in the recent output (higher is better), so it is shown as on-task."""


def signal_value(value: float) -> str:
    """A signal's value for the table: whole numbers of 1,000 or more (token counts) with thousands
    separators, anything else to four significant digits."""
    if abs(value) >= 1_000 and float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:.4g}"


# ------------------------------------------------------------------------------------------- page


def render_report(
    analyses: Sequence[SessionAnalysis],
    *,
    profile: Profile | None = None,
    title: str = "ctxhealth report",
    max_timelines: int = MAX_TIMELINES,
    sessions: Rows | None = None,
    costs: Rows | None = None,
    totals: AuditTotals | None = None,
    insights: Mapping[str, Any] | None = None,
) -> str:
    """The report: overview (when more than one session), the insights section (when ``insights``,
    the insights document, is given), then a section per analysed session.

    ``sessions`` / ``costs`` rows and the audit ``totals`` cover every session for the overview
    when only some of them are given as ``analyses`` (the ones to draw); by default they come from
    ``analyses``.
    """
    profile = profile or default_profile()
    if sessions is None or costs is None or totals is None:
        sessions, costs = rows_of(analyses)
        totals = totals_of(analyses)
    drawn = sorted(analyses, key=lambda a: severity(msgspec.structs.asdict(a.session_row("", 0))))
    shown = drawn[:max_timelines]
    linked = frozenset(a.session.path for a in shown)
    body = [
        f'<h1>{_e(title)}</h1><div class="muted">{len(sessions):,} session(s); offline, no network.</div>'
    ]
    if len(sessions) > 1:
        body.append(overview(sessions, costs, totals, linked))
    if insights is not None:
        from ctxhealth.report.html.insights import insights_section

        body.append(insights_section(insights))
    body.append("<h2>Sessions</h2>")
    if len(sessions) > len(shown):
        body.append(
            f'<p class="muted">Timelines of the {len(shown)} most unhealthy '
            f"of {len(sessions):,} sessions.</p>"
        )
    body.extend(session_section(a, profile) for a in shown)
    return document(title, "".join(body))


def table_section(
    session: Mapping[str, Any],
    turns: Sequence[TurnRecord],
    decisions: Sequence[Mapping[str, Any]],
    profile: Profile,
    breaks: Sequence[CacheBreakRow] = (),
) -> str:
    """One session from the fleet tables: figures, the timeline (one point per ``turns`` row, the
    decisions marked where the action changes, the main thread's cache ``breaks`` marked) and the
    final decision's reasons. The tables keep no message text, so the hover shows no excerpt and
    compactions and tool failures are not marked."""
    window = int(session.get("window") or 0)
    usable = int(session.get("usable_window") or window)
    peak = int(session.get("fill_peak") or 0)
    reasons_at = {d["turn"]: d["reasons"] for d in decisions}
    points = turn_points(turns, window, reasons_at, {})
    markers = []
    previous = "continue"
    for d in decisions:
        turn, index, action, rule, reasons = (
            d["turn"],
            d["message_index"],
            d["action"],
            d["rule"],
            d["reasons"],
        )
        if action == previous:
            continue
        previous = action
        markers.append(
            Marker("decision", turn, f"{action} (message {index}, turn {turn}, rule {rule})\n{reasons}")
        )
    markers.extend(break_markers(breaks))
    path = str(session.get("path"))
    figures = [
        ("model", f"{session.get('model')} ({session.get('tier')})"),
        ("turns", f"{int(session.get('turns') or 0):,}"),
        ("peak fill", f"{peak:,} ({session.get('peak_pct')}%)"),
        ("compactions", f"{session.get('compactions')}"),
        (
            "tool calls",
            f"{int(session.get('tool_calls') or 0):,} ({int(session.get('tool_errors') or 0):,} failed)",
        ),
        ("cost", _money(session.get("cost_usd"))),
        ("cache hit rate", _rate(session.get("cache_hit_rate"))),
        ("final", f"{session.get('zone')}, {session.get('action')}"),
    ]
    out = [
        f'<section class="session" id="{_anchor(path)}"><h3>{_e(session.get("session_id") or path)}</h3>',
        f'<div class="muted">{_e(path)} · {_e(session.get("format"))}</div>',
        _figures(figures),
    ]
    if session.get("reasons"):
        out.append(
            "<ul>" + "".join(f"<li>{_e(r)}</li>" for r in str(session["reasons"]).splitlines()) + "</ul>"
        )
    bands = zone_bands(Tier(str(session.get("tier") or "compact")), window, usable, peak, profile)
    out.append(timeline(points, bands, markers, window=window, usable=usable))
    out.append(_legend())
    out.append("</section>")
    return "".join(out)


def break_markers(breaks: Sequence[CacheBreakRow]) -> list[Marker]:
    """A marker per main-thread cache break; the hover shows the cause, its evidence, the tokens
    lost and the cost."""
    markers = []
    for b in breaks:
        thread, turn, index, line, cause, detail = (
            b.thread,
            b.turn,
            b.message_index,
            b.line,
            b.cause,
            b.detail,
        )
        before, after, tokens, usd = b.cached_before, b.cached_after, b.tokens_rewritten, b.cost_usd
        if thread != 0 or turn is None:
            continue
        where = f"message {index}, turn {turn}" + ("" if line is None else f", line {line}")
        cost = "no prices" if usd is None else _money(usd)
        tip = (
            f"cache break: {cause} ({where})\n{detail}\n"
            f"cached prefix {before:,} → {after:,} tokens; {tokens:,} tokens lost; cost {cost}"
        )
        markers.append(Marker("cache_break", turn, tip))
    return markers


def _rate(value: object) -> str:
    return "–" if value is None else f"{100.0 * float(str(value)):.0f}%"


Timeline = tuple[Sequence[TurnRecord], Sequence[Mapping[str, Any]], Sequence[CacheBreakRow]]


def render_overview(
    sessions: Rows,
    costs: Rows,
    totals: AuditTotals,
    *,
    title: str = "ctxhealth report",
    timelines: Mapping[str, Timeline] | None = None,
    profile: Profile | None = None,
) -> str:
    """The page from fleet tables (``report --from``): the overview, then a timeline for each session
    in ``timelines`` (path -> its ``turns``, ``decisions`` and ``cache_breaks`` rows), the most
    unhealthy first."""
    timelines = timelines or {}
    profile = profile or default_profile()
    linked = frozenset(timelines)
    body = [
        f"<h1>{_e(title)}</h1>"
        f'<div class="muted">{len(sessions):,} session(s) from fleet tables; offline.</div>',
        overview(sessions, costs, totals, linked),
    ]
    drawn = sorted((s for s in sessions if s.get("path") in linked), key=severity)
    if drawn:
        body.append("<h2>Sessions</h2>")
        body.append(
            f'<p class="muted">Timelines of the {len(drawn)} most unhealthy of {len(sessions):,} sessions '
            "(the tables keep no message text: decisions and cache breaks are marked, compactions "
            "and tool failures are not).</p>"
        )
        for s in drawn:
            turns, decisions, breaks = timelines[str(s["path"])]
            body.append(table_section(s, turns, decisions, profile, breaks))
    return document(title, "".join(body))
