"""One session, analysed once into typed records: :func:`analyse_session`.

The Monitor runs over the session's messages once (as ``check`` does) and gives a
:class:`~ctxhealth.analysis.records.TurnRecord` at each model response
(:mod:`ctxhealth.analysis.turns`); the turns whose decision is not ``continue`` are the session's
decisions, and the first unhealthy one starts the "sent after unhealthy" count. Tool calls are
counted exactly as the accounting counts them (each call id once, sub-agents included), so their
number equals ``check``'s ``tool_calls``. Costs are split by the model that produced each
response, at that model's list prices, so a session's cost lines add up to its ``cost_usd``.

Everything about prices and the prompt cache comes from the audit, computed once per session:
its priced responses (:func:`ctxhealth.audit.session_responses`, priced once for the account's
cost too) and, summed per model, the cost
lines; its cache report (:func:`ctxhealth.audit.audit_cache`) gives the session's
``cache_hit_rate`` and the cache breaks, so they list the same breaks, causes and costs as
``ctxhealth audit --json``.

``waste_tokens`` (shown as "sent after unhealthy") is the prompt tokens sent from the first turn
whose decision was unhealthy on: the work done in a context the policy wanted to recover.

Timeline events (compactions, tool failures, drift, indicators, decisions, cache breaks) are kept
for the HTML report. ``check --json --series``, the report and the fleet tables all read this one
analysis; the fleet maps its records to columns by name.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

from ctxhealth.accounting.cost import priced_responses
from ctxhealth.accounting.fill import (
    CountedCall,
    SessionAccount,
    account_session,
    counted_tools,
    session_model_id,
)
from ctxhealth.accounting.registry import ModelRegistry
from ctxhealth.accounting.tokens import input_chars
from ctxhealth.analysis.records import (
    CacheBreakRow,
    CostRow,
    ResponseRow,
    SessionRow,
    ToolCallRow,
    TurnRecord,
)
from ctxhealth.analysis.turns import parse_time, turn_records
from ctxhealth.audit.cache import CacheReport, audit_cache
from ctxhealth.audit.responses import Response, responses_of
from ctxhealth.failures import Verdicts
from ctxhealth.model import Message, Session, ToolResult
from ctxhealth.monitor import Assessment, Monitor
from ctxhealth.policy.profile import Profile

SNIPPET_CHARS = 240
"""Characters of a message kept for a timeline event's hover text."""

SERIES_FIELDS = ("turn", "message_index", "fill", "fill_source", "pressure", "zone", "risk", "action")
"""The fields of a turn that ``check --json --series`` prints (``fill_source`` and ``message_index``
included so a series can be joined with the log)."""


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
    """The per-session records and figures gathered in the one pass over the messages."""

    turns: list[TurnRecord] = field(default_factory=list)
    tool_calls: list[ToolCallRow] = field(default_factory=list)
    costs: list[CostRow] = field(default_factory=list)
    cache_breaks: list[CacheBreakRow] = field(default_factory=list)
    responses: list[ResponseRow] = field(default_factory=list)
    events: list[TimelineEvent] = field(default_factory=list)
    first_unhealthy_turn: int | None = None
    first_unhealthy_at: datetime | None = None
    max_pressure: float = 0.0
    waste_tokens: int = 0
    prompt_tokens: int = 0
    cache_hit_rate: float | None = None

    @property
    def decisions(self) -> list[TurnRecord]:
        """The turns whose decision is not ``continue``."""
        return [t for t in self.turns if t.action != "continue"]


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
        """The per-turn series ``check --json --series`` prints (:data:`SERIES_FIELDS` of each turn)."""
        return [{name: getattr(t, name) for name in SERIES_FIELDS} for t in self.rows.turns]

    def session_row(self, path: str, file_bytes: int) -> SessionRow:
        """The session's record, keyed ``path``."""
        a, f, s, r = self.account, self.assessed, self.session, self.rows
        return SessionRow(
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
            None if f is None else f.zone.value,
            None if f is None else round(f.pressure, 4),
            None if f is None else round(r.max_pressure, 4),
            None if f is None or f.risk is None else round(f.risk, 4),
            None if f is None else f.action.value,
            None if f is None else f.rule.value,
            None if f is None else "\n".join(f.reasons),
            None if f is None else f.healthy,
            None if f is None else r.first_unhealthy_turn,
            None if f is None else r.first_unhealthy_at,
            None if f is None else r.waste_tokens,
            r.prompt_tokens,
            len(s.sidechains),
            len(s.warnings),
            file_bytes,
        )


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


def _span(messages: Sequence[Message]) -> tuple[datetime | None, datetime | None]:
    """The first and the last readable message timestamps: read from each end, not every one."""
    first = next((t for m in messages if m.timestamp and (t := parse_time(m.timestamp)) is not None), None)
    if first is None:
        return None, None
    last = next(t for m in reversed(messages) if m.timestamp and (t := parse_time(m.timestamp)) is not None)
    return first, last


def _snippet(text: str, limit: int = SNIPPET_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _tool_rows(
    calls: Sequence[CountedCall],
    session: Session,
    turn_of: Callable[[int], int | None],
    events: bool,
    failed: Callable[[ToolResult], bool],
    results: Mapping[str, ToolResult],
) -> tuple[list[ToolCallRow], list[TimelineEvent]]:
    """The tool calls the accounting counted (``calls``: each id once, every thread), joined with
    their ``results`` (the result answering each call id); and (``events``) a timeline event for
    each failed result in the main thread. Results are judged by ``failed`` (the session's
    :class:`~ctxhealth.failures.Verdicts`)."""
    rows: list[ToolCallRow] = []
    for number, i, call in calls:
        result = results.get(call.id) if call.id else None
        rows.append(
            ToolCallRow(
                number,
                i,
                turn_of(i) if number == 0 else None,
                call.id or "",
                call.name,
                None if result is None else failed(result),
                input_chars(call.input),
                len(result.text) if result is not None else 0,
            )
        )
    found: list[TimelineEvent] = []
    if not events:
        return rows, found
    names = {call.id: call.name for _, _, call in calls if call.id}
    reported: set[str] = set()
    for i, message in enumerate(session.messages):
        for block in message.tool_results:
            if not failed(block) or (block.tool_call_id and block.tool_call_id in reported):
                continue
            reported.add(block.tool_call_id)
            tool = names.get(block.tool_call_id, "tool")
            exit_note = f" (exit {block.exit_code})" if block.exit_code not in (None, 0) else ""
            found.append(
                TimelineEvent(
                    "tool_failure", i, turn_of(i), f"{tool} failed{exit_note}", _snippet(block.text), (i,)
                )
            )
    return rows, found


def _cost_rows(responses: Iterable[Response], project: str, week: date | None) -> list[CostRow]:
    """Usage and cost per model: the audit's priced responses summed (a model's cost is None when
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
    rows: list[CostRow] = []
    for model_id, (n, inp, cw, cr, out) in sorted(totals.items()):
        cost = costs[model_id]
        rows.append(
            CostRow(model_id, project, week, n, inp, cw, cr, out, None if cost is None else round(cost, 6))
        )
    return rows


def _response_rows(responses: Iterable[Response]) -> list[ResponseRow]:
    return [
        ResponseRow(
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


def _cache_break_rows(
    cache: CacheReport, turn_at: dict[int, int], events: bool
) -> tuple[list[CacheBreakRow], list[TimelineEvent]]:
    """The audit's cache breaks as rows, and (``events``) a timeline event for each one in the
    main thread."""
    rows: list[CacheBreakRow] = []
    found: list[TimelineEvent] = []
    for b in cache.breaks:
        r = b.response
        turn = turn_at.get(r.position) if r.thread == 0 else None
        rows.append(
            CacheBreakRow(
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
        if events and r.thread == 0:
            cost = "no prices" if b.usd is None else f"${b.usd:,.4f}"
            found.append(
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
    return rows, found


def _turn_events(turns: Iterable[TurnRecord]) -> list[TimelineEvent]:
    """Decision markers, and a marker where the drift detector starts drifting and where the zone
    is first raised by the indicators (the Monitor's own reason says which fired)."""
    out: list[TimelineEvent] = []
    drifting = raised = False
    for t in turns:
        index = t.message_index
        if t.action != "continue":
            out.append(TimelineEvent("decision", index, t.turn, t.action, t.reasons, (index,)))
        if t.drifting and not drifting:
            out.append(
                TimelineEvent(
                    "drift",
                    index,
                    t.turn,
                    f"off task: on-task {t.drift:.2f}",
                    "output drifted from the instruction",
                    (index,),
                )
            )
        drifting = t.drifting
        now_raised = t.zone != t.base_zone
        if now_raised and not raised:
            why = next((r for r in t.reasons.splitlines() if r.startswith("zone raised ")), "")
            out.append(
                TimelineEvent("indicators", index, t.turn, f"{t.indicators} indicators", why, (index,))
            )
        raised = now_raised
    return out


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
    """Account and assess ``session`` once; its records and the timeline events.

    ``model`` accounts every response as that model (as ``check --model``). ``events=False`` skips
    what only the HTML report reads (tool-failure snippets, drift and indicator markers).
    ``health=False`` is the accounting level: no monitor runs, so there are no turn records, the
    session's health fields are None and ``final`` is None; every other record is the same as with
    ``health=True``.
    """
    registry = registry or ModelRegistry.default()
    # each tool result judged once: by the accounting (when it is made here), the Monitor and the
    # tool-call rows
    verdicts = Verdicts()
    # and each response priced once: for the account's cost and the audit's responses
    priced = priced_responses(session, registry, model=model)
    account = account or account_session(
        session, registry=registry, model=model, verdicts=verdicts, priced=priced
    )
    turn_at = {t.message_index: t for t in account.turns}
    turn_indices = sorted(turn_at)
    started, ended = _span(session.messages)
    project = project_of(session.path)
    result = SessionRows()

    final: Assessment | None = None
    if health:
        monitor = Monitor(model or session.model, profile, registry=registry)
        monitor.judge_with(verdicts)
        # the Monitor accounts the session as this account did when no model is forced and the log
        # names its own model or none (a Monitor without a model takes the session's, as this
        # account did); else it accounts again, with the model it was given
        same = model is None and (session.model is None or session_model_id(session) == session.model)
        result.turns = list(turn_records(monitor, session, turn_at, account if same else None))
        # a session without messages yields no assessment: observe_session gives "nothing seen yet"
        final = monitor.last if monitor.last is not None else monitor.observe_session(session)
        _fold_turns(result)
    else:
        result.prompt_tokens = sum(t.tokens for t in account.turns)
    responses = responses_of(priced)
    cache = audit_cache(session, responses)
    result.cache_hit_rate = None if cache.hit_rate is None else round(cache.hit_rate, 4)

    def turn_of(i: int) -> int | None:
        # the 0-based turn of the latest response at or before message i
        k = bisect_right(turn_indices, i)
        return turn_at[turn_indices[k - 1]].turn if k else None

    calls: Sequence[CountedCall]
    answers: Mapping[str, ToolResult]
    if account.calls is not None and account.answers is not None:
        calls, answers = account.calls, account.answers
    else:
        calls, answers = counted_tools(session, verdicts)
    result.tool_calls, failures = _tool_rows(calls, session, turn_of, events, verdicts, answers)
    result.costs = _cost_rows(responses, project, week_of(started))
    result.responses = _response_rows(responses)
    result.cache_breaks, break_events = _cache_break_rows(
        cache, {i: t.turn for i, t in turn_at.items()}, events
    )
    if events:
        result.events = _turn_events(result.turns)
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
                    f"{before} → {after} tokens: " + _snippet(session.messages[c.message_index].text),
                    (c.message_index,),
                )
            )
        result.events.sort(key=lambda e: (e.message_index, e.kind))
    return SessionAnalysis(session, account, final, project, started, ended, result, responses, cache)


def _fold_turns(rows: SessionRows) -> None:
    """The session's figures over its turns: prompt sent, the largest pressure, the first unhealthy
    turn and what was sent from it on."""
    for t in rows.turns:
        rows.prompt_tokens += t.fill
        if t.pressure > rows.max_pressure:
            rows.max_pressure = t.pressure
        if not t.healthy and rows.first_unhealthy_turn is None:
            rows.first_unhealthy_turn = t.turn
            rows.first_unhealthy_at = t.timestamp
        if rows.first_unhealthy_turn is not None:
            rows.waste_tokens += t.fill
    return None
