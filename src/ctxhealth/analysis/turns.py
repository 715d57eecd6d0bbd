"""The Monitor's reading at each model response of a session, as :class:`TurnRecord` values.

:func:`turn_records` drives a :class:`~ctxhealth.monitor.Monitor` over a session and, at each
message that the accounting counts as a turn, builds one record from what the Monitor gives out:
the assessment at that message (zone, pressure, risk, decision, reasons), the drift detector's
on-task value and verdict, and how many early-warning indicators fire. Nothing here decides
anything the Monitor decides; the fill is the accounting's (the Monitor's own account of it).

No assessment outlives its turn: a held assessment would make the Monitor snapshot every
detector before the next message (a tenth of the CPU of a whole session).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import UTC, datetime

from ctxhealth.accounting.fill import SessionAccount
from ctxhealth.accounting.types import TurnFill
from ctxhealth.analysis.records import TurnRecord
from ctxhealth.model import Session, parse_timestamp
from ctxhealth.monitor import Assessment, Monitor


def parse_time(value: str | None) -> datetime | None:
    """A message's timestamp (:func:`ctxhealth.model.parse_timestamp`) in UTC, for the tables."""
    parsed = parse_timestamp(value)
    if parsed is None:
        return None
    try:
        return parsed.astimezone(UTC)
    except OverflowError:  # year 1 east of UTC, year 9999 west of it: no UTC time to store
        return None


def indicators_firing(monitor: Monitor) -> int:
    """Early-warning indicators firing now, repeated tool calls counted as one: what the Monitor
    compares with the profile's ``indicators_to_raise_zone``."""
    return monitor.indicators.fired_count() + monitor.repetition.repeated_fired


def record_of(assessment: Assessment, monitor: Monitor, turn: TurnFill, session: Session) -> TurnRecord:
    """The record of ``turn`` from the Monitor's assessment at its message."""
    index = assessment.index
    message = session.messages[index]
    usage = message.usage
    drift = monitor.drift
    return TurnRecord(
        turn.turn,
        index,
        parse_time(message.timestamp),
        turn.tokens,
        turn.source.value,
        usage.output_tokens if usage is not None else 0,
        usage.cache_read_tokens if usage is not None else 0,
        usage.cache_creation_tokens if usage is not None else 0,
        round(assessment.pressure, 4),
        assessment.zone.value,
        assessment.base_zone.value,
        None if assessment.risk is None else round(assessment.risk, 4),
        assessment.action.value,
        assessment.rule.value,
        round(drift.similarity, 4),
        int(indicators_firing(monitor)),
        assessment.healthy,
        "\n".join(assessment.reasons),
        drift.drifting,
    )


def turn_records(
    monitor: Monitor,
    session: Session,
    turns: Mapping[int, TurnFill],
    account: SessionAccount | None = None,
) -> Iterator[TurnRecord]:
    """One record per turn of ``session`` (``turns``: the accounting's turns by message index),
    in order, as ``monitor`` observes the session message by message (with ``account`` as its
    fill, when given; see :meth:`Monitor.iter_session`). ``monitor.last`` is the final assessment
    afterwards (None when the session has no messages). The Monitor is updated with every message
    and assessed only at the turns and once after the last message."""
    seen = False
    for index in monitor.update_session(session, account=account):
        seen = True
        turn = turns.get(index)
        if turn is not None:
            yield record_of(monitor.assess(), monitor, turn, session)
    if seen:
        monitor.assess()
