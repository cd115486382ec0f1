"""Cron jobs: the stored record, its validation, patches, and OpenClaw's wire views. Sans-IO.

A `CronJob` holds OpenClaw's field names (`CronJob` in the 2026.9.6 schema), so its view is
`msgspec.to_builtins` plus the legacy top-level mirrors of `state` that OpenClaw still sends
(`nextRunAtMs`, `lastRunAtMs`, `lastRunStatus`, ...) and a `configRevision`. The record is
mutable and owned by one task (the scheduler); the store keeps it as JSON.

What clawlane runs (anything else is refused with `INVALID_REQUEST` naming the field):
schedules `at`, `every`, `cron`; payloads `agentTurn` (isolated, current, `session:<id>`
targets) and `systemEvent` (the `main` target); delivery `none`, `announce` (clawlane has no
chat channels: the reply stays in the run's session, which completes delivery, as OpenClaw
does for a conversation without an external route) and `webhook`.

Errors: `CronJobError` (a `ValueError`), its message names the field.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any, Final, Literal
from urllib.parse import urlsplit

import msgspec

from ..protocol import ClawlaneError
from ..protocol._wire import (
    CronAddParams,
    CronAddParamsDeliveryAnnounce,
    CronAddParamsDeliveryNone,
    CronAddParamsDeliveryWebhook,
    CronAddParamsPayloadAgentTurn,
    CronAddParamsPayloadSystemEvent,
    CronAddParamsScheduleAt,
    CronAddParamsScheduleCron,
    CronAddParamsScheduleEvery,
)
from ._cron_params import CronJobPatch, CronPatchPayloadAgentTurn, CronPatchPayloadSystemEvent
from ._cron_schedule import (
    ScheduleError,
    default_stagger_ms,
    format_iso_ms,
    next_cron_ms,
    next_every_ms,
    parse_at_ms,
)

__all__ = [
    "CronJob",
    "CronJobError",
    "CronJobState",
    "Delivery",
    "Payload",
    "Schedule",
    "apply_patch",
    "config_revision",
    "decode_job",
    "encode_job",
    "job_from_add",
    "job_view",
    "next_run_after",
    "webhook_url_problem",
]

Schedule = CronAddParamsScheduleAt | CronAddParamsScheduleEvery | CronAddParamsScheduleCron
Payload = CronAddParamsPayloadSystemEvent | CronAddParamsPayloadAgentTurn
Delivery = CronAddParamsDeliveryNone | CronAddParamsDeliveryAnnounce | CronAddParamsDeliveryWebhook
RunStatus = Literal["ok", "error", "skipped"]
DeliveryStatus = Literal["delivered", "not-delivered", "unknown", "not-requested"]
UNSET: Any = msgspec.UNSET
_MIRRORED: Final = (
    "nextRunAtMs",
    "lastRunAtMs",
    "lastRunStatus",
    "lastDelivered",
    "lastDeliveryStatus",
    "lastDeliveryError",
)


class CronJobError(ClawlaneError, ValueError):
    """A job definition clawlane cannot run; the message names the field."""


class CronJobState(msgspec.Struct, omit_defaults=True, kw_only=True):
    """`CronJob.state` (the fields clawlane keeps)."""

    nextRunAtMs: int | None = None
    runningAtMs: int | None = None
    lastRunAtMs: int | None = None
    lastRunStatus: RunStatus | None = None
    lastStatus: RunStatus | None = None
    lastError: str | None = None
    lastDurationMs: int | None = None
    consecutiveErrors: int | None = None
    consecutiveSkipped: int | None = None
    lastDelivered: bool | None = None
    lastDeliveryStatus: DeliveryStatus | None = None
    lastDeliveryError: str | None = None
    scheduleActivatedAtMs: int | None = None


class CronJob(msgspec.Struct, omit_defaults=True, kw_only=True):
    """A stored job, in OpenClaw's field names."""

    id: str
    name: str
    enabled: bool
    createdAtMs: int
    updatedAtMs: int
    schedule: Schedule
    sessionTarget: str
    wakeMode: Literal["next-heartbeat", "now"]
    payload: Payload
    state: CronJobState = msgspec.field(default_factory=CronJobState)
    agentId: str | None = None
    sessionKey: str | None = None
    displayName: str | None = None
    declarationKey: str | None = None
    description: str | None = None
    deleteAfterRun: bool | None = None
    delivery: Delivery | None = None

    @property
    def webhook(self) -> str | None:
        return self.delivery.to if isinstance(self.delivery, CronAddParamsDeliveryWebhook) else None


_encoder: Final = msgspec.json.Encoder()
_decoder: Final = msgspec.json.Decoder(CronJob)


JOB_MAX_BYTES: Final = 256 * 1024
"""A job's size, encoded (its name, description, payload text, ...): `cron.add` and
`cron.update` refuse a larger one. Jobs live in memory, every one, so each is bounded."""


def check_job_size(job: CronJob) -> int:
    """The job's encoded size; raises `CronJobError` past `JOB_MAX_BYTES`."""
    size = len(encode_job(job))
    if size > JOB_MAX_BYTES:
        raise CronJobError(
            f"the job is {size:,} bytes encoded, over the limit of {JOB_MAX_BYTES:,}"
            " (name, description and payload together)"
        )
    return size


def encode_job(job: CronJob) -> bytes:
    return _encoder.encode(job)


def decode_job(data: bytes) -> CronJob:
    """Raises `msgspec.DecodeError` on bytes that are not a job."""
    return _decoder.decode(data)


# --- validation -----------------------------------------------------------------------------


def webhook_url_problem(url: str) -> str | None:
    """Why `url` is not usable as a webhook (None when it is): http(s), a host, no userinfo."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "must be a valid http(s) URL"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "must be a valid http(s) URL"
    if parts.username is not None or parts.password is not None:
        return "must not embed credentials (use cron.webhookToken or cron.webhookSecret)"
    return None


def _schedule(raw: Any, *, job_id: str, now_ms: int, check_past: bool) -> Schedule:
    if not isinstance(raw, Schedule):
        kind = getattr(raw, "__struct_config__", None)
        name = kind.tag if kind is not None else "?"
        raise CronJobError(
            f"schedule.kind: {name!r} is not supported by clawlane (use at, every or cron)"
        )
    try:
        if isinstance(raw, CronAddParamsScheduleAt):
            at_ms = parse_at_ms(raw.at)
            if check_past and at_ms <= now_ms:
                raise CronJobError(
                    f"schedule.at is in the past: {format_iso_ms(at_ms)} "
                    f"(current time: {format_iso_ms(now_ms)})"
                )
            return CronAddParamsScheduleAt(at=format_iso_ms(at_ms))
        if isinstance(raw, CronAddParamsScheduleEvery):
            anchor = raw.anchorMs if isinstance(raw.anchorMs, int) else now_ms
            return CronAddParamsScheduleEvery(everyMs=raw.everyMs, anchorMs=anchor)
        tz = raw.tz if isinstance(raw.tz, str) and raw.tz.strip() else UNSET
        stagger = raw.staggerMs
        if not isinstance(stagger, int):
            stagger = default_stagger_ms(raw.expr, tz or None) or UNSET
        sched = CronAddParamsScheduleCron(expr=" ".join(raw.expr.split()), tz=tz, staggerMs=stagger)
        if next_run_after(sched, job_id, now_ms) is None:
            raise CronJobError(f"schedule.expr {raw.expr!r} has no upcoming run time")
        return sched
    except ScheduleError as exc:
        raise CronJobError(str(exc)) from exc


def _target(raw: Any) -> str:
    if not isinstance(raw, str):
        raise CronJobError("sessionTarget: expected main, isolated, current or session:<id>")
    value = raw.strip()
    lowered = value.lower()
    if lowered in ("main", "isolated", "current"):
        return lowered
    if lowered.startswith("session:") and value[8:].strip() and "\0" not in value:
        return "session:" + value[8:].strip()
    raise CronJobError(
        f"sessionTarget: expected main, isolated, current or session:<id> (got {raw!r})"
    )


def _check_pairing(target: str, payload: Any) -> Payload:
    if not isinstance(payload, Payload):
        kind = payload.__struct_config__.tag
        raise CronJobError(
            f"payload.kind: {kind!r} is not supported by clawlane (use agentTurn or systemEvent)"
        )
    if target == "main" and not isinstance(payload, CronAddParamsPayloadSystemEvent):
        raise CronJobError('payload.kind: main cron jobs require payload.kind="systemEvent"')
    if target != "main" and not isinstance(payload, CronAddParamsPayloadAgentTurn):
        raise CronJobError(
            'payload.kind: isolated/current/session cron jobs require payload.kind="agentTurn"'
        )
    return payload


def _delivery(raw: Any, target: str, payload: Payload) -> Delivery | None:
    if raw is UNSET or raw is None:
        return CronAddParamsDeliveryAnnounce() if target != "main" else None
    if isinstance(raw, CronAddParamsDeliveryWebhook):
        problem = webhook_url_problem(raw.to)
        if problem:
            raise CronJobError(f"delivery.to: cron webhook delivery requires a URL that {problem}")
    assert isinstance(raw, Delivery)
    return raw


def job_from_add(params: CronAddParams, *, job_id: str, now_ms: int) -> CronJob:
    """A new job from `cron.add` params. Raises `CronJobError`."""
    if params.trigger is not UNSET:
        raise CronJobError("trigger: condition triggers are not supported by clawlane")
    if params.pacing is not UNSET:
        raise CronJobError("pacing: dynamic cadence is not supported by clawlane")
    target = _target(params.sessionTarget)
    session_key = params.sessionKey if isinstance(params.sessionKey, str) else None
    if target == "current" and not session_key:
        target = "isolated"  # OpenClaw: a caller without a session runs isolated
    payload = _check_pairing(target, params.payload)
    schedule = _schedule(params.schedule, job_id=job_id, now_ms=now_ms, check_past=True)
    delete_after = params.deleteAfterRun if isinstance(params.deleteAfterRun, bool) else None
    if delete_after is None and isinstance(schedule, CronAddParamsScheduleAt):
        delete_after = True
    job = CronJob(
        id=job_id,
        name=params.name.strip() or params.name,
        enabled=params.enabled if isinstance(params.enabled, bool) else True,
        createdAtMs=now_ms,
        updatedAtMs=now_ms,
        schedule=schedule,
        sessionTarget=target,
        wakeMode=params.wakeMode,
        payload=payload,
        agentId=params.agentId if isinstance(params.agentId, str) else None,
        sessionKey=session_key,
        displayName=params.displayName if isinstance(params.displayName, str) else None,
        declarationKey=params.declarationKey if isinstance(params.declarationKey, str) else None,
        description=params.description if isinstance(params.description, str) else None,
        deleteAfterRun=delete_after,
        delivery=_delivery(params.delivery, target, payload),
    )
    if job.enabled:
        job.state.nextRunAtMs = next_run_after(job.schedule, job.id, now_ms)
    check_job_size(job)
    return job


# --- patches --------------------------------------------------------------------------------


def _merge_struct(base: msgspec.Struct, patch: msgspec.Struct, cls: type[Any]) -> Any:
    data = msgspec.to_builtins(base)
    for name in patch.__struct_fields__:
        value = getattr(patch, name)
        if value is UNSET:
            continue
        if value is None:
            data.pop(name, None)
        else:
            data[name] = msgspec.to_builtins(value)
    try:
        return msgspec.convert(data, cls)
    except msgspec.ValidationError as exc:
        raise CronJobError(f"invalid patch: {exc}") from exc


def _patch_payload(job: CronJob, raw: Any) -> Payload:
    same = (
        isinstance(raw, CronPatchPayloadAgentTurn)
        and isinstance(job.payload, CronAddParamsPayloadAgentTurn)
    ) or (
        isinstance(raw, CronPatchPayloadSystemEvent)
        and isinstance(job.payload, CronAddParamsPayloadSystemEvent)
    )
    if same:
        merged: Payload = _merge_struct(job.payload, raw, type(job.payload))
        return merged
    if isinstance(raw, CronPatchPayloadAgentTurn):
        if not isinstance(raw.message, str):
            raise CronJobError(
                'payload.message: cron.update payload.kind="agentTurn" requires message'
            )
        turn: Payload = _merge_struct(
            CronAddParamsPayloadAgentTurn(message=raw.message), raw, CronAddParamsPayloadAgentTurn
        )
        return turn
    if isinstance(raw, CronPatchPayloadSystemEvent):
        if not isinstance(raw.text, str):
            raise CronJobError('payload.text: cron.update payload.kind="systemEvent" requires text')
        event: Payload = _merge_struct(
            CronAddParamsPayloadSystemEvent(text=raw.text), raw, CronAddParamsPayloadSystemEvent
        )
        return event
    kind = raw.__struct_config__.tag
    raise CronJobError(
        f"payload.kind: {kind!r} is not supported by clawlane (use agentTurn or systemEvent)"
    )


def _patch_delivery(job: CronJob, raw: Any) -> Delivery:
    data: dict[str, Any] = (
        msgspec.to_builtins(job.delivery) if job.delivery else {"mode": "announce"}
    )
    for name in raw.__struct_fields__:
        value = getattr(raw, name)
        if value is UNSET:
            continue
        if value is None:
            data.pop(name, None)
        else:
            data[name] = msgspec.to_builtins(value)
    if data.get("mode") != "announce":
        data.pop("completionDestination", None)
    try:
        delivery: Delivery = msgspec.convert(data, Delivery)
    except msgspec.ValidationError as exc:
        raise CronJobError(f"delivery: {exc}") from exc
    if isinstance(delivery, CronAddParamsDeliveryWebhook):
        problem = webhook_url_problem(delivery.to)
        if problem:
            raise CronJobError(f"delivery.to: cron webhook delivery requires a URL that {problem}")
    return delivery


def apply_patch(job: CronJob, patch: CronJobPatch, *, now_ms: int) -> CronJob:
    """A copy of `job` with `patch` applied. Raises `CronJobError`. A new schedule (or
    enabling a disabled job) starts a new scheduling decision from `now_ms`."""
    new = msgspec.convert(msgspec.to_builtins(job), CronJob)
    if patch.trigger not in (UNSET, None):
        raise CronJobError("trigger: condition triggers are not supported by clawlane")
    if patch.pacing not in (UNSET, None):
        raise CronJobError("pacing: dynamic cadence is not supported by clawlane")
    for name in ("name", "description", "deleteAfterRun", "wakeMode"):
        value = getattr(patch, name)
        if value is not UNSET:
            setattr(new, name, value)
    for name in ("displayName", "agentId", "sessionKey"):
        value = getattr(patch, name)
        if value is not UNSET:
            setattr(new, name, value)
    if patch.sessionTarget is not UNSET:
        new.sessionTarget = _target(patch.sessionTarget)
    if patch.payload is not UNSET:
        new.payload = _patch_payload(new, patch.payload)
    _check_pairing(new.sessionTarget, new.payload)
    if patch.delivery is not UNSET:
        new.delivery = _patch_delivery(new, patch.delivery)
    rescheduled = False
    if patch.schedule is not UNSET:
        raw = patch.schedule
        if isinstance(raw, CronAddParamsScheduleEvery) and raw.anchorMs is UNSET:
            raw = CronAddParamsScheduleEvery(everyMs=raw.everyMs, anchorMs=now_ms)
        new.schedule = _schedule(raw, job_id=job.id, now_ms=now_ms, check_past=False)
        rescheduled = True
    if isinstance(patch.enabled, bool):
        rescheduled = rescheduled or (patch.enabled and not job.enabled)
        new.enabled = patch.enabled
    if rescheduled:
        new.state.scheduleActivatedAtMs = now_ms
    if not new.enabled:
        new.state.nextRunAtMs = None
    elif rescheduled or new.state.nextRunAtMs is None:
        new.state.nextRunAtMs = next_run_after(new.schedule, new.id, now_ms)
    new.updatedAtMs = now_ms
    check_job_size(new)
    return new


# --- scheduling -----------------------------------------------------------------------------


def next_run_after(schedule: Schedule, job_id: str, after_ms: int) -> int | None:
    """The job's next firing strictly after `after_ms` (an `at` in the past: none)."""
    if isinstance(schedule, CronAddParamsScheduleAt):
        at = parse_at_ms(schedule.at)
        return at if at > after_ms else None
    if isinstance(schedule, CronAddParamsScheduleEvery):
        anchor = schedule.anchorMs if isinstance(schedule.anchorMs, int) else after_ms
        return next_every_ms(schedule.everyMs, anchor, after_ms)
    tz = schedule.tz if isinstance(schedule.tz, str) else None
    stagger = schedule.staggerMs if isinstance(schedule.staggerMs, int) else 0
    return next_cron_ms(schedule.expr, tz, after_ms, job_id=job_id, stagger_ms=stagger)


# --- views ----------------------------------------------------------------------------------


def config_revision(job: CronJob) -> str:
    """`sha256:<base64url>` of the job's definition (not its state), as OpenClaw names it."""
    data = msgspec.to_builtins(job)
    for volatile in ("state", "updatedAtMs"):
        data.pop(volatile, None)
    digest = hashlib.sha256(msgspec.json.encode(data, order="sorted")).digest()
    return "sha256:" + base64.urlsafe_b64encode(digest).decode().rstrip("=")


def job_view(job: CronJob, *, revision: bool = True) -> dict[str, Any]:
    """The job as OpenClaw sends it (`CronJob`), with its state mirrored at the top."""
    data: dict[str, Any] = msgspec.to_builtins(job)
    if revision:
        data["configRevision"] = config_revision(job)
    for name in _MIRRORED:
        value = data["state"].get(name)
        if value is not None:
            data[name] = value
    if job.state.lastError:
        data["lastRunError"] = job.state.lastError
    return data
