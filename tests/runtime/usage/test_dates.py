"""A usage report's days as OpenClaw reads them: UTC by default, an IANA zone (daylight
saving included) before a legacy offset, the range by dates, name or count of days."""

from __future__ import annotations

import datetime as dt

import pytest

from runtime.usage import DateRangeError, resolve_calendar, resolve_range

NOW = int(dt.datetime(2026, 3, 29, 12, 0, tzinfo=dt.UTC).timestamp() * 1000)


def ms(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> int:
    return int(dt.datetime(year, month, day, hour, minute, tzinfo=dt.UTC).timestamp() * 1000)


def test_the_default_is_the_last_30_utc_days() -> None:
    span = resolve_range(resolve_calendar(None, None, None), now_ms=NOW)
    assert (span.start_date, span.end_date) == ("2026-02-28", "2026-03-29")
    assert span.start_ms == ms(2026, 2, 28) and span.end_ms == ms(2026, 3, 30) - 1


def test_ranges_and_days() -> None:
    utc = resolve_calendar("utc", None, None)
    assert resolve_range(utc, range_name="7d", now_ms=NOW).start_date == "2026-03-23"
    assert resolve_range(utc, range_name="1y", now_ms=NOW).start_date == "2025-03-30"
    assert resolve_range(utc, days=1, now_ms=NOW).start_date == "2026-03-29"
    assert resolve_range(utc, days="3", now_ms=NOW).start_date == "2026-03-27"
    assert resolve_range(utc, days=0, now_ms=NOW).start_date == "2026-03-29"
    everything = resolve_range(utc, range_name="all", now_ms=NOW)
    assert everything.start_ms == 0 and everything.everything


def test_a_time_zone_follows_daylight_saving() -> None:
    vienna = resolve_calendar("specific", "Europe/Vienna", "UTC+9")  # the zone wins
    span = resolve_range(vienna, start_date="2026-03-29", end_date="2026-03-29")
    # The day clocks go forward in Vienna: 23 hours, from 23:00 UTC the day before
    assert span.start_ms == ms(2026, 3, 28, 23)
    assert span.end_ms == ms(2026, 3, 29, 22) - 1


def test_an_offset_and_the_gateway_time() -> None:
    india = resolve_calendar("specific", None, "UTC+5:30")
    span = resolve_range(india, start_date="2026-01-01", end_date="2026-01-01")
    assert span.start_ms == ms(2025, 12, 31, 18, 30)
    gateway = resolve_calendar("gateway", None, None)
    assert gateway.day(NOW) == dt.datetime.fromtimestamp(NOW / 1000).date().isoformat()
    # a bad zone falls back to a good offset
    assert resolve_calendar("specific", "Nowhere/Else", "UTC-3").label == "offset:-180"
    # outside `specific`, zone and offset are ignored
    assert resolve_calendar("utc", "Nowhere/Else", "UTC+99").label == "utc"


@pytest.mark.parametrize(
    ("mode", "zone", "offset", "message"),
    [
        ("specific", "Nowhere/Else", None, "invalid timeZone"),
        ("specific", "x" * 5000, None, "invalid timeZone"),  # too long a file name
        ("specific", None, "UTC+14:30", "invalid utcOffset"),
        ("specific", None, "GMT+1", "invalid utcOffset"),
    ],
)
def test_a_bad_zone_or_offset_is_refused(
    mode: str, zone: str | None, offset: str | None, message: str
) -> None:
    with pytest.raises(DateRangeError, match=message):
        resolve_calendar(mode, zone, offset)


@pytest.mark.parametrize(
    ("start", "end", "message"),
    [
        ("2026-02-30", "2026-03-01", "invalid startDate"),
        ("2026-02-01", "2026-13-01", "invalid endDate"),
        ("2026-02-01", None, "provided together"),
        ("2026-02-02", "2026-02-01", "must not be after"),
    ],
)
def test_bad_dates_are_refused(start: str | None, end: str | None, message: str) -> None:
    with pytest.raises(DateRangeError, match=message):
        resolve_range(resolve_calendar(None, None, None), start_date=start, end_date=end)
