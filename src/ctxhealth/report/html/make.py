"""Sessions in, one HTML page out, in bounded memory: :func:`report_sessions`.

Every session is analysed once as it streams past; its overview rows are kept, and the whole
analysis only while it is among the ``max_timelines`` most unhealthy so far (those get a
timeline). So a report over thousands of sessions holds rows for all of them and messages for
only a few.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from ctxhealth.accounting.registry import ModelRegistry
from ctxhealth.analysis import SessionAnalysis, analyse_session
from ctxhealth.model import Session
from ctxhealth.policy.profile import Profile
from ctxhealth.report.html.build import (
    MAX_TIMELINES,
    Rows,
    render_overview,
    render_report,
    rows_of,
    severity,
)
from ctxhealth.report.html.totals import AuditTotals, totals_of


def report_sessions(
    sessions: Iterable[Session],
    *,
    registry: ModelRegistry | None = None,
    profile: Profile | None = None,
    model: str | None = None,
    title: str = "ctxhealth report",
    max_timelines: int = MAX_TIMELINES,
    on_session: Callable[[SessionAnalysis], None] | None = None,
) -> str:
    """The HTML report of ``sessions`` (overview of all, the insights section, timelines of the most
    unhealthy)."""
    kept: list[tuple[tuple[int, float, float], int, SessionAnalysis]] = []
    all_sessions: Rows = []
    all_costs: Rows = []
    totals = AuditTotals()
    from ctxhealth.insights.build import InsightsBuilder

    insights = InsightsBuilder(registry=registry, model=model)
    for n, session in enumerate(sessions):
        analysis = analyse_session(session, registry=registry, profile=profile, model=model)
        insights.add(session)
        rows, costs = rows_of([analysis])
        all_sessions += rows
        all_costs += costs
        totals_of([analysis], into=totals)
        kept.append((severity(rows[0]), n, analysis))
        if len(kept) > 2 * max_timelines:
            kept.sort(key=lambda item: item[:2])
            del kept[max_timelines:]
        if on_session is not None:
            on_session(analysis)
    return render_report(
        [a for _, _, a in kept],
        profile=profile,
        title=title,
        max_timelines=max_timelines,
        sessions=all_sessions,
        costs=all_costs,
        totals=totals,
        insights=insights.document(),
    )


def report_tables(
    source: str | Path,
    *,
    title: str = "ctxhealth report",
    max_timelines: int = MAX_TIMELINES,
    profile: Profile | None = None,
) -> str:
    """The page from fleet tables (a DuckDB file or a Parquet folder): the overview, then the
    timelines of the ``max_timelines`` most unhealthy sessions."""
    from ctxhealth.report.html.tables import load_overview_rows  # the fleet's store: only for --from

    sessions, costs, totals, timelines = load_overview_rows(source, max_timelines)
    return render_overview(sessions, costs, totals, title=title, timelines=timelines, profile=profile)
