"""OpenClaw's repair of the job a model gives `automations` (`cron-tool-canonicalize.ts` and
the checks of its `add` / `update`), rule for rule.

A model often writes a job's fields flat beside `action` (`{"action": "add", "schedule":
..., "message": "..."}`) or in shorthand (`every`, `cron`, `atMs`, `scheduleKind`, a padded
`"schedule "` key). `recover_flat` takes the recoverable fields of the arguments (those
`RECOVERABLE` names, not `None`-less: a JSON null is a value) into a job, which
`canonical_job` then puts in the gateway's nested shape: padded keys trimmed, concatenated
keys (`namePayload`, `scheduleKind`, `sessionTargetName`) split, schedule fields (`at`,
`atMs` as an ISO time, `every`/`everyMs`, `cron`/`expr`, `command`, `tz`, `stagger`,
`exact`...) moved into `schedule` with the kind they imply, payload fields (`message`,
`text`, `model`, `timeoutSeconds`...) into `payload` with theirs. `canonical_job` is also
applied to the `job` given (its `data` or `job` wrapper taken off), as OpenClaw applies it.

`prepare` is the tool's `prepare_arguments`: OpenClaw's `add` takes a recovered job only when
`job` is missing or empty and the recovery found a schedule or payload (else `job
required`), `update` takes any recovered patch but one left empty (also `job required`).
`check_create` / `check_patch` are the checks OpenClaw's tool makes of the canonical job
before the gateway sees it, with its messages.
"""

from __future__ import annotations

import math
import re
from typing import Any, Final, TypeGuard

from ._errors import ToolError

__all__ = ["RECOVERABLE", "canonical_job", "job_for", "prepare"]

SCHEDULE_KINDS: Final = ("at", "every", "cron", "on-exit", "stream")
PAYLOAD_KINDS: Final = ("systemEvent", "agentTurn", "script", "command")
FLAT_PAYLOAD_KEYS: Final = (
    "message",
    "text",
    "script",
    "model",
    "fallbacks",
    "toolsAllow",
    "thinking",
    "timeoutSeconds",
    "toolBudget",
    "lightContext",
    "allowUnsafeExternalContent",
)
FLAT_SCHEDULE_KEYS: Final = (
    "kind",
    "at",
    "atMs",
    "every",
    "everyMs",
    "anchorMs",
    "cron",
    "expr",
    "tz",
    "stagger",
    "staggerMs",
    "exact",
    "command",
    "cwd",
    "mode",
    "match",
    "batchMs",
    "maxBatchBytes",
)
RECOVERABLE: Final = frozenset(
    (
        "name",
        "declarationKey",
        "displayName",
        "owner",
        "schedule",
        "pacing",
        "trigger",
        "sessionTarget",
        "wakeMode",
        "payload",
        "delivery",
        "enabled",
        "description",
        "deleteAfterRun",
        "agentId",
        "sessionKey",
        "failureAlert",
        "namePayload",
        "scheduleKind",
        "sessionTargetName",
        *FLAT_PAYLOAD_KEYS,
        *FLAT_SCHEDULE_KEYS,
    )
)
_MOVED_SCHEDULE_KEYS: Final = (
    "anchorMs",
    "tz",
    "staggerMs",
    "cwd",
    "mode",
    "match",
    "batchMs",
    "maxBatchBytes",
)
_CREATE_SIGNAL: Final = ("schedule", "at", "atMs", "everyMs", "cron", "expr", "payload")
_CREATE_SIGNAL_TEXT: Final = ("message", "text")
SHELL_PAYLOAD: Final = (
    "automation command payloads cannot be created or edited through the agent automations "
    "tool; use the CLI or Gateway API."
)
SHELL_SCHEDULE: Final = (
    "automation on-exit schedules cannot be created or edited through the agent automations "
    "tool; use the CLI or Gateway API."
)
_JS_SPACE: Final = (
    " \t\n\v\f\r\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_DECIMAL: Final = re.compile(r"[+-]?(?:Infinity|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)")
_RADIX: Final = re.compile(r"0([xX][0-9a-fA-F]+|[oO][0-7]+|[bB][01]+)")
_MAX_DATE_MS: Final = 8_640_000_000_000_000


def prepare(arguments: Any) -> Any:
    """The arguments with a job recovered from flat fields where OpenClaw recovers one (see
    the module docstring); anything else as it came."""
    if not isinstance(arguments, dict) or not _missing_or_empty(arguments.get("job")):
        return arguments
    action = arguments.get("action")
    if action not in ("add", "update"):
        return arguments
    found, job = recover_flat(arguments)
    if not found:
        return arguments
    if action == "add" and not _create_signal(job):
        return arguments
    if action == "update" and _empty_patch(canonical_job(job)):
        return arguments  # OpenClaw's `job required`: nothing recovered to change
    return {**arguments, "job": job}


def job_for(action: str, job: dict[str, Any] | None) -> dict[str, Any]:
    """The job `add` (or the patch `update`) sends for the prepared arguments' `job`: its
    canonical form, checked as OpenClaw's tool checks it. Raises `ToolError` with OpenClaw's
    message (`job required` when there is none)."""
    if job is None:
        raise ToolError("job required")
    if action == "add":
        return check_create(canonical_job(job))
    return check_patch(canonical_job(job))


def recover_flat(arguments: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    """OpenClaw's `recoverCronObjectFromFlatParams`: whether `arguments` had a recoverable
    field, and the canonical job of those fields."""
    value = {k: v for k, v in arguments.items() if k in RECOVERABLE}
    return bool(value), canonical_job(value)


def canonical_job(value: dict[str, Any]) -> dict[str, Any]:
    """OpenClaw's `canonicalizeCronToolObject`: a new job in the gateway's nested shape (see
    the module docstring); `value` is not changed."""
    inner = value.get("data") if _record(value.get("data")) else value.get("job")
    job = dict(inner if _record(inner) else value)
    _repair_padded_keys(job)
    _repair_concatenated_keys(job)
    _canonical_schedule(job)
    _canonical_payload(job)
    return job


def check_create(job: dict[str, Any]) -> dict[str, Any]:
    """OpenClaw's `add` checks of the canonical job, which it answers with its null fields
    dropped (but a top-level `agentId` / `sessionKey`: on create there is nothing to clear).
    Raises `ToolError` with OpenClaw's message."""
    _drop_nulls(job, keep=("agentId", "sessionKey"))
    _check_no_shell(job)
    _check_delivery(job.get("delivery"))
    _check_pacing(job)
    for name in ("declarationKey", "displayName"):
        value = job.get(name)
        if isinstance(value, str) and not _trim(value):
            raise ToolError(f"{name} must be a non-empty string")
    return job


def check_patch(patch: dict[str, Any]) -> dict[str, Any]:
    """OpenClaw's `update` checks of the canonical patch. Raises `ToolError`."""
    _check_no_shell(patch)
    _check_delivery(patch.get("delivery"))
    _check_pacing(patch)
    value = patch.get("displayName")
    if isinstance(value, str) and not _trim(value):
        raise ToolError("displayName must be a non-empty string or null")
    return patch


# --- the rules, in OpenClaw's order -----------------------------------------------------------


def _repair_padded_keys(job: dict[str, Any]) -> None:
    """A recoverable key with whitespace around it is trimmed, unless the trimmed key is
    there too (the gateway then refuses the padded one)."""
    for key in list(job):
        trimmed = _trim(key)
        if trimmed != key and trimmed in RECOVERABLE and trimmed not in job:
            job[trimmed] = job.pop(key)


def _repair_concatenated_keys(job: dict[str, Any]) -> None:
    if not _record(job.get("payload")) and _record(job.get("namePayload")):
        job["payload"] = dict(job["namePayload"])
    raw_kind = job.get("scheduleKind")
    schedule = job.get("schedule")
    if not _record(schedule):
        if _record(raw_kind):
            job["schedule"] = dict(raw_kind)
        elif _schedule_kind(raw_kind):
            job["schedule"] = {"kind": raw_kind}
    elif _schedule_kind(raw_kind) and not _schedule_kind(schedule.get("kind")):
        job["schedule"] = {**schedule, "kind": raw_kind}
    if not _has_text(job.get("name")) and _has_text(job.get("sessionTargetName")):
        job["name"] = job["sessionTargetName"]
    for key in ("namePayload", "scheduleKind", "sessionTargetName"):
        job.pop(key, None)


def _move(source: dict[str, Any], target: dict[str, Any], key: str, to: str | None = None) -> bool:
    """OpenClaw's `moveDefinedField`: `source[key]` (null included) to `target[to or key]`."""
    if key not in source:
        return False
    target[to or key] = source.pop(key)
    return True


def _canonical_schedule(job: dict[str, Any]) -> None:
    had = _record(job.get("schedule"))
    schedule: dict[str, Any] = dict(job["schedule"]) if had else {}
    if "atMs" in schedule:
        _set_at_ms(schedule, schedule.pop("atMs"))
        if not _schedule_kind(schedule.get("kind")):
            schedule["kind"] = "at"
    for old, new in (("every", "everyMs"), ("cron", "expr"), ("stagger", "staggerMs")):
        if new not in schedule and old in schedule:
            schedule[new] = schedule.pop(old)
    if schedule.get("exact") is True and "staggerMs" not in schedule:
        schedule["staggerMs"] = 0
    schedule.pop("exact", None)
    if _schedule_kind(job.get("kind")) and not _schedule_kind(schedule.get("kind")):
        schedule["kind"] = job.pop("kind")
        had = True
    if _move(job, schedule, "at") and not _schedule_kind(schedule.get("kind")):
        schedule["kind"] = "at"
    if "atMs" in job:
        _set_at_ms(schedule, job.pop("atMs"))
        if not _schedule_kind(schedule.get("kind")):
            schedule["kind"] = "at"
        had = True
    implied = (
        (("everyMs", None), ("every", "everyMs"), "every"),
        (("cron", "expr"), ("expr", None), "cron"),
    )
    for first, second, kind in implied:
        moved = _move(job, schedule, *first) or _move(job, schedule, *second)
        if moved and not _schedule_kind(schedule.get("kind")):
            schedule["kind"] = kind
    if _move(job, schedule, "command") and not _schedule_kind(schedule.get("kind")):
        schedule["kind"] = "on-exit"
    for key in _MOVED_SCHEDULE_KEYS:
        had = _move(job, schedule, key) or had
    had = _move(job, schedule, "stagger", "staggerMs") or had
    if job.get("exact") is True and "staggerMs" not in schedule:
        schedule["staggerMs"] = 0
        had = True
    job.pop("exact", None)
    if not _schedule_kind(schedule.get("kind")):
        for field, kind in (("at", "at"), ("everyMs", "every"), ("expr", "cron")):
            if field in schedule:
                schedule["kind"] = kind
                break
        else:
            if "command" in schedule:
                schedule["kind"] = "on-exit"
    if had or schedule:
        job["schedule"] = schedule


def _canonical_payload(job: dict[str, Any]) -> None:
    had = _record(job.get("payload"))
    payload: dict[str, Any] = dict(job["payload"]) if had else {}
    for key in FLAT_PAYLOAD_KEYS:
        had = _move(job, payload, key) or had
    if _payload_kind(job.get("kind")) and not _payload_kind(payload.get("kind")):
        payload["kind"] = job.pop("kind")
        had = True
    if not _payload_kind(payload.get("kind")):
        if _has_text(payload.get("script")):
            payload["kind"] = "script"
        elif _agent_turn(payload):
            payload["kind"] = "agentTurn"
        elif _has_text(payload.get("text")):
            payload["kind"] = "systemEvent"
    if had or payload:
        job["payload"] = payload


def _agent_turn(payload: dict[str, Any]) -> bool:
    """OpenClaw's signs of an `agentTurn` payload without a kind."""
    fallbacks = payload.get("fallbacks", ...)
    return (
        _has_text(payload.get("message"))
        or _has_text(payload.get("model"))
        or ("model" in payload and payload["model"] is None)
        or _has_text(payload.get("thinking"))
        or (_number(payload.get("timeoutSeconds")) and _has_text(payload.get("text")))
        or isinstance(payload.get("lightContext"), bool)
        or isinstance(payload.get("allowUnsafeExternalContent"), bool)
        or (
            fallbacks is not ...
            and (
                fallbacks is None
                or (isinstance(fallbacks, list) and all(isinstance(f, str) for f in fallbacks))
            )
        )
    )


def _create_signal(job: dict[str, Any]) -> bool:
    """OpenClaw's `hasCronCreateSignal`: a recovered job with a schedule or payload."""
    return any(key in job for key in (*_CREATE_SIGNAL, *_CREATE_SIGNAL_TEXT))


def _empty_patch(patch: dict[str, Any]) -> bool:
    """OpenClaw's `isEmptyRecoveredCronPatch`: nothing, or only an empty `payload`."""
    return not patch or (list(patch) == ["payload"] and patch["payload"] == {})


def _missing_or_empty(value: Any) -> bool:
    """OpenClaw's `isMissingOrEmptyObject`: absent, falsy or `{}`."""
    if isinstance(value, dict):
        return not value
    if isinstance(value, bool | int | float | str):
        return not value or (isinstance(value, float) and math.isnan(value))
    return value is None


def _drop_nulls(record: dict[str, Any], keep: tuple[str, ...] = ()) -> None:
    for key, value in list(record.items()):
        if value is None and key not in keep:
            del record[key]
        elif isinstance(value, dict):
            _drop_nulls(value)


def _check_no_shell(job: dict[str, Any]) -> None:
    payload = job.get("payload")
    kind = payload.get("kind") if isinstance(payload, dict) else None
    if isinstance(kind, str) and _trim(kind).lower() == "command":
        raise ToolError(SHELL_PAYLOAD)
    schedule = job.get("schedule")
    if isinstance(schedule, dict) and schedule.get("kind") == "on-exit":
        raise ToolError(SHELL_SCHEDULE)


def _check_pacing(job: dict[str, Any]) -> None:
    """The first of OpenClaw's `assertCronPacingInput` checks (the gateway refuses pacing)."""
    pacing = job.get("pacing")
    if pacing is not None and not isinstance(pacing, dict):
        raise ToolError("cron pacing must be an object")


def _check_delivery(delivery: Any) -> None:
    """OpenClaw's `assertCronDeliveryInputNonBlankFields`."""
    if not isinstance(delivery, dict):
        return
    fields = [("delivery.channel", delivery.get("channel")), ("delivery.to", delivery.get("to"))]
    failure = delivery.get("failureDestination")
    if isinstance(failure, dict):
        fields += [
            ("delivery.failureDestination.channel", failure.get("channel")),
            ("delivery.failureDestination.to", failure.get("to")),
        ]
    completion = delivery.get("completionDestination")
    if isinstance(completion, dict):
        fields.append(("delivery.completionDestination.to", completion.get("to")))
    for name, value in fields:
        if value is not None and (not isinstance(value, str) or not _trim(value)):
            raise ToolError(f"{name} must be a non-empty string")


# --- JavaScript's values ----------------------------------------------------------------------


def _record(value: Any) -> TypeGuard[dict[str, Any]]:
    return isinstance(value, dict)


def _trim(text: str) -> str:
    return text.strip(_JS_SPACE)


def _has_text(value: Any) -> bool:
    return isinstance(value, str) and bool(_trim(value))


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _schedule_kind(value: Any) -> bool:
    return isinstance(value, str) and value in SCHEDULE_KINDS


def _payload_kind(value: Any) -> bool:
    return isinstance(value, str) and value in PAYLOAD_KINDS


def _set_at_ms(schedule: dict[str, Any], value: Any) -> None:
    """OpenClaw's `setScheduleAtMs`: a number (or what JavaScript's `Number` makes of it)
    of milliseconds as an ISO time; the value as it was when it is none or out of range."""
    number = _js_number(value)
    iso = _iso(math.floor(number)) if math.isfinite(number) else None
    schedule["at"] = value if iso is None else iso


def _js_number(value: Any) -> float:
    """JavaScript's `Number(value)` of a JSON value."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        return float(value)
    if value is None:
        return 0.0
    if isinstance(value, list):
        if not value:
            return 0.0
        if len(value) == 1 and not isinstance(value[0], dict | list):
            item = value[0]
            text = "" if item is None else _js_string(item)
            return _js_number(text)
        return math.nan
    if not isinstance(value, str):
        return math.nan
    text = _trim(value)
    if not text:
        return 0.0
    if _DECIMAL.fullmatch(text):
        return float(text.replace("Infinity", "inf"))
    if _RADIX.fullmatch(text):
        return float(int(text, 0))
    return math.nan


def _js_string(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _iso(ms: int) -> str | None:
    """`new Date(ms).toISOString()`, None outside the dates JavaScript has."""
    if abs(ms) > _MAX_DATE_MS:
        return None
    days, rest = divmod(ms, 86_400_000)
    year, month, day = _civil(days)
    seconds, millis = divmod(rest, 1000)
    hours, seconds = divmod(seconds, 3600)
    minutes, seconds = divmod(seconds, 60)
    text = f"{year:04d}" if 0 <= year <= 9999 else f"{'-' if year < 0 else '+'}{abs(year):06d}"
    return f"{text}-{month:02d}-{day:02d}T{hours:02d}:{minutes:02d}:{seconds:02d}.{millis:03d}Z"


def _civil(days: int) -> tuple[int, int, int]:
    """The proleptic Gregorian (year, month, day) `days` after 1970-01-01."""
    days += 719_468
    era = days // 146_097
    doe = days - era * 146_097
    yoe = (doe - doe // 1460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (month <= 2), month, day
