"""The self-contained HTML report (``ctxhealth report``): inline SVG charts built in Python, one
file with no network references, readable from ``file://``."""

from __future__ import annotations

from ctxhealth.report.html.build import render_overview, render_report
from ctxhealth.report.html.make import report_sessions, report_tables
from ctxhealth.report.html.tables import load_overview_rows

__all__ = ["load_overview_rows", "render_overview", "render_report", "report_sessions", "report_tables"]
