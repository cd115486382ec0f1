"""`session_status`'s card: OpenClaw 2026.9.6's status message (its `buildStatusMessageParts`
text), from what clawlane keeps of a session.

Sections, a blank line between them, lines without a value left out:

1. `🦞 clawlane <version>`; `Current time: Tuesday, December 8th, 2026 - 1:40 AM (UTC)` and
   `Reference UTC: 2026-12-08 01:40 UTC` (OpenClaw's cron-style time: the user's zone,
   `agents.defaults.userTimezone`, else the host's; 12-hour clock); `⏱️ Uptime: gateway 25m
   20s · system 3d 4h` (this process, the machine; two units at most).
2. `🧠 Model: <ref>`, with ` · pinned session; config primary <default> · clear /model
   default` when the session chose a model other than its agent's.
3. `🧮 Tokens: N in / M out`; `💵 Cost: $x` where the model has prices; `📚 Context:
   used/window (pct%)` (an unknown window is OpenClaw's 200k); `🧹 Compactions: N` when any.
4. `🧵 Session: <key> • duration <since created> • updated <ago>`.
5. `⚙️ Execution: direct` (no sandboxes); `🤖 Runtime: OpenClaw Default` (clawlane's agent is
   OpenClaw's embedded one, `agentRuntime` `openclaw`); `🎛️ Modes: think <level> · fast off`
   with `reasoning <level>`, `verbose` and `elevated` as OpenClaw adds them; `🪢 Queue: <mode>`
   with its settings when the session overrides them.

Not shown, as clawlane has no such facts: OpenClaw's auth line (where a provider's key came
from), cache hits (sessions keep no cache counts), fallbacks, channel, media, voice and plugin
lines, subagent and task lines.
"""

from __future__ import annotations

import datetime as dt
import functools
import importlib.metadata
import math
import time
from typing import Final
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import psutil

from ..cron import host_timezone
from ..llm._types import Usage
from ..model._generation import ModelRuntimeGeneration
from ..sessions._sessions import SessionRow
from ..tools._js_text import js_round
from ..usage import PriceTable, call_cost, format_token_count, format_usd

__all__ = ["compact_duration", "status_card", "time_ago"]

_DEFAULT_CONTEXT: Final = 200_000
"""OpenClaw's context window when the model's is unknown."""
_UNITS: Final = (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000))
_WEEKDAYS: Final = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MONTHS: Final = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


def status_card(
    gen: ModelRuntimeGeneration,
    row: SessionRow,
    ref: str,
    default_ref: str,
    *,
    now_ms: int | None = None,
) -> str:
    """The card of session `row` running model `ref` (its agent's own: `default_ref`)."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    config = gen.config
    sections: list[list[str | None]] = [
        [_version_line(), _time_lines(config.agents.defaults.userTimezone, now), _uptime()],
        [_model_line(row, ref, default_ref)],
        [
            f"🧮 Tokens: {format_token_count(row.inputTokens)} in / "
            f"{format_token_count(row.outputTokens)} out",
            _cost_line(gen, row, ref),
            f"📚 Context: {_context(gen, row, ref)}",
            f"🧹 Compactions: {row.compactionCount}" if row.compactionCount > 0 else None,
        ],
        [f"🧵 Session: {_session_value(row, now)}"],
        [
            "⚙️ Execution: direct",
            "🤖 Runtime: OpenClaw Default",
            f"🎛️ Modes: {_modes(row)}",
            f"🪢 Queue: {_queue(gen, row)}",
        ],
    ]
    shown = ["\n".join(line for line in section if line) for section in sections]
    return "\n\n".join(section for section in shown if section)


@functools.cache
def _version_line() -> str:
    try:
        version = importlib.metadata.version("clawlane")
    except importlib.metadata.PackageNotFoundError:
        return "🦞 clawlane"
    return f"🦞 clawlane {version}"


def _time_lines(zone_name: str | None, now_ms: int) -> str:
    """OpenClaw's cron-style time lines (`resolveCronStyleNow`)."""
    zone, name = _zone(zone_name)
    utc = dt.datetime.fromtimestamp(now_ms / 1000, dt.UTC)
    local = utc.astimezone(zone)
    hour = local.hour % 12 or 12
    shown = (
        f"{_WEEKDAYS[local.weekday()]}, {_MONTHS[local.month - 1]} {_ordinal(local.day)}, "
        f"{local.year} - {hour}:{local.minute:02d} {'AM' if local.hour < 12 else 'PM'}"
    )
    return f"Current time: {shown} ({name})\nReference UTC: {utc:%Y-%m-%d %H:%M} UTC"


def _zone(name: str | None) -> tuple[dt.tzinfo, str]:
    """The user's zone and its name: `name` when it is one, else the host's (OpenClaw's
    resolveUserTimezone)."""
    for candidate in (name, host_timezone()):
        if candidate:
            try:
                return ZoneInfo(candidate), candidate
            except (ZoneInfoNotFoundError, ValueError, OSError):
                continue
    return dt.UTC, "UTC"


def _ordinal(day: int) -> str:
    suffix = "th" if 11 <= day % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{day}{suffix}"


def _uptime() -> str:
    """`⏱️ Uptime: gateway <this process> · system <the machine>`."""
    now = time.time()
    try:
        process_ms = (now - psutil.Process().create_time()) * 1000
        system_ms = (now - psutil.boot_time()) * 1000
    except (psutil.Error, OSError):
        return ""
    return (
        f"⏱️ Uptime: gateway {compact_duration(process_ms) or '0s'} · "
        f"system {compact_duration(system_ms) or '0s'}"
    )


def compact_duration(ms: float, *, spaced: bool = True) -> str | None:
    """OpenClaw's `formatDurationCompact`: the two largest units of days, hours, minutes and
    seconds that are not zero (`1h 5m`, `25m 20s`; `1h5m` unspaced), milliseconds under a
    second, rounded half up as JavaScript rounds; None for no time at all."""
    if not math.isfinite(ms) or ms <= 0:
        return None
    whole = js_round(ms)
    if whole < 1000:
        return f"{whole}ms"
    rest = js_round(ms / 1000) * 1000
    parts = []
    for unit, size in _UNITS:
        value, rest = divmod(rest, size)
        if value:
            parts.append(f"{value}{unit}")
    return (" " if spaced else "").join(parts[:2])


def time_ago(ms: float) -> str:
    """OpenClaw's `formatTimeAgo`: `just now`, `5m ago`, `3h ago` (under 48), `4d ago`."""
    if not math.isfinite(ms) or ms < 0:
        return "unknown"
    minutes = js_round(js_round(ms / 1000) / 60)
    if minutes < 1:
        return "just now"
    if minutes < 60:
        return f"{minutes}m ago"
    hours = js_round(minutes / 60)
    if hours < 48:
        return f"{hours}h ago"
    return f"{js_round(hours / 24)}d ago"


def _model_line(row: SessionRow, ref: str, default_ref: str) -> str:
    pinned = row.modelOverride is not None and ref != default_ref
    note = f" · pinned session; config primary {default_ref} · clear /model default"
    return f"🧠 Model: {ref}{note if pinned else ''}"


def _cost_line(gen: ModelRuntimeGeneration, row: SessionRow, ref: str) -> str | None:
    provider, _, model = ref.partition("/")
    price = PriceTable.of(gen.config).prices.get((provider, model))
    cost = call_cost(Usage(input=row.inputTokens, output=row.outputTokens), price)
    shown = format_usd(cost.total) if cost is not None else None
    return f"💵 Cost: {shown}" if shown is not None else None


def _context(gen: ModelRuntimeGeneration, row: SessionRow, ref: str) -> str:
    """OpenClaw's `used/window (pct%)` (the percentage capped at 999)."""
    provider, _, model = ref.partition("/")
    entry = next((e for e in gen.catalog if e.provider == provider and e.id == model), None)
    window = (entry.contextWindow if entry is not None else None) or _DEFAULT_CONTEXT
    used = row.contextTokens if row.contextTokens is not None else row.inputTokens
    percent = min(999, js_round(used / window * 100))
    return f"{format_token_count(used)}/{format_token_count(window)} ({percent}%)"


def _session_value(row: SessionRow, now_ms: int) -> str:
    parts = [row.key]
    duration = compact_duration(now_ms - row.createdAt)
    if duration is not None:
        parts.append(f"duration {duration}")
    parts.append(f"updated {time_ago(now_ms - row.updatedAt)}")
    return " • ".join(parts)


def _modes(row: SessionRow) -> str:
    """OpenClaw's modes: thinking, fast mode, reasoning when on, verbose, elevated (its
    default, `on`)."""
    parts = [f"think {row.thinkingLevel or 'off'}", "fast off"]
    reasoning = row.reasoningLevel or "off"
    if reasoning != "off":
        parts.append(f"reasoning {reasoning}")
    verbose = row.verboseLevel or "off"
    flags = ["verbose:full" if verbose == "full" else "verbose"] if verbose != "off" else []
    parts.append(" · ".join([*flags, "elevated"]))
    return " · ".join(parts)


def _queue(gen: ModelRuntimeGeneration, row: SessionRow) -> str:
    """The session's queue mode (its own, else `messages.queue`'s, else `steer`), with its
    settings when the session overrides them (OpenClaw's `showDetails`)."""
    conf = gen.config.messages.queue
    mode = row.queueMode or conf.byChannel.get("webchat") or conf.mode or "steer"
    if row.queueDebounceMs is None and row.queueCap is None and row.queueDrop is None:
        return mode
    debounce = row.queueDebounceMs if row.queueDebounceMs is not None else conf.debounceMs
    if debounce >= 1000:
        seconds = f"{debounce // 1000}" if debounce % 1000 == 0 else f"{debounce / 1000:.1f}"
        label = f"{seconds}s"
    else:
        label = f"{debounce}ms"
    cap = row.queueCap if row.queueCap is not None else conf.cap
    drop = row.queueDrop or conf.drop
    return f"{mode} (debounce {label} · cap {cap} · drop {drop})"
