"""Cost of the audited responses per request, session, model, project, day and ISO week, and its trend.

Prices come from the model registry (:mod:`ctxhealth.accounting.registry`) through the priced
responses (:mod:`ctxhealth.audit.responses`). Across sessions a response id is counted once (a
resumed Claude Code session repeats earlier responses in its new file): the first session read
that holds it gets it. The project of a session is the folder its file sits in (a Claude Code
project folder under ``~/.claude/projects``). Days and ISO weeks are UTC; responses without a
timestamp count in the totals but in no day or week.

The trend compares each ISO week with the calendar week before it; a week whose cost grew more
than ``growth`` (20%) over a week with some cost is an alert. Each week keeps its latest request
as the evidence a finding points at.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol, TypeVar

from ctxhealth.audit.findings import Evidence
from ctxhealth.audit.responses import Response

TREND_GROWTH = 0.20


class Priced(Protocol):
    """What the ledger reads of a priced response: an audit :class:`Response`, or a row read back
    from the fleet's ``responses`` table."""

    @property
    def response_id(self) -> str | None: ...
    @property
    def line(self) -> int | None: ...
    @property
    def model(self) -> str | None: ...
    @property
    def time(self) -> datetime | None: ...
    @property
    def usd(self) -> float | None: ...
    @property
    def prompt_tokens(self) -> int: ...
    @property
    def cache_read_tokens(self) -> int: ...


P = TypeVar("P", bound=Priced)


def iso_week(day: date) -> str:
    """``YYYY-Www`` of ``day``."""
    year, week, _ = day.isocalendar()
    return f"{year}-W{week:02d}"


def previous_week(week: str) -> str:
    """The ISO week before ``week`` (``YYYY-Www``)."""
    year, number = week.split("-W")
    monday = date.fromisocalendar(int(year), int(number), 1)
    return iso_week(monday - timedelta(days=7))


def project_of(path: str, cwd: str | None = None) -> str:
    """The project a session belongs to: the name of the directory the agent ran in when the log says
    (Codex ``session_meta.cwd``, Gemini CLI's project), else the name of the folder its file is in
    (Claude Code keeps one folder per project)."""
    if cwd:
        name = Path(cwd.rstrip("/\\")).name
        if name:
            return name
    parent = Path(path).parent.name
    return parent or "."


@dataclass(frozen=True, slots=True)
class WeekTrend:
    """One ISO week's cost and its growth over the week before (None when that week cost nothing)."""

    week: str
    usd: float
    previous_usd: float
    growth: float | None
    alert: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "week": self.week,
            "usd": self.usd,
            "previous_usd": self.previous_usd,
            "growth": self.growth,
            "alert": self.alert,
        }


@dataclass(slots=True)
class CostLedger:
    """Running cost totals over every audited session (each response id once)."""

    usd: float = 0.0
    requests: int = 0
    unpriced: int = 0
    read_tokens: int = 0
    prompt_tokens: int = 0
    by_model: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    by_project: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    by_day: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    by_week: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    seen: set[str] = field(default_factory=set)
    week_evidence: dict[str, Evidence] = field(default_factory=dict)
    _week_time: dict[str, tuple[datetime, str]] = field(default_factory=dict)
    unpriced_evidence: Evidence | None = None

    def add(self, path: str, responses: Iterable[P], *, project: str | None = None) -> list[P]:
        """Count ``responses`` of the session at ``path`` (whose agent ran in ``project``, when the log
        says); returns those not counted before."""
        project = project_of(path, project)
        new = []
        for response in responses:
            rid = response.response_id
            if rid is not None:
                if rid in self.seen:
                    continue
                self.seen.add(rid)
            new.append(response)
            self.requests += 1
            self.read_tokens += response.cache_read_tokens
            self.prompt_tokens += response.prompt_tokens
            where = Evidence(path, response.line, response.response_id)
            if response.usd is None:
                self.unpriced += 1
                self.unpriced_evidence = self.unpriced_evidence or where
                continue
            usd = response.usd
            self.usd += usd
            self.by_model[response.model or "unknown"] += usd
            self.by_project[project] += usd
            if response.time is not None:
                day = response.time.date()
                self.by_day[day.isoformat()] += usd
                week = iso_week(day)
                self.by_week[week] += usd
                latest = self.week_evidence.get(week)
                if latest is None or (response.time, where.path) >= self._week_time[week]:
                    self.week_evidence[week] = where
                    self._week_time[week] = (response.time, where.path)
        return new

    @property
    def hit_rate(self) -> float | None:
        """Cache-read tokens over prompt tokens of every response counted (None without a prompt)."""
        return self.read_tokens / self.prompt_tokens if self.prompt_tokens else None

    def trend(self, growth: float = TREND_GROWTH) -> list[WeekTrend]:
        """Every week with cost, oldest first, with its growth over the calendar week before."""
        out = []
        for week in sorted(self.by_week):
            usd = self.by_week[week]
            before = self.by_week.get(previous_week(week), 0.0)
            rate = (usd - before) / before if before > 0 else None
            out.append(WeekTrend(week, usd, before, rate, rate is not None and rate > growth))
        return out

    def to_dict(self, growth: float = TREND_GROWTH) -> dict[str, Any]:
        return {
            "usd": self.usd,
            "requests": self.requests,
            "unpriced_requests": self.unpriced,
            "by_model": dict(sorted(self.by_model.items())),
            "by_project": dict(sorted(self.by_project.items())),
            "by_day": dict(sorted(self.by_day.items())),
            "by_week": dict(sorted(self.by_week.items())),
            "trend": [t.to_dict() for t in self.trend(growth)],
        }


def session_cost(responses: Iterable[Response]) -> dict[str, Any]:
    """``{usd, by_model, requests, unpriced_requests}`` of one session's responses."""
    by_model: dict[str, float] = defaultdict(float)
    usd = 0.0
    unpriced = 0
    count = 0
    for response in responses:
        count += 1
        if response.usd is None:
            unpriced += 1
            continue
        usd += response.usd
        by_model[response.model or "unknown"] += response.usd
    return {
        "usd": usd if count > unpriced or count == 0 else None,
        "by_model": dict(sorted(by_model.items())),
        "requests": count,
        "unpriced_requests": unpriced,
    }


def response_rows(responses: Iterable[Response]) -> list[dict[str, Any]]:
    """One row per request: where it is, its model, prompt, cache reads / writes, hit rate and cost."""
    return [
        {
            "response_id": r.response_id,
            "line": r.line,
            "thread": r.thread,
            "time": None if r.time is None else r.time.isoformat(),
            "model": r.model,
            "prompt_tokens": r.prompt_tokens,
            "cache_read_tokens": r.usage.cache_read_tokens,
            "cache_write_tokens": r.usage.cache_creation_tokens,
            "output_tokens": r.usage.output_tokens,
            "hit_rate": r.hit_rate,
            "usd": r.usd,
        }
        for r in responses
    ]
