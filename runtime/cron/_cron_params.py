"""Cron method params the generator cannot express, written by hand (2026.9.6 shapes).

`CronGetParams`, `CronRemoveParams`, `CronRunParams` and `CronUpdateParams` are `anyOf`
`{id, ...}` | `{jobId, ...}` in the schema (one of the two names the job); msgspec has no
untagged object unions, so each is one closed Struct with both optional and `job_id()`
requiring exactly one. `CronUpdateParams.patch` is closed as in the schema: every field
optional, some nullable (null clears). `tests/runtime/cron/test_cron_jobs.py` checks these
against the schema's property names, so they cannot drift.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from ..protocol import ClawlaneError
from ..protocol._wire import (
    CronAddParamsDeliveryAnnounceCompletionDestination,
    CronAddParamsPacing,
    CronAddParamsScheduleAt,
    CronAddParamsScheduleCron,
    CronAddParamsScheduleEvery,
    CronAddParamsScheduleOnExit,
    CronAddParamsScheduleStream,
    CronAddParamsTrigger,
)

__all__ = [
    "CronGetParams",
    "CronJobPatch",
    "CronPatchDelivery",
    "CronPatchPayloadAgentTurn",
    "CronPatchPayloadCommand",
    "CronPatchPayloadScript",
    "CronPatchPayloadSystemEvent",
    "CronRemoveParams",
    "CronRunParams",
    "CronUpdateParams",
    "JobIdError",
]

NonEmpty = Annotated[str, msgspec.Meta(min_length=1)]
Label = Annotated[str, msgspec.Meta(min_length=1, max_length=200, pattern=r"\S")]
Target = Annotated[str, msgspec.Meta(min_length=1, pattern=r"\S")]
UNSET: Any = msgspec.UNSET
Schedule = (
    CronAddParamsScheduleAt
    | CronAddParamsScheduleEvery
    | CronAddParamsScheduleCron
    | CronAddParamsScheduleOnExit
    | CronAddParamsScheduleStream
)


class JobIdError(ClawlaneError, ValueError):
    """Neither or both of `id` and `jobId`."""


class _Closed(msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    pass


class _JobRef(_Closed, frozen=True):
    id: NonEmpty | msgspec.UnsetType = UNSET
    jobId: NonEmpty | msgspec.UnsetType = UNSET

    def job_id(self) -> str:
        """The job named; raises `JobIdError` when neither or both are given."""
        given = [v for v in (self.id, self.jobId) if isinstance(v, str)]
        if len(given) != 1:
            raise JobIdError("exactly one of id or jobId is required")
        return given[0]


class CronGetParams(_JobRef, frozen=True):
    """`CronGetParams`: `{id}` or `{jobId}`."""


class CronRemoveParams(_JobRef, frozen=True):
    """`CronRemoveParams`: `{id}` or `{jobId}`."""


class CronRunParams(_JobRef, frozen=True):
    """`CronRunParams`: the job, and `mode` (`force`, the default for operators; `due`:
    only when due; `if-enabled`: not when disabled)."""

    mode: Literal["due", "force", "if-enabled"] | msgspec.UnsetType = UNSET
    expectedProcessInstanceId: NonEmpty | msgspec.UnsetType = UNSET


class CronPatchPayloadSystemEvent(_Closed, frozen=True, tag_field="kind", tag="systemEvent"):
    text: NonEmpty | msgspec.UnsetType = UNSET
    toolsAllow: list[str] | msgspec.UnsetType | None = UNSET
    toolsAllowIsDefault: bool | msgspec.UnsetType = UNSET


class CronPatchPayloadAgentTurn(_Closed, frozen=True, tag_field="kind", tag="agentTurn"):
    message: NonEmpty | msgspec.UnsetType = UNSET
    model: str | msgspec.UnsetType | None = UNSET
    fallbacks: list[str] | msgspec.UnsetType | None = UNSET
    thinking: str | msgspec.UnsetType | None = UNSET
    timeoutSeconds: Annotated[float, msgspec.Meta(ge=0)] | msgspec.UnsetType | None = UNSET
    allowUnsafeExternalContent: bool | msgspec.UnsetType | None = UNSET
    lightContext: bool | msgspec.UnsetType | None = UNSET
    toolsAllow: list[str] | msgspec.UnsetType | None = UNSET
    toolsAllowIsDefault: bool | msgspec.UnsetType = UNSET


class CronPatchPayloadCommand(_Closed, frozen=True, tag_field="kind", tag="command"):
    argv: list[NonEmpty] | msgspec.UnsetType = UNSET
    cwd: Any = UNSET
    env: Any = UNSET
    input: Any = UNSET
    timeoutSeconds: Any = UNSET
    noOutputTimeoutSeconds: Any = UNSET
    outputMaxBytes: Any = UNSET
    toolsAllow: Any = UNSET
    toolsAllowIsDefault: Any = UNSET


class CronPatchPayloadScript(_Closed, frozen=True, tag_field="kind", tag="script"):
    script: Any = UNSET
    timeoutSeconds: Any = UNSET
    toolBudget: Any = UNSET
    toolsAllow: Any = UNSET
    toolsAllowIsDefault: Any = UNSET


class CronPatchDelivery(_Closed, frozen=True):
    """`patch.delivery`: merged into the job's delivery; null clears a field."""

    mode: Literal["none", "announce", "webhook"] | msgspec.UnsetType = UNSET
    channel: str | msgspec.UnsetType | None = UNSET
    threadId: str | float | msgspec.UnsetType | None = UNSET
    accountId: NonEmpty | msgspec.UnsetType | None = UNSET
    bestEffort: bool | msgspec.UnsetType = UNSET
    failureDestination: dict[str, Any] | msgspec.UnsetType | None = UNSET
    completionDestination: (
        CronAddParamsDeliveryAnnounceCompletionDestination | msgspec.UnsetType | None
    ) = UNSET
    to: Target | msgspec.UnsetType | None = UNSET


class CronPatchFailureAlert(_Closed, frozen=True):
    """`patch.failureAlert` as an object: as `cron.add`'s, where null clears a field."""

    after: Annotated[int, msgspec.Meta(ge=1)] | msgspec.UnsetType | None = UNSET
    channel: NonEmpty | msgspec.UnsetType | None = UNSET
    to: NonEmpty | msgspec.UnsetType | None = UNSET
    cooldownMs: Annotated[int, msgspec.Meta(ge=0)] | msgspec.UnsetType | None = UNSET
    includeSkipped: bool | msgspec.UnsetType | None = UNSET
    mode: Literal["announce", "webhook"] | msgspec.UnsetType | None = UNSET
    accountId: NonEmpty | msgspec.UnsetType | None = UNSET


class CronJobPatch(_Closed, frozen=True):
    """`CronUpdateParams.patch`."""

    name: NonEmpty | msgspec.UnsetType = UNSET
    displayName: Label | msgspec.UnsetType | None = UNSET
    agentId: NonEmpty | msgspec.UnsetType | None = UNSET
    sessionKey: NonEmpty | msgspec.UnsetType | None = UNSET
    description: str | msgspec.UnsetType = UNSET
    enabled: bool | msgspec.UnsetType = UNSET
    deleteAfterRun: bool | msgspec.UnsetType = UNSET
    schedule: Schedule | msgspec.UnsetType = UNSET
    pacing: CronAddParamsPacing | msgspec.UnsetType | None = UNSET
    trigger: CronAddParamsTrigger | msgspec.UnsetType | None = UNSET
    sessionTarget: str | msgspec.UnsetType = UNSET
    wakeMode: Literal["next-heartbeat", "now"] | msgspec.UnsetType = UNSET
    payload: (
        CronPatchPayloadSystemEvent
        | CronPatchPayloadAgentTurn
        | CronPatchPayloadCommand
        | CronPatchPayloadScript
        | msgspec.UnsetType
    ) = UNSET
    delivery: CronPatchDelivery | msgspec.UnsetType = UNSET
    failureAlert: Literal[False] | CronPatchFailureAlert | msgspec.UnsetType | None = UNSET
    state: dict[str, Any] | msgspec.UnsetType = UNSET


class CronUpdateParams(_JobRef, frozen=True, kw_only=True):
    """`CronUpdateParams`: the job, its `patch`, and optimistic `expectedConfigRevision`."""

    patch: CronJobPatch
    expectedConfigRevision: NonEmpty | msgspec.UnsetType = UNSET
