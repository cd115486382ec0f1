"""What OpenClaw's CLI and terminal UI call besides chat: `agents.list`,
`agent.identity.get`, `sessions.create` (the terminal UI's `/new`), `sessions.describe`
(after every turn: the footer's model and tokens), `commands.list`, `logs.tail`, and the
lists of features clawlane does not have (`exec.approval.list`,
`openclaw.approval.list`, `taskSuggestions.list`, `users.list`: no user profiles), which
answer with the schema's empty list (`plugin.approval.list` and `question.list` are real: `_approvals`, `_questions`); `skills.status` (`openclaw skills list/info/check`: the skills a run
in the agent's workspace would see), and the inventories of what clawlane does not have:
`channels.status` (no chat channels), `node.list` (no node hosts), `usage.status` (no
provider quota polling), each answered empty as OpenClaw's gateway answers with none.

Shapes follow the schema's `*Result` definitions and what OpenClaw's gateway answers
(recorded from 2026.9.6).
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any, Final

import msgspec
import trio

from runtime.agent import Skill, commands_view, skills_now
from runtime.logs import (
    TAIL_DEFAULT_LIMIT,
    TAIL_DEFAULT_MAX_BYTES,
    LogRing,
    install_log_ring,
)
from runtime.model import GenerationError
from runtime.protocol import (
    UNAVAILABLE,
    AgentIdentityParams,
    AgentsListParams,
    ChannelsStatusParams,
    CommandsListParams,
    GatewayError,
    HooksStatusParams,
    LogsTailParams,
    NodeListParams,
    SessionsCreateParams,
    SessionsDescribeParams,
    SkillsStatusParams,
    TaskSuggestionsListParams,
    invalid_request,
    opt,
)
from runtime.sessions import TranscriptEntry, fork_path

from ._context import Call, MethodTable
from ._submit import agent_spec, changed, key_of, session_actor, submit_message
from ._views import agents_view, session_view


class EmptyParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    pass


def register(methods: MethodTable) -> None:
    methods.add("agents.list", agents_list, AgentsListParams)
    methods.add("agent.identity.get", agent_identity, AgentIdentityParams)
    methods.add("sessions.create", sessions_create, SessionsCreateParams, scope="operator.write")
    methods.add("sessions.describe", sessions_describe, SessionsDescribeParams)
    methods.add("commands.list", commands_list, CommandsListParams)
    methods.add("logs.tail", logs_tail, LogsTailParams)
    methods.add("taskSuggestions.list", task_suggestions_list, TaskSuggestionsListParams)
    methods.add("skills.status", skills_status, SkillsStatusParams)
    methods.add("channels.status", channels_status, ChannelsStatusParams)
    methods.add("node.list", node_list, NodeListParams)
    methods.add("hooks.status", hooks_status, HooksStatusParams)
    methods.add("usage.status", usage_status, EmptyParams)
    for name in ("exec.approval.list", "openclaw.approval.list"):
        methods.add(name, empty_list, EmptyParams)
    methods.add("users.list", users_list, EmptyParams)


async def agents_list(call: Call, params: AgentsListParams) -> dict[str, Any]:
    await trio.lowlevel.checkpoint()
    return agents_view(call.gateway)


async def agent_identity(call: Call, params: AgentIdentityParams) -> dict[str, Any]:
    gen = call.gateway.actors.supervisor.generation
    spec = agent_spec(call, opt(params.agentId), opt(params.sessionKey))
    entry = next((a for a in gen.config.agents.entries if a.id == spec.id), None)
    identity = entry.identity if entry is not None else None
    configured = (identity.name if identity else None) or (entry.name if entry else None)
    name = configured or "Assistant"
    await trio.lowlevel.checkpoint()
    view = {
        "agentId": spec.id,
        "name": name,
        "nameSource": "config" if configured else "default",
        "avatar": (identity.avatar if identity else None) or name[:1].upper(),
    }
    if identity is not None and identity.emoji:
        view["emoji"] = identity.emoji
    return view


async def sessions_create(call: Call, params: SessionsCreateParams) -> dict[str, Any]:
    """A new session (the terminal UI's `/new` sends `key: "tui-<uuid>"`); with `message`,
    its first run starts at once (`runStarted`, `runId`). With `fork` (and
    `parentSessionKey`), it starts with the parent's transcript (`_fork`)."""
    sup = call.gateway.actors.supervisor
    agent_id = opt(params.agentId)
    forked = await _fork_source(call, params)
    raw = opt(params.key) or f"session-{uuid.uuid4()}"
    key = key_of(call, raw, agent_id)
    actor = await session_actor(call, key)
    assert actor.row is not None
    if forked is not None:
        if actor.row_persisted or actor.busy:
            raise invalid_request(f"a fork starts a new session: {key} exists already")
        await actor.save_row()
        await actor.append_entries(forked)
    changes: dict[str, Any] = {}
    for name in ("label", "displayName", "thinkingLevel"):
        value = opt(getattr(params, name))
        if value is not None:
            changes[name] = value
    model = opt(params.model)
    if model is not None:
        try:
            resolved = sup.generation.resolve(model, agent_id=actor.agent_id)
        except GenerationError as exc:
            raise invalid_request(f"invalid sessions.create params: {exc}") from exc
        changes.update(modelOverride=resolved.model_id, providerOverride=resolved.provider_id)
    await actor.save_row(**changes)
    changed(call, key, "create", actor)
    result: dict[str, Any] = {
        "ok": True,
        "key": key,
        "sessionId": actor.row.sessionId,
        "entry": session_view(call.gateway, actor.row),
    }
    if forked is not None:
        result["entry"]["forkedFromParent"] = True
    message = opt(params.message) or opt(params.task)
    if message:
        run_id = opt(params.idempotencyKey) or str(uuid.uuid4())
        await submit_message(
            call,
            key=key,
            message=message,
            run_id=run_id,
            timeout_ms=opt(params.timeoutMs),
            mode=None,
        )
        result.update(runStarted=True, runId=run_id)
    return result


async def _fork_source(call: Call, params: SessionsCreateParams) -> list[TranscriptEntry] | None:
    """The entries a fork starts with (None: no fork): the parent's branch, or with
    `forkFrom: "last-completed"` up to its last finished reply. A parent with a run going is
    forked only that way (else `UNAVAILABLE`, as OpenClaw: try again in a moment)."""
    fork, parent = opt(params.fork) is True, opt(params.parentSessionKey)
    last_completed = opt(params.forkFrom) == "last-completed"
    if opt(params.forkFrom) is not None and not fork:
        raise invalid_request("forkFrom requires fork=true")
    if not fork:
        return None
    if parent is None:
        raise invalid_request("fork requires parentSessionKey")
    sup = call.gateway.actors.supervisor
    parent_key = key_of(call, parent, opt(params.agentId))
    parent_actor = sup.peek_session(parent_key)
    if parent_actor is not None and parent_actor.busy and not last_completed:
        raise GatewayError(
            UNAVAILABLE,
            f"Parent session {parent} is still active; try again in a moment.",
            retryable=True,
        )
    row = await sup.store.get_session(parent_key)
    if row is None:
        raise invalid_request(f"No session found: {parent}")
    entries = await sup.store.load_entries(row.sessionId)
    return fork_path(entries, last_completed=last_completed)


async def sessions_describe(call: Call, params: SessionsDescribeParams) -> dict[str, Any]:
    key = key_of(call, params.key, opt(params.agentId))
    actor = await session_actor(call, key)
    assert actor.row is not None
    view = session_view(call.gateway, actor.row)
    view["key"] = key
    return {"session": view}


async def commands_list(call: Call, params: CommandsListParams) -> dict[str, Any]:
    scope = opt(params.scope)
    await trio.lowlevel.checkpoint()
    if scope == "native":
        return {"commands": []}  # no channel with native commands here
    return {"commands": commands_view(include_args=opt(params.includeArgs) is not False)}


def log_ring(call: Call) -> LogRing:
    ring = getattr(call.gateway, "log_ring", None)
    return ring if isinstance(ring, LogRing) else install_log_ring()


async def logs_tail(call: Call, params: LogsTailParams) -> dict[str, Any]:
    """The recent log lines in OpenClaw's record shape: from the log file when
    `logging.file` is set, else from the in-memory ring (`file` is then `(memory)`)."""
    ring = log_ring(call)
    limit = opt(params.limit) or TAIL_DEFAULT_LIMIT
    max_bytes = opt(params.maxBytes) or TAIL_DEFAULT_MAX_BYTES
    cursor = opt(params.cursor)
    if ring.file is not None:
        tail = await trio.to_thread.run_sync(
            lambda: ring.read_tail(cursor=cursor, limit=limit, max_bytes=max_bytes)
        )
    else:
        await trio.lowlevel.checkpoint()
        tail = ring.read_tail(cursor=cursor, limit=limit, max_bytes=max_bytes)
    return tail.to_wire()


async def task_suggestions_list(call: Call, params: TaskSuggestionsListParams) -> dict[str, Any]:
    await trio.lowlevel.checkpoint()
    return {"suggestions": []}


async def users_list(call: Call, params: EmptyParams) -> dict[str, Any]:
    """No user profiles (the Control UI's "Assign to..." menu lists them): none."""
    await trio.lowlevel.checkpoint()
    return {"profiles": []}


async def empty_list(call: Call, params: EmptyParams) -> list[Any]:
    """Approvals clawlane never asks for (no exec or system-agent approval flow): none
    pending."""
    await trio.lowlevel.checkpoint()
    return []


# --- skills and the inventories of what clawlane does not have -------------------------------

_NO_REQUIREMENTS: Final[dict[str, list[str]]] = {
    "bins": [],
    "anyBins": [],
    "env": [],
    "config": [],
    "os": [],
}


async def skills_status(call: Call, params: SkillsStatusParams) -> dict[str, Any]:
    """The agent's skills as a run would see them now (the workspace's, then the resource
    roots'; first name wins), in OpenClaw's report shape: `eligible` when the executables
    and environment variables a skill requires are all here (it is then listed in the
    system prompt: `modelVisible`), else what is `missing`."""
    sup = call.gateway.actors.supervisor
    spec = agent_spec(call, opt(params.agentId), opt(params.sessionKey))
    workspace = await sup.workspace_for(spec.id, spec.workspace)
    roots = sup.turn_settings()["resource_roots"]
    snapshot = await skills_now(str(workspace), roots, sup.prompt_cache)
    eligible = {s.name for s in snapshot.eligible}
    skills = await trio.to_thread.run_sync(
        lambda: [_skill_view(s, s.name in eligible, workspace) for s in snapshot.skills]
    )
    return {
        "workspaceDir": str(workspace),
        "managedSkillsDir": str(workspace / "skills"),
        "agentId": spec.id,
        "skills": skills,
    }


def _skill_view(skill: Skill, eligible: bool, workspace: Path) -> dict[str, Any]:
    """One skill of `skills.status` (blocking: looks for its executables on PATH)."""
    needs, unmet = skill.requirements, skill.requirements.unmet()
    inside = skill.path.is_relative_to(workspace)
    return {
        "name": skill.name,
        "description": skill.description,
        "source": "openclaw-workspace" if inside else "openclaw-extra",
        "bundled": False,
        "filePath": str(skill.path),
        "baseDir": str(skill.base_dir),
        "skillKey": skill.name,
        "always": False,
        "disabled": False,
        "blockedByAllowlist": False,
        "blockedByAgentFilter": False,
        "eligible": eligible,
        "platformIncompatible": False,
        "modelVisible": eligible,
        "userInvocable": False,  # no `/<skill>` commands here
        "commandVisible": False,
        "requirements": {**_NO_REQUIREMENTS, "bins": list(needs.bins), "env": list(needs.env)},
        "missing": {**_NO_REQUIREMENTS, "bins": list(unmet.bins), "env": list(unmet.env)},
        "configChecks": [],
        "install": [],
    }


async def hooks_status(call: Call, params: HooksStatusParams) -> dict[str, Any]:
    """`openclaw hooks list`: none. clawlane loads no `HOOK.md` hooks (a workspace's
    `hooks/` is not read); its internal hooks are what plugins register in code."""
    sup = call.gateway.actors.supervisor
    spec = agent_spec(call, opt(params.agentId))
    workspace = await sup.workspace_for(spec.id, spec.workspace)
    return {
        "workspaceDir": str(workspace),
        "managedHooksDir": str(workspace / "hooks"),
        "hooks": [],
    }


async def channels_status(call: Call, params: ChannelsStatusParams) -> dict[str, Any]:
    """No chat channels (clawlane serves the Gateway protocol and its HTTP API only)."""
    await trio.lowlevel.checkpoint()
    return {
        "ts": int(time.time() * 1000),
        "channelOrder": [],
        "channelLabels": {},
        "channelDetailLabels": {},
        "channelSystemImages": {},
        "channelMeta": [],
        "channels": {},
        "channelAccounts": {},
        "channelDefaultAccountId": {},
    }


async def node_list(call: Call, params: NodeListParams) -> dict[str, Any]:
    """No node hosts (devices that run commands for the agents): none can pair here."""
    await trio.lowlevel.checkpoint()
    return {"ts": int(time.time() * 1000), "nodes": []}


async def usage_status(call: Call, params: EmptyParams) -> dict[str, Any]:
    """Providers' quota windows: clawlane does not poll them."""
    await trio.lowlevel.checkpoint()
    return {"updatedAt": int(time.time() * 1000), "providers": []}
