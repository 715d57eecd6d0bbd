"""The ``check`` verdict of one session: the one place its dictionary is built, and its text rendering.

:func:`build_check_report` turns a session and its accounting into the JSON object that
``ctxhealth check --json`` prints (one per session, JSON Lines). Layers above accounting
(signals, policy) add their own keys by passing an ``assessment`` mapping, which is merged
last; when it holds ``healthy`` that verdict replaces the fill-only rule used otherwise
(current fill at or above the spec's critical window zone, ``policy.defaults.WINDOW_CRITICAL`` of the
usable window: the Profile's own default, not a copy).

:func:`render_check_text` renders the same dictionary as a short human block; it returns a
string (printing is the CLI's job).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePath
from typing import Any

from ctxhealth.accounting.fill import SessionAccount
from ctxhealth.accounting.registry import unknown_facts
from ctxhealth.accounting.types import CompactionRecord
from ctxhealth.model import Session
from ctxhealth.policy.defaults import WINDOW_CRITICAL
from ctxhealth.sources.reader import MANY_PER_FILE

SCHEMA_VERSION = 1
"""Version of the ``check`` JSON object; bumped when a key changes meaning or disappears."""

ON_TASK = "on_task"
"""The name ``check`` shows the drift detector's reading under: the overlap of the current request's
words with the recent output (1.0 on task, higher is better; it fires *below* the threshold).
``signals.drift`` carries the same reading for one more release and is deprecated."""
DEPRECATED_DRIFT = "drift"

WARNINGS_SHOWN = 3
"""Reader warnings listed in the text output (all are in the JSON)."""


def fill_is_unhealthy(current: int, usable_window: int, fraction: float = WINDOW_CRITICAL) -> bool:
    """The fill-only verdict, used only without a policy assessment: ``current`` at or above
    ``fraction`` of the usable window (window - reserved output - auto-compact buffer), by default the
    spec's critical window zone, where the Monitor's window zone turns red."""
    return current >= fraction * usable_window


def build_check_report(
    session: Session, account: SessionAccount, assessment: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The ``check`` object for one session; ``assessment`` keys are merged in last.

    Keys: ``schema_version, path, format, session_id, model, model_known, model_notes (what is not
    known about the model and how to configure it), tier, turns,
    window, usable_window, fill {current, peak, source, current_pct, peak_pct},
    compactions [{index, message_index, pre_tokens, post_tokens, trigger, summary?}] (``summary``:
    ``"encrypted"`` when the log keeps it only encrypted), tool_calls,
    tool_errors, subagent_tool_calls, subagent_tool_errors (the part of both in sub-agents),
    cost_usd, sidechains, warnings, healthy``, ``outcome`` and ``task_id`` when the log
    records them (evaluation runs); ``agent_cost_usd`` (the agent's own running total, Claude Code
    2.1 ``cost-state``) and ``cost_not_in_transcript_usd`` (it minus ``cost_usd``: requests no
    transcript keeps, such as compactions) when the log has it; ``injected_context {notes,
    ctxhealth}`` (hook context the agent logged, and how much is ctxhealth's own) when there is
    any; ``fill.current_source`` and a compaction's ``post_source`` when the current fill is what a
    compaction left (no response since) (+ whatever ``assessment`` adds,
    e.g. ``zone, pressure, risk, action, reasons, signals``). Percentages are of ``window``.
    """
    window = account.window
    current, peak = account.current, account.peak  # each a walk of the turns: taken once
    report: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "path": session.path,
        "format": session.format.value,
        "session_id": session.session_id,
        "model": account.model.id,
        "model_known": account.model.known,
        "model_notes": unknown_facts(account.model),
        "tier": account.model.tier.value,
        "turns": len(account.turns),
        "window": window,
        "usable_window": account.usable_window,
        "fill": {
            "current": current,
            "peak": peak,
            "source": account.source.value,
            "current_pct": _pct(current, window),
            "peak_pct": _pct(peak, window),
        },
        "compactions": [_compaction(c) for c in account.compactions],
        "tool_calls": account.tool_calls,
        "tool_errors": account.tool_errors,
        "subagent_tool_calls": account.subagent_tool_calls,
        "subagent_tool_errors": account.subagent_tool_errors,
        "cost_usd": round(account.cost_usd, 6) if account.cost_usd is not None else None,
        "sidechains": len(session.sidechains),
        "warnings": [str(w) for w in session.warnings],
        "healthy": not fill_is_unhealthy(current, account.usable_window),
    }
    if account.after_compaction is not None:
        # right after a compaction: the fill it left, not the last response's
        report["fill"]["current_source"] = account.after_compaction.source.value
    if session.agent_cost_usd is not None:
        report["agent_cost_usd"] = round(session.agent_cost_usd, 6)
        if account.cost_usd is not None:
            report["cost_not_in_transcript_usd"] = round(session.agent_cost_usd - account.cost_usd, 6)
    if session.injected_context:
        ours = sum(c.text.startswith("[ctxhealth]") for c in session.injected_context)
        report["injected_context"] = {"notes": len(session.injected_context), "ctxhealth": ours}
    if session.outcome is not None:
        report["outcome"] = session.outcome
    if session.task_id is not None:
        report["task_id"] = session.task_id
    if assessment:
        report.update(assessment)
        signals = report.get("signals")
        if isinstance(signals, Mapping) and DEPRECATED_DRIFT in signals and ON_TASK not in signals:
            report["signals"] = with_on_task(signals)
    return report


def _compaction(c: CompactionRecord) -> dict[str, Any]:
    out: dict[str, Any] = {
        "index": c.index,
        "message_index": c.message_index,
        "pre_tokens": c.pre_tokens,
        "post_tokens": c.post_tokens,
        "trigger": c.trigger,
    }
    if c.post_source is not None:
        out["post_source"] = c.post_source.value
    if c.log_post_tokens is not None:
        out["log_post_tokens"] = c.log_post_tokens
    if c.dropped_tokens is not None:
        out["dropped_tokens"] = c.dropped_tokens
    if c.encrypted:
        out["summary"] = "encrypted"
    return out


def with_on_task(signals: Mapping[str, Any]) -> dict[str, Any]:
    """``signals`` with ``on_task`` just before the deprecated ``drift`` (the same reading)."""
    out: dict[str, Any] = {}
    for name, value in signals.items():
        if name == DEPRECATED_DRIFT:
            out[ON_TASK] = value
        out[name] = value
    return out


def _pct(tokens: int, window: int) -> float:
    return round(100.0 * tokens / window, 1) if window > 0 else 0.0


def _n(value: int | None) -> str:
    return "?" if value is None else f"{value:,}"


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" if n == 1 else f"{n:,} {word}s"


def _money(cost: float | None) -> str:
    if cost is None:
        return "unknown (no usage, or no prices for the model)"
    return f"${cost:,.4f}" if cost < 0.01 else f"${cost:,.2f}"


#: Formats whose files hold several sessions: the text heading names the session too.
_MANY_PER_FILE_NAMES = frozenset(f.value for f in MANY_PER_FILE)


def session_heading(report: Mapping[str, Any]) -> str:
    """The path of a ``check`` object, plus ``[session id]`` for formats whose files hold several (not
    when the path ends with it, as an OpenHands call folder does)."""
    heading = str(report["path"])
    session_id = report.get("session_id")
    if report.get("format") in _MANY_PER_FILE_NAMES and session_id and PurePath(heading).name != session_id:
        heading += f" [{session_id}]"
    return heading


def _gap(report: Mapping[str, Any]) -> str:
    gap = report.get("cost_not_in_transcript_usd")
    if gap is None or abs(gap) < 0.00005:
        return ""
    return (
        f"; {_money(abs(gap))} {'not in the transcript (compaction, ...)' if gap > 0 else 'less than ours'}"
    )


def render_check_text(report: Mapping[str, Any]) -> str:
    """A human block for one ``check`` object (no trailing newline)."""
    fill = report["fill"]
    usable = report.get("usable_window", report["window"])
    model = report["model"]
    if not report.get("model_known", True) and model != "unknown":
        model += " (not in the model registry)"
    lines = [
        session_heading(report),
        f"  format       {report['format']}",
        f"  model        {model}, {report.get('tier', '?')} tier",
        *(f"               {note}" for note in report.get("model_notes") or ()),
        f"  turns        {report['turns']:,}",
        f"  window       {report['window']:,} tokens ({usable:,} usable)",
        f"  fill         current {fill['current']:,} ({fill.get('current_pct', 0.0)}% of window), "
        f"peak {fill['peak']:,} ({fill.get('peak_pct', 0.0)}%) [{fill['source']}]",
        # the window zones and capacity pressure divide by the usable window, as the status line does
        f"               of the usable window: current {_pct(fill['current'], usable)}%, "
        f"peak {_pct(fill['peak'], usable)}% (what zones and pressure use)",
    ]
    compactions = report["compactions"]
    if compactions:
        parts = []
        for c in compactions:
            trigger = f" ({c['trigger']})" if c.get("trigger") else ""
            left = " left, " + str(c["post_source"]) if c.get("post_source") else ""
            encrypted = " (summary encrypted)" if c.get("summary") == "encrypted" else ""
            parts.append(f"{_n(c['pre_tokens'])} → {_n(c['post_tokens'])}{left}{trigger}{encrypted}")
        lines.append(f"  compactions  {len(compactions)}: " + "; ".join(parts))
    else:
        lines.append("  compactions  none")
    tools = (
        f"  tools        {_plural(report['tool_calls'], 'call')}, {_plural(report['tool_errors'], 'error')}"
    )
    sub = report.get("subagent_tool_calls") or 0
    if sub:  # the status line and watch count the main thread's calls: say what differs
        tools += (
            f" ({sub} calls and {_plural(report.get('subagent_tool_errors') or 0, 'error')} in sub-agents)"
        )
    lines.append(tools)
    lines.append(f"  cost         {_money(report.get('cost_usd'))}")
    if report.get("agent_cost_usd") is not None:
        lines.append(
            f"               the agent's own total {_money(report['agent_cost_usd'])}" + _gap(report)
        )
    for key in ("zone", "pressure", "risk", "action"):
        if key in report:
            lines.append(f"  {key:<12} {report[key]}")
    lines.extend(f"    {reason}" for reason in report.get("reasons", ()))
    warnings = report["warnings"]
    lines.append(f"  warnings     {len(warnings)}")
    lines.extend(f"    {w}" for w in warnings[:WARNINGS_SHOWN])
    if len(warnings) > WARNINGS_SHOWN:
        lines.append(f"    ... and {len(warnings) - WARNINGS_SHOWN} more (see --json)")
    lines.append(f"  verdict      {'healthy' if report.get('healthy', True) else 'UNHEALTHY'}")
    return "\n".join(lines)


WORST_SHOWN = 5
"""Sessions named in the ``check`` summary's "worst" line."""


class CheckTotals:
    """The summary ``check`` ends with over several sessions: counts, unhealthy sessions by action,
    the worst sessions, total cost and the files that were skipped, with their reasons."""

    def __init__(self) -> None:
        self.sessions = 0
        self.unhealthy: dict[str, int] = {}
        self.cost = 0.0
        self.unpriced = 0
        self.worst: list[tuple[float, str, str, float, str | None, str]] = []
        self.skipped: list[tuple[str, str]] = []

    def add(self, report: Mapping[str, Any]) -> None:
        """Count one ``check`` object."""
        self.sessions += 1
        action = str(report.get("action", "unhealthy"))
        if not report.get("healthy", True):
            self.unhealthy[action] = self.unhealthy.get(action, 0) + 1
        cost = report.get("cost_usd")
        if cost is None:
            self.unpriced += 1
        else:
            self.cost += float(cost)
        if not report.get("healthy", True):
            pressure = float(report.get("pressure") or 0.0)
            peak = float(report["fill"].get("peak_pct", 0.0))
            session_id = report.get("session_id")
            self.worst.append(
                (pressure, str(report["path"]), action, peak, session_id, session_heading(report))
            )
            self.worst.sort(key=lambda w: (-w[0], w[1]))
            del self.worst[WORST_SHOWN:]

    def skip(self, path: str, reason: str) -> None:
        self.skipped.append((path, reason))

    def to_dict(self) -> dict[str, Any]:
        return {
            "sessions": self.sessions,
            "unhealthy": sum(self.unhealthy.values()),
            "unhealthy_by_action": dict(sorted(self.unhealthy.items())),
            "worst": [
                {"path": p, "session_id": sid, "action": a, "pressure": w, "peak_pct": pk}
                for w, p, a, pk, sid, _ in self.worst
            ],
            "cost_usd": round(self.cost, 6),
            "unpriced_sessions": self.unpriced,
            "skipped": [{"path": p, "reason": r} for p, r in self.skipped],
        }


def render_totals_text(totals: CheckTotals) -> str:
    """The summary block (no trailing newline)."""
    t = totals
    bad = sum(t.unhealthy.values())
    by_action = ", ".join(f"{a} {n}" for a, n in sorted(t.unhealthy.items()))
    lines = [
        "summary",
        f"  sessions     {t.sessions:,}, {bad:,} unhealthy" + (f" ({by_action})" if by_action else ""),
    ]
    for pressure, _, action, peak, _, heading in t.worst:
        lines.append(f"  worst        {heading}: {action}, pressure {pressure:.2f}, peak {peak}% of window")
    unpriced = f" ({_plural(t.unpriced, 'session')} without prices or usage)" if t.unpriced else ""
    priced = t.sessions > t.unpriced
    lines.append(f"  total cost   {_money(t.cost if priced else None)}{unpriced}")
    lines.append(f"  skipped      {len(t.skipped):,} file{'s' if len(t.skipped) != 1 else ''}")
    lines.extend(f"    {p}: {r}" for p, r in t.skipped)
    return "\n".join(lines)
