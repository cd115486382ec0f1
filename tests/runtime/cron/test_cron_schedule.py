"""Schedule arithmetic: at/every/cron, time zones and DST edges, stagger, OpenClaw's rules."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from runtime.cron._cron_schedule import (
    CronExpr,
    ScheduleError,
    default_stagger_ms,
    error_backoff_ms,
    format_iso_ms,
    next_cron_ms,
    next_every_ms,
    parse_at_ms,
    stagger_offset_ms,
)


def ms(text: str) -> int:
    return parse_at_ms(text)


def local(ms_: int, tz: str) -> str:
    return datetime.fromtimestamp(ms_ / 1000, ZoneInfo(tz)).isoformat()


def firings(expr: str, tz: str, start: str, n: int) -> list[str]:
    out, cursor = [], ms(start)
    for _ in range(n):
        nxt = next_cron_ms(expr, tz, cursor)
        assert nxt is not None
        out.append(local(nxt, tz))
        cursor = nxt
    return out


def test_at_without_offset_is_utc_and_offsets_are_honoured() -> None:
    assert ms("2027-01-01T00:00:00Z") == ms("2027-01-01T00:00:00") == 1798761600000
    assert ms("2027-01-01T01:00:00+01:00") == 1798761600000
    assert ms("2027-01-01T00:00:00.250Z") == 1798761600250
    assert parse_at_ms("2027-01-01T09:00:00", tz="Europe/Vienna") == ms("2027-01-01T08:00:00Z")
    assert format_iso_ms(1798761600250) == "2027-01-01T00:00:00.250Z"


@pytest.mark.parametrize("bad", ["garbage", "2027-13-01T00:00:00Z", "2027-02-30", "tomorrow"])
def test_a_bad_at_names_the_field(bad: str) -> None:
    with pytest.raises(ScheduleError, match=r"^schedule\.at: "):
        parse_at_ms(bad)


def test_every_runs_on_the_anchor_grid() -> None:
    anchor = 1_000_000
    assert next_every_ms(60_000, anchor, anchor - 5) == anchor
    assert next_every_ms(60_000, anchor, anchor) == anchor + 60_000
    assert next_every_ms(60_000, anchor, anchor + 59_999) == anchor + 60_000
    assert next_every_ms(60_000, anchor, anchor + 3 * 60_000 + 1) == anchor + 4 * 60_000
    with pytest.raises(ScheduleError, match="everyMs"):
        next_every_ms(0, anchor, anchor)


def test_cron_in_a_time_zone_fires_at_local_wall_time() -> None:
    # OpenClaw's own answer for this job, measured on its gateway: 2026-12-02T08:00:00Z.
    assert next_cron_ms("0 9 * * 1-5", "Europe/Vienna", 1796160591495) == 1796198400000
    got = firings("0 9 * * 1-5", "America/New_York", "2026-12-04T15:00:00Z", 2)
    assert got == ["2026-12-07T09:00:00-05:00", "2026-12-08T09:00:00-05:00"]


def test_day_of_month_and_day_of_week_use_or_logic() -> None:
    got = firings("0 9 15 * 1", "UTC", "2026-12-01T00:00:00Z", 4)
    assert got == [
        "2026-12-07T09:00:00+00:00",
        "2026-12-14T09:00:00+00:00",
        "2026-12-15T09:00:00+00:00",  # the 15th is a Tuesday: OR, not AND
        "2026-12-21T09:00:00+00:00",
    ]


def test_plus_day_of_week_requires_both_like_croner() -> None:
    assert firings("0 9 15 * +1", "UTC", "2026-12-01T00:00:00Z", 1) == [
        "2027-02-15T09:00:00+00:00"  # the next 15th that is a Monday
    ]


def test_six_fields_put_seconds_first() -> None:
    got = firings("*/10 * * * * *", "UTC", "2026-12-01T00:00:00Z", 3)
    assert got == [
        "2026-12-01T00:00:10+00:00",
        "2026-12-01T00:00:20+00:00",
        "2026-12-01T00:00:30+00:00",
    ]


def test_macros() -> None:
    assert firings("@daily", "UTC", "2026-12-01T10:00:00Z", 1) == ["2026-12-02T00:00:00+00:00"]
    assert firings("@hourly", "UTC", "2026-12-01T10:30:00Z", 1) == ["2026-12-01T11:00:00+00:00"]


def test_spring_forward_a_missing_wall_time_fires_after_the_gap() -> None:
    # Europe/Vienna, 2027-03-28: 02:00 -> 03:00. 02:30 does not exist that day.
    got = firings("30 2 * * *", "Europe/Vienna", "2027-03-27T12:00:00Z", 3)
    assert got == [
        "2027-03-28T03:00:00+02:00",
        "2027-03-29T02:30:00+02:00",
        "2027-03-30T02:30:00+02:00",
    ]


def test_fall_back_a_repeated_wall_time_fires_once() -> None:
    # Europe/Vienna, 2027-10-31: 03:00 -> 02:00. 02:30 happens twice; a daily job runs once.
    got = firings("30 2 * * *", "Europe/Vienna", "2027-10-30T12:00:00Z", 2)
    assert got == ["2027-10-31T02:30:00+02:00", "2027-11-01T02:30:00+01:00"]


def test_fall_back_intervals_keep_firing_through_both_hours() -> None:
    got = firings("*/30 * * * *", "Europe/Vienna", "2027-10-30T23:45:00Z", 4)
    assert got == [
        "2027-10-31T02:00:00+02:00",
        "2027-10-31T02:30:00+02:00",
        "2027-10-31T02:00:00+01:00",
        "2027-10-31T02:30:00+01:00",
    ]


def test_us_spring_forward() -> None:
    # America/New_York, 2027-03-14: 02:00 -> 03:00.
    got = firings("15 2 * * *", "America/New_York", "2027-03-13T12:00:00Z", 2)
    assert got == ["2027-03-14T03:00:00-04:00", "2027-03-15T02:15:00-04:00"]


def test_stagger_matches_openclaws_offsets() -> None:
    # Both measured on OpenClaw's gateway (job ids and nextRunAtMs from its cron.add answers).
    top = "9ced9bdb-e9fb-4159-a590-c3182e5c3456"
    assert default_stagger_ms("0 * * * *") == 300_000
    assert stagger_offset_ms(top, 300_000) == 40505
    assert next_cron_ms("0 * * * *", "UTC", 1796160595768, job_id=top, stagger_ms=300_000) == (
        1796162440505
    )
    half = "e5360148-b36e-4de2-bee6-9482e41004d4"
    assert next_cron_ms("30 * * * *", "UTC", 1796160596838, job_id=half, stagger_ms=30_000) == (
        1796160627030
    )


@pytest.mark.parametrize(
    ("expr", "staggered"),
    [("0 * * * *", True), ("0 */2 * * *", True), ("0 9 * * *", False), ("*/5 * * * *", False),
     ("0 0 * * * *", True), ("5 0 * * * *", False)],
)  # fmt: skip
def test_top_of_hour_default_stagger(expr: str, staggered: bool) -> None:
    assert (default_stagger_ms(expr) > 0) is staggered


def test_a_staggered_slot_is_never_before_now() -> None:
    job = "x"
    offset = stagger_offset_ms(job, 300_000)
    slot = ms("2026-12-01T10:00:00Z")
    # Between the slot and its staggered time, the next firing is that staggered time.
    assert next_cron_ms("0 * * * *", "UTC", slot + 1, job_id=job, stagger_ms=300_000) == (
        slot + offset
    )
    assert next_cron_ms("0 * * * *", "UTC", slot + offset, job_id=job, stagger_ms=300_000) == (
        slot + 3_600_000 + offset
    )


@pytest.mark.parametrize(
    ("expr", "tz", "message"),
    [
        ("61 * * * *", None, r"schedule\.expr: Bad minute"),
        ("* * *", None, r"schedule\.expr: expected 5 fields"),
        ("0 9 * * *", "Mars/Olympus", r"schedule\.tz: unknown IANA time zone 'Mars/Olympus'"),
    ],
)
def test_bad_cron_names_the_field(expr: str, tz: str | None, message: str) -> None:
    with pytest.raises(ScheduleError, match=message):
        CronExpr(expr, tz)


def test_error_backoff_is_openclaws() -> None:
    assert [error_backoff_ms(n) for n in (1, 2, 3, 4, 5, 9)] == [
        30_000, 60_000, 300_000, 900_000, 3_600_000, 3_600_000
    ]  # fmt: skip
