"""The config's `heartbeat` blocks: `agents.defaults.heartbeat` and `agents.list[].heartbeat`,
with OpenClaw 2026.9.6's keys and checks (`every` a duration, default unit minutes;
`activeHours.start`/`end` as `HH:MM`, `24:00` only as an end).

Accepted as OpenClaw accepts them: `every`, `activeHours {start, end, timezone}`, `model`,
`session`, `target`, `directPolicy`, `to`, `accountId`, `prompt`, `timeoutSeconds`,
`lightContext`, `isolatedSession`; and the keys OpenClaw retired (`ackMaxChars`,
`includeReasoning`, `includeSystemPromptSection`, `skipWhenBusy`,
`suppressToolErrorWarnings`), so an older config loads. What clawlane acts on is said by
`runtime.heartbeat` (the heartbeat's settings, `resolve_heartbeat`).

Pure data and parsing.
"""

from __future__ import annotations

import re
from typing import Annotated, Final, Literal

import msgspec

__all__ = ["HeartbeatActiveHours", "HeartbeatConfig", "heartbeat_problem", "parse_duration_ms"]

_DURATION: Final = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$")
_UNIT_MS: Final = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_TIME: Final = re.compile(r"^([01]\d|2[0-3]|24):([0-5]\d)$")


def parse_duration_ms(text: str, *, default_unit: str = "m") -> int:
    """`30m`, `1h`, `90s`, `500ms`, `2` (in `default_unit`) as milliseconds, as OpenClaw's
    `parseDurationMs`. Raises `ValueError` for anything else. Pure."""
    match = _DURATION.match(text.strip().lower())
    if match is None:
        raise ValueError("invalid duration (use ms, s, m, h)")
    value, unit = float(match.group(1)), match.group(2) or default_unit
    return round(value * _UNIT_MS[unit])


def _time_problem(raw: str | None, *, allow_24: bool) -> str | None:
    if raw is None:
        return None
    match = _TIME.match(raw)
    if match is None:
        return 'invalid time (use "HH:MM" 24h format)'
    if match.group(1) == "24" and match.group(2) != "00":
        return "invalid time (24:00 is the only allowed 24:xx value)"
    if match.group(1) == "24" and not allow_24:
        return "invalid time (start cannot be 24:00)"
    return None


def heartbeat_problem(
    block: HeartbeatConfig | None, *, defaults: bool = True
) -> tuple[str, str] | None:
    """OpenClaw's checks of a `heartbeat` block (`defaults`: the one of
    `agents.defaults`, which alone may name `agentId`): `(key path inside the block,
    message)` of its first problem, None when it has none (`_config_check` raises it as a
    `ConfigError`)."""
    if block is None:
        return None
    if block.agentId is not None and not defaults:
        return "agentId", "unknown key (only agents.defaults.heartbeat takes agentId)"
    if block.agentId is not None and not block.agentId.strip():
        return "agentId", "must not be empty"
    if block.every is not None:
        try:
            parse_duration_ms(block.every)
        except ValueError:
            return "every", "invalid duration (use ms, s, m, h)"
    window = block.activeHours
    if window is not None:
        for name, raw, allow_24 in (("start", window.start, False), ("end", window.end, True)):
            problem = _time_problem(raw, allow_24=allow_24)
            if problem is not None:
                return f"activeHours.{name}", problem
    return None


class _Strict(msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    pass


class HeartbeatActiveHours(_Strict, frozen=True):
    """`activeHours`: `start` inclusive, `end` exclusive (`24:00` allowed), `timezone` an
    IANA name, `user` or `local` (host)."""

    start: str | None = None
    end: str | None = None
    timezone: str | None = None


class HeartbeatConfig(_Strict, frozen=True):
    """One `heartbeat` block (every key optional: a per-agent block merges over the
    defaults' key by key)."""

    every: str | None = None
    activeHours: HeartbeatActiveHours | None = None
    model: str | None = None
    session: str | None = None
    target: str | None = None
    directPolicy: Literal["allow", "block"] | None = None
    to: str | None = None
    accountId: str | None = None
    prompt: str | None = None
    timeoutSeconds: Annotated[int, msgspec.Meta(gt=0)] | None = None
    lightContext: bool | None = None
    isolatedSession: bool | None = None
    agentId: str | None = None
    """Only in `agents.defaults.heartbeat`: the one agent that runs heartbeats."""
    # Retired by OpenClaw (its doctor removes them); accepted so older configs load.
    ackMaxChars: Annotated[int, msgspec.Meta(ge=0)] | None = None
    includeReasoning: bool | None = None
    includeSystemPromptSection: bool | None = None
    skipWhenBusy: bool | None = None
    suppressToolErrorWarnings: bool | None = None
