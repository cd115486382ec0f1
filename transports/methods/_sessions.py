"""Chat and session methods: `chat.send`, `chat.history`, `chat.abort`, `chat.inject`, the
`sessions.*` family, and `runs.replay` (clawlane: catch up on a run after a reconnect).

Shapes follow the protocol schema; behaviour follows OpenClaw (notes §3.3, §4.4): `chat.send`
answers once (`{runId, status:"started"}`) and the reply streams as `chat` events; a repeated
idempotency key answers from the cache (`ok` or `in_flight`); a stop phrase aborts the
session's runs instead of sending.
"""

from __future__ import annotations

import re
import uuid
from typing import Annotated, Any, Final

import msgspec
import trio

from actors import (
    QueueMode,
    SessionActor,
    SessionBusy,
    Supervisor,
    normalize_drop,
    normalize_mode,
    replay_terminal,
    stop_subagents,
)
from runtime.agent import (
    BASE_SYSTEM_PROMPT,
    REASONING_MODES,
    THINK_LEVELS,
    VERBOSE_LEVELS,
    context_budget,
    find_command,
    is_silent_reply,
    normalize_reasoning_level,
    normalize_think_level,
    normalize_verbose_level,
    system_prompt_report,
)
from runtime.heartbeat import hidden_in_history
from runtime.hooks import InternalHookEvent
from runtime.llm import AssistantMessage, ProviderError, TextContent
from runtime.loop import now_ms
from runtime.model import GenerationError
from runtime.protocol import (
    UNAVAILABLE,
    ChatAbortParams,
    ChatHistoryParams,
    ChatInjectParams,
    ChatSendParams,
    GatewayError,
    SessionsAbortParams,
    SessionsCompactParams,
    SessionsDeleteParams,
    SessionsMessagesSubscribeParams,
    SessionsMessagesUnsubscribeParams,
    SessionsPatchParams,
    SessionsResetParams,
    SessionsResolveParams,
    SessionsSendParams,
    invalid_request,
    opt,
)
from runtime.sessions import (
    DEFAULT_MAIN_KEY,
    DISPLAY_MAX_CHARS,
    SessionRow,
    branch_messages,
    cap_row,
    hidden_in_display,
    history_row,
    openclaw_row_meta,
)
from runtime.usage import normalize_usage_mode

from ._context import Call, MethodTable
from ._session_groups import groups_of
from ._slash import run_slash_command
from ._submit import (
    changed,
    key_of,
    row_payload,
    session_actor,
    submit_message,
)
from ._views import defaults_view, session_view

STOP_PHRASES: Final = frozenset(
    {
        "stop",
        "/stop",
        "abort",
        "/abort",
        "esc",
        "wait",
        "exit",
        "interrupt",
        "halt",
        "cancel",
        "stopp",
        "arrête",
        "detente",
        "para",
    }
)
MAX_HISTORY_BYTES: Final = 6 * 1024 * 1024
_TAG = re.compile(r"\[\[(?:reply_to[^\]]*|audio_as_voice)\]\]")


class SessionsPatchParamsX(
    SessionsPatchParams, frozen=True, forbid_unknown_fields=True, omit_defaults=True
):
    """`SessionsPatchParams` plus clawlane's queue settings (OpenClaw sets them with `/queue`)."""

    queueMode: str | msgspec.UnsetType | None = msgspec.UNSET
    queueDebounceMs: int | msgspec.UnsetType | None = msgspec.UNSET
    queueCap: int | msgspec.UnsetType | None = msgspec.UNSET
    queueDrop: str | msgspec.UnsetType | None = msgspec.UNSET
    keepUpdatedAt: bool | msgspec.UnsetType = msgspec.UNSET
    """clawlane's: the session keeps its `updatedAt` (its place in the list), as a group's
    sessions refiled by `sessions.groups.rename` / `delete` on their owner (`_owners`)."""


class SessionsDeleteParamsX(
    SessionsDeleteParams, frozen=True, forbid_unknown_fields=True, omit_defaults=True
):
    """`SessionsDeleteParams` plus clawlane's `ifIdle`: a session with a run going is kept
    (`deleted: false`), as `sessions.cleanup` has its owner delete it (`_owners`)."""

    ifIdle: bool | msgspec.UnsetType = msgspec.UNSET


class SessionReference(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What OpenClaw 2026.9.6's Control UI knows of a session from a page's address."""

    key: Annotated[str, msgspec.Meta(min_length=1, max_length=512)]
    slug: Annotated[str, msgspec.Meta(max_length=512)] | None = None


class SessionsResolveParamsX(
    SessionsResolveParams, frozen=True, forbid_unknown_fields=True, omit_defaults=True
):
    """`SessionsResolveParams` plus the `reference` OpenClaw 2026.9.6's clients send."""

    reference: SessionReference | msgspec.UnsetType = msgspec.UNSET


class SessionsKeyParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    key: str
    agentId: str | None = None
    limit: int | None = None


class EmptyParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    pass


class RunsReplayParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    runId: str
    afterSeq: Annotated[int, msgspec.Meta(ge=0)] = 0


def register(methods: MethodTable) -> None:
    methods.advertise("sessions.changed", "session.message")
    methods.add("chat.send", chat_send, ChatSendParams)
    methods.add("chat.history", chat_history, ChatHistoryParams)
    methods.add("chat.abort", chat_abort, ChatAbortParams)
    methods.add("chat.inject", chat_inject, ChatInjectParams)
    methods.add("sessions.get", sessions_get, SessionsKeyParams, scope="operator.read")
    methods.add("sessions.resolve", sessions_resolve, SessionsResolveParamsX)
    methods.add("sessions.patch", sessions_patch, SessionsPatchParamsX, scope="operator.admin")
    methods.add("sessions.reset", sessions_reset, SessionsResetParams)
    methods.add("sessions.delete", sessions_delete, SessionsDeleteParamsX, scope="operator.admin")
    methods.add("sessions.abort", sessions_abort, SessionsAbortParams)
    methods.add("sessions.send", sessions_send, SessionsSendParams)
    methods.add("sessions.steer", sessions_steer, SessionsSendParams, scope="operator.write")
    methods.add("sessions.subscribe", sessions_subscribe, EmptyParams)
    methods.add("sessions.unsubscribe", sessions_unsubscribe, EmptyParams, scope="operator.read")
    methods.add("sessions.messages.subscribe", messages_subscribe, SessionsMessagesSubscribeParams)
    methods.add(
        "sessions.messages.unsubscribe", messages_unsubscribe, SessionsMessagesUnsubscribeParams
    )
    methods.add("runs.replay", runs_replay, RunsReplayParams, scope="operator.read")
    methods.add("sessions.compact", sessions_compact, SessionsCompactParams)
    methods.add(
        "sessions.systemPrompt", sessions_system_prompt, SessionsKeyParams, scope="operator.admin"
    )


def _is_stop(message: str) -> bool:
    return message.strip().lower().rstrip("!.") in STOP_PHRASES


# --- chat ----------------------------------------------------------------------------------


async def chat_send(call: Call, params: ChatSendParams) -> dict[str, Any]:
    if "\x00" in params.message:
        raise invalid_request("invalid chat.send params: message must not contain null bytes")
    attachments = opt(params.attachments) or []
    if not params.message.strip() and not attachments:
        raise invalid_request("invalid chat.send params: message or attachment required")
    key = key_of(call, params.sessionKey, opt(params.agentId))
    if not opt(params.suppressCommandInterpretation) and not _is_stop(params.message):
        found = find_command(params.message)
        if found is not None:
            if found[0].name not in ("new", "reset"):  # those queue a run: ordered there
                await call.ticket_for(key).turn()  # in its place, after earlier messages
            return await run_slash_command(call, params, key, *found)
    if _is_stop(params.message) and not opt(params.suppressCommandInterpretation):
        actor = await session_actor(call, key)
        # A stop takes effect in its place: messages received before it are on the lane.
        await call.ticket_for(key).turn()
        run_ids = actor.abort(None, "stop")
        stop_subagents(call.gateway.actors.supervisor, key)  # OpenClaw's /stop: the child tree
        call.release_ticket()
        internal = call.gateway.actors.supervisor.internal_hooks
        if internal.has_listeners("command", "stop"):
            await internal.trigger(
                InternalHookEvent(
                    type="command", action="stop", sessionKey=key, context={"runIds": run_ids}
                )
            )
        await trio.lowlevel.checkpoint()
        return {"ok": True, "aborted": bool(run_ids), "runIds": run_ids}
    return await submit_message(
        call,
        key=key,
        message=params.message,
        run_id=params.idempotencyKey,
        timeout_ms=opt(params.timeoutMs),
        mode=opt(params.queueMode),
    )


def _display(message: Any, max_chars: int, meta: dict[str, Any]) -> dict[str, Any] | None:
    """A transcript message as `chat.history` shows it (None: not shown), its texts cut at
    `max_chars` as OpenClaw's display cuts them (`runtime.sessions.cap_row`)."""
    data = history_row(message)
    assert isinstance(data, dict)
    if isinstance(message, AssistantMessage):
        texts = [c.text for c in message.content if isinstance(c, TextContent)]
        if texts and all(is_silent_reply(t) for t in texts) and len(texts) == len(message.content):
            return None
        data["content"] = [
            {**c, "text": _TAG.sub("", c["text"]).strip()} if c.get("type") == "text" else c
            for c in data["content"]
        ]
    data["__openclaw"] = meta
    return cap_row(data, max_chars)


async def chat_history(call: Call, params: ChatHistoryParams) -> dict[str, Any]:
    key = key_of(call, params.sessionKey, opt(params.agentId))
    actor = await session_actor(call, key)
    assert actor.row is not None
    limit = opt(params.limit) or 200
    if not 1 <= limit <= 1000:
        raise invalid_request("invalid chat.history params: limit must be between 1 and 1000")
    max_chars = opt(params.maxChars)
    if max_chars is not None and not 1 <= max_chars <= 500_000:
        raise invalid_request("invalid chat.history params: maxChars must be between 1 and 500000")
    max_chars = max_chars or DISPLAY_MAX_CHARS  # OpenClaw's default cut
    entries = await call.gateway.actors.supervisor.store.load_entries(actor.row.sessionId)
    rows: list[dict[str, Any]] = []
    seq = 0
    branch = branch_messages(entries)  # the branch the session is on
    hidden = hidden_in_history([e.message for e in branch])  # heartbeats' prompts and acks
    for i, entry in enumerate(branch):
        message = entry.message
        seq += 1
        hide = i in hidden or hidden_in_display(message)  # heartbeats, a child's completion
        shown = None if hide else _display(message, max_chars, openclaw_row_meta(entry, seq))
        if shown is None:
            continue
        if entry.idempotencyKey is not None:
            shown["idempotencyKey"] = entry.idempotencyKey
        rows.append(shown)
    rows = rows[-limit:]
    # The newest rows within the client's `maxBytes` (the Control UI asks for 256 KiB).
    budget = min(opt(params.maxBytes) or MAX_HISTORY_BYTES, MAX_HISTORY_BYTES)
    total = 0
    kept: list[dict[str, Any]] = []
    for row in reversed(rows):
        size = len(msgspec.json.encode(row))
        if total + size > budget:
            break
        total += size
        kept.append(row)
    kept.reverse()
    active = [r.run_id for r in call.gateway.actors.registry.active() if r.session_key == key]
    info = session_view(call.gateway, actor.row, active_run_ids=active)
    info["key"] = key
    result: dict[str, Any] = {
        "sessionKey": key,
        "sessionId": actor.row.sessionId,
        "messages": kept,
        "pendingInputs": {"items": [], "total": 0},
        "hasMore": len(kept) < seq,
        "totalMessages": seq,
        "defaults": defaults_view(call.gateway.actors.supervisor.generation, actor.agent_id),
        # The session as `sessions.describe` shows it (the terminal UI's footer reads it).
        "sessionInfo": info,
    }
    if actor.row.thinkingLevel:
        result["thinkingLevel"] = actor.row.thinkingLevel
    if actor.row.verboseLevel:
        result["verboseLevel"] = actor.row.verboseLevel
    return result


async def chat_abort(call: Call, params: ChatAbortParams) -> dict[str, Any]:
    key = key_of(call, params.sessionKey, opt(params.agentId))
    run_id = opt(params.runId)
    if run_id is not None:
        record = call.gateway.actors.registry.get(run_id)
        if record is not None and record.session_key != key:
            raise invalid_request("runId does not match sessionKey")
    actor = await session_actor(call, key)
    run_ids = actor.abort(run_id, "rpc")
    if run_id is not None:  # OpenClaw's exact-run stop: that run's subagents too
        stop_subagents(call.gateway.actors.supervisor, key, run_id)
    return {"ok": True, "aborted": bool(run_ids), "runIds": run_ids}


async def chat_inject(call: Call, params: ChatInjectParams) -> dict[str, Any]:
    label = opt(params.label)
    if label is not None and len(label) > 100:
        raise invalid_request("invalid chat.inject params: label must be at most 100 characters")
    key = key_of(call, params.sessionKey, opt(params.agentId))
    actor = await session_actor(call, key)
    message = AssistantMessage(
        content=[TextContent(params.message)], timestamp=now_ms(), stopReason="stop"
    )
    entries = await actor.append_messages([message])
    message_id = entries[0].id
    payload = {
        "runId": f"inject-{message_id}",
        "sessionKey": key,
        "seq": 0,
        "state": "final",
        "message": {
            "role": "assistant",
            "content": [{"type": "text", "text": params.message}],
            "timestamp": message.timestamp,
        },
    }
    hub = call.gateway.actors.hub
    targets = set(hub.session_watchers(key)) | {
        c
        for c in call.gateway.process.connections.values()
        if c.has_scope("operator.read") and not c.scoped
    }
    hub.send_to(targets, "chat", payload)
    return {"ok": True, "messageId": message_id}


# --- sessions ------------------------------------------------------------------------------


async def sessions_get(call: Call, params: SessionsKeyParams) -> dict[str, Any]:
    key = key_of(call, params.key, params.agentId)
    actor = await session_actor(call, key)
    assert actor.row is not None
    entries = await call.gateway.actors.supervisor.store.load_entries(actor.row.sessionId)
    messages = [history_row(e.message) for e in branch_messages(entries)]
    if params.limit:
        messages = messages[-params.limit :]
    return {
        "key": key,
        "sessionId": actor.row.sessionId,
        "entry": row_payload(actor),
        "messages": messages,
    }


async def sessions_resolve(call: Call, params: SessionsResolveParamsX) -> dict[str, Any]:
    """A session by its key, id, label or (OpenClaw 2026.9.6's Control UI opening a page's
    address, `/chat/<agent>/<session>`) `reference`: `{key, slug}`, the key first, else the
    session whose key ends in a UUID and whose title makes that slug. Exactly one way of
    naming it; none found is `INVALID_REQUEST`, or `{ok: false}` with `allowMissing`."""
    sup = call.gateway.actors.supervisor
    agent_id = opt(params.agentId)
    named = [opt(params.key), opt(params.sessionId), opt(params.label), opt(params.shortId)]
    count = sum(1 for v in named if v) + (params.reference is not msgspec.UNSET)
    if count > 1:
        raise invalid_request(
            "Provide either key, sessionId, label, shortId, or reference (not multiple)"
        )
    if count == 0:
        raise invalid_request("Either key, sessionId, label, shortId, or reference is required")
    key = opt(params.key)
    if key:
        resolved = key_of(call, key, agent_id)
        return {"ok": True, "key": resolved, "agentId": _agent_of(call, resolved)}
    reference = params.reference
    if isinstance(reference, SessionReference):
        return await _resolve_reference(call, reference, params)
    rows = await sup.store.list_sessions(agent_id=agent_id)
    session_id, label, short = opt(params.sessionId), opt(params.label), opt(params.shortId)
    for row in rows:
        if (
            (session_id and row.sessionId == session_id)
            or (label and row.label == label)
            or (short and row.sessionId.lower().startswith(short.lower()))
        ):
            return {"ok": True, "key": row.key, "agentId": _agent_of(call, row.key)}
    return _not_found(params, "no session matches")


async def _resolve_reference(
    call: Call, reference: SessionReference, params: SessionsResolveParamsX
) -> dict[str, Any]:
    store = call.gateway.actors.supervisor.store
    agent_id = opt(params.agentId)
    key = key_of(call, reference.key, agent_id)
    row = await store.get_session(key)
    if row is not None:
        return _found(call, row)
    slug = opt(reference.slug)
    if slug:
        rows = await store.list_sessions(agent_id=agent_id)
        matches = [
            r
            for r in rows
            if _UUID_SUFFIX.search(r.key.split(":", 2)[-1]) and session_slug(_title(r)) == slug
        ][:10]
        if len(matches) == 1:
            return _found(call, matches[0])
        if matches:  # more than one: the UI asks which
            return {"ok": False, "candidates": [_found(call, r, ok=False) for r in matches]}
    return _not_found(params, f"No session found: {reference.key}")


_UUID_SUFFIX: Final = re.compile(
    r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$", re.IGNORECASE
)
_SLUG_MAX: Final = 48


def session_slug(title: str | None) -> str:
    """The slug OpenClaw's Control UI puts in a session's address: the title lowercased,
    runs of other characters made `-`, up to its last word with a letter past `f` (so that a
    hex id is no slug), at most 48 characters."""
    text = re.sub(r"[^a-z0-9]+", "-", (title or "").lower()).strip("-")
    m = re.match(r"^.*[g-z][a-z0-9]*", text)
    return (m.group(0) if m else "")[:_SLUG_MAX].rstrip("-")


def _title(row: SessionRow) -> str | None:
    """A session's title as the Control UI shows it: its label, else its display name."""
    return row.label or row.displayName


def _found(call: Call, row: SessionRow, *, ok: bool = True) -> dict[str, Any]:
    found: dict[str, Any] = {"ok": True} if ok else {}
    found.update(key=row.key, agentId=_agent_of(call, row.key))
    title = _title(row)
    if title:
        found["displayName"] = title
    return found


def _not_found(params: SessionsResolveParamsX, message: str) -> dict[str, Any]:
    if opt(params.allowMissing):
        return {"ok": False}
    raise invalid_request(message)


def _agent_of(call: Call, key: str) -> str:
    """The agent a session key names (`agent:<id>:...`), else the default agent."""
    if key.startswith("agent:"):
        return key.split(":")[1]
    return call.gateway.actors.supervisor.generation.default_agent


_PATCH_FIELDS: Final = (
    "label",
    "category",
    "thinkingLevel",
    "verboseLevel",
    "reasoningLevel",
    "sendPolicy",
    "responseUsage",
)
_LEVELS: Final = {
    "responseUsage": (normalize_usage_mode, '"off"|"tokens"|"full"|"on"'),
    "thinkingLevel": (normalize_think_level, "|".join(THINK_LEVELS)),
    "verboseLevel": (normalize_verbose_level, "|".join(f'"{v}"' for v in VERBOSE_LEVELS)),
    "reasoningLevel": (normalize_reasoning_level, "|".join(f'"{v}"' for v in REASONING_MODES)),
}


def _patch_level(name: str, value: Any) -> Any:
    """A level field's value as OpenClaw stores it (`"think-harder"` is `medium`; None
    clears it); anything else is INVALID_REQUEST naming the field, as OpenClaw's is."""
    if name not in _LEVELS or value is None:
        return value
    normalize, choices = _LEVELS[name]
    level = normalize(value)
    if level is None:
        raise invalid_request(f"invalid sessions.patch params: invalid {name} (use {choices})")
    return level


async def _free_label(call: Call, actor: SessionActor, raw: str) -> str:
    """`raw` trimmed, if no other session of the agent has it (OpenClaw's rule: a label
    names one session, which `sessions.resolve {label}` finds). A checkpoint."""
    label = raw.strip()
    if not label:
        raise invalid_request("invalid sessions.patch params: invalid label: empty")
    rows = await call.gateway.actors.supervisor.store.list_sessions(agent_id=actor.agent_id)
    if any(row.label == label and row.key != actor.key for row in rows):
        raise invalid_request(f"invalid sessions.patch params: label already in use: {label}")
    return label


async def _file_under(call: Call, raw: str) -> str:
    """The session group `raw` names (trimmed), added to the groups when new, as OpenClaw's
    `sessions.patch {category}` adds it. A checkpoint."""
    category = raw.strip()
    if not category:
        raise invalid_request("invalid sessions.patch params: invalid category: empty")
    if await groups_of(call).register(category):
        call.gateway.actors.hub.sessions_changed({"reason": "groups", "ts": now_ms()})
    return category


async def sessions_patch(call: Call, params: SessionsPatchParamsX) -> dict[str, Any]:
    sup = call.gateway.actors.supervisor
    key = key_of(call, params.key, opt(params.agentId))
    actor = await session_actor(call, key)
    assert actor.row is not None
    changes: dict[str, Any] = {}
    for name in _PATCH_FIELDS:
        value = getattr(params, name)
        if not isinstance(value, msgspec.UnsetType):
            changes[name] = _patch_level(name, value)
    if changes.get("label") is not None:
        changes["label"] = await _free_label(call, actor, changes["label"])
    if changes.get("category") is not None:
        changes["category"] = await _file_under(call, changes["category"])
    if not isinstance(params.model, msgspec.UnsetType):
        if params.model is None:
            changes["modelOverride"] = None
            changes["providerOverride"] = None
        else:
            try:
                resolved = sup.generation.resolve(params.model)
            except GenerationError as exc:
                raise invalid_request(str(exc)) from exc
            changes["modelOverride"] = resolved.model_id
            changes["providerOverride"] = resolved.provider_id
    if not isinstance(params.queueMode, msgspec.UnsetType):
        mode: QueueMode | None = normalize_mode(params.queueMode) if params.queueMode else None
        if params.queueMode is not None and mode is None:
            raise invalid_request(
                f"invalid sessions.patch params: unknown queueMode {params.queueMode!r}"
            )
        changes["queueMode"] = mode
    if not isinstance(params.queueDrop, msgspec.UnsetType):
        drop = normalize_drop(params.queueDrop) if params.queueDrop else None
        if params.queueDrop is not None and drop is None:
            raise invalid_request(
                f"invalid sessions.patch params: unknown queueDrop {params.queueDrop!r}"
            )
        changes["queueDrop"] = drop
    for name in ("queueDebounceMs", "queueCap"):
        value = getattr(params, name)
        if not isinstance(value, msgspec.UnsetType):
            if value is not None and value < (1 if name == "queueCap" else 0):
                raise invalid_request(f"invalid sessions.patch params: {name} is out of range")
            changes[name] = value
    if not opt(params.keepUpdatedAt):
        changes["updatedAt"] = now_ms()
    await actor.save_row(**changes)
    changed(call, key, "patch", actor)
    gen = sup.generation
    spec = gen.agent(actor.agent_id)
    ref = actor._model_override() or spec.primary
    provider, _, model = gen.aliases.get(ref, ref).partition("/")
    return {
        "ok": True,
        "path": str(call.gateway.actors.supervisor.store.path),
        "key": key,
        "entry": row_payload(actor),
        "resolved": {"modelProvider": provider, "model": model},
    }


async def _stop_everything(actor: SessionActor, reason: Any, sup: Supervisor) -> None:
    stop_subagents(sup, actor.key)  # as OpenClaw's reset: the session's subagent tree too
    for run_id in actor.abort(None, reason):
        record = actor.services.registry.get(run_id)
        if record is not None:
            await record.done.wait()
    await trio.lowlevel.checkpoint()


async def sessions_reset(call: Call, params: SessionsResetParams) -> dict[str, Any]:
    key = key_of(call, params.key, opt(params.agentId))
    actor = await session_actor(call, key)
    with trio.fail_after(30):
        await _stop_everything(actor, "reset", call.gateway.actors.supervisor)
    await actor.reset_and_announce(opt(params.reason) or "reset")
    call.gateway.actors.cards.reset(key)  # the previous task's progress card, as OpenClaw's reset
    changed(call, key, "reset", actor)
    return {"ok": True, "key": key, "entry": row_payload(actor)}


async def sessions_delete(call: Call, params: SessionsDeleteParams) -> dict[str, Any]:
    sup = call.gateway.actors.supervisor
    key = key_of(call, params.key, opt(params.agentId))
    agent = key.split(":")[1] if key.startswith("agent:") else sup.generation.default_agent
    if key in (f"agent:{agent}:{DEFAULT_MAIN_KEY}", "global"):
        raise invalid_request(f"cannot delete the main session ({key})")
    actor = sup.peek_session(key)
    if isinstance(params, SessionsDeleteParamsX) and opt(params.ifIdle):
        running = any(r.session_key == key for r in call.gateway.actors.registry.active())
        if running or (actor is not None and actor.busy):
            return {"ok": True, "key": key, "deleted": False, "archived": []}
    if actor is not None:
        with trio.fail_after(30):
            await _stop_everything(actor, "deleted", sup)
    delete_transcript = opt(params.deleteTranscript)
    deleted = await sup.forget_session(key, delete_transcript=delete_transcript is not False)
    call.gateway.actors.cards.forget(key)
    changed(call, key, "delete")
    # `archived`: the transcripts kept aside (none: a deleted transcript is deleted).
    return {"ok": True, "key": key, "deleted": deleted, "archived": []}


async def sessions_abort(call: Call, params: SessionsAbortParams) -> dict[str, Any]:
    raw_key, run_id = opt(params.key), opt(params.runId)
    if raw_key is None and run_id is None:
        raise invalid_request("invalid sessions.abort params: key or runId is required")
    if raw_key is None:
        assert run_id is not None
        record = call.gateway.actors.registry.get(run_id)
        if record is None:
            return {"ok": True, "aborted": False, "runIds": []}
        raw_key = record.session_key
    key = key_of(call, raw_key, opt(params.agentId))
    actor = await session_actor(call, key)
    run_ids = actor.abort(run_id, "rpc")
    # OpenClaw's: the run's subagents, or (no runId) the session's whole subagent tree
    stop_subagents(call.gateway.actors.supervisor, key, run_id)
    return {"ok": True, "aborted": bool(run_ids), "runIds": run_ids}


async def _send_to_session(call: Call, params: SessionsSendParams, mode: str) -> dict[str, Any]:
    if not params.message.strip() and not opt(params.attachments):
        method = "sessions.steer" if mode == "steer" else "sessions.send"
        raise invalid_request(f"invalid {method} params: message or attachment required")
    key = key_of(call, params.key, opt(params.agentId))
    return await submit_message(
        call,
        key=key,
        message=params.message,
        run_id=opt(params.idempotencyKey) or str(uuid.uuid4()),
        timeout_ms=opt(params.timeoutMs),
        mode=mode,
    )


async def sessions_send(call: Call, params: SessionsSendParams) -> dict[str, Any]:
    """A message as its own turn after the current run (`followup`)."""
    return await _send_to_session(call, params, "followup")


async def sessions_steer(call: Call, params: SessionsSendParams) -> dict[str, Any]:
    """A message steered into the active run (a follow-up when none can take it)."""
    return await _send_to_session(call, params, "steer")


async def sessions_subscribe(call: Call, params: EmptyParams) -> dict[str, Any]:
    call.gateway.actors.hub.subscribe_changes(call.conn)
    await trio.lowlevel.checkpoint()
    return {"subscribed": True}


async def sessions_unsubscribe(call: Call, params: EmptyParams) -> dict[str, Any]:
    removed = call.gateway.actors.hub.unsubscribe_changes(call.conn)
    await trio.lowlevel.checkpoint()
    return {"subscribed": False, "removed": removed}


async def messages_subscribe(call: Call, params: SessionsMessagesSubscribeParams) -> dict[str, Any]:
    key = key_of(call, params.key, opt(params.agentId))
    call.gateway.actors.hub.watch_session(call.conn, key)
    await trio.lowlevel.checkpoint()
    return {"subscribed": True, "key": key}


async def messages_unsubscribe(
    call: Call, params: SessionsMessagesUnsubscribeParams
) -> dict[str, Any]:
    key = key_of(call, params.key, opt(params.agentId))
    call.gateway.actors.hub.unwatch_session(call.conn, key)
    await trio.lowlevel.checkpoint()
    return {"subscribed": False, "key": key}


async def sessions_compact(call: Call, params: SessionsCompactParams) -> dict[str, Any]:
    key = key_of(call, params.key, opt(params.agentId))
    actor = await session_actor(call, key)
    max_lines = opt(params.maxLines)
    try:
        result = await actor.compact(max_kept_messages=max_lines)
    except SessionBusy as exc:
        raise GatewayError(UNAVAILABLE, str(exc), retryable=True, retry_after_ms=1000) from exc
    except GenerationError as exc:
        raise invalid_request(str(exc)) from exc
    except ProviderError as exc:
        raise GatewayError(UNAVAILABLE, f"compaction failed: {exc.message}") from exc
    changed(call, key, "compact", actor)
    return {"ok": True, "key": key, **result}


async def sessions_system_prompt(call: Call, params: SessionsKeyParams) -> dict[str, Any]:
    """clawlane: the system prompt report (sections and token estimates) a run of this
    session would get now (admins only)."""
    sup = call.gateway.actors.supervisor
    key = key_of(call, params.key, params.agentId)
    actor = await session_actor(call, key)
    assert actor.row is not None
    gen = sup.generation
    agent = gen.agent(actor.agent_id)
    try:
        model = gen.resolve(actor._model_override() or agent.primary, agent_id=agent.id)
    except GenerationError as exc:
        raise invalid_request(str(exc)) from exc
    settings = sup.turn_settings()
    workspace = await sup.workspace_for(agent.id, agent.workspace)
    report = await system_prompt_report(
        session_key=key,
        session_id=actor.row.sessionId,
        agent_id=agent.id,
        base=BASE_SYSTEM_PROMPT,
        budget=context_budget(model.definition.contextWindow, settings["compaction"]),
        workspace_dir=str(workspace),
        resource_roots=settings["resource_roots"],
        cache=sup.prompt_cache,
        internal_hooks=sup.internal_hooks,
        provider=model.provider_id,
        model=model.model_id,
    )
    data = msgspec.to_builtins(report)
    assert isinstance(data, dict)
    return {"key": key, "report": data}


async def runs_replay(call: Call, params: RunsReplayParams) -> dict[str, Any]:
    """Replay a run's `agent` events after `afterSeq` to this connection, then keep it
    subscribed to the rest of the run. `gap: true` means the buffer no longer reaches back:
    reload history (`chat.history`) instead."""
    hub = call.gateway.actors.hub
    full = call.conn.wants_tool_events
    replay = hub.replay(params.runId, params.afterSeq, full=full)
    record = call.gateway.actors.registry.get(params.runId)
    if replay is None and record is not None and record.restored and record.ended:
        replay_terminal(hub, record)  # a run of the previous process: its terminal event
        replay = hub.replay(params.runId, params.afterSeq, full=full)
    if replay is None:
        raise GatewayError(
            "AGENT_RESULT_NOT_FOUND", f"unknown run {params.runId} (nothing to replay)"
        )
    # Same trio tick: frames are queued, then live events follow; nothing is lost or doubled.
    for frame in replay.frames:
        call.conn.push_event(frame)
    if not replay.ended:
        hub.add_owner(params.runId, call.conn)
    await trio.lowlevel.checkpoint()
    return {
        "runId": params.runId,
        "replayed": len(replay.frames),
        "gap": replay.gap,
        "lastSeq": replay.last_seq,
        "ended": replay.ended,
    }
