"""The typed rows of one analysed session: a record per turn, tool call, response, cost line,
cache break and the session itself, each field named as the fleet column it fills.

:class:`TurnRecord` is the Monitor's reading at one model response (see
:mod:`ctxhealth.analysis.turns`, which produces it); the other records are the accounting's and
the audit's figures. Every consumer reads them by field name: ``check --json --series``, the HTML
report, and the fleet, whose tables map each record to columns by name
(:func:`ctxhealth.fleet.schema` checks that every column is a field). A record never holds a
message or an assessment, so keeping thousands of them keeps no session alive.

They are ``msgspec.Struct`` values (frozen, no GC tracking: every field is a scalar, a string or
a timestamp), cheap to build at one per turn.
"""

from __future__ import annotations

from datetime import date, datetime

import msgspec


class TurnRecord(msgspec.Struct, frozen=True, gc=False):
    """The session after one model response of the main thread: its fill (the accounting's), the
    usage the response reported, and the Monitor's assessment at that message.

    The first sixteen fields are the fleet's ``turns`` columns; ``healthy`` and ``reasons`` with
    ``turn`` .. ``rule`` are the ``decisions`` columns (a turn whose ``action`` is not
    ``continue``); ``drifting`` marks the drift detector's verdict (the report's drift marker).
    Read back from fleet tables (which keep only the columns), the last three take their defaults.
    """

    turn: int
    message_index: int
    timestamp: datetime | None
    fill: int
    fill_source: str
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    pressure: float
    zone: str
    base_zone: str
    risk: float | None
    action: str
    rule: str
    drift: float
    """The drift detector's on-task value: the request's words in the recent output (1.0 on task)."""
    indicators: int
    """Early-warning indicators firing (repeated tool calls counted as one)."""
    healthy: bool = True
    reasons: str = ""
    """The decision's reasons, one per line."""
    drifting: bool = False


class ToolCallRow(msgspec.Struct, frozen=True, gc=False):
    """One tool call (each call id once over every thread), joined with its result."""

    thread: int
    message_index: int
    turn: int | None
    call_id: str
    tool: str
    failed: bool | None
    input_chars: int
    result_chars: int


class CacheBreakRow(msgspec.Struct, frozen=True, gc=False):
    """One prompt-cache break as the audit lists it, with what it cost."""

    thread: int
    turn: int | None
    message_index: int
    line: int | None
    response_id: str | None
    cause: str
    detail: str
    cached_before: int
    cached_after: int
    tokens_rewritten: int
    cost_usd: float | None


class ResponseRow(msgspec.Struct, frozen=True, gc=False):
    """One priced model response with usage (every thread, each response id once)."""

    thread: int
    message_index: int
    line: int | None
    response_id: str | None
    timestamp: datetime | None
    model: str
    input_tokens: int
    cache_write_tokens: int
    cache_read_tokens: int
    output_tokens: int
    cost_usd: float | None


class CostRow(msgspec.Struct, frozen=True, gc=False):
    """Usage and cost of one session's responses by one model."""

    model: str
    project: str
    week: date | None
    responses: int
    input_tokens: int
    cache_write_tokens: int
    cache_read_tokens: int
    output_tokens: int
    cost_usd: float | None


class SessionRow(msgspec.Struct, frozen=True, gc=False):
    """One session: what it is, its account, its cache hit rate, the Monitor's final assessment
    (None at the accounting level) and the figures folded over its turns."""

    path: str
    session_id: str | None
    format: str
    project: str
    model: str
    tier: str
    started_at: datetime | None
    ended_at: datetime | None
    week: date | None
    turns: int
    window: int
    usable_window: int
    fill_current: int
    fill_peak: int
    peak_pct: float
    fill_source: str
    compactions: int
    tool_calls: int
    tool_errors: int
    cost_usd: float | None
    cache_hit_rate: float | None
    zone: str | None
    pressure: float | None
    max_pressure: float | None
    risk: float | None
    action: str | None
    rule: str | None
    reasons: str | None
    healthy: bool | None
    first_unhealthy_turn: int | None
    first_unhealthy_at: datetime | None
    waste_tokens: int | None
    prompt_tokens: int
    sidechains: int
    warnings: int
    file_bytes: int


Record = TurnRecord | ToolCallRow | CacheBreakRow | ResponseRow | CostRow | SessionRow
"""Any of the records (what the fleet maps to a table's columns)."""


def fields_of(record_type: type[msgspec.Struct]) -> tuple[str, ...]:
    """The field names of a record type, in order."""
    return record_type.__struct_fields__
