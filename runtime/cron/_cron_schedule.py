"""When a cron job fires: the schedule arithmetic, sans-IO (no clock of its own).

Three schedule kinds, as OpenClaw names them (`schedule.kind`):

- `at`: one shot at an ISO 8601 instant. A timestamp without an offset is UTC.
- `every`: a fixed interval `everyMs` on the grid `anchorMs + k * everyMs` (the anchor is
  the time the job was created or its schedule last changed).
- `cron`: a 5-field (`m h dom mon dow`) or 6-field (`s m h dom mon dow`) expression in the
  IANA time zone `tz` (default: the gateway host's zone), evaluated by `cronsim`. When both
  day-of-month and day-of-week are restricted either one matching is enough (Vixie cron's OR
  rule, as OpenClaw documents); a `+` before the day-of-week (`0 9 15 * +1`) requires both,
  like croner's modifier. `@yearly`, `@monthly`, `@weekly`, `@daily` and `@hourly` are
  accepted. Time-zone edges: a wall time that does not exist (spring forward) fires at the
  first time after the gap; a wall time that happens twice (fall back) fires once, at its
  first occurrence; sub-hour steps (`*/30`) keep firing through both hours.

Stagger (OpenClaw's): a cron job fires `offset` ms after each slot, where `offset` is
stable per job, `sha256(job id)[0:4] % staggerMs`. Top-of-hour expressions (minute 0, a
wildcard hour) get `staggerMs = 300000` by default; `staggerMs: 0` means exact.

Every function takes and returns epoch milliseconds. Errors: `ScheduleError`, whose message
names the field (`schedule.expr: ...`).
"""

from __future__ import annotations

import hashlib
import os
import re
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Final
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import cronsim

from ..protocol import ClawlaneError

__all__ = [
    "DEFAULT_TOP_OF_HOUR_STAGGER_MS",
    "ERROR_BACKOFF_MS",
    "CronExpr",
    "ScheduleError",
    "default_stagger_ms",
    "error_backoff_ms",
    "format_iso_ms",
    "host_timezone",
    "next_cron_ms",
    "next_every_ms",
    "parse_at_ms",
    "resolve_timezone",
    "stagger_offset_ms",
]

DEFAULT_TOP_OF_HOUR_STAGGER_MS: Final = 300_000
ERROR_BACKOFF_MS: Final = (30_000, 60_000, 300_000, 900_000, 3_600_000)
"""OpenClaw's backoff after consecutive failed runs of a recurring job (30 s ... 60 min)."""
MAX_MS: Final = 8_640_000_000_000_000
_MACROS: Final = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_HOUR_PART: Final = re.compile(r"^(?:\d+|\d+-\d+)(?:/\d+)?$|^[*?](?:/\d+)?$")
_ISO: Final = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?)?"
    r"(Z|z|[+-]\d{2}:?\d{2})?$"
)


class ScheduleError(ClawlaneError, ValueError):
    """A schedule that cannot be used; the message names the field."""


# --- time zones ---------------------------------------------------------------------------


def host_timezone() -> str:
    """The gateway host's IANA zone: `$TZ`, else `/etc/localtime`'s target, else UTC."""
    env = os.environ.get("TZ", "").lstrip(":")
    if env and _zone(env) is not None:
        return env
    try:
        target = str(Path("/etc/localtime").resolve())
    except OSError:
        return "UTC"
    marker = "zoneinfo/"
    if marker in target:
        name = target.split(marker, 1)[1]
        if _zone(name) is not None:
            return name
    return "UTC"


@lru_cache(maxsize=256)
def _zone(name: str) -> ZoneInfo | None:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return None


def resolve_timezone(tz: str | None, *, field: str = "schedule.tz") -> ZoneInfo:
    """The zone named `tz` (blank: the host's). Raises `ScheduleError`."""
    name = (tz or "").strip() or host_timezone()
    zone = _zone(name)
    if zone is None:
        raise ScheduleError(f"{field}: unknown IANA time zone {name!r}")
    return zone


# --- at ------------------------------------------------------------------------------------


def parse_at_ms(text: str, *, tz: str | None = None, field: str = "schedule.at") -> int:
    """An `at` time as epoch ms: ISO 8601 (`2027-01-01T09:00:00Z`, `...+01:00`; without an
    offset it is UTC, or `tz` when given) or a plain number of epoch milliseconds."""
    value = text.strip()
    if value.isdigit():
        ms = int(value)
    else:
        m = _ISO.match(value)
        if m is None:
            raise ScheduleError(f"{field}: expected an ISO-8601 timestamp (got {text!r})")
        year, month, day, hour, minute, second, frac, offset = m.groups()
        micro = int((frac or "0")[:6].ljust(6, "0"))
        try:
            naive = datetime(
                int(year),
                int(month),
                int(day),
                int(hour or 0),
                int(minute or 0),
                int(second or 0),
                micro,
            )
        except ValueError as exc:
            raise ScheduleError(f"{field}: {exc} (got {text!r})") from exc
        if offset in (None, ""):
            zone = resolve_timezone(tz) if tz else UTC
            aware = naive.replace(tzinfo=zone)
        elif offset in ("Z", "z"):
            aware = naive.replace(tzinfo=UTC)
        else:
            sign = 1 if offset[0] == "+" else -1
            digits = offset[1:].replace(":", "")
            delta = sign * (int(digits[:2]) * 60 + int(digits[2:]))
            aware = naive.replace(tzinfo=UTC)
            return _ms(aware) - delta * 60_000
        ms = _ms(aware)
    if not 0 <= ms <= MAX_MS:
        raise ScheduleError(f"{field}: out of range (got {text!r})")
    return ms


def format_iso_ms(ms: int) -> str:
    """`2027-01-01T00:00:00.000Z`: how OpenClaw stores a normalized `at`."""
    dt = datetime.fromtimestamp(ms / 1000, UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def _ms(dt: datetime) -> int:
    return int(dt.timestamp() * 1000) if dt.microsecond else int(dt.timestamp()) * 1000


# --- every ---------------------------------------------------------------------------------


def next_every_ms(every_ms: int, anchor_ms: int, after_ms: int) -> int:
    """The first slot of `anchor + k * every` strictly after `after_ms` (the anchor itself
    when it is still ahead)."""
    if every_ms < 1:
        raise ScheduleError("schedule.everyMs: must be >= 1")
    if after_ms < anchor_ms:
        return anchor_ms
    return anchor_ms + ((after_ms - anchor_ms) // every_ms + 1) * every_ms


# --- cron ----------------------------------------------------------------------------------


class CronExpr:
    """A validated cron expression in a zone. Construction raises `ScheduleError`."""

    def __init__(self, expr: str, tz: str | None = None) -> None:
        text = " ".join(expr.split())
        fields = _MACROS.get(text.lower(), text).split(" ")
        if len(fields) not in (5, 6):
            raise ScheduleError(
                f"schedule.expr: expected 5 fields (m h dom mon dow) or 6 (s m h dom mon dow), "
                f"got {len(fields)} in {expr!r}"
            )
        self.both_days = fields[-1].startswith("+")
        if self.both_days:
            fields[-1] = fields[-1][1:]
        self.expr = text
        self.fields = tuple(fields)
        self.zone = resolve_timezone(tz)
        self._spec = " ".join(fields)
        try:
            self._sim(datetime(2000, 1, 1, tzinfo=self.zone))
        except cronsim.CronSimError as exc:
            raise ScheduleError(f"schedule.expr: {exc} in {expr!r}") from exc

    def _sim(self, start: datetime) -> cronsim.CronSim:
        sim = cronsim.CronSim(self._spec, start)
        if self.both_days:
            sim.day_and = True  # croner's `+` day-of-week modifier: both must match
        return sim

    def next_after(self, after_ms: int) -> int | None:
        """The first firing strictly after `after_ms`, or None if there is none."""
        start = datetime.fromtimestamp(after_ms // 1000, self.zone)
        try:
            for fire in self._sim(start):
                ms = _ms(fire.astimezone(UTC))
                if ms > after_ms:
                    return ms
        except (StopIteration, cronsim.CronSimError):
            return None
        return None

    def is_top_of_hour(self) -> bool:
        """Minute (and second) 0 with a wildcard hour: OpenClaw staggers these by default."""
        if len(self.fields) == 5:
            minute, hour = self.fields[0], self.fields[1]
            second = "0"
        else:
            second, minute, hour = self.fields[0], self.fields[1], self.fields[2]
        parts = hour.split(",")
        return (
            second == "0"
            and minute == "0"
            and all(_HOUR_PART.match(p) for p in parts)
            and any(p.startswith(("*", "?")) for p in parts)
        )


@lru_cache(maxsize=512)
def _cron(expr: str, tz: str | None) -> CronExpr:
    return CronExpr(expr, tz)


def default_stagger_ms(expr: str, tz: str | None = None) -> int:
    """The stagger OpenClaw stores when the request names none: 5 min for top-of-hour."""
    return DEFAULT_TOP_OF_HOUR_STAGGER_MS if _cron(expr, tz).is_top_of_hour() else 0


def stagger_offset_ms(job_id: str, stagger_ms: int) -> int:
    """A job's stable offset in `[0, stagger_ms)`."""
    if stagger_ms <= 1:
        return 0
    digest = hashlib.sha256(job_id.encode()).digest()
    return int.from_bytes(digest[:4], "big") % stagger_ms


def next_cron_ms(
    expr: str, tz: str | None, after_ms: int, *, job_id: str = "", stagger_ms: int = 0
) -> int | None:
    """The job's next firing strictly after `after_ms`: a slot plus its stagger offset."""
    cron = _cron(expr, tz)
    offset = stagger_offset_ms(job_id, stagger_ms)
    cursor = max(0, after_ms - offset)
    for _ in range(4):
        base = cron.next_after(cursor)
        if base is None:
            return None
        if base + offset > after_ms:
            return base + offset
        cursor = base
    return None


def error_backoff_ms(consecutive_errors: int) -> int:
    """The wait after `consecutive_errors` (>= 1) failed runs in a row."""
    index = min(max(consecutive_errors, 1) - 1, len(ERROR_BACKOFF_MS) - 1)
    return ERROR_BACKOFF_MS[index]
