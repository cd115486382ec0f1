"""Sessions changed in bulk, as OpenClaw 2026.9.6's Control UI and `openclaw sessions cleanup`
do it: `sessions.patchMany` and `sessions.cleanup`.

- `sessions.patchMany {targets: [{key, agentId?, expectedSessionId?, ...}], patch}`: the
  same patch (OpenClaw's `SessionsPatchMutation`) applied to up to 100 sessions, each as
  `sessions.patch` applies it; answers `{outcomes: [{ok: true, key, agentId?} | {ok: false,
  key, agentId?, error}]}` in the targets' order: one target's failure (a bad key, a
  session whose id is no longer `expectedSessionId`, a label in use) is its outcome, the
  others go on. Scope as OpenClaw's: `operator.write` when the patch only has the fields
  its Control UI sets (label, category, model, thinkingLevel, ...), `operator.admin` for
  any other field, `permissionMode: "full"` or `sandboxMode`.
- `sessions.cleanup {agent?, allAgents?, enforce?, activeKey?, fixMissing?, fixDmScope?}`
  (operator.admin): OpenClaw's session store maintenance with its defaults (mode
  `enforce`, entries idle for 30 days pruned, at most 5,000 kept: the least recently
  updated beyond that capped, `model-run` probe sessions idle a day pruned when over the
  cap), plus with `fixMissing` the sessions whose transcript holds no message and with
  `fixDmScope` the per-peer direct sessions (`agent:<id>:direct:<peer>`) OpenClaw's
  default `dmScope: main` retires. Never the agent's main session, `activeKey`, or a
  session with a run going. Pruned sessions are deleted with their transcripts, as
  `sessions.delete` deletes them. Answers OpenClaw's summary of one store (the default
  agent's or `agent`'s), or `{allAgents: true, mode, dryRun: false, stores}`. clawlane
  archives nothing (`archived`, `capArchived` 0), keeps no session artifacts on disk
  (`unreferencedArtifacts` empty) and has no disk budget (`diskBudget` null).

In a cluster each session's change is made by the node that owns it (`_owners`): a target's
patch is its `sessions.patch` there, a pruned session its `sessions.delete` there (kept when
a run is going on it: that node's runs are not seen here).
"""

from __future__ import annotations

import functools
import re
import time
from typing import Annotated, Any, Final, Literal

import msgspec
from msgspec import UNSET, Meta, UnsetType

from runtime.model import GenerationError
from runtime.protocol import (
    GatewayError,
    SessionsDeleteParams,
    SessionsPatchParams,
    invalid_request,
    missing_scope,
    opt,
)
from runtime.sessions import DEFAULT_MAIN_KEY, SessionRow

from ._context import Call, MethodTable
from ._owners import on_owner
from ._sessions import SessionsPatchParamsX, sessions_delete, sessions_patch
from ._submit import changed, key_of

__all__ = ["SessionsCleanupParams", "SessionsPatchManyParams", "register"]

_Name = Annotated[str, Meta(min_length=1)]
TARGETS_MAX: Final = 100

WRITE_SCOPE_FIELDS: Final = frozenset(
    {
        "label",
        "autoLabel",
        "icon",
        "color",
        "category",
        "boardFace",
        "boardPresentation",
        "pinned",
        "archived",
        "unread",
        "model",
        "agentRuntime",
        "thinkingLevel",
        "fastMode",
        "permissionMode",
    }
)
"""The patch fields `operator.write` may set (OpenClaw's `SESSIONS_PATCH_WRITE_SCOPE_MUTATIONS`)."""
_MUTATION_FIELDS: Final = frozenset(
    set(SessionsPatchParams.__struct_fields__)
    - {
        "key",
        "agentId",
        "expectedSessionId",
        "expectedLifecycleRevision",
        "expectedPermissionMode",
        "expectedSandboxMode",
        "expectedNativeRuntimeConsent",
        "expectedToolOverrides",
        "expectedMarkedUnreadAt",
    }
)


class SessionsPatchManyTarget(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    key: _Name
    agentId: _Name | UnsetType = UNSET
    expectedSessionId: _Name | UnsetType = UNSET
    expectedLifecycleRevision: _Name | UnsetType = UNSET
    expectedSandboxMode: Literal["off"] | UnsetType | None = UNSET
    expectedPermissionMode: (
        Literal["read-only", "guarded", "workspace", "full"] | UnsetType | None
    ) = UNSET
    expectedNativeRuntimeConsent: _Name | UnsetType | None = UNSET


class SessionsPatchManyParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """OpenClaw 2026.9.6's `SessionsPatchManyParams` (the patch is checked field by field
    as `sessions.patch` checks it)."""

    targets: Annotated[list[SessionsPatchManyTarget], Meta(min_length=1, max_length=TARGETS_MAX)]
    patch: dict[str, Any]


class SessionsCleanupParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    agent: _Name | UnsetType = UNSET
    allAgents: bool | UnsetType = UNSET
    enforce: bool | UnsetType = UNSET
    activeKey: _Name | UnsetType = UNSET
    fixMissing: bool | UnsetType = UNSET
    fixDmScope: bool | UnsetType = UNSET


def register(methods: MethodTable) -> None:
    methods.add("sessions.patchMany", patch_many, SessionsPatchManyParams, scope="operator.write")
    methods.add("sessions.cleanup", sessions_cleanup, SessionsCleanupParams, scope="operator.admin")


# --- sessions.patchMany ------------------------------------------------------------------


def _check_patch(call: Call, patch: dict[str, Any]) -> None:
    """The patch's fields are OpenClaw's, at least one; the caller may set them all."""
    if not patch:
        raise invalid_request("invalid sessions.patchMany params: patch must have a field")
    unknown = sorted(set(patch) - _MUTATION_FIELDS)
    if unknown:
        raise invalid_request(
            f"invalid sessions.patchMany params: unknown field `patch.{unknown[0]}`"
        )
    admin = patch.get("permissionMode") == "full" or "sandboxMode" in patch
    admin = admin or not set(patch) <= WRITE_SCOPE_FIELDS
    if admin and not call.conn.has_scope("operator.admin"):
        raise missing_scope("operator.admin", ["operator.admin"])
    try:  # each field as `sessions.patch` takes it, before any session is touched
        msgspec.convert({"key": "x", **patch}, SessionsPatchParamsX)
    except msgspec.ValidationError as exc:
        raise invalid_request(
            f"invalid sessions.patchMany params: {str(exc).replace('`$.', '`patch.')}"
        ) from None


def _error(exc: GatewayError) -> dict[str, Any]:
    shape = msgspec.to_builtins(exc.shape())
    assert isinstance(shape, dict)
    return shape


async def _patch_one(
    call: Call, target: SessionsPatchManyTarget, patch: dict[str, Any]
) -> dict[str, Any]:
    agent_id = opt(target.agentId)
    key = key_of(call, target.key.strip(), agent_id)
    expected = opt(target.expectedSessionId)
    if expected is not None:
        row = await call.gateway.actors.supervisor.store.get_session(key)
        if row is None or row.sessionId != expected:
            found = row.sessionId if row is not None else "none"
            raise invalid_request(
                f"session {key} changed: expected sessionId {expected}, found {found}"
            )
    raw = {"key": key, **patch}
    params = msgspec.convert(raw, SessionsPatchParamsX)
    local = functools.partial(sessions_patch, call, params)
    return await on_owner(call, "sessions.patch", raw, local)


async def patch_many(call: Call, params: SessionsPatchManyParams) -> dict[str, Any]:
    _check_patch(call, params.patch)
    outcomes: list[dict[str, Any]] = []
    for target in params.targets:
        identity: dict[str, Any] = {"key": target.key}
        if not isinstance(target.agentId, UnsetType):
            identity["agentId"] = target.agentId
        try:
            await _patch_one(call, target, params.patch)
        except GatewayError as exc:
            outcomes.append({"ok": False, **identity, "error": _error(exc)})
            continue
        outcomes.append({"ok": True, **identity})
    return {"outcomes": outcomes}


# --- sessions.cleanup --------------------------------------------------------------------

PRUNE_AFTER_MS: Final = 30 * 86_400_000
MAX_ENTRIES: Final = 5_000
MODEL_RUN_PRUNE_AFTER_MS: Final = 86_400_000
_MODEL_RUN: Final = re.compile(
    r"^agent:[^:\s]+:explicit:model-run-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}"
    r"-[0-9a-f]{12}$",
    re.IGNORECASE,
)
_MESSAGE_PREFIX: Final = b'{"type":"message"'
_WITHOUT_MESSAGES: Final = """
SELECT s.key FROM sessions AS s WHERE s.agent_id = ? AND NOT EXISTS (
    SELECT 1 FROM entries AS e WHERE e.session_id = s.session_id AND substr(e.body, 1, ?) = ?
)"""


def _direct_peer(key: str, agent_id: str, active: str | None) -> bool:
    """A per-peer direct session that OpenClaw's `dmScope: main` retires
    (`isMainScopeStaleDirectSessionKey`)."""
    if key == active or not key.startswith(f"agent:{agent_id}:"):
        return False
    parts = key.split(":")[2:]
    if not parts or parts[0] == "agent":
        return False
    n = len(parts)
    return (
        (n == 2 and parts[0] == "direct" and bool(parts[1]))
        or (n == 3 and bool(parts[0]) and parts[1] == "direct" and bool(parts[2]))
        or (n == 4 and all(parts) and parts[2] == "direct")
    )


def _plan(
    rows: list[SessionRow],
    agent_id: str,
    keep: set[str],
    missing: set[str],
    *,
    fix_missing: bool,
    fix_dm: bool,
    active: str | None,
    now: int,
) -> dict[str, str]:
    """What to remove of one agent's sessions (`rows`, newest first), and why."""
    why: dict[str, str] = {}
    if fix_missing:
        why.update({r.key: "missing" for r in rows if r.key in missing and r.key not in keep})
    if fix_dm:
        for r in rows:
            if r.key not in keep and r.key not in why and _direct_peer(r.key, agent_id, active):
                why[r.key] = "dmScopeRetired"
    left = [r for r in rows if r.key not in why]
    if len(left) > MAX_ENTRIES:
        for r in left:
            stale = now - r.updatedAt > MODEL_RUN_PRUNE_AFTER_MS
            if stale and _MODEL_RUN.match(r.key) and r.key not in keep:
                why[r.key] = "modelRunPruned"
        left = [r for r in left if r.key not in why]
    for r in left:
        if r.key not in keep and now - r.updatedAt > PRUNE_AFTER_MS:
            why[r.key] = "pruned"
    left = [r for r in left if r.key not in why]
    for r in left[MAX_ENTRIES:]:
        if r.key not in keep:
            why[r.key] = "capped"
    return why


async def _delete_idle(call: Call, key: str) -> dict[str, Any]:
    """Delete session `key` unless a run is going on it: by its owner in a cluster (whose
    runs this node does not see)."""
    local = functools.partial(sessions_delete, call, SessionsDeleteParams(key=key))
    return await on_owner(call, "sessions.delete", {"key": key, "ifIdle": True}, local)


async def _clean_agent(
    call: Call, agent_id: str, params: SessionsCleanupParams, active: str | None
) -> dict[str, Any]:
    sup = call.gateway.actors.supervisor
    store = sup.store
    rows = await store.list_sessions(agent_id=agent_id)
    missing: set[str] = set()
    if opt(params.fixMissing):
        args = (agent_id, len(_MESSAGE_PREFIX), _MESSAGE_PREFIX)
        found = await store.read(lambda conn: conn.execute(_WITHOUT_MESSAGES, args).fetchall())
        missing = {str(key) for (key,) in found}
    running = {r.session_key for r in call.gateway.actors.registry.active()}
    keep = running | {f"agent:{agent_id}:{DEFAULT_MAIN_KEY}", "global"}
    if active is not None:
        keep.add(active)
    plan = _plan(
        rows,
        agent_id,
        keep,
        missing,
        fix_missing=bool(opt(params.fixMissing)),
        fix_dm=bool(opt(params.fixDmScope)),
        active=active,
        now=int(time.time() * 1000),
    )
    removed: dict[str, int] = dict.fromkeys(
        ("missing", "dmScopeRetired", "modelRunPruned", "pruned", "capped"), 0
    )
    for key, reason in plan.items():
        try:
            result = await _delete_idle(call, key)
        except GatewayError:
            continue  # gone meanwhile, or refused: left as it is
        if result.get("deleted"):
            removed[reason] += 1
    after = len(rows) - sum(removed.values())
    if plan:
        changed(call, f"agent:{agent_id}:{DEFAULT_MAIN_KEY}", "cleanup")
    return {
        "agentId": agent_id,
        "storePath": str(store.path),
        "mode": "enforce",
        "dryRun": False,
        "beforeCount": len(rows),
        "afterCount": after,
        **removed,
        "archived": 0,
        "capArchived": 0,
        "unreferencedArtifacts": {
            "scannedFiles": 0,
            "removedFiles": 0,
            "freedBytes": 0,
            "olderThanMs": PRUNE_AFTER_MS,
        },
        "diskBudget": None,
        "wouldMutate": bool(plan),
        "applied": True,
        "appliedCount": after,
    }


async def sessions_cleanup(call: Call, params: SessionsCleanupParams) -> dict[str, Any]:
    gen = call.gateway.actors.supervisor.generation
    if opt(params.allAgents):
        agents = list(gen.agents)
    else:
        try:
            agents = [gen.agent(opt(params.agent)).id]
        except GenerationError as exc:
            raise invalid_request(str(exc)) from exc
    raw_active = opt(params.activeKey)
    active = key_of(call, raw_active) if raw_active is not None else None
    stores = [await _clean_agent(call, agent_id, params, active) for agent_id in agents]
    if len(stores) == 1:
        return stores[0]
    return {"allAgents": True, "mode": "enforce", "dryRun": False, "stores": stores}
