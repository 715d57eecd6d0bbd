"""One reading of a log's time (``ctxhealth.model.parse_timestamp``), and the UTC form the fleet
tables store (``ctxhealth.analysis.turns.parse_time``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from ctxhealth.analysis.turns import parse_time
from ctxhealth.model import parse_timestamp


def test_a_stamp_keeps_its_offset_and_a_bare_one_is_utc() -> None:
    assert parse_timestamp("2026-03-01T10:00:00Z") == datetime(2026, 3, 1, 10, tzinfo=UTC)
    plus_two = parse_timestamp("2026-03-01T12:00:00+02:00")
    assert plus_two is not None and plus_two.utcoffset() == timedelta(hours=2)
    assert plus_two == datetime(2026, 3, 1, 10, tzinfo=UTC)
    assert parse_timestamp("2026-03-01T10:00:00.123456") == datetime(2026, 3, 1, 10, 0, 0, 123456, tzinfo=UTC)


def test_no_stamp_or_an_unreadable_one_is_none() -> None:
    for value in (None, "", "yesterday", "2026-13-01T00:00:00Z", "2026-03-01T25:00:00"):
        assert parse_timestamp(value) is None
        assert parse_time(value) is None


_OFFSETS = st.builds(
    timezone,
    st.timedeltas(min_value=timedelta(hours=-23, minutes=-59), max_value=timedelta(hours=23, minutes=59)),
)


@given(
    st.datetimes(
        min_value=datetime(1900, 1, 1),
        max_value=datetime(2200, 1, 1),
        timezones=st.one_of(st.none(), _OFFSETS),
    )
)
def test_the_tables_time_is_the_same_instant_in_utc(moment: datetime) -> None:
    text = moment.isoformat()
    read = parse_timestamp(text)
    in_utc = parse_time(text)
    assert read is not None and in_utc is not None
    expected = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    assert read == expected and in_utc == expected
    assert in_utc.tzinfo is UTC or in_utc.utcoffset() == timedelta(0)
    assert read.utcoffset() == expected.utcoffset()


def test_a_stamp_with_no_utc_time_is_no_table_time_not_a_crash() -> None:
    assert parse_timestamp("0001-01-01T00:00:00+05:00") is not None
    assert parse_time("0001-01-01T00:00:00+05:00") is None
    assert parse_time("9999-12-31T23:59:59-05:00") is None
