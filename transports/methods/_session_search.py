"""`sessions.search` (operator.read): full-text search over the sessions' transcripts, as
OpenClaw 2026.9.6 answers it (its Control UI's transcript search, its agents' history).

`{query, limit?, sessionKeys?, agentId?}` or `{query, limit?, scope}` answers
`{results: [{sessionKey, sessionId, messageId, role, timestamp, snippet, score}],
truncated?}`, the best matches first (ranked, then newest), at most `limit` (default 10,
at most 25). Every whitespace-separated token of the query must occur in a message.

- Without `scope`: the default agent's sessions, or those `sessionKeys` names (one agent's:
  keys of two agents are `INVALID_REQUEST`, as OpenClaw's "supports one agent per call";
  `agentId` qualifies them, and without `sessionKeys` is refused: "agentId requires
  sessionKeys"). `scope` beside `agentId` or `sessionKeys` is refused.
- With `scope` (the Control UI's: its session list's filters): the sessions that list
  shows (`agentId`, `activeMinutes`, `label`, `search`, `group`, `includeGlobal`,
  `includeUnknown`, `spawnedBy`, `excludeSubagents`, `excludeCron`; `archived: true` and `pinned: true`
  match nothing, clawlane neither archives nor pins), and the answer adds `sessions`:
  the rows of the sessions hit, as `sessions.list` shows them.

The index is the store's (`actors.TranscriptSearch`: FTS5 on SQLite, PostgreSQL's full
text search), kept current as entries are written. An empty query, an unknown agent, a
bad key: `INVALID_REQUEST`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Annotated, Any, Final, Literal

import msgspec
from msgspec import UNSET, Meta, UnsetType

from actors import TranscriptSearch
from runtime.model import GenerationError
from runtime.protocol import invalid_request, opt
from runtime.sessions import SessionRow

from ._context import Call, MethodTable
from ._submit import key_of
from ._views import session_view

__all__ = ["SessionsSearchParams", "register"]

LIMIT_DEFAULT: Final = 10
_Name = Annotated[str, Meta(min_length=1)]


class ProfileRelation(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    profileId: _Name
    relationship: Literal["owned", "created", "involving"]


class SessionsSearchScope(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True
):
    """`SessionsSearchParams.scope` (2026.9.6): the session list's filters."""

    activeMinutes: Annotated[int, Meta(ge=1)] | UnsetType = UNSET
    activeOnly: bool | UnsetType = UNSET
    requireLastInteraction: bool | UnsetType = UNSET
    sortBy: Literal["updatedAt", "lastInteractionAt", "activity"] | UnsetType = UNSET
    includeGlobal: bool | UnsetType = UNSET
    includeUnknown: bool | UnsetType = UNSET
    excludeSubagents: bool | UnsetType = UNSET
    excludeCron: bool | UnsetType = UNSET
    excludeSystem: bool | UnsetType = UNSET
    configuredAgentsOnly: bool | UnsetType = UNSET
    label: Annotated[str, Meta(min_length=1, max_length=512)] | UnsetType = UNSET
    projectId: _Name | UnsetType = UNSET
    workspaceDir: _Name | UnsetType = UNSET
    group: str | UnsetType = UNSET
    pinned: bool | UnsetType = UNSET
    boardFace: Literal["chat", "dashboard"] | UnsetType = UNSET
    hasBoard: bool | UnsetType = UNSET
    creatorId: _Name | UnsetType = UNSET
    ownerId: _Name | UnsetType = UNSET
    involvingMe: bool | UnsetType = UNSET
    profileRelation: ProfileRelation | UnsetType = UNSET
    involvingProfileId: _Name | UnsetType = UNSET
    spawnedBy: _Name | UnsetType = UNSET
    agentId: _Name | UnsetType = UNSET
    search: str | UnsetType = UNSET
    archived: bool | Literal["all"] | UnsetType = UNSET


class SessionsSearchParams(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True
):
    """OpenClaw 2026.9.6's `SessionsSearchParams`."""

    query: Annotated[str, Meta(min_length=1, max_length=4096)]
    agentId: _Name | UnsetType = UNSET
    sessionKeys: Annotated[list[_Name], Meta(min_length=1, max_length=200)] | UnsetType = UNSET
    scope: SessionsSearchScope | UnsetType = UNSET
    limit: Annotated[int, Meta(ge=1, le=25)] | UnsetType = UNSET


def register(methods: MethodTable) -> None:
    methods.add("sessions.search", sessions_search, SessionsSearchParams, scope="operator.read")


def _agent_of(key: str, default: str) -> str:
    return key.split(":")[1] if key.startswith("agent:") else default


def _known_agent(call: Call, agent_id: str) -> str:
    try:
        return call.gateway.actors.supervisor.generation.agent(agent_id).id
    except GenerationError:
        raise invalid_request(f'Unknown agent id "{agent_id}"') from None


async def sessions_search(call: Call, params: SessionsSearchParams) -> dict[str, Any]:
    query = params.query.strip()
    if not query:
        raise invalid_request("query must not be empty")
    limit = opt(params.limit) or LIMIT_DEFAULT
    search = TranscriptSearch(call.gateway.actors.supervisor.store)
    scope = params.scope
    if isinstance(scope, SessionsSearchScope):
        if params.agentId is not UNSET or params.sessionKeys is not UNSET:
            raise invalid_request(
                "invalid sessions.search params: scope cannot be combined with agentId or sessionKeys"
            )
        return await _search_scoped(call, search, query, limit, scope)
    default = call.gateway.actors.supervisor.generation.default_agent
    requested = opt(params.agentId)
    agent_id = _known_agent(call, requested) if requested is not None else None
    raw_keys = opt(params.sessionKeys)
    if raw_keys is None:
        if agent_id is not None:
            raise invalid_request("agentId requires sessionKeys")
        page = await search.search(query, limit=limit, agent_id=default)
    else:
        keys = [key_of(call, k, agent_id) for k in raw_keys]
        agents = {_agent_of(k, default) for k in keys}
        if len(agents) > 1 or (agent_id is not None and agents != {agent_id}):
            raise invalid_request("sessions.search supports one agent per call")
        page = await search.search(query, limit=limit, session_keys=keys)
    result: dict[str, Any] = {"results": [_hit(h) for h in page.hits]}
    if page.truncated:
        result["truncated"] = True
    return result


def _hit(hit: Any) -> dict[str, Any]:
    return {
        "sessionKey": hit.session_key,
        "sessionId": hit.session_id,
        "messageId": hit.message_id,
        "role": hit.role,
        "timestamp": hit.timestamp,
        "snippet": hit.snippet,
        "score": hit.score,
    }


def _scope_filter(
    scope: SessionsSearchScope, rows: dict[str, SessionRow | None]
) -> Callable[[str], bool]:
    """Whether the session list `scope` describes shows the session of a key (`rows` holds
    the rows read so far; a key not in it is let through, its row is read after)."""
    label, needle = opt(scope.label), (opt(scope.search) or "").lower()
    spawned_by, group = opt(scope.spawnedBy), opt(scope.group)

    def accept(key: str) -> bool:
        if key == "global" and not opt(scope.includeGlobal):
            return False
        if key == "unknown" and not opt(scope.includeUnknown):
            return False
        if opt(scope.excludeSubagents) and ":subagent:" in key:
            return False
        if opt(scope.excludeCron) and ":cron:" in key:
            return False
        row = rows.get(key)
        if row is None:
            return key not in rows
        if label and row.label != label:
            return False
        if group is not None and (row.category or "") != group:
            return False
        if needle and needle not in key.lower() and needle not in (row.label or "").lower():
            return False
        return not (spawned_by and row.spawnedBy != spawned_by)

    return accept


async def _search_scoped(
    call: Call, search: TranscriptSearch, query: str, limit: int, scope: SessionsSearchScope
) -> dict[str, Any]:
    sup = call.gateway.actors.supervisor
    if scope.archived is True or scope.pinned is True or scope.hasBoard is True:
        return {"results": [], "sessions": []}
    requested = opt(scope.agentId)
    agent_id = _known_agent(call, requested) if requested is not None else None
    minutes = opt(scope.activeMinutes)
    after = max(int(time.time() * 1000) - minutes * 60_000, 0) if minutes else None
    rows: dict[str, SessionRow | None] = {}
    if (
        opt(scope.label)
        or opt(scope.search)
        or opt(scope.spawnedBy)
        or opt(scope.group) is not None
    ):
        for row in await sup.store.list_sessions(agent_id=agent_id, updated_after_ms=after):
            rows[row.key] = row
        known = {key for key, row in rows.items() if row is not None}
        accept = _scope_filter(scope, rows)
        page = await search.search(
            query,
            limit=limit,
            agent_id=agent_id,
            updated_after_ms=after,
            accept=lambda key: key in known and accept(key),
        )
    else:
        page = await search.search(
            query,
            limit=limit,
            agent_id=agent_id,
            updated_after_ms=after,
            accept=_scope_filter(scope, rows),
        )
    sessions: list[dict[str, Any]] = []
    active: dict[str, list[str]] = {}
    for rec in call.gateway.actors.registry.active():
        active.setdefault(rec.session_key, []).append(rec.run_id)
    cache: dict[str, Any] = {}
    for key in dict.fromkeys(hit.session_key for hit in page.hits):
        found = rows.get(key) or await sup.store.get_session(key)
        if found is not None:
            view = session_view(
                call.gateway, found, active_run_ids=active.get(key, []), cache=cache
            )
            sessions.append(view)
    result: dict[str, Any] = {"results": [_hit(h) for h in page.hits], "sessions": sessions}
    if page.truncated:
        result["truncated"] = True
    return result
