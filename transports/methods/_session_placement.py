"""`sessions.move`: a session moved between placements (the gateway, a profile's cloud
worker, a paired device), as OpenClaw 2026.9.6 answers it where no session has one.

OpenClaw moves a session only from a worker placement (`active` or `draining`); a session
that runs on the gateway itself is `local` and cannot move ("session cannot move from
placement local"). Every clawlane session runs on the gateway's nodes, so after the
params (OpenClaw's `SessionsMoveParams`: the expected placement `{generation,
environmentId, ownerEpoch}` and the target `{kind: gateway}`, `{kind: profile,
profileId}` or `{kind: device, deviceId}`; `abandonSource` only towards the gateway) and
the session (an unknown one is `INVALID_REQUEST`) are checked, a move is refused with
OpenClaw's message. The Control UI offers the move only on a row with a worker placement,
which clawlane's rows never have. Scope as OpenClaw's: `operator.admin` towards a
profile, else `operator.write`.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

import msgspec
from msgspec import UNSET, Meta, UnsetType

from runtime.protocol import invalid_request, missing_scope, opt

from ._context import Call, MethodTable
from ._submit import key_of

__all__ = ["SessionsMoveParams", "register"]

_MAX_SAFE: Final = 9_007_199_254_740_991
_Id = Annotated[str, Meta(min_length=1, max_length=256, pattern=r"^\S(?:.*\S)?$")]


class MoveExpected(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    generation: Annotated[int, Meta(ge=0, le=_MAX_SAFE)]
    environmentId: _Id
    ownerEpoch: Annotated[int, Meta(ge=1, le=_MAX_SAFE)]


class GatewayTarget(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, tag="gateway", tag_field="kind"
):
    pass


class ProfileTarget(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, tag="profile", tag_field="kind"
):
    profileId: _Id
    machineClass: Annotated[str, Meta(min_length=1, max_length=128)] | UnsetType = UNSET
    os: Annotated[str, Meta(min_length=1, max_length=64)] | UnsetType = UNSET


class DeviceTarget(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, tag="device", tag_field="kind"
):
    deviceId: _Id


class SessionsMoveParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """OpenClaw 2026.9.6's `SessionsMoveParams`."""

    key: Annotated[str, Meta(min_length=1)]
    expected: MoveExpected
    target: GatewayTarget | ProfileTarget | DeviceTarget
    agentId: Annotated[str, Meta(min_length=1)] | UnsetType = UNSET
    abandonSource: Literal[True] | UnsetType = UNSET


def register(methods: MethodTable) -> None:
    methods.add("sessions.move", sessions_move, SessionsMoveParams, scope="operator.write")


async def sessions_move(call: Call, params: SessionsMoveParams) -> dict[str, Any]:
    if isinstance(params.target, ProfileTarget) and not call.conn.has_scope("operator.admin"):
        raise missing_scope("operator.admin", ["operator.admin"])
    if params.abandonSource is True and not isinstance(params.target, GatewayTarget):
        raise invalid_request(
            "invalid sessions.move params: abandonSource applies to a move to the gateway only"
        )
    key = key_of(call, params.key.strip(), opt(params.agentId))
    if await call.gateway.actors.supervisor.store.get_session(key) is None:
        raise invalid_request(f"session not found: {params.key}")
    raise invalid_request("session cannot move from placement local")
