"""The self-contained HTML report (``ctxhealth report``): inline SVG charts built in Python, one
file with no network references, readable from ``file://``.

``load_overview_rows`` (reading fleet tables, for ``report --from``) is imported on first use: a
report of transcripts never loads the fleet."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ctxhealth.report.html.build import render_overview, render_report
from ctxhealth.report.html.make import report_sessions, report_tables

if TYPE_CHECKING:
    from ctxhealth.report.html.tables import load_overview_rows

__all__ = ["load_overview_rows", "render_overview", "render_report", "report_sessions", "report_tables"]


def __getattr__(name: str) -> Any:
    if name == "load_overview_rows":
        from ctxhealth.report.html.tables import load_overview_rows

        return load_overview_rows
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
