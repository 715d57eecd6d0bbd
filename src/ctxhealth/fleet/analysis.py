"""One session, analysed once into the rows of every fleet table: :func:`analyse_session`.

The monitor runs over the session's messages once (as ``check`` does); at each model response the
accounting's fill for that turn is joined with the monitor's assessment at the same message, which
gives the ``turns`` rows (``check --json --series`` prints the same series), the ``decisions``
rows (the turns whose decision is not ``continue``) and the session's first unhealthy turn. Tool
calls are counted exactly as the accounting counts them (each call id once, sub-agents included),
so the table's row count equals ``check``'s ``tool_calls``. Costs are split by the model that
produced each response, at that model's list prices, so a session's rows add up to its
``cost_usd``.

Everything about prices and the prompt cache comes from the audit, computed once per session:
its priced responses (:func:`ctxhealth.audit.session_responses`) are the ``responses`` rows and,
summed per model, the ``costs`` rows; its cache report (:func:`ctxhealth.audit.audit_cache`)
gives the session's ``cache_hit_rate`` and the ``cache_breaks`` rows, so the tables list the same
breaks, causes and costs as ``ctxhealth audit --json``.

Waste is defined here as the prompt tokens sent from the first turn whose decision was unhealthy
on: the work done in a context the policy wanted to recover.

Timeline events (compactions, tool failures, drift, indicators, decisions, cache breaks) are kept for the HTML
report; they are not a table of their own (each is a row or a column elsewhere).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from ctxhealth.accounting.cost import iter_threads
from ctxhealth.accounting.fill import SessionAccount, account_session
from ctxhealth.accounting.registry import ModelRegistry
from ctxhealth.audit.cache import CacheReport, audit_cache
from ctxhealth.audit.responses import Response, session_responses
from ctxhealth.failures import is_failure
from ctxhealth.model import Message, Session, ToolCall, ToolResult
from ctxhealth.monitor import Assessment, Monitor
from ctxhealth.policy.profile import Profile

Row = tuple[Any, ...]

SNIPPET_CHARS = 240
"""Characters of a message kept for a timeline event's hover text."""


@dataclass(frozen=True, slots=True)
class TimelineEvent:
    """A marker on a session's timeline: what happened at ``message_index`` and why."""

    kind: str  # compaction | tool_failure | drift | indicators | decision | cache_break
    message_index: int
    turn: int | None
    label: str
    detail: str
    evidence: tuple[int, ...] = ()


@dataclass(slots=True)
class SessionRows:
    """The per-session rows and figures gathered in the one pass over the messages."""

    turns: list[Row] = field(default_factory=list)
    decisions: list[Row] = field(default_factory=list)
    tool_calls: list[Row] = field(default_factory=list)
    costs: list[Row] = field(default_factory=list)
    cache_breaks: list[Row] = field(default_factory=list)
    responses: list[Row] = field(default_factory=list)
    events: list[TimelineEvent] = field(default_factory=list)
    first_unhealthy_turn: int | None = None
    first_unhealthy_at: datetime | None = None
    max_pressure: float = 0.0
    waste_tokens: int = 0
    prompt_tokens: int = 0
    cache_hit_rate: float | None = None


@dataclass(slots=True)
class SessionAnalysis:
    """Everything the fleet tables, ``check --series`` and the HTML report need about one session."""

    session: Session
    account: SessionAccount
    assessed: Assessment | None
    """The monitor's last assessment; None at the accounting level (``health=False``)."""
    project: str
    started_at: datetime | None
    ended_at: datetime | None
    rows: SessionRows
    responses: list[Response] = field(default_factory=list)
    """The audit's priced responses (what the cost ledger of a report counts)."""
    cache: CacheReport | None = None
    """The audit's cache report: hit rates, breaks and what they cost."""

    @property
    def final(self) -> Assessment:
        """The monitor's last assessment (an analysis made with ``health=True``)."""
        if self.assessed is None:
            raise ValueError("an accounting-level analysis (health=False) has no assessment")
        return self.assessed

    @property
    def week(self) -> date | None:
        return week_of(self.started_at)

    def series(self) -> list[dict[str, Any]]:
        """The per-turn series ``check --json --series`` prints: turn, fill, pressure, zone, action."""
        return [
            {
                "turn": r[0],
                "message_index": r[1],
                "fill": r[3],
                "fill_source": r[4],
                "pressure": r[8],
                "zone": r[9],
                "risk": r[11],
                "action": r[12],
            }
            for r in self.rows.turns
        ]

    def session_row(self, path: str, file_bytes: int) -> Row:
        a, f, s, r = self.account, self.assessed, self.session, self.rows
        health: Row = (
            (None,) * 11
            if f is None
            else (
                f.zone.value,
                round(f.pressure, 4),
                round(r.max_pressure, 4),
                None if f.risk is None else round(f.risk, 4),
                f.action.value,
                f.rule.value,
                "\n".join(f.reasons),
                f.healthy,
                r.first_unhealthy_turn,
                r.first_unhealthy_at,
                r.waste_tokens,
            )
        )
        return (
            path,
            s.session_id,
            s.format.value,
            self.project,
            a.model.id,
            a.model.tier.value,
            self.started_at,
            self.ended_at,
            self.week,
            len(a.turns),
            a.window,
            a.usable_window,
            a.current,
            a.peak,
            round(100.0 * a.peak / a.window, 1) if a.window > 0 else 0.0,
            a.source.value,
            len(a.compactions),
            a.tool_calls,
            a.tool_errors,
            None if a.cost_usd is None else round(a.cost_usd, 6),
            r.cache_hit_rate,
            *health,
            r.prompt_tokens,
            len(s.sidechains),
            len(s.warnings),
            file_bytes,
        )

    def table_rows(self, path: str, file_bytes: int) -> dict[str, list[Row]]:
        """Rows of every session table, each prefixed with ``path`` (the key)."""
        key = (path,)
        r = self.rows
        return {
            "sessions": [self.session_row(path, file_bytes)],
            "turns": [key + row for row in r.turns],
            "decisions": [key + row for row in r.decisions],
            "tool_calls": [key + row for row in r.tool_calls],
            "cache_breaks": [key + row for row in r.cache_breaks],
            "responses": [key + row for row in r.responses],
            "costs": [key + row for row in r.costs],
        }


def parse_time(value: str | None) -> datetime | None:
    """An ISO-8601 timestamp as an aware UTC datetime (naive ones are taken as UTC); None if unreadable."""
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def week_of(moment: datetime | None) -> date | None:
    """The Monday of ``moment``'s ISO week."""
    if moment is None:
        return None
    day = moment.date()
    return day - timedelta(days=day.weekday())


def project_of(path: str) -> str:
    """The folder a transcript is in (Claude Code keeps one folder per project)."""
    parent = Path(path).parent.name
    return parent or "."


def _span(messages: Iterable[Message]) -> tuple[datetime | None, datetime | None]:
    first = last = None
    for m in messages:
        if m.timestamp:
            t = parse_time(m.timestamp)
            if t is not None:
                if first is None:
                    first = t
                last = t
    return first, last


def _snippet(text: str, limit: int = SNIPPET_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _json_len(value: Any) -> int:
    if isinstance(value, str):
        return len(value)
    try:
        import orjson

        return len(orjson.dumps(value, default=str))
    except TypeError:
        return len(repr(value))


def _tool_rows(
    session: Session, turn_of: Callable[[int], int | None]
) -> tuple[list[Row], list[TimelineEvent]]:
    """Tool calls of every thread, each id once (as the accounting counts them), joined with their
    results; and a timeline event for each failed result in the main thread."""
    results: dict[str, ToolResult] = {}
    for thread in iter_threads(session):
        for message in thread.messages:
            for block in message.blocks:
                if isinstance(block, ToolResult) and block.tool_call_id and block.tool_call_id not in results:
                    results[block.tool_call_id] = block
    rows: list[Row] = []
    names: dict[str, str] = {}
    seen: set[str] = set()
    for number, thread in enumerate(iter_threads(session)):
        main = thread is session
        for i, message in enumerate(thread.messages):
            for block in message.blocks:
                if not isinstance(block, ToolCall):
                    continue
                if block.id:
                    if block.id in seen:
                        continue
                    seen.add(block.id)
                    names[block.id] = block.name
                result = results.get(block.id) if block.id else None
                failed = None if result is None else is_failure(result)
                rows.append(
                    (
                        number,
                        i,
                        turn_of(i) if main else None,
                        block.id or "",
                        block.name,
                        failed,
                        _json_len(block.input),
                        len(result.text) if result is not None else 0,
                    )
                )
    events: list[TimelineEvent] = []
    reported: set[str] = set()
    for i, message in enumerate(session.messages):
        for block in message.tool_results:
            if not is_failure(block) or (block.tool_call_id and block.tool_call_id in reported):
                continue
            reported.add(block.tool_call_id)
            tool = names.get(block.tool_call_id, "tool")
            exit_note = f" (exit {block.exit_code})" if block.exit_code not in (None, 0) else ""
            events.append(
                TimelineEvent(
                    "tool_failure", i, turn_of(i), f"{tool} failed{exit_note}", _snippet(block.text), (i,)
                )
            )
    return rows, events


def _cost_rows(responses: Iterable[Response], project: str, week: date | None) -> list[Row]:
    """Usage and cost per model: the audit's priced responses summed (a model's cost is NULL when
    its prices are unknown)."""
    totals: dict[str, list[int]] = {}
    costs: dict[str, float | None] = {}
    for r in responses:
        usage = r.usage
        model_id = r.model or "unknown"
        t = totals.setdefault(model_id, [0, 0, 0, 0, 0])
        t[0] += 1
        t[1] += usage.input_tokens
        t[2] += usage.cache_creation_tokens
        t[3] += usage.cache_read_tokens
        t[4] += usage.output_tokens
        so_far = costs.get(model_id, 0.0)
        costs[model_id] = None if r.usd is None or so_far is None else so_far + r.usd
    rows: list[Row] = []
    for model_id, (n, inp, cw, cr, out) in sorted(totals.items()):
        cost = costs[model_id]
        rows.append((model_id, project, week, n, inp, cw, cr, out, None if cost is None else round(cost, 6)))
    return rows


def _response_rows(responses: Iterable[Response]) -> list[Row]:
    return [
        (
            r.thread,
            r.position,
            r.line,
            r.response_id,
            r.time,
            r.model or "unknown",
            r.usage.input_tokens,
            r.usage.cache_creation_tokens,
            r.usage.cache_read_tokens,
            r.usage.output_tokens,
            None if r.usd is None else round(r.usd, 9),
        )
        for r in responses
    ]


def _cache_break_rows(cache: CacheReport, turn_at: dict[int, int]) -> tuple[list[Row], list[TimelineEvent]]:
    """The audit's cache breaks as rows, and a timeline event for each one in the main thread."""
    rows: list[Row] = []
    events: list[TimelineEvent] = []
    for b in cache.breaks:
        r = b.response
        turn = turn_at.get(r.position) if r.thread == 0 else None
        rows.append(
            (
                r.thread,
                turn,
                r.position,
                r.line,
                r.response_id,
                str(b.cause),
                b.detail,
                b.previous.usage.cache_read_tokens,
                r.usage.cache_read_tokens,
                b.tokens,
                None if b.usd is None else round(b.usd, 9),
            )
        )
        if r.thread == 0:
            cost = "no prices" if b.usd is None else f"${b.usd:,.4f}"
            events.append(
                TimelineEvent(
                    "cache_break",
                    r.position,
                    turn,
                    f"cache break: {b.cause}",
                    f"{b.detail}\ncached prefix {b.previous.usage.cache_read_tokens:,} → "
                    f"{r.usage.cache_read_tokens:,} tokens; {b.tokens:,} tokens lost; cost {cost}",
                    (r.position,),
                )
            )
    return rows, events


def analyse_session(
    session: Session,
    *,
    registry: ModelRegistry | None = None,
    profile: Profile | None = None,
    model: str | None = None,
    account: SessionAccount | None = None,
    events: bool = True,
    health: bool = True,
) -> SessionAnalysis:
    """Account and assess ``session`` once; rows of every table and the timeline events.

    ``model`` accounts every response as that model (as ``check --model``). ``events=False`` skips
    what only the HTML report reads (tool-failure snippets, drift and indicator markers).
    ``health=False`` is the accounting level: no monitor runs, so there are no ``turns`` or
    ``decisions`` rows, the session's health columns are NULL and ``final`` is None; every other
    row is the same as with ``health=True``.
    """
    registry = registry or ModelRegistry.default()
    account = account or account_session(session, registry=registry, model=model)
    turn_at = {t.message_index: t for t in account.turns}
    turn_indices = sorted(turn_at)
    started, ended = _span(session.messages)
    project = project_of(session.path)
    result = SessionRows()
    messages = session.messages
    state = {"drifting": False, "raised": False}

    def observe_turn(assessment: Assessment) -> None:
        # (a function of its own so that no reference to the assessment outlives its turn: a held
        # assessment makes the monitor snapshot every detector before the next message)
        index = assessment.index
        t = turn_at.get(index)
        if t is None:
            return
        message = messages[index]
        usage = message.usage
        stamp = parse_time(message.timestamp)
        action = assessment.action.value
        drift = monitor.drift.similarity
        fired = monitor.indicators.fired_count() + monitor.repetition.repeated_fired
        result.turns.append(
            (
                t.turn,
                index,
                stamp,
                t.tokens,
                t.source.value,
                usage.output_tokens if usage is not None else 0,
                usage.cache_read_tokens if usage is not None else 0,
                usage.cache_creation_tokens if usage is not None else 0,
                round(assessment.pressure, 4),
                assessment.zone.value,
                assessment.base_zone.value,
                None if assessment.risk is None else round(assessment.risk, 4),
                action,
                assessment.rule.value,
                round(drift, 4),
                int(fired),
            )
        )
        result.prompt_tokens += t.tokens
        if assessment.pressure > result.max_pressure:
            result.max_pressure = assessment.pressure
        healthy = assessment.healthy
        if not healthy and result.first_unhealthy_turn is None:
            result.first_unhealthy_turn = t.turn
            result.first_unhealthy_at = stamp
        if result.first_unhealthy_turn is not None:
            result.waste_tokens += t.tokens
        if action != "continue":
            reasons = "\n".join(assessment.reasons)
            result.decisions.append((t.turn, index, stamp, action, assessment.rule.value, healthy, reasons))
            if events:
                result.events.append(TimelineEvent("decision", index, t.turn, action, reasons, (index,)))
        if events:
            now_drifting = monitor.drift.drifting
            if now_drifting and not state["drifting"]:
                result.events.append(
                    TimelineEvent(
                        "drift",
                        index,
                        t.turn,
                        f"off task: on-task {drift:.2f}",
                        "output drifted from the instruction",
                        (index,),
                    )
                )
            state["drifting"] = now_drifting
            now_raised = assessment.zone is not assessment.base_zone
            if now_raised and not state["raised"]:
                names = monitor.indicators.fired()
                if monitor.repetition.repeated_fired:
                    names.insert(0, "repeated tool calls")
                result.events.append(
                    TimelineEvent(
                        "indicators",
                        index,
                        t.turn,
                        f"{len(names)} indicators",
                        ", ".join(names) + f": zone {assessment.base_zone.value} → {assessment.zone.value}",
                        (index,),
                    )
                )
            state["raised"] = now_raised

    final: Assessment | None = None
    if health:
        monitor = Monitor(model or session.model, profile, registry=registry)
        seen = False
        # assessed at each response (the turns' rows), and once after the last message
        for index in monitor.update_session(session):
            seen = True
            if index in turn_at:
                observe_turn(monitor.assess())
        # a session without messages yields no assessment: observe_session gives "nothing seen yet"
        final = monitor.assess() if seen else monitor.observe_session(session)
    else:
        result.prompt_tokens = sum(t.tokens for t in account.turns)
    responses = session_responses(session, registry, model=model)
    cache = audit_cache(session, responses)
    result.cache_hit_rate = None if cache.hit_rate is None else round(cache.hit_rate, 4)

    def turn_of(i: int) -> int | None:
        # the 0-based turn of the latest response at or before message i
        k = bisect_right(turn_indices, i)
        return turn_at[turn_indices[k - 1]].turn if k else None

    result.tool_calls, failures = _tool_rows(session, turn_of)
    result.costs = _cost_rows(responses, project, week_of(started))
    result.responses = _response_rows(responses)
    result.cache_breaks, break_events = _cache_break_rows(cache, {i: t.turn for i, t in turn_at.items()})
    if events:
        result.events.extend(failures)
        result.events.extend(break_events)
        for c in account.compactions:
            before = "?" if c.pre_tokens is None else f"{c.pre_tokens:,}"
            after = "?" if c.post_tokens is None else f"{c.post_tokens:,}"
            trigger = f" ({c.trigger})" if c.trigger else ""
            result.events.append(
                TimelineEvent(
                    "compaction",
                    c.message_index,
                    turn_of(c.message_index),
                    f"compaction{trigger}",
                    f"{before} → {after} tokens: " + _snippet(messages[c.message_index].text),
                    (c.message_index,),
                )
            )
        result.events.sort(key=lambda e: (e.message_index, e.kind))
    return SessionAnalysis(session, account, final, project, started, ended, result, responses, cache)
