"""Terminal rendering of ``ctxhealth audit`` documents: a few lines per session, then the verdicts.

Takes the dictionaries :func:`ctxhealth.audit.run_audit` yields and returns text (printing is the
CLI's job). Every finding is one line, ``path:line (response id): [check] severity: reason``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

WARNINGS_SHOWN = 3


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


def _usd(value: float | None) -> str:
    return "n/a" if value is None else f"${value:,.2f}"


def _finding_line(finding: Mapping[str, Any]) -> str:
    ev = finding["evidence"]
    where = ev["path"] if ev["line"] is None else f"{ev['path']}:{ev['line']}"
    if ev["response_id"]:
        where += f" ({ev['response_id']})"
    return f"  {where}: [{finding['check']}] {finding['severity']}: {finding['reason']}"


def render_session(doc: Mapping[str, Any]) -> str:
    """One session: cost, hit rates, breaks, waste and its findings."""
    cache = doc["cache"]
    cost = doc["cost"]
    waste = doc["waste"]
    breaks = cache["breaks"]
    lines = [
        f"{doc['path']}  [{doc['format']}, {doc['model'] or 'unknown model'}]",
        f"  cost {_usd(cost['usd'])} over {cost['requests']} requests; "
        f"cache hit rate {_pct(cache['hit_rate'])} (last 50: {_pct(cache['last50_hit_rate'])}); "
        f"{len(breaks)} cache breaks costing "
        f"{_usd(cache['usd_breaks'])}, {_usd(cache['usd_without_breaks'])} with none"
        if cost["requests"]
        else "  no model response with reported usage in this log: nothing to price or check for caching",
        f"  waste (est. tokens re-sent): unused tool output {waste['unused_tool_output']:,}, stale reads "
        f"{waste['stale_reads']:,}, duplicate paragraphs {waste['duplicate_paragraphs']:,}; clearing at "
        f"the defaults would save {waste['clearing_savings']:,}, compressing at the policy's gate "
        f"{waste['compression_savings']:,}",
    ]
    warnings = doc["warnings"]
    if warnings:
        more = (
            f" (+{len(warnings) - WARNINGS_SHOWN} more in --json)" if len(warnings) > WARNINGS_SHOWN else ""
        )
        lines.append(f"  reader stepped over {len(warnings)} problems{more}:")
        lines.extend(f"    {w}" for w in warnings[:WARNINGS_SHOWN])
    lines.extend(_finding_line(f) for f in doc["findings"])
    return "\n".join(lines)


def render_totals(doc: Mapping[str, Any]) -> str:
    """The totals: cost by week with the trend, the last-50 hit rate, non-session findings, verdicts."""
    cost = doc["cost"]
    cache = doc["cache"]
    if not doc.get("transcripts_read", True):
        lines = ["total: no transcript read (the selected checks read pack manifests and instruction files)"]
        lines.extend(_non_session_lines(doc))
        return "\n".join(lines)
    lines = [
        f"total: {doc['sessions']} sessions, {doc['requests']} requests, {_usd(cost['usd'])}; cache hit rate "
        f"{_pct(cache['hit_rate'])} (last 50: {_pct(cache['last50_hit_rate'])}), {cache['breaks']} cache "
        f"breaks (compactions aside) costing {_usd(cache['usd_breaks'])}",
    ]
    if cache["breaks_by_cause"]:
        causes = ", ".join(f"{cause} {count}" for cause, count in cache["breaks_by_cause"].items())
        lines.append(f"  cache breaks by cause (compactions and clears included): {causes}")
    for week in cost["trend"]:
        growth = "" if week["growth"] is None else f" ({week['growth']:+.0%})"
        alert = "  ALERT" if week["alert"] else ""
        lines.append(f"  week {week['week']}: {_usd(week['usd'])}{growth}{alert}")
    for project, usd in cost["by_project"].items():
        lines.append(f"  project {project}: {_usd(usd)}")
    lines.extend(_non_session_lines(doc))
    return "\n".join(lines)


def _non_session_lines(doc: Mapping[str, Any]) -> list[str]:
    """Instruction files, the findings not shown per session, and every check's verdict."""
    lines = []
    for item in doc["instructions"]:
        lines.append(
            f"  {item['path']}: {item['lines']} lines, ~{item['tokens_per_request']:,} tokens per request"
        )
    session_level = {"cache", "usage"}
    for finding in doc["findings"]:
        if finding["check"] not in session_level or finding["severity"] == "fail":
            lines.append(_finding_line(finding))
    for check, verdict in doc["verdicts"].items():
        lines.append(f"{check}: {verdict['status'].upper()} — {verdict['reason']}")
    return lines
