"""`sessions.groups.*`: the session groups of OpenClaw 2026.9.6's Control UI sidebar, real
and persisted (`actors.SessionGroups`, one catalog in the store for every node).

A session is filed under a group by `sessions.patch {category}` (or `sessions.patchMany`),
which also adds a new name to the catalog, as OpenClaw's does; `sessions.list` rows carry
the `category`.

- `sessions.groups.list {}` (operator.read): `{groups: [{name, position}], sectionOrder}`.
- `sessions.groups.defaults {}` (operator.write): `{defaults: [{name, cwd?, worktree?}]}`.
- `sessions.groups.put {names, sectionOrder?}`: the groups are `names` (trimmed, each
  once), in that order; dropping a group that still has sessions is refused
  (`INVALID_REQUEST`, OpenClaw's message naming them); `sectionOrder` (the fixed sections
  `ungrouped`, `groups`, `work`, `category:<group>`, `catalog:<id>`) replaces the sidebar's.
- `sessions.groups.rename {name, to}`: the group and its sessions (`updatedSessions`),
  merged into `to` when that is a group already.
- `sessions.groups.delete {name}`: the group; its sessions are ungrouped.
- `sessions.groups.update {name, cwd, worktree}`: the group's defaults; `cwd` absolute
  (`null` clears it), outside every agent workspace only for `operator.admin`.

Writes answer `{ok: true, groups, sectionOrder}` (rename and delete add `updatedSessions`;
update answers `{ok: true, defaults}`) and send `sessions.changed` (reason `groups`). An
unknown group is `INVALID_REQUEST` (`unknown session group: <name>`). Refiling a group's
sessions does not change their `updatedAt` (the list keeps its order); in a cluster each
session is refiled by the node that owns it (`_owners`).
"""

from __future__ import annotations

import functools
import weakref
from pathlib import Path
from typing import Annotated, Any, Final

import msgspec
import trio
from msgspec import UNSET, Meta, UnsetType

from actors import SessionGroups, Store, UnknownGroup
from runtime.loop import now_ms
from runtime.protocol import invalid_request, missing_scope
from runtime.sessions import SessionRow

from ._context import Call, MethodTable
from ._owners import on_owner
from ._submit import session_actor

__all__ = ["groups_of", "register"]

_GroupName = Annotated[str, Meta(min_length=1, max_length=512)]
_catalogs: Final[weakref.WeakKeyDictionary[Store, SessionGroups]] = weakref.WeakKeyDictionary()


class EmptyParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    pass


class GroupsPutParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    names: list[_GroupName]
    sectionOrder: list[_GroupName] | UnsetType = UNSET


class GroupsRenameParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    name: _GroupName
    to: _GroupName


class GroupsUpdateParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    name: _GroupName
    cwd: Annotated[str, Meta(min_length=1)] | None
    worktree: bool


class GroupsDeleteParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    name: _GroupName


def register(methods: MethodTable) -> None:
    write = "operator.write"
    methods.add("sessions.groups.list", groups_list, EmptyParams, scope="operator.read")
    methods.add("sessions.groups.defaults", groups_defaults, EmptyParams, scope=write)
    methods.add("sessions.groups.put", groups_put, GroupsPutParams, scope=write)
    methods.add("sessions.groups.rename", groups_rename, GroupsRenameParams, scope=write)
    methods.add("sessions.groups.update", groups_update, GroupsUpdateParams, scope=write)
    methods.add("sessions.groups.delete", groups_delete, GroupsDeleteParams, scope=write)


def groups_of(call: Call) -> SessionGroups:
    """The catalog of the gateway's store (one per store)."""
    store = call.gateway.actors.supervisor.store
    groups = _catalogs.get(store)
    if groups is None:
        groups = _catalogs[store] = SessionGroups(store)
    return groups


def _announce(call: Call) -> None:
    hub = call.gateway.actors.hub
    if hub.has_change_subscribers:
        hub.sessions_changed({"reason": "groups", "ts": now_ms()})


def _listed(c: Any, **extra: Any) -> dict[str, Any]:
    return {"ok": True, "groups": c.listed(), "sectionOrder": list(c.sectionOrder), **extra}


async def _members(call: Call) -> dict[str, list[SessionRow]]:
    """The sessions of each group, by the rows' `category`."""
    found: dict[str, list[SessionRow]] = {}
    for row in await call.gateway.actors.supervisor.store.list_sessions():
        if row.category:
            found.setdefault(row.category, []).append(row)
    return found


async def _refile(call: Call, rows: list[SessionRow], category: str | None) -> int:
    """Move `rows` to `category` through their actors (their `updatedAt` kept): in a
    cluster each by its owner (`_owners`), a `sessions.patch` there."""

    async def here(key: str) -> bool:
        actor = await session_actor(call, key)
        if actor.row is None or actor.row.category == category:
            return False
        await actor.save_row(category=category)
        return True

    moved = 0
    for row in rows:
        patch = {"key": row.key, "category": category, "keepUpdatedAt": True}
        if await on_owner(call, "sessions.patch", patch, functools.partial(here, row.key)):
            moved += 1
    return moved


async def groups_list(call: Call, params: EmptyParams) -> dict[str, Any]:
    c = await groups_of(call).catalog()
    return {"groups": c.listed(), "sectionOrder": list(c.sectionOrder)}


async def groups_defaults(call: Call, params: EmptyParams) -> dict[str, Any]:
    return {"defaults": (await groups_of(call).catalog()).defaults_listed()}


async def groups_put(call: Call, params: GroupsPutParams) -> dict[str, Any]:
    members = await _members(call)

    def refuse(dropped: list[str]) -> None:
        busy = [g for g in dropped if members.get(g)]
        if busy:
            listed = ", ".join(f'"{g}" ({len(members[g])})' for g in busy)
            raise invalid_request(
                "sessions.groups.put cannot drop groups that still have member sessions: "
                f"{listed}; include them in names or remove them via sessions.groups.delete"
            )

    order = None if isinstance(params.sectionOrder, UnsetType) else params.sectionOrder
    after, changed = await groups_of(call).put(params.names, order, refuse)
    if changed:
        _announce(call)
    return _listed(after)


async def _known(call: Call, name: str) -> str:
    name = name.strip()
    if name not in (await groups_of(call).catalog()).groups:
        raise invalid_request(f"unknown session group: {name}")
    return name


async def _rename(call: Call, name: str, to: str | None) -> None:
    try:
        await groups_of(call).rename(name, to)
    except UnknownGroup as exc:  # removed meanwhile
        raise invalid_request(str(exc)) from None


async def groups_rename(call: Call, params: GroupsRenameParams) -> dict[str, Any]:
    name, to = await _known(call, params.name), params.to.strip()
    if not to:
        raise invalid_request("group rename requires non-empty names")
    moved = 0
    if to != name:  # the group first: a session refiled under `to` finds it (`_file_under`)
        members = (await _members(call)).get(name, [])
        await _rename(call, name, to)
        moved = await _refile(call, members, to)
    _announce(call)
    return _listed(await groups_of(call).catalog(), updatedSessions=moved)


async def groups_delete(call: Call, params: GroupsDeleteParams) -> dict[str, Any]:
    name = await _known(call, params.name)
    members = (await _members(call)).get(name, [])
    await _rename(call, name, None)
    moved = await _refile(call, members, None)
    _announce(call)
    return _listed(await groups_of(call).catalog(), updatedSessions=moved)


async def _in_a_workspace(call: Call, cwd: Path) -> bool:
    """Whether `cwd` lies in an agent's workspace (OpenClaw's containment for a
    non-admin's group cwd)."""
    sup = call.gateway.actors.supervisor
    for agent in sup.generation.agents.values():
        root = await sup.workspace_for(agent.id, agent.workspace)
        root = await trio.to_thread.run_sync(root.resolve)
        if cwd == root or root in cwd.parents:
            return True
    return False


async def groups_update(call: Call, params: GroupsUpdateParams) -> dict[str, Any]:
    cwd = params.cwd
    if cwd and not Path(cwd).is_absolute():
        raise invalid_request("session group cwd must be absolute")
    name = params.name.strip()
    if not name:
        raise invalid_request("session group name must not be empty")
    if cwd and not call.conn.has_scope("operator.admin"):
        resolved = await trio.to_thread.run_sync(Path(cwd).resolve)
        if not await _in_a_workspace(call, resolved):
            raise missing_scope("operator.admin", ["operator.admin"])
        cwd = str(resolved)

    try:
        after = await groups_of(call).set_defaults(name, cwd or None, params.worktree)
    except UnknownGroup as exc:
        raise invalid_request(str(exc)) from None
    _announce(call)
    return {"ok": True, "defaults": after.defaults_listed()}
