"""The calendar of a usage report: which days, in which time zone, as OpenClaw reads them.

`mode` `utc` (the default), `gateway` (the gateway's local time) or `specific`: an IANA
`timeZone`, else the legacy `utcOffset` (`UTC+5:30`, from UTC-12:00 to UTC+14:00). The range
is `startDate`..`endDate` (both or neither, `YYYY-MM-DD`, inclusive), else `range` (`7d`,
`30d`, `90d`, `1y`, `all`), else `days`, else the last 30 days, today included. A bad value
is a `DateRangeError` whose message is OpenClaw's.
"""

from __future__ import annotations

import datetime as dt
import re
import time
import zoneinfo
from collections.abc import Callable
from typing import Final

import attrs

__all__ = ["Calendar", "DateRange", "DateRangeError", "resolve_calendar", "resolve_range"]

MAX_DAYS: Final = 36_600
_DATE: Final = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$", re.ASCII)
_OFFSET: Final = re.compile(r"^UTC([+-])(\d{1,2})(?::([0-5]\d))?$", re.ASCII)
_RANGES: Final = {"7d": 7, "30d": 30, "90d": 90, "1y": 365}


class DateRangeError(ValueError):
    """A usage report's dates or time zone cannot be read (the message says which)."""


@attrs.frozen
class Calendar:
    """How instants become days: `tz` (None: the gateway's local time)."""

    tz: dt.tzinfo | None
    label: str
    """`utc`, `gateway`, `tz:<name>` or `offset:<minutes>` (for a cache key)."""

    def date(self, ms: int) -> dt.date:
        if self.tz is None:
            return dt.datetime.fromtimestamp(ms / 1000).date()
        return dt.datetime.fromtimestamp(ms / 1000, self.tz).date()

    def day(self, ms: int) -> str:
        return self.date(ms).isoformat()

    def day_start(self, day: dt.date) -> int:
        """The first instant of `day`, in ms."""
        if self.tz is None:
            return int(time.mktime(day.timetuple()) * 1000)
        start = dt.datetime(day.year, day.month, day.day, tzinfo=self.tz)
        return int(start.timestamp() * 1000)

    def day_end(self, day: dt.date) -> int:
        """The last ms of `day`."""
        return self.day_start(day + dt.timedelta(days=1)) - 1

    def slot_ms(self, start_ms: int, end_ms: int) -> int:
        """The longest step (a day, an hour, half, a quarter) whose slots from the epoch
        each fall within one of this calendar's days from `start_ms` to `end_ms` (a report
        groups by it in the database)."""
        if self.label == "utc":
            return 86_400_000
        first, last = self.date(start_ms), self.date(end_ms)
        days = min((last - first).days + 2, 400)
        starts = [self.day_start(first + dt.timedelta(days=i)) for i in range(days)]
        for step in (3_600_000, 1_800_000):
            if all(t % step == 0 for t in starts):
                return step
        return 900_000

    def formatter(self) -> Callable[[int], str]:
        """`day`, remembering each quarter hour's answer (a report asks it per bucket)."""
        seen: dict[int, str] = {}

        def day(ms: int) -> str:
            key = ms // 900_000
            found = seen.get(key)
            if found is None:
                found = seen[key] = self.day(ms)
            return found

        return day


UTC: Final = Calendar(dt.UTC, "utc")


def _offset_minutes(raw: str | None) -> int | None:
    if raw is None or not raw.strip():
        return None
    match = _OFFSET.match(raw.strip())
    if match is None:
        return None
    minutes = (int(match[2]) * 60 + int(match[3] or 0)) * (1 if match[1] == "+" else -1)
    return minutes if -720 <= minutes <= 840 else None


def resolve_calendar(mode: str | None, time_zone: str | None, utc_offset: str | None) -> Calendar:
    """The calendar `mode` asks for. Raises `DateRangeError`."""
    if mode == "gateway":
        return Calendar(None, "gateway")
    if mode != "specific":
        return UTC
    minutes = _offset_minutes(utc_offset)
    if time_zone is not None:
        name = time_zone.strip()
        try:
            zone = zoneinfo.ZoneInfo(name) if name else None
        except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):  # OSError: too long a name
            zone = None
        if zone is not None:
            return Calendar(zone, f"tz:{name}")
        if minutes is None:
            raise DateRangeError("invalid timeZone: expected a valid IANA time zone")
    if minutes is not None:
        return Calendar(dt.timezone(dt.timedelta(minutes=minutes)), f"offset:{minutes}")
    if utc_offset is not None and utc_offset.strip():
        raise DateRangeError("invalid utcOffset: expected UTC-12:00 through UTC+14:00")
    return UTC


def _parse_date(raw: str | None, name: str) -> dt.date | None:
    if raw is None or not raw.strip():
        return None
    match = _DATE.match(raw.strip())
    try:
        if match is None:
            raise ValueError(raw)
        return dt.date(int(match[1]), int(match[2]), int(match[3]))
    except ValueError:
        raise DateRangeError(f"invalid {name}: expected a valid YYYY-MM-DD calendar date") from None


@attrs.frozen
class DateRange:
    """`start_ms`..`end_ms` inclusive; `everything`: the `all` range."""

    start_ms: int
    end_ms: int
    calendar: Calendar
    everything: bool = False

    @property
    def start_date(self) -> str:
        return self.calendar.day(self.start_ms)

    @property
    def end_date(self) -> str:
        return self.calendar.day(self.end_ms)


def resolve_range(
    calendar: Calendar,
    *,
    start_date: str | None = None,
    end_date: str | None = None,
    range_name: str | None = None,
    days: int | str | None = None,
    now_ms: int | None = None,
) -> DateRange:
    """The range asked for (see the module docstring). Raises `DateRangeError`."""
    start = _parse_date(start_date, "startDate")
    end = _parse_date(end_date, "endDate")
    now = int(time.time() * 1000) if now_ms is None else now_ms
    today = calendar.date(now)
    today_end = calendar.day_end(today)
    if (start is None) != (end is None):
        raise DateRangeError("startDate and endDate must be provided together")
    if start is not None and end is not None:
        if start > end:
            raise DateRangeError("startDate must not be after endDate")
        return DateRange(calendar.day_start(start), calendar.day_end(end), calendar)
    if range_name == "all":
        return DateRange(0, today_end, calendar, everything=True)
    count = _RANGES.get(range_name or "")
    if count is None:
        count = _days(days)
    if count is None:
        count = 30
    first = today - dt.timedelta(days=max(1, count) - 1)
    return DateRange(calendar.day_start(first), today_end, calendar)


def _days(raw: int | str | None) -> int | None:
    if isinstance(raw, str):
        try:
            raw = int(float(raw)) if raw.strip() else None
        except ValueError:
            return None
    if raw is None:
        return None
    return min(int(raw), MAX_DAYS)
