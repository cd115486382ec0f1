"""The audit log as OpenClaw 2026.9.6 answers it (`openclaw audit`, operator.read): the
runs' and tool calls' metadata-only records the store keeps (`actors.AuditTable`, written by
`actors.runs.AuditRecorder`).

- `audit.list {agentId?, sessionKey?, runId?, kind?, status?, after?, before?, limit?,
  cursor?}`: `{events, nextCursor?}`, newest first (by `sequence`), `limit` 1 to 500
  (default 100), `after`/`before` bounding `occurredAt` (inclusive), `cursor` the
  `nextCursor` of the page before (digits: the `sequence` to list below). An `after` past
  `before` or a cursor that is not a positive integer is `INVALID_REQUEST` ("invalid
  audit.list range or cursor"), as OpenClaw's.
- `audit.activity.list`: the same records with `eventType` and `schemaVersion`, and its
  message filters (`kind: "message"`, `direction`, `channel`): clawlane has no channels, so
  it records no message lifecycle (OpenClaw's is off by default too) and a message filter
  lists nothing. The filter combinations OpenClaw refuses are refused with its words
  ("invalid audit.activity.list filters: ...").

Each listing first waits for this node's recorder to hand the events recorded so far to the
store, so a run that has ended is listed. Operator actions (config writes, approvals) are
not in OpenClaw's audit log either: its records are runs, tool calls and channel messages.
"""

from __future__ import annotations

import re
import time
from typing import Annotated, Any, Literal

import msgspec
import trio

from actors import AuditFilter, AuditTable, StoreError
from runtime.protocol import invalid_request, opt

from ._context import Call, MethodTable, store_unavailable

__all__ = ["AuditActivityListParams", "AuditListParams", "register"]

_Status = Literal["started", "succeeded", "failed", "cancelled", "timed_out", "blocked", "unknown"]
_NonEmpty = Annotated[str, msgspec.Meta(min_length=1)]
_Ms = Annotated[int, msgspec.Meta(ge=0)]
_Limit = Annotated[int, msgspec.Meta(ge=1, le=500)]
_DIGITS = re.compile(r"\d+")


class AuditListParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    agentId: _NonEmpty | msgspec.UnsetType = msgspec.UNSET
    sessionKey: _NonEmpty | msgspec.UnsetType = msgspec.UNSET
    runId: _NonEmpty | msgspec.UnsetType = msgspec.UNSET
    kind: Literal["agent_run", "tool_action"] | msgspec.UnsetType = msgspec.UNSET
    status: _Status | msgspec.UnsetType = msgspec.UNSET
    after: _Ms | msgspec.UnsetType = msgspec.UNSET
    before: _Ms | msgspec.UnsetType = msgspec.UNSET
    limit: _Limit | msgspec.UnsetType = msgspec.UNSET
    cursor: _NonEmpty | msgspec.UnsetType = msgspec.UNSET


class AuditActivityListParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    agentId: _NonEmpty | msgspec.UnsetType = msgspec.UNSET
    sessionKey: _NonEmpty | msgspec.UnsetType = msgspec.UNSET
    runId: _NonEmpty | msgspec.UnsetType = msgspec.UNSET
    kind: Literal["agent_run", "tool_action", "message"] | msgspec.UnsetType = msgspec.UNSET
    status: _Status | msgspec.UnsetType = msgspec.UNSET
    direction: Literal["inbound", "outbound"] | msgspec.UnsetType = msgspec.UNSET
    channel: _NonEmpty | msgspec.UnsetType = msgspec.UNSET
    after: _Ms | msgspec.UnsetType = msgspec.UNSET
    before: _Ms | msgspec.UnsetType = msgspec.UNSET
    limit: _Limit | msgspec.UnsetType = msgspec.UNSET
    cursor: _NonEmpty | msgspec.UnsetType = msgspec.UNSET


def register(methods: MethodTable) -> None:
    methods.add("audit.list", audit_list, AuditListParams)
    methods.add("audit.activity.list", audit_activity_list, AuditActivityListParams)


def _cursor(method: str, params: AuditListParams | AuditActivityListParams) -> int | None:
    """The cursor as a sequence; `INVALID_REQUEST` for one that is not a positive integer,
    or a range that ends before it starts (OpenClaw's check and words)."""
    cursor = None
    bad = False
    given, after, before = opt(params.cursor), opt(params.after), opt(params.before)
    if given is not None:
        text = given.strip()
        bad = not _DIGITS.fullmatch(text) or int(text) < 1
        cursor = None if bad else int(text)
    if after is not None and before is not None and after > before:
        bad = True
    if bad:
        raise invalid_request(f"invalid {method} range or cursor")
    return cursor


def _filter(params: AuditListParams | AuditActivityListParams, cursor: int | None) -> AuditFilter:
    def text(value: str | None) -> str | None:
        return (value or "").strip() or None

    return AuditFilter(
        limit=opt(params.limit) or 100,
        cursor=cursor,
        agent_id=text(opt(params.agentId)),
        session_key=text(opt(params.sessionKey)),
        run_id=text(opt(params.runId)),
        kind=opt(params.kind),
        status=opt(params.status),
        after=opt(params.after),
        before=opt(params.before),
    )


async def _page(call: Call, which: AuditFilter) -> dict[str, Any]:
    sup = call.gateway.actors.supervisor
    if sup.audit is not None:
        await sup.audit.flush()
    try:
        page = await AuditTable(sup.store).list(which, int(time.time() * 1000))
    except StoreError as exc:
        raise store_unavailable(exc) from exc
    result: dict[str, Any] = {"events": page.events}
    if page.next_cursor is not None:
        result["nextCursor"] = str(page.next_cursor)
    return result


async def audit_list(call: Call, params: AuditListParams) -> dict[str, Any]:
    return await _page(call, _filter(params, _cursor("audit.list", params)))


def _conflict(params: AuditActivityListParams) -> str | None:
    """OpenClaw's `findAuditActivityFilterConflict`, in its words."""
    kind, session_key = opt(params.kind), opt(params.sessionKey)
    message_field = (
        "direction"
        if opt(params.direction) is not None
        else "channel"
        if opt(params.channel)
        else None
    )
    if kind == "message" and session_key is not None:
        return "sessionKey only applies to kind agent_run or tool_action"
    if kind is not None and kind != "message" and message_field:
        return f"{message_field} only applies to kind message"
    if kind is None and session_key is not None and message_field:
        return f"{message_field} cannot be combined with sessionKey"
    return None


async def audit_activity_list(call: Call, params: AuditActivityListParams) -> dict[str, Any]:
    conflict = _conflict(params)
    if conflict is not None:
        raise invalid_request(f"invalid audit.activity.list filters: {conflict}")
    cursor = _cursor("audit.activity.list", params)
    direction, channel = opt(params.direction), opt(params.channel)
    if opt(params.kind) == "message" or direction is not None or channel is not None:
        await trio.lowlevel.checkpoint()
        return {"events": []}  # no channel messages are recorded here
    result = await _page(call, _filter(params, cursor))
    result["events"] = [{"eventType": e["kind"], "schemaVersion": 1, **e} for e in result["events"]]
    return result
