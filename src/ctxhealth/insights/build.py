"""``ctxhealth insights``: the document. Sessions in, one JSON-safe dictionary out: the slip rate by
fill band (the degradation curve) overall and by model, agent and project; the snowball; where the
context went; and what to change, ranked by its measured effect on these sessions.

:class:`InsightsBuilder` takes sessions one at a time (a folder of thousands never sits in memory:
a session is reduced to its steps and a few totals) and :meth:`InsightsBuilder.document` builds
the document, whose schema ``docs/insights.md`` describes (``schema_version`` below).

Ranking: every suggestion's ``score`` is its effect as a share of what it is measured against
(tool output: of all context the sessions added; cache breaks: of all input tokens paid; an
instruction file: of all input tokens paid, as it is sent with every request; running past the
slip rise: the extra slips expected above it, of all slips; re-reads: of all context added).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from ctxhealth.accounting.fill import account_session
from ctxhealth.accounting.registry import ModelRegistry
from ctxhealth.insights.stats import (
    PCT_EDGES,
    TOKEN_EDGES,
    Rate,
    bands,
    change_point,
    snowball,
)
from ctxhealth.insights.steps import SLIP_KINDS, SessionSteps, measure_session
from ctxhealth.model import Format, Session

SCHEMA_VERSION = 1

STEP_DEFINITION = (
    "one step = one model response, counted once per response id (a response split over several "
    "log lines is one step); a step slipped when one of its tool calls failed, it repeated a call "
    "that had failed, re-read a file unchanged since it was read, or the user corrected, "
    "interrupted or rejected it"
)

ROOM_FOR_COMPACTION = 3.0
"""Compacting at a slip rise helps only when the rise sits well above where sessions start (their
first step's fill): at least this many times it."""
EVIDENCE_SESSIONS = 3
"""Sessions named as evidence under each suggestion."""
TOOL_SHARE_DOMINATES = 0.5
"""Tool output dominates growth when it is at least this share of all context added."""


@dataclass(frozen=True, slots=True)
class InsightsFilter:
    """Which sessions count: ended within ``days`` of ``now`` (a session with no timestamp is left
    out when ``days`` is set), ``project`` / ``model`` as a substring, ``agent`` as the format name."""

    days: float | None = None
    project: str | None = None
    agent: str | None = None
    model: str | None = None
    now: datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"days": self.days, "project": self.project, "agent": self.agent, "model": self.model}

    def keeps(self, measured: SessionSteps) -> bool:
        if self.agent and measured.agent != self.agent:
            return False
        if self.project and self.project.lower() not in measured.project.lower():
            return False
        if self.model and self.model.lower() not in measured.model.lower():
            return False
        if self.days is not None:
            if measured.ended is None or self.now is None:
                return False
            if measured.ended < self.now - timedelta(days=self.days):
                return False
        return True


@dataclass(slots=True)
class _Cache:
    """One session's cache breaks by cause (tokens, dollars) and the input tokens it paid."""

    input_tokens: int = 0
    requests: int = 0
    breaks: dict[str, list[float]] = field(default_factory=dict)  # cause -> [count, tokens, usd]


@dataclass(slots=True)
class InsightsBuilder:
    """Collects sessions (:meth:`add`) and builds the insights document (:meth:`document`)."""

    registry: ModelRegistry | None = None
    model: str | None = None
    filter: InsightsFilter = field(default_factory=InsightsFilter)
    roots: Sequence[Path] = ()
    """Folders to look for instruction files in (the paths given, the projects' folders)."""
    measured: list[SessionSteps] = field(default_factory=list)
    caches: list[_Cache] = field(default_factory=list)
    left_out: int = 0
    projects: set[str] = field(default_factory=set)
    """Claude Code project folder names seen (``-home-me-repo``): their instruction files are checked."""

    def add(self, session: Session) -> SessionSteps | None:
        """Measure one session; None when the filter leaves it out or it has no model response."""
        account = account_session(session, registry=self.registry, model=self.model)
        measured = measure_session(session, account)
        if not measured.steps or not self.filter.keeps(measured):
            self.left_out += 1
            return None
        self.measured.append(measured)
        self.caches.append(_cache_of(session, self.registry, self.model))
        if session.format is Format.CLAUDE_CODE:
            self.projects.add(measured.project)
        return measured

    def document(self) -> dict[str, Any]:
        roots = [*self.roots, *(f for p in sorted(self.projects) for f in project_instruction_files(p))]
        return build_document(self.measured, self.caches, self.filter, roots, self.left_out)


_INSTRUCTION_NAMES = ("CLAUDE.md", "CLAUDE.local.md", "AGENTS.md", ".claude/rules")


def project_instruction_files(project: str, root: Path = Path("/")) -> list[Path]:
    """The instruction files of the repository a Claude Code project folder stands for: Claude Code
    names the folder after the working directory with ``/`` (and ``.``) turned into ``-``, so
    ``-home-me-repo`` is ``/home/me/repo`` when that folder exists (a name with dashes of its own
    cannot be told apart: then nothing is found). Only the files at its top are looked at. ``root``
    is the file system's root (tests)."""
    if not project.startswith("-"):
        return []
    folder = root / project[1:].replace("-", "/")
    if not folder.is_dir():
        return []
    return [folder / name for name in _INSTRUCTION_NAMES if (folder / name).exists()]


def _cache_of(session: Session, registry: ModelRegistry | None, model: str | None) -> _Cache:
    from ctxhealth.audit.cache import EXPECTED_CAUSES, audit_cache
    from ctxhealth.audit.responses import session_responses

    responses = session_responses(session, registry, model=model)
    out = _Cache(requests=len(responses))
    for r in responses:
        u = r.usage
        out.input_tokens += u.input_tokens + u.cache_read_tokens + u.cache_creation_tokens
    if not responses:
        return out
    for b in audit_cache(session, responses).breaks:
        if b.cause in EXPECTED_CAUSES:
            continue
        cell = out.breaks.setdefault(str(b.cause), [0, 0, 0.0])
        cell[0] += 1
        cell[1] += b.tokens
        cell[2] += b.usd or 0.0
    return out


def _points(measured: Iterable[SessionSteps], tokens: bool = False) -> list[tuple[float, bool]]:
    return [(float(s.fill) if tokens else s.fill_pct, s.slipped) for m in measured for s in m.steps]


def curve(measured: Sequence[SessionSteps]) -> dict[str, Any]:
    """Steps, slips, the rate with its interval, bands (% of usable window and tokens) and change-points."""
    pct = _points(measured)
    tok = _points(measured, tokens=True)
    total = Rate(len(pct), sum(1 for _, s in pct if s))
    return {
        "sessions": len(measured),
        **total.to_dict(),
        "bands": bands(pct, PCT_EDGES, "pct"),
        "token_bands": bands(tok, TOKEN_EDGES, "tokens"),
        "change_point": change_point(pct, PCT_EDGES, "pct"),
        "token_change_point": change_point(tok, TOKEN_EDGES, "tokens"),
    }


def _grouped(measured: Sequence[SessionSteps], key: str) -> list[dict[str, Any]]:
    groups: dict[str, list[SessionSteps]] = {}
    for m in measured:
        groups.setdefault(str(getattr(m, key)), []).append(m)
    rows = [{key: name, **curve(items)} for name, items in groups.items()]
    return sorted(rows, key=lambda r: (-r["steps"], r[key]))


def composition(measured: Sequence[SessionSteps]) -> dict[str, Any]:
    """Where the context went: totals added by kind and by tool, the average session's shares of its
    last fill (fixed prefix, kinds, unattributed), and the fixed prefix's share of the window."""
    added: dict[str, int] = {}
    tools: dict[str, int] = {}
    per_session = []
    shares: dict[str, list[float]] = {}
    prefixes: list[tuple[int, int]] = []
    for m in measured:
        c = m.composition
        for kind, tokens in c.added.items():
            added[kind] = added.get(kind, 0) + tokens
        for tool, tokens in c.tools.items():
            tools[tool] = tools.get(tool, 0) + tokens
        entry: dict[str, Any] = {
            "path": m.name,
            "fixed_prefix": c.fixed_prefix,
            "last_fill": c.last_fill,
            "at_end": c.at_end,
            "added": c.added,
            "tools": dict(sorted(c.tools.items(), key=lambda kv: -kv[1])),
        }
        if c.last_fill > 0:
            parts = dict(c.at_end)
            if c.fixed_prefix is not None:
                parts["fixed_prefix"] = c.fixed_prefix
                parts["unattributed"] = c.last_fill - sum(parts.values())
            entry["shares_of_last_fill"] = {k: round(v / c.last_fill, 4) for k, v in parts.items()}
            for k, v in entry["shares_of_last_fill"].items():
                shares.setdefault(k, []).append(v)
        if c.fixed_prefix is not None:
            prefixes.append((c.fixed_prefix, m.window))
        per_session.append(entry)
    total_added = sum(added.values())
    return {
        "tokens_source": "estimated by kind at each session's calibrated characters per token; "
        "fixed prefix = first reported prompt minus the estimate of what the log holds before it",
        "added": added,
        "added_shares": {k: round(v / total_added, 4) if total_added else None for k, v in added.items()},
        "tools": dict(sorted(tools.items(), key=lambda kv: -kv[1])),
        "average_shares_of_last_fill": {k: round(sum(v) / len(v), 4) for k, v in shares.items()},
        "fixed_prefix": {
            "sessions_known": len(prefixes),
            "mean_tokens": round(sum(p for p, _ in prefixes) / len(prefixes)) if prefixes else None,
            "mean_share_of_window": round(sum(p / w for p, w in prefixes) / len(prefixes), 4)
            if prefixes
            else None,
        },
        "per_session": per_session,
    }


def _evidence(items: Iterable[tuple[SessionSteps, float]], unit: str) -> list[dict[str, Any]]:
    top = sorted(items, key=lambda kv: -kv[1])[:EVIDENCE_SESSIONS]
    return [{"path": m.name, "figure": round(v, 2), "unit": unit} for m, v in top if v > 0]


def suggestions(
    measured: Sequence[SessionSteps],
    caches: Sequence[_Cache],
    overall: dict[str, Any],
    roots: Sequence[Path],
) -> list[dict[str, Any]]:
    """What to change, each with its effect, score and the sessions behind it, best first."""
    out: list[dict[str, Any]] = []
    added = sum(sum(m.composition.added.values()) for m in measured)
    tool_tokens = sum(m.composition.added["tool_results"] for m in measured)
    paid = sum(c.input_tokens for c in caches)
    slips = overall["slips"]
    if added and tool_tokens / added >= TOOL_SHARE_DOMINATES:
        tools: dict[str, int] = {}
        for m in measured:
            for t, v in m.composition.tools.items():
                tools[t] = tools.get(t, 0) + v
        top = sorted(tools.items(), key=lambda kv: -kv[1])[:3]
        names = ", ".join(f"{t} {v / tool_tokens:.0%}" for t, v in top)
        out.append(
            {
                "kind": "tool_output",
                "title": f"tool output is {tool_tokens / added:.0%} of the context added ({names})",
                "advice": "cap or summarise the output of these tools (head/tail, grep before cat, "
                "clear old tool results: ctxhealth recover --strategy clear)",
                "effect": {"value": tool_tokens, "unit": "tokens added by tool results"},
                "score": round(tool_tokens / added, 4),
                "tools": [{"tool": t, "tokens": v} for t, v in top],
                "evidence": _evidence(
                    ((m, m.composition.added["tool_results"]) for m in measured), "tokens of tool output"
                ),
            }
        )
    by_cause: dict[str, list[float]] = {}
    for c in caches:
        for cause, (n, tokens, usd) in c.breaks.items():
            cell = by_cause.setdefault(cause, [0, 0, 0.0])
            cell[0] += n
            cell[1] += tokens
            cell[2] += usd
    for cause, (n, tokens, usd) in sorted(by_cause.items(), key=lambda kv: -kv[1][1]):
        out.append(
            {
                "kind": "cache_break",
                "title": f"{int(n)} prompt-cache breaks caused by {cause} re-wrote {int(tokens):,} tokens "
                f"(${usd:,.2f})",
                "advice": _CACHE_ADVICE.get(cause, "keep the prompt prefix byte-stable between requests"),
                "effect": {"value": int(tokens), "unit": "prompt tokens re-written", "usd": round(usd, 4)},
                "score": round(tokens / paid, 4) if paid else 0.0,
                "cause": cause,
                "evidence": _evidence(
                    ((m, c.breaks.get(cause, [0, 0, 0])[1]) for m, c in zip(measured, caches, strict=True)),
                    "tokens re-written",
                ),
            }
        )
    out.extend(_instruction_suggestions(roots, paid, sum(c.requests for c in caches)))
    unit = "pct" if overall.get("change_point") is not None else "tokens"
    point = overall.get("change_point") or overall.get("token_change_point")
    if point is not None and slips:
        edge = point[f"at_{unit}"]
        where = f"{edge:g}% of the usable window" if unit == "pct" else f"{edge:,} tokens"
        extra_rate = (point["above"]["rate"] or 0.0) - (point["below"]["rate"] or 0.0)
        past = [
            (m, sum(1 for s in m.steps if (s.fill_pct if unit == "pct" else s.fill) >= edge))
            for m in measured
        ]
        steps_past = sum(n for _, n in past)
        extra = steps_past * extra_rate
        start = sum(m.steps[0].fill_pct if unit == "pct" else m.steps[0].fill for m in measured) / len(
            measured
        )
        advice = (
            f"compact or restart at about {where} (ctxhealth calibrate --zones writes this band into "
            "your profile)"
            if edge >= ROOM_FOR_COMPACTION * start
            else f"the rise is close to where sessions start (their first step's fill averages "
            f"{start:,.0f}{'%' if unit == 'pct' else ' tokens'}), where compacting cannot help: the "
            "steps above it differ in kind (longer, harder tasks), not only in how full the context is"
        )
        out.append(
            {
                "kind": "past_slip_rise",
                "title": f"slips rise from {where} "
                f"({point['below']['rate']:.1%} below, {point['above']['rate']:.1%} above); "
                f"{sum(1 for _, n in past if n)} sessions ran {steps_past} steps past it",
                "advice": advice,
                "effect": {"value": round(extra, 1), "unit": "extra slips expected above the rise"},
                "score": round(extra / slips, 4),
                f"at_{unit}": edge,
                "evidence": _evidence(((m, float(n)) for m, n in past), "steps past the rise"),
            }
        )
    reread = sum(m.composition.reread_tokens for m in measured)
    count = sum(m.rereads for m in measured)
    if count:
        out.append(
            {
                "kind": "rereads",
                "title": f"{count} re-reads of unchanged files added {reread:,} tokens",
                "advice": "keep what a file said in a note or the plan instead of reading it again; "
                "read a range instead of the whole file",
                "effect": {"value": reread, "unit": "tokens re-read"},
                "score": round(reread / added, 4) if added else 0.0,
                "evidence": _evidence(((m, m.composition.reread_tokens) for m in measured), "tokens re-read"),
            }
        )
    out.sort(key=lambda s: -s["score"])
    for rank, s in enumerate(out, start=1):
        s["rank"] = rank
    return out


_CACHE_ADVICE = {
    "idle": "idle gaps longer than the cache's time to live drop it: resume sooner, or use the 1-hour cache",
    "model-switch": "each model has its own cache: switching models mid-session re-sends the whole prompt",
    "system-change": "the system prompt changed between requests: keep dynamic content out of it",
    "prefix-change": "an early message changed: append to the conversation instead of editing it",
    "lookback": "more than about 20 blocks since the last cache breakpoint: add breakpoints more often",
}


def _instruction_suggestions(roots: Sequence[Path], paid: int, requests: int) -> list[dict[str, Any]]:
    from ctxhealth.audit.instructions import find_instruction_files, read_instruction_file

    out = []
    for path in find_instruction_files(roots):
        info = read_instruction_file(path)
        if info is None or info.lines <= info.max_lines:
            continue
        sent = info.tokens * requests
        out.append(
            {
                "kind": "instruction_file",
                "title": f"{info.path} has {info.lines} lines "
                f"(the limit for {info.kind} is {info.max_lines})",
                "advice": "move what is not needed on every request into files read on demand",
                "effect": {"value": sent, "unit": "tokens sent with these sessions' requests (estimated)"},
                "score": round(sent / paid, 4) if paid else 0.0,
                "evidence": [{"path": info.path, "figure": info.lines, "unit": "lines"}],
            }
        )
    return out


def build_document(
    measured: Sequence[SessionSteps],
    caches: Sequence[_Cache],
    filter: InsightsFilter,
    roots: Sequence[Path] = (),
    left_out: int = 0,
) -> dict[str, Any]:
    """The insights document of measured sessions (see the module docstring)."""
    overall = curve(measured)
    kinds = dict.fromkeys(SLIP_KINDS, 0)
    for m in measured:
        for k, v in m.slip_counts.items():
            kinds[k] += v
    return {
        "schema_version": SCHEMA_VERSION,
        "step": STEP_DEFINITION,
        "filter": filter.to_dict(),
        "sessions_left_out": left_out,
        **overall,
        "slip_events": kinds,
        "snowball": snowball([[s.slipped for s in m.steps] for m in measured]),
        "by_model": _grouped(measured, "model"),
        "by_family": _grouped(measured, "family"),
        "by_agent": _grouped(measured, "agent"),
        "by_project": _grouped(measured, "project"),
        "composition": composition(measured),
        "suggestions": suggestions(measured, caches, overall, roots),
        "per_session": [
            {
                "path": m.name,
                "session_id": m.session_id,
                "agent": m.agent,
                "model": m.model,
                "project": m.project,
                "steps": len(m.steps),
                "slipped_steps": m.slipped_steps,
                "peak_fill": max(s.fill for s in m.steps),
                "peak_pct": max(s.fill_pct for s in m.steps),
                "usable_window": m.usable_window,
            }
            for m in measured
        ],
    }


def slip_rises(measured: Sequence[SessionSteps]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Per model family, where the slip rate rises (the token change-point), as profile entries
    (:class:`~ctxhealth.policy.profile.SlipRise`, families with a change-point only) and as one
    summary row per family (``at_tokens`` None when no fill separates the intervals)."""
    from ctxhealth.policy.profile import SlipRise

    families: dict[str, list[SessionSteps]] = {}
    for m in measured:
        families.setdefault(m.family, []).append(m)
    rises: dict[str, Any] = {}
    rows: list[dict[str, Any]] = []
    for family, items in sorted(families.items()):
        points = _points(items, tokens=True)
        point = change_point(points, TOKEN_EDGES, "tokens")
        row: dict[str, Any] = {
            "family": family,
            "sessions": len(items),
            "steps": len(points),
            "slips": sum(1 for _, s in points if s),
            "at_tokens": None if point is None else point["at_tokens"],
        }
        if point is not None:
            below, above = point["below"], point["above"]
            row |= {"below": below, "above": above}
            rises[family] = SlipRise(
                at_tokens=int(point["at_tokens"]),
                steps_below=below["steps"],
                slips_below=below["slips"],
                steps_above=above["steps"],
                slips_above=above["slips"],
                sessions=len(items),
            )
        rows.append(row)
    return rises, rows
