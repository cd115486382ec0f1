"""Which agents run heartbeats and how: the `heartbeat` blocks of the config resolved per agent.

As OpenClaw 2026.9.6: who runs heartbeats is `heartbeat_agents`; an agent's settings are its
`agents.list[]` block merged key by key over `agents.defaults.heartbeat`. `every` defaults to `30m`; `0m`
turns the cadence off (a wake still runs one). The run's session is the agent's main session
(`agent:<id>:main`) unless `session` names another; the prompt is OpenClaw's default unless
`prompt` is set (sent as is); the reply's `HEARTBEAT_OK` suppression budget is 300 characters
(`ackMaxChars`, a key OpenClaw retired, still honoured when set); the run's timeout is
`timeoutSeconds`, else `agents.defaults.timeoutSeconds`, else the cadence capped at 600 s.

`activeHours` is checked in its `timezone` (an IANA name; `user`/unset: the config's
`agents.defaults.userTimezone`, else the host's; `local`: the host's); `start` inclusive,
`end` exclusive, `24:00` the end of the day, an equal pair never active, a window across
midnight allowed. Pure.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Final
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import attrs
import msgspec

from runtime.model import (
    Config,
    HeartbeatActiveHours,
    HeartbeatConfig,
    ModelRuntimeGeneration,
    parse_duration_ms,
)
from runtime.sessions import DEFAULT_MAIN_KEY

from ._reply import HEARTBEAT_PROMPT

__all__ = [
    "DEFAULT_ACK_MAX_CHARS",
    "DEFAULT_EVERY",
    "HeartbeatSettings",
    "heartbeat_agents",
    "heartbeat_summary",
    "in_active_hours",
    "resolve_heartbeat",
]

DEFAULT_EVERY: Final = "30m"
DEFAULT_ACK_MAX_CHARS: Final = 300
_TIMEOUT_CAP_S: Final = 600


@attrs.frozen
class HeartbeatSettings:
    """One agent's heartbeat, resolved."""

    agent_id: str
    every: str
    """The cadence as configured (`30m` by default)."""
    every_ms: int
    """0: no cadence (wakes only)."""
    session: str | None
    """`session` as configured (None: the main session)."""
    session_key: str
    prompt: str | None
    """The configured prompt, or None for OpenClaw's default."""
    ack_max_chars: int
    active_hours: HeartbeatActiveHours | None
    user_timezone: str | None
    model: str | None
    target: str
    timeout_s: float | None
    light_context: bool
    isolated_session: bool


def _merge(base: HeartbeatConfig | None, over: HeartbeatConfig | None) -> HeartbeatConfig:
    if base is None:
        return over or HeartbeatConfig()
    if over is None:
        return base
    fields = {f: getattr(over, f) for f in over.__struct_fields__ if getattr(over, f) is not None}
    return msgspec.structs.replace(base, **fields)


def heartbeat_agents(config: Config, agent_ids: list[str]) -> list[str]:
    """The agents that run heartbeats, as OpenClaw enrolls them: those with a `heartbeat`
    block when any `agents.list[]` entry has one; else `agents.defaults.heartbeat.agentId`;
    else every agent when `agents.defaults.heartbeat` is set; else the agent marked
    `default`, or the only agent (several agents and none of that: none)."""
    entries = config.agents.entries
    explicit = {e.id.lower() for e in entries if e.heartbeat is not None}
    if explicit:
        return [a for a in agent_ids if a in explicit]
    block = config.agents.defaults.heartbeat
    if block is not None and block.agentId:
        return [a for a in agent_ids if a == block.agentId.strip().lower()]
    if block is not None:
        return list(agent_ids)
    marked = {e.id.lower() for e in entries if e.default}
    if marked:
        return [a for a in agent_ids if a in marked][:1]
    return list(agent_ids) if len(agent_ids) == 1 else []


def heartbeat_summary(generation: ModelRuntimeGeneration, agent_id: str) -> dict[str, Any]:
    """The agent's heartbeat as `health` and `status` show it (OpenClaw's
    `buildHeartbeatSummary`: `enabled`, `every`, `everyMs`, `prompt`, `target`, `model`,
    `session`, `ackMaxChars`)."""
    config = generation.config
    settings = resolve_heartbeat(generation, agent_id)
    enabled = settings.every_ms > 0 and agent_id in heartbeat_agents(
        config, sorted(generation.agents)
    )
    summary: dict[str, Any] = {
        "enabled": enabled,
        "every": settings.every if enabled else "disabled",
        "everyMs": settings.every_ms if enabled else None,
        "prompt": settings.prompt or HEARTBEAT_PROMPT,
        "target": settings.target,
        "ackMaxChars": DEFAULT_ACK_MAX_CHARS,
    }
    if settings.model is not None:
        summary["model"] = settings.model
    if settings.session is not None:
        summary["session"] = settings.session
    return summary


def resolve_heartbeat(generation: ModelRuntimeGeneration, agent_id: str) -> HeartbeatSettings:
    """`agent_id`'s heartbeat settings under `generation` (whether it runs at all:
    `heartbeat_agents`)."""
    config = generation.config
    defaults = config.agents.defaults
    entry = next((e for e in config.agents.entries if e.id.lower() == agent_id), None)
    block = _merge(defaults.heartbeat, entry.heartbeat if entry is not None else None)
    every_ms = parse_duration_ms(block.every or DEFAULT_EVERY)
    session = (block.session or "").strip()
    if not session or session == DEFAULT_MAIN_KEY:
        key = f"agent:{agent_id}:{DEFAULT_MAIN_KEY}"
    elif session.startswith("agent:"):
        key = session
    else:
        key = f"agent:{agent_id}:{session}"
    if block.timeoutSeconds is not None:
        timeout: float | None = float(block.timeoutSeconds)
    elif defaults.timeoutSeconds is not None:
        timeout = float(defaults.timeoutSeconds) or None
    else:
        timeout = float(min(every_ms / 1000, _TIMEOUT_CAP_S)) or _TIMEOUT_CAP_S
    prompt = (block.prompt or "").strip() or None
    return HeartbeatSettings(
        agent_id=agent_id,
        every=(block.every or DEFAULT_EVERY).strip(),
        every_ms=every_ms,
        session=session or None,
        session_key=key.lower(),
        prompt=prompt,
        ack_max_chars=DEFAULT_ACK_MAX_CHARS if block.ackMaxChars is None else block.ackMaxChars,
        active_hours=block.activeHours,
        user_timezone=defaults.userTimezone,
        model=(block.model or "").strip() or None,
        target=(block.target or "owner"),
        timeout_s=timeout,
        light_context=bool(block.lightContext),
        isolated_session=bool(block.isolatedSession),
    )


def _zone(name: str | None) -> dt.tzinfo | None:
    if not name:
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):  # OSError: too long a name
        return None


def _minutes(text: str) -> int:
    hours, minutes = text.split(":")
    return int(hours) * 60 + int(minutes)


def in_active_hours(settings: HeartbeatSettings, now_ms: int) -> bool:
    """Whether `now_ms` (epoch ms) falls in the heartbeat's active hours (always, without
    them)."""
    window = settings.active_hours
    if window is None or (window.start is None and window.end is None):
        return True
    raw = (window.timezone or "").strip()
    zone: dt.tzinfo | None
    if raw.lower() == "local":
        zone = None
    elif raw and raw.lower() != "user":
        zone = _zone(raw) or _zone(settings.user_timezone)
    else:
        zone = _zone(settings.user_timezone)
    moment = dt.datetime.fromtimestamp(now_ms / 1000, tz=dt.UTC)
    local = moment.astimezone(zone) if zone is not None else moment.astimezone()
    minute = local.hour * 60 + local.minute
    start = _minutes(window.start or "00:00")
    end = _minutes(window.end or "24:00")
    if start == end:
        return False
    if start < end:
        return start <= minute < end
    return minute >= start or minute < end
