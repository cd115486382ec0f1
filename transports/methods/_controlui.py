"""What OpenClaw's web Control UI (`openclaw-control-ui`, mode `webchat`) calls.

`chat.startup` (the session's recent messages, each with the `__openclaw` identity the UI
matches its own sends against, plus the session, its defaults and the chat metadata),
`chat.metadata` (models and commands for the composer), the model picker's
`models.authStatus`, and the panels the UI opens around a chat. Where clawlane has the data
the answer is real (models, commands, the agent, the session, the host); where the feature
does not exist (boards, projects, talk, tasks, companions, GitHub, pull requests) the answer is the schema's empty value, so the UI shows an empty panel rather
than an error. `cron.*` is the cron helper's.

Shapes: the schema's `*Result` definitions where there is one, else what OpenClaw's gateway
answered (recorded from 2026.9.6).
"""

from __future__ import annotations

import contextlib
import os
import platform
import socket
import sys
import time
from collections.abc import Iterator
from typing import Any, Final

import msgspec
import psutil
import trio

from runtime.agent import TurnServices, commands_view
from runtime.protocol import (
    UNAVAILABLE,
    ChatHistoryParams,
    ChatMetadataParams,
    GatewayError,
    ModelsAuthStatusParams,
    SessionsCatalogListParams,
    SessionsCompanionStateParams,
    SessionsObserverVisibilityParams,
    SystemInfoParams,
    TalkCatalogParams,
    TasksListParams,
    ToolsCatalogParams,
    ToolsEffectiveParams,
    UpdateStatusParams,
    UsersPrefsGetParams,
    UsersPrefsSetParams,
    WebSearchStatusParams,
    invalid_request,
    opt,
)
from runtime.tools import CORE_TOOLS, PROFILES, SECTIONS, builtin_tools
from runtime.users import PrefsTooLarge, UserPrefsError

from . import _sessions as sessions
from ._context import Call, MethodTable
from ._submit import agent_spec, key_of, session_actor
from ._views import catalog_view, defaults_view, session_view

MAX_VIEWED_SESSIONS: Final = 64


class SessionKeysParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    sessionKeys: list[str]


class SessionScopedParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    sessionKey: str | None = None
    agentId: str | None = None


class OpenParams(msgspec.Struct, frozen=True):
    """Params of UI-only methods with no definition in either schema (extra keys allowed)."""


def register(methods: MethodTable) -> None:
    methods.advertise("users.prefs.changed")
    read = "operator.read"
    methods.add("chat.startup", chat_startup, None, scope=read)
    methods.add("chat.metadata", chat_metadata, ChatMetadataParams)
    methods.add("models.authStatus", models_auth_status, ModelsAuthStatusParams)
    methods.add("sessions.companion.state", companion_state, SessionsCompanionStateParams)
    methods.add(
        "sessions.observer.visibility", observer_visibility, SessionsObserverVisibilityParams
    )
    methods.add("sessions.viewers.set", viewers_set, SessionKeysParams, scope=read)
    methods.add("sessions.catalog.list", catalog_list, SessionsCatalogListParams)
    methods.add("update.status", update_status, UpdateStatusParams)
    methods.add("talk.catalog", talk_catalog, TalkCatalogParams)
    methods.add("tasks.list", tasks_list, TasksListParams)
    methods.add("system.info", system_info, SystemInfoParams)
    methods.add("system-presence", system_presence, None, scope=read)
    methods.add("users.prefs.get", prefs_get, UsersPrefsGetParams, scope=read)
    methods.add("users.prefs.set", prefs_set, UsersPrefsSetParams, scope="operator.write")
    methods.add("webSearch.status", web_search_status, WebSearchStatusParams, scope=read)
    methods.add("tools.catalog", tools_catalog, ToolsCatalogParams, scope=read)
    methods.add("tools.effective", tools_effective, ToolsEffectiveParams, scope=read)
    # What this gateway has, for the Control UI's pages (params the schemas may not define).
    for name, handler in (
        ("diagnostics.lanes", diagnostics_lanes),
        ("plugins.list", plugins_list),
        ("environments.list", environments_list),
    ):
        methods.add(name, handler, OpenParams, scope=read)
    # Panels of features clawlane does not have: their empty answers.
    for name, answer in _EMPTY.items():
        methods.add(name, _empty(name, answer), OpenParams, scope=read)


# --- the debug page -------------------------------------------------------------------------


async def diagnostics_lanes(call: Call, params: OpenParams) -> dict[str, Any]:
    """The global lanes (`main`, `subagent`, `cron`, `nested`) as OpenClaw lists its
    command lanes: runs holding a slot, runs waiting for one, the capacity. clawlane's lanes
    are never reset or drained, so `generation` stays 0 and `draining` false."""
    await trio.lowlevel.checkpoint()
    lanes = []
    for name, lane in sorted(call.gateway.actors.supervisor.lanes.items()):
        stats = lane.statistics()
        lanes.append(
            {
                "lane": name,
                "queuedCount": stats.waiting,
                "activeCount": stats.in_use,
                "maxConcurrent": stats.capacity,
                "draining": False,
                "generation": 0,
                "blockedBy": None,
            }
        )
    return {"ts": int(time.time() * 1000), "lanes": lanes}


async def plugins_list(call: Call, params: OpenParams) -> dict[str, Any]:
    """The plugins this gateway loaded (the config's `plugins`, Python modules): each
    enabled and active; none can be installed or toggled from here (`mutationAllowed`)."""
    await trio.lowlevel.checkpoint()
    plugins = [
        {
            "id": record.id,
            "name": record.id,
            "description": f"{record.spec} ({record.module})",
            "origin": "config",
            "installed": True,
            "enabled": True,
            "state": "enabled",
            "removable": False,
        }
        for record in sorted(
            call.gateway.actors.supervisor.plugins.plugins.values(), key=lambda r: r.id
        )
    ]
    return {"plugins": plugins, "diagnostics": [], "mutationAllowed": False}


async def environments_list(call: Call, params: OpenParams) -> dict[str, Any]:
    """One environment: this gateway's host, where sessions run (no remote workers)."""
    await trio.lowlevel.checkpoint()
    return {
        "environments": [
            {
                "id": "gateway",
                "type": "local",
                "label": "Gateway local",
                "status": "available",
                "platform": sys.platform,
                "sessionHost": True,
                "trust": "persistent",
                "capabilities": ["agent.run", "sessions", "tools", "workspace"],
            }
        ]
    }


async def web_search_status(call: Call, params: WebSearchStatusParams) -> dict[str, Any]:
    """No web search: clawlane's agents have no search tool and no search provider."""
    await trio.lowlevel.checkpoint()
    defaults = defaults_view(
        call.gateway.actors.supervisor.generation, agent_spec(call, opt(params.agentId)).id
    )
    return {
        "enabled": False,
        "provider": None,
        "agentId": defaults["agentId"],
        "model": {
            "provider": defaults["modelProvider"],
            "id": defaults["model"],
            "runtime": "clawlane",
        },
        "route": {
            "kind": "disabled",
            "label": "No web search",
            "reason": "clawlane has no web search tool",
            "testable": False,
        },
        "providers": [],
    }


_UNAVAILABLE_TAG: Final = "unavailable"


def _clawlane_tools(call: Call) -> dict[str, Any]:
    """The built-in tools a run is given, by name: the web tools as `tools.web` configures
    them, the memory tools unless `memory.search.enabled` is false."""
    sup = call.gateway.actors.supervisor
    web = TurnServices.web_settings(sup.generation)
    tools = [
        *builtin_tools(
            web,
            processes=sup.services.processes,
            questions=sup.services.questions,
            cards=None if sup.generation.config.tools.updatePlan is False else sup.services.cards,
            config_reader=sup.services.config_reader,
        ),
        *sup.services.memory_tools(sup.generation),
    ]
    # the gateway's hosts': sessions_list, sessions_send, ..., automations
    return {tool.name: tool for tool in [*tools, *sup.services.host_tools()]}


async def tools_catalog(call: Call, params: ToolsCatalogParams) -> dict[str, Any]:
    """The tools an agent may be given, as OpenClaw's catalog lists them: every core tool
    OpenClaw defines, by its sections (`Files`, `Runtime`, `Web`, ...), each with the
    profiles that include it (`full` has every tool); one clawlane does not have is listed
    with the tag `unavailable` and a description that says so (a policy may name it; it is
    simply not offered). Then each plugin's tools (`includePlugins`, on unless false),
    in the `full` profile only."""
    await trio.lowlevel.checkpoint()
    agent = agent_spec(call, opt(params.agentId))
    have = _clawlane_tools(call)
    groups = []
    for section, label in SECTIONS:
        tools = []
        for core in CORE_TOOLS.values():
            if core.section != section:
                continue
            entry: dict[str, Any] = {"id": core.id, "label": core.id, "source": "core"}
            tool = have.get(core.id)
            if tool is not None:
                entry["description"] = str(getattr(tool, "description", "") or "")
            else:
                entry["description"] = f"{core.description} (not available in clawlane)"
                entry["tags"] = [_UNAVAILABLE_TAG]
            entry["defaultProfiles"] = [*core.profiles, "full"]
            tools.append(entry)
        groups.append({"id": section, "label": label, "source": "core", "tools": tools})
    if opt(params.includePlugins) is not False:
        registry = call.gateway.actors.supervisor.plugins
        by_name = {tool.name: tool for tool in registry.tools()}
        for record in sorted(registry.plugins.values(), key=lambda r: r.id):
            tools = [
                {
                    "id": n,
                    "label": n,
                    "description": str(getattr(by_name[n], "description", "") or ""),
                    "source": "plugin",
                    "pluginId": record.id,
                    "defaultProfiles": ["full"],
                }
                for n in record.tools
                if n in by_name
            ]
            if tools:
                groups.append(
                    {
                        "id": f"plugin:{record.id}",
                        "label": record.id,
                        "source": "plugin",
                        "pluginId": record.id,
                        "tools": tools,
                    }
                )
    profiles = [{"id": p, "label": p.capitalize()} for p in PROFILES]
    return {"agentId": agent.id, "profiles": profiles, "groups": groups}


_SOURCE_LABELS: Final = {"core": "Built-in tools", "plugin": "Connected tools"}
_SUMMARY_MAX: Final = 120


async def tools_effective(call: Call, params: ToolsEffectiveParams) -> dict[str, Any]:
    """The tools a run in the session would be offered now: the built-ins and the loaded
    plugins' tools that the agent's policy (OpenClaw's layers: `tools`, the agent's
    `tools`, their `byProvider` entry for the agent's primary model) lets through, grouped
    by source as OpenClaw groups them (`core`, then `plugin`). OpenClaw tools the policy
    permits that clawlane does not have are named in an `info` notice. The session must
    exist; an `agentId` other than the session's is `INVALID_REQUEST`."""
    sup = call.gateway.actors.supervisor
    key = key_of(call, params.sessionKey)
    if await sup.store.get_session(key) is None:
        raise invalid_request(f'unknown session key "{params.sessionKey}"')
    agent = agent_spec(call, None, key)
    requested = opt(params.agentId)
    if requested is not None and requested != agent.id:
        raise invalid_request(f'agent id "{requested}" does not match session agent "{agent.id}"')
    policy = TurnServices.tool_policy(sup.generation, agent.id, agent.primary)
    owner = {name: r.id for r in sup.plugins.plugins.values() for name in r.tools}
    have = _clawlane_tools(call)
    groups: dict[str, list[dict[str, Any]]] = {}
    for tool in policy.filter([*have.values(), *sup.plugins.tools()]):
        raw = str(getattr(tool, "description", "") or "")
        source = "plugin" if tool.name in owner else "core"
        entry = {"id": tool.name, "label": _title(tool.name), "description": _summary(raw)}
        entry |= {"rawDescription": raw, "source": source}
        if source == "plugin":
            entry["pluginId"] = owner[tool.name]
        groups.setdefault(source, []).append(entry)
    result: dict[str, Any] = {
        "agentId": agent.id,
        "profile": policy.profile or "full",
        "groups": [
            {"id": source, "label": label, "source": source, "tools": groups[source]}
            for source, label in _SOURCE_LABELS.items()
            if source in groups
        ],
    }
    missing = [name for name in policy.permitted_core_tools() if name not in have]
    if missing:
        result["notices"] = [
            {
                "id": "clawlane-unavailable-tools",
                "severity": "info",
                "message": (
                    "The tool policy permits OpenClaw tools clawlane does not have; they are "
                    f"not offered: {', '.join(missing)}"
                ),
            }
        ]
    return result


def _title(name: str) -> str:
    """A tool's display title as OpenClaw makes one: words capitalised, `_` as spaces."""
    words = name.replace("_", " ").split()
    return " ".join(w if len(w) <= 2 and w.isupper() else w[:1].upper() + w[1:] for w in words)


def _summary(description: str) -> str:
    """The first line of a tool's description, one line of at most 120 characters."""
    first = next((line for line in description.splitlines() if line.strip()), "")
    text = " ".join(first.split())
    if not text:
        return "Tool"
    if len(text) <= _SUMMARY_MAX:
        return text
    cut = text[: _SUMMARY_MAX - 3]
    space = cut.rfind(" ")
    return (cut[:space] if space >= 48 else cut).rstrip() + "..."


# --- chat -----------------------------------------------------------------------------------


async def chat_startup(call: Call, params: dict[str, Any]) -> dict[str, Any]:
    """The first load of a chat: its recent messages (as `chat.history` returns them, so
    the UI matches each of its sends by `__openclaw.idempotencyKey`), pending inputs (none:
    clawlane queues in memory only while a run is active), the session and the metadata."""
    if "shortId" in params and "sessionKey" not in params:
        raise invalid_request("invalid chat.startup params: shortId links are not supported")
    try:
        history_params = msgspec.convert(params, ChatHistoryParams)
    except msgspec.ValidationError as exc:
        raise invalid_request(f"invalid chat.startup params: {exc}") from exc
    history = await sessions.chat_history(call, history_params)
    key = history["sessionKey"]
    actor = await session_actor(call, key)
    assert actor.row is not None
    gen = call.gateway.actors.supervisor.generation
    info = session_view(call.gateway, actor.row)
    info["key"] = key
    return {
        "sessionKey": key,
        "sessionId": history["sessionId"],
        "messages": history["messages"],
        "pendingInputs": {"items": [], "total": 0},
        "hasMore": history["hasMore"],
        "totalMessages": len(history["messages"]),
        "defaults": defaults_view(gen, actor.agent_id),
        "sessionInfo": info,
        "thinkingLevel": actor.row.thinkingLevel or "off",
        "metadata": _metadata(call, actor.agent_id),
    }


def _metadata(call: Call, agent_id: str | None) -> dict[str, Any]:
    gen = call.gateway.actors.supervisor.generation
    return {
        "models": catalog_view(gen, agent_id),
        "commands": commands_view(),
        "accountSelection": {"kind": "automatic", "label": "Automatic account selection"},
        "runtimeSelectionLocked": False,
    }


async def chat_metadata(call: Call, params: ChatMetadataParams) -> dict[str, Any]:
    agent_id = agent_spec(call, opt(params.agentId), opt(params.sessionKey)).id
    await trio.lowlevel.checkpoint()
    return _metadata(call, agent_id)


async def models_auth_status(call: Call, params: ModelsAuthStatusParams) -> dict[str, Any]:
    """Each configured provider and where its credential comes from (never the secret)."""
    gen = call.gateway.actors.supervisor.generation
    agent_id = agent_spec(call, opt(params.agentId) or None).id
    providers = []
    for provider_id, pconf in gen.config.models.providers.items():
        available = any(e.available for e in gen.catalog_for(agent_id) if e.provider == provider_id)
        item: dict[str, Any] = {
            "provider": provider_id,
            "authProvider": provider_id,
            "displayName": provider_id,
            "status": "static" if available else "missing",
            "profiles": [],
        }
        if pconf.apiKey:
            item["apiKey"] = {"source": "config"}
        providers.append(item)
    if not providers:  # the built-in `local` provider
        providers.append(
            {
                "provider": "local",
                "authProvider": "local",
                "displayName": "local",
                "status": "static",
                "profiles": [],
            }
        )
    await trio.lowlevel.checkpoint()
    return {"ts": int(time.time() * 1000), "providers": providers, "providerCapabilities": []}


# --- sessions -------------------------------------------------------------------------------


async def companion_state(call: Call, params: SessionsCompanionStateParams) -> dict[str, Any]:
    key_of(call, params.sessionKey, opt(params.agentId))
    await trio.lowlevel.checkpoint()
    return {"exchanges": []}


async def observer_visibility(
    call: Call, params: SessionsObserverVisibilityParams
) -> dict[str, Any]:
    await trio.lowlevel.checkpoint()
    return {"ok": True}


async def viewers_set(call: Call, params: SessionKeysParams) -> dict[str, Any]:
    """The sessions this connection has open; their `session.message` events come to it
    (as `sessions.messages.subscribe`), the others' stop."""
    if len(params.sessionKeys) > MAX_VIEWED_SESSIONS:
        raise invalid_request(
            f"invalid sessions.viewers.set params: at most {MAX_VIEWED_SESSIONS} sessionKeys"
        )
    keys = [key_of(call, raw) for raw in params.sessionKeys]
    hub = call.gateway.actors.hub
    for old in call.conn.viewed_sessions - set(keys):
        hub.unwatch_session(call.conn, old)
    for key in keys:
        hub.watch_session(call.conn, key)
    call.conn.viewed_sessions = set(keys)
    await trio.lowlevel.checkpoint()
    return {"sessionKeys": keys}


async def catalog_list(call: Call, params: SessionsCatalogListParams) -> dict[str, Any]:
    await trio.lowlevel.checkpoint()
    return {"catalogs": []}  # no external session catalogs (Claude Code, ...) here


async def tasks_list(call: Call, params: TasksListParams) -> dict[str, Any]:
    await trio.lowlevel.checkpoint()
    return {"tasks": []}


# --- the gateway ----------------------------------------------------------------------------


async def update_status(call: Call, params: UpdateStatusParams) -> dict[str, Any]:
    await trio.lowlevel.checkpoint()
    return {
        "sentinel": None,
        "updateAvailable": None,
        "effectiveChannel": "stable",
        "schedule": {"channel": "stable", "autoEnabled": False},
    }


async def talk_catalog(call: Call, params: TalkCatalogParams) -> dict[str, Any]:
    await trio.lowlevel.checkpoint()
    return {
        "modes": [],
        "transports": [],
        "brains": [],
        "speech": {"ready": False, "providers": []},
        "transcription": {"ready": False, "providers": []},
        "realtime": {"ready": False, "providers": []},
    }


def _system_info(port: int, started: float) -> dict[str, Any]:
    memory = psutil.virtual_memory()
    info: dict[str, Any] = {
        "machineName": socket.gethostname(),
        "hostname": socket.gethostname(),
        "platform": platform.system().lower(),
        "release": platform.release(),
        "arch": platform.machine(),
        "osLabel": f"{platform.system()} {platform.release()}",
        "port": port,
        "nodeVersion": f"python {platform.python_version()}",
        "pid": os.getpid(),
        "uptimeMs": int((time.time() - started) * 1000),
        "cpuCount": os.cpu_count() or 1,
        "loadAverage": list(os.getloadavg()),
        "memoryTotalBytes": memory.total,
        "memoryFreeBytes": memory.available,
    }
    return info


async def system_info(call: Call, params: SystemInfoParams) -> dict[str, Any]:
    gw = call.gateway
    port = gw.process.listeners[0].socket.getsockname()[1] if gw.process.listeners else 0
    return await trio.to_thread.run_sync(_system_info, port, gw.process.started)


async def system_presence(call: Call, params: dict[str, Any]) -> list[dict[str, Any]]:
    await trio.lowlevel.checkpoint()
    return call.gateway.process.presence()


# --- user preferences (the state dir's file, or the cluster's document) -----------------------


async def prefs_get(call: Call, params: UsersPrefsGetParams) -> dict[str, Any]:
    with _prefs_errors():
        entries = await call.gateway.trust.user_prefs.get(opt(params.keys))
    return {"status": "ok", "entries": entries}


async def prefs_set(call: Call, params: UsersPrefsSetParams) -> dict[str, Any]:
    for name in (*params.entries, *(opt(params.expectedEntries) or {})):
        if not 1 <= len(name) <= 256:
            raise invalid_request("invalid users.prefs.set params: a key is 1 to 256 characters")
    with _prefs_errors():
        done = await call.gateway.trust.user_prefs.set(params.entries, opt(params.expectedEntries))
    if not done:
        return {"status": "conflict"}
    call.gateway.trust.prefs_changed(dict(params.entries))
    return {"status": "ok"}


@contextlib.contextmanager
def _prefs_errors() -> Iterator[None]:
    """The preferences' errors as the client's: too large is the request's fault; a
    document that cannot be read or written is `UNAVAILABLE` (retryable)."""
    try:
        yield
    except PrefsTooLarge as exc:
        raise invalid_request(f"users.prefs.set: {exc}") from exc
    except UserPrefsError as exc:
        raise GatewayError(UNAVAILABLE, str(exc), retryable=True, retry_after_ms=1_000) from exc


_EMPTY: Final[dict[str, Any]] = {
    "plugins.controlUi.list": {"revision": "0", "plugins": [], "diagnostics": []},
    "controlUi.sessionPullRequests.subscribe": {"subscribed": False},
    "board.get": {"revision": 0, "tabs": [], "widgets": []},
    "projects.list": {"projects": [], "recents": []},
    "mentions.list": {"revision": 0, "items": []},
    "session.discussion.info": {"state": "none"},
    "sessions.github.options": {
        "personal": {"state": "disconnected", "generation": None, "account": None},
        "shared": None,
        "pendingPersonal": None,
        "latestShared": None,
    },
    "session.members.listEvidence": {
        "members": [],
        "identities": [],
        "role": "admin",
        "allowedVisibilities": ["shared"],
    },
    # No chat channels to pair senders of.
    "channels.pairing.list": {
        "accounts": [],
        "requests": [],
        "commandOwnerConfigured": False,
        "limits": {"pendingPerAccount": 0, "ttlMs": 0},
    },
    # No ClawHub, plugin catalog or skill library: plugins are the config's Python modules
    # (`plugins.list`), skills are files (`skills.status`).
    "plugins.catalog.browse": {"items": []},
    "skills.search": {"results": []},
    "skills.library.list": {
        "entries": [],
        "profileId": None,
        "multipleProfiles": False,
        "defaultTarget": "unavailable",
        "canManageWorkspace": False,
        "defaultSelectionLimit": 64,
    },
}
#: Answers that name the session they were asked about (`sessionKey`).
_ECHO_SESSION: Final = frozenset({"board.get", "session.members.listEvidence"})


def _empty(name: str, answer: dict[str, Any]) -> Any:
    async def handler(call: Call, params: OpenParams) -> dict[str, Any]:
        out = dict(answer)
        raw = call.frame.params if isinstance(call.frame.params, dict) else {}
        if name in _ECHO_SESSION:
            key = raw.get("sessionKey")
            if not isinstance(key, str) or not key:
                raise invalid_request(f"invalid {name} params: sessionKey is required")
            out["sessionKey"] = key_of(call, key)
        if name == "mentions.list":
            out["gatewayInstanceId"] = call.gateway.process.boot_id
        await trio.lowlevel.checkpoint()
        return out

    return handler
