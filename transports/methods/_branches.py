"""A session's branches as OpenClaw's Control UI edits them: `sessions.branches.list`
(operator.read), `sessions.branches.switch`, `sessions.rewind`, `sessions.fork`
(operator.write).

A transcript is a tree; the session runs on one branch of it (`runtime.sessions`'
branches). Nothing is rewritten or deleted:

- `sessions.rewind {sessionKey, entryId}`: the session continues from before user message
  `entryId` (on its active branch); that message and what followed stay on a side branch.
  Answers `{editorText}`: the message's text, for the UI's editor to send again or edit.
- `sessions.fork {sessionKey, entryId}`: a new session (`agent:<id>:dashboard:<uuid>`, as
  OpenClaw names it) whose transcript is the branch up to before that message. Answers
  `{sessionKey, editorText}`.
- `sessions.branches.switch {sessionKey, leafEntryId}`: continue on another branch's tip.
- `sessions.branches.list {sessionKey}`: every branch tip, the active one marked.

While the session has a run going or queued these answer `UNAVAILABLE` (as OpenClaw: "...
is unavailable while the agent is working"); an entry that is not there, not a user
message, not on the active branch or not a branch tip is `INVALID_REQUEST` with OpenClaw's
message. In a cluster they go to the session's owner (`transports.cluster`'s
`SESSION_METHODS`).
"""

from __future__ import annotations

import uuid
from typing import Any

from actors import SessionActor
from runtime.protocol import (
    UNAVAILABLE,
    GatewayError,
    SessionsBranchesListParams,
    SessionsBranchesSwitchParams,
    SessionsForkParams,
    SessionsRewindParams,
    invalid_request,
    opt,
)
from runtime.sessions import (
    BRANCH_MARKER,
    BranchError,
    TranscriptBuilder,
    TranscriptEntry,
    branch_tips,
    check_switch,
    cut_before_user_message,
)

from ._context import Call, MethodTable
from ._submit import changed, key_of, session_actor

__all__ = ["register"]


def register(methods: MethodTable) -> None:
    methods.add("sessions.branches.list", branches_list, SessionsBranchesListParams)
    write = "operator.write"
    methods.add(
        "sessions.branches.switch", branches_switch, SessionsBranchesSwitchParams, scope=write
    )
    methods.add("sessions.rewind", sessions_rewind, SessionsRewindParams, scope=write)
    methods.add("sessions.fork", sessions_fork, SessionsForkParams, scope=write)


async def _session(
    call: Call, raw: str, agent_id: str | None, action: str
) -> tuple[SessionActor, list[TranscriptEntry]]:
    """The session's actor and stored transcript; refused while it has work."""
    key = key_of(call, raw, agent_id)
    actor = await session_actor(call, key)
    assert actor.row is not None
    if not actor.row_persisted:
        raise invalid_request(f"session not found: {raw}")
    if actor.busy:
        raise GatewayError(
            UNAVAILABLE, f"{action} is unavailable while the agent is working.", retryable=True
        )
    await call.gateway.actors.supervisor.store.flush()
    entries = await call.gateway.actors.supervisor.store.load_entries(actor.row.sessionId)
    return actor, entries


def _marker(entries: list[TranscriptEntry], parent: str | None, reason: str) -> TranscriptEntry:
    """The entry that makes the session continue from `parent` (see `runtime.sessions`)."""
    builder = TranscriptBuilder.from_entries(entries)
    leaf = builder.leaf_id
    builder.branch(parent)
    return builder.add_custom(BRANCH_MARKER, {"reason": reason, "from": leaf})


async def _move(
    call: Call, actor: SessionActor, entries: list[TranscriptEntry], parent: str | None, reason: str
) -> None:
    if actor.busy:  # a run came in while the transcript was read
        raise GatewayError(UNAVAILABLE, "the session started working; retry", retryable=True)
    await actor.append_entries([_marker(entries, parent, reason)])
    changed(call, actor.key, reason, actor)


async def branches_list(call: Call, params: SessionsBranchesListParams) -> dict[str, Any]:
    key = key_of(call, params.sessionKey, opt(params.agentId))
    actor = await session_actor(call, key)
    assert actor.row is not None
    entries = await call.gateway.actors.supervisor.store.load_entries(actor.row.sessionId)
    return {"branches": branch_tips(entries)}


async def branches_switch(call: Call, params: SessionsBranchesSwitchParams) -> dict[str, Any]:
    actor, entries = await _session(call, params.sessionKey, opt(params.agentId), "Branch switch")
    try:
        check_switch(entries, params.leafEntryId)
    except BranchError as exc:
        raise invalid_request(str(exc)) from None
    await _move(call, actor, entries, params.leafEntryId, "branch-switch")
    return {}


async def sessions_rewind(call: Call, params: SessionsRewindParams) -> dict[str, Any]:
    actor, entries = await _session(call, params.sessionKey, opt(params.agentId), "Rewind")
    try:
        parent, text = cut_before_user_message(entries, params.entryId)
    except BranchError as exc:
        raise invalid_request(str(exc)) from None
    await _move(call, actor, entries, parent, "rewind")
    return {"editorText": text} if text else {}


async def sessions_fork(call: Call, params: SessionsForkParams) -> dict[str, Any]:
    source, entries = await _session(call, params.sessionKey, opt(params.agentId), "Fork")
    try:
        parent, text = cut_before_user_message(entries, params.entryId)
    except BranchError as exc:
        raise invalid_request(str(exc)) from None
    by_id = {e.id: e for e in entries}
    path: list[TranscriptEntry] = []
    node = by_id.get(parent) if parent is not None else None
    while node is not None:
        path.append(node)
        node = by_id.get(node.parentId) if node.parentId is not None else None
    path.reverse()
    key = key_of(call, f"agent:{source.agent_id}:dashboard:{uuid.uuid4()}")
    actor = await session_actor(call, key)
    await actor.save_row()
    if path:
        await actor.append_entries(path)
    changed(call, key, "fork", actor)
    result: dict[str, Any] = {"sessionKey": key}
    if text:
        result["editorText"] = text
    return result
