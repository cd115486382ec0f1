"""The agents roster as OpenClaw's Control UI edits it: `agents.create`, `agents.update`,
`agents.delete` (operator.admin).

An agent is an entry of the config's `agents.list`; each change is a compare-and-set on the
config (`Publisher.write_patch` with the hash it was computed from, retried when another
write came between), so it is validated, built and published as one new generation, or not
at all, and in a cluster on PostgreSQL it is the cluster's config that changes (every node
serves it). Shapes and checks follow OpenClaw 2026.9.6:

- `agents.create {name, workspace?, model?, emoji?, avatar?}`: the id is the name made an
  agent id (`[a-z0-9][a-z0-9_-]{0,63}`); a name with no letter or digit, an id that exists
  and the reserved ids are refused. The entry records `name`, `workspace` (when given; a
  relative one is under the state dir's `workspaces/`) and `model`; `identity` {name, emoji, avatar}, also written into the workspace's `IDENTITY.md`
  (its `- Name:` / `- Emoji:` / `- Avatar:` lines replaced or added, the rest kept). When
  `agents.list` was empty (one implicit default agent), that agent is listed first so it
  stays. Answer `{ok, agentId, name, workspace, model?}`.
- `agents.update {agentId, name?, workspace?, model? (null: the default model), emoji?,
  avatar?}`: the entry's fields; `IDENTITY.md` as above. `agentRuntime` other than `auto`
  is refused: clawlane runs every agent on its embedded runtime.
- `agents.delete {agentId, deleteFiles?}`: the entry goes (the only agent cannot); with
  `deleteFiles` (the default) its workspace is moved into the state dir's `trash/` (never
  deleted outright), listed in `removed` (`trash`, or `missing` when there was none) or
  `failed`. Its sessions stay in the store. clawlane has no channel bindings:
  `removedBindings` is 0.

Errors: `INVALID_REQUEST` (`agent "x" not found`, an invalid name, a config the change
would make invalid, naming the key); `UNAVAILABLE` without a publisher.
"""

from __future__ import annotations

import functools
import os
import time
from pathlib import Path
from typing import Any, Final

import msgspec
import trio

from actors import PublishConflict, Publisher
from runtime.model import ConfigError, GenerationError, fold_agent_entries
from runtime.protocol import (
    UNAVAILABLE,
    AgentsCreateParams,
    AgentsDeleteParams,
    AgentsUpdateParams,
    GatewayError,
    invalid_request,
    opt,
)

from ._agent_files import agent_id_of, agent_workspace, write_identity
from ._context import Call, MethodTable

__all__ = ["register"]

RESERVED_AGENT_IDS: Final = frozenset({"system", "default", "global", "unknown"})
"""Ids no created agent may take (the session keys and scopes use them)."""
CAS_ATTEMPTS: Final = 3
"""Compare-and-set attempts when another config write comes between read and write."""


def register(methods: MethodTable) -> None:
    methods.add("agents.create", agents_create, AgentsCreateParams, scope="operator.admin")
    methods.add("agents.update", agents_update, AgentsUpdateParams, scope="operator.admin")
    methods.add("agents.delete", agents_delete, AgentsDeleteParams, scope="operator.admin")


def _line(value: str | None) -> str | None:
    """An identity value on one line (OpenClaw's sanitizing); None when empty."""
    cleaned = " ".join((value or "").split())
    return cleaned or None


def _publisher(call: Call) -> Publisher:
    publisher = call.gateway.actors.publisher
    if publisher is None:
        raise GatewayError(UNAVAILABLE, "agent changes are unavailable: no publisher")
    return publisher


def _entries(parsed: Any) -> list[dict[str, Any]]:
    """The roster as `agents.list` entries, OpenClaw 2026.9.6's `agents.entries` map folded
    in (a change writes it back as `agents.list` alone: `_change_roster`)."""
    if not isinstance(parsed, dict):
        return []
    try:
        agents = fold_agent_entries(parsed).get("agents")
    except ConfigError:
        agents = parsed.get("agents")
    entries = agents.get("list") if isinstance(agents, dict) else None
    return [dict(e) for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []


def _find(entries: list[dict[str, Any]], agent_id: str) -> int:
    for i, entry in enumerate(entries):
        if agent_id_of(str(entry.get("id", ""))) == agent_id:
            return i
    return -1


async def _change_roster(call: Call, reason: str, change: Any) -> Any:
    """Apply `change(entries, implicit_default) -> (entries, result)` to `agents.list` as a
    compare-and-set on the config, retried when another write came first."""
    publisher = _publisher(call)
    for attempt in range(CAS_ATTEMPTS):
        snapshot = await publisher.read_snapshot()
        if not snapshot.valid:
            raise invalid_request("the config is invalid; fix it before changing agents")
        entries = _entries(snapshot.parsed)
        default = publisher.generation.default_agent
        new_entries, result = change(entries, None if entries else default)
        agents: dict[str, Any] = {"list": new_entries}
        raw_agents = snapshot.parsed.get("agents") if isinstance(snapshot.parsed, dict) else None
        if isinstance(raw_agents, dict) and "entries" in raw_agents:
            agents["entries"] = None  # folded into the list written (a merge patch's delete)
        patch = msgspec.json.encode({"agents": agents}).decode()
        try:
            await publisher.write_patch(
                patch, base_hash=snapshot.hash, replace_paths=("agents.list",), reason=reason
            )
        except PublishConflict:
            if attempt + 1 == CAS_ATTEMPTS:
                raise GatewayError(
                    UNAVAILABLE, "the config kept changing; retry", retryable=True
                ) from None
            continue
        except ConfigError as exc:
            raise invalid_request(f"invalid config: {exc}", path=exc.path) from exc
        except GenerationError as exc:
            raise invalid_request(f"invalid config: {exc}") from exc
        return result
    raise AssertionError("unreachable")


async def _workspace_param(call: Call, raw: str | None) -> str | None:
    """A `workspace` param as the absolute path the config records: `~` expanded, and a
    relative path under the state dir's `workspaces/` (never the gateway's working dir).
    The folder is made first: a path this host cannot hold (a name too long, a parent that
    is a file, no permission) is refused naming `workspace`, before the config changes."""
    if raw is None or not raw.strip():
        return None
    made = functools.partial(_make_workspace, call.gateway.process.state_dir, raw.strip())
    try:
        return await trio.to_thread.run_sync(made)
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise invalid_request(f"workspace cannot be used: {reason}") from None


def _make_workspace(state_dir: Path, raw: str) -> str:
    path = os.path.expanduser(raw)
    if not os.path.isabs(path):
        path = os.path.join(state_dir, "workspaces", path)
    path = os.path.abspath(path)
    os.makedirs(path, exist_ok=True)
    return path


async def agents_create(call: Call, params: AgentsCreateParams) -> dict[str, Any]:
    name = _line(params.name)
    agent_id = agent_id_of(params.name)
    if name is None or agent_id is None:
        raise invalid_request(
            f'Agent name "{params.name}" has no valid id characters. '
            "Use at least one letter a-z or digit."
        )
    if agent_id in RESERVED_AGENT_IDS:
        raise invalid_request(f'"{agent_id}" is reserved')
    workspace = await _workspace_param(call, opt(params.workspace))
    model = (opt(params.model) or "").strip() or None
    identity = {
        k: v
        for k, v in (
            ("name", name),
            ("emoji", _line(opt(params.emoji))),
            ("avatar", _line(opt(params.avatar))),
        )
        if v
    }

    def change(entries: list[dict[str, Any]], implicit: str | None) -> tuple[list[Any], None]:
        if implicit is not None:
            entries = [{"id": implicit}]
        if _find(entries, agent_id) >= 0:
            raise invalid_request(f'agent "{agent_id}" already exists')
        entry: dict[str, Any] = {"id": agent_id, "name": name, "identity": identity}
        if workspace:
            entry["workspace"] = workspace
        if model:
            entry["model"] = model
        return [*entries, entry], None

    await _change_roster(call, "agents.create", change)
    where = await agent_workspace(call, agent_id, create=True)
    await write_identity(where, identity)
    result: dict[str, Any] = {
        "ok": True,
        "agentId": agent_id,
        "name": name,
        "workspace": str(where),
    }
    if model:
        result["model"] = model
    return result


async def agents_update(call: Call, params: AgentsUpdateParams) -> dict[str, Any]:
    agent_id = agent_id_of(params.agentId)
    if agent_id is None:
        raise invalid_request(f'agent "{params.agentId}" not found')
    runtime = opt(params.agentRuntime)
    if runtime is not None and runtime != "auto":
        raise invalid_request(
            f"agentRuntime {runtime!r}: clawlane runs every agent on its embedded runtime (auto)"
        )
    name = _line(opt(params.name))
    workspace = await _workspace_param(call, opt(params.workspace))
    identity = {
        k: v
        for k, v in (
            ("name", name),
            ("emoji", _line(opt(params.emoji))),
            ("avatar", _line(opt(params.avatar))),
        )
        if v
    }
    model: Any = params.model

    def change(entries: list[dict[str, Any]], implicit: str | None) -> tuple[list[Any], None]:
        if implicit is not None:
            entries = [{"id": implicit}]
        index = _find(entries, agent_id)
        if index < 0:
            raise invalid_request(f'agent "{agent_id}" not found')
        entry = dict(entries[index])
        if name:
            entry["name"] = name
        if workspace:
            entry["workspace"] = workspace
        if model is None:
            entry.pop("model", None)
        elif isinstance(model, str):
            entry["model"] = model.strip()
        if identity:
            current = entry.get("identity")
            entry["identity"] = {**(current if isinstance(current, dict) else {}), **identity}
        entries = list(entries)
        entries[index] = entry
        return entries, None

    await _change_roster(call, "agents.update", change)
    if identity or workspace:
        where = await agent_workspace(call, agent_id, create=True)
        await write_identity(where, identity)
    return {"ok": True, "agentId": agent_id}


async def agents_delete(call: Call, params: AgentsDeleteParams) -> dict[str, Any]:
    agent_id = agent_id_of(params.agentId)
    if agent_id is None:
        raise invalid_request(f'agent "{params.agentId}" not found')
    where = await agent_workspace(call, agent_id, create=False)

    def change(entries: list[dict[str, Any]], implicit: str | None) -> tuple[list[Any], None]:
        if implicit is not None or _find(entries, agent_id) < 0:
            if implicit == agent_id:
                raise invalid_request(
                    f'Agent "{agent_id}" is the only configured agent and cannot be deleted.'
                )
            raise invalid_request(f'agent "{agent_id}" not found')
        if len(entries) == 1:
            raise invalid_request(
                f'Agent "{agent_id}" is the only configured agent and cannot be deleted.'
            )
        return [e for e in entries if agent_id_of(str(e.get("id", ""))) != agent_id], None

    await _change_roster(call, "agents.delete", change)
    result: dict[str, Any] = {"ok": True, "agentId": agent_id, "removedBindings": 0}
    if opt(params.deleteFiles) is False:
        return result
    trash = call.gateway.process.state_dir / "trash" / "agents"
    removed, failed = await trio.to_thread.run_sync(_to_trash, where, trash, agent_id)
    result["removed"] = removed
    if failed:
        result["failed"] = failed
    return result


def _to_trash(
    workspace: Path, trash: Path, agent_id: str
) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """Move a deleted agent's workspace into the trash (never delete it outright)."""
    if not os.path.lexists(workspace):
        return [{"path": str(workspace), "method": "missing"}], []
    try:
        trash.mkdir(parents=True, exist_ok=True)
        target = trash / f"{agent_id}-{int(time.time() * 1000)}"
        os.rename(workspace, target)
    except OSError as exc:
        return [], [{"path": str(workspace), "reason": exc.strerror or str(exc)}]
    return [{"path": str(workspace), "method": "trash"}], []
