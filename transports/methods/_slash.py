"""Slash commands sent through `chat.send`, carried out as OpenClaw does.

`/new` and `/reset` start the session afresh and run the rest of the message as `agent` does;
a bare one runs the greeting prompt after today's and yesterday's daily notes (`_memory`).
`/stop` aborts (the stop-phrase path of `chat.send`). `/approve <id> <decision>` resolves a
pending exec (else plugin) approval, as an operator holding `operator.approvals` would with
`exec.approval.resolve`. Every other command answers at once
without the model: the ack is `{runId, status:"started"}`, the user's line and the reply are
written to the transcript (the line with the client's idempotency key `<runId>:user`, the
reply with the run id), and one `chat` event `final` carries the reply (OpenClaw's
`provider:"openclaw"`, `model:"gateway-injected"`), followed by the `session.message` events
for both rows. A bad argument is answered the same way, with the
reason (the session is not changed); a repeated idempotency key answers from the cache.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Final

import msgspec
import trio

from actors import (
    CachedResponse,
    PluginApprovals,
    SessionBusy,
    normalize_drop,
    normalize_mode,
)
from runtime.agent import (
    QUEUE_MODES,
    MessageTags,
    SlashCommand,
    commands_text,
    format_tokens,
    help_text,
    normalize_reasoning_level,
    normalize_verbose_level,
    parse_duration_ms,
)
from runtime.llm import AssistantMessage, ProviderError, TextContent, UserMessage
from runtime.loop import ApprovalDecision, now_ms
from runtime.model import GenerationError
from runtime.protocol import ChatSendParams, GatewayError
from runtime.usage import RESET_WORDS, effective_usage_mode, next_usage_mode, normalize_usage_mode

from ._context import Call
from ._exec_approvals import exec_desk, resolve_in
from ._memory import bare_reset_message
from ._submit import changed, session_actor, submit_message
from ._usage import usage_cost_text
from ._views import model_ref, session_view, thinking_levels

if TYPE_CHECKING:
    from actors import SessionActor


async def run_slash_command(
    call: Call, params: ChatSendParams, key: str, command: SlashCommand, args: str
) -> dict[str, Any]:
    """Carry out `command` for `chat.send` on session `key`. A checkpoint."""
    run_id = params.idempotencyKey
    if command.name in ("new", "reset"):
        return await submit_message(
            call,
            key=key,
            message=args or await bare_reset_message(call, key),
            run_id=run_id,
            timeout_ms=None,
            mode=None,
            reset=command.name,
        )
    reg = call.gateway.actors.registry
    dedupe_key = f"chat:{run_id}"
    if reg.dedupe.get(dedupe_key) is not None:
        await trio.lowlevel.checkpoint()
        return {"runId": run_id, "status": "ok"}
    placeholder = CachedResponse.placeholder()
    reg.dedupe.put(dedupe_key, placeholder)
    try:
        actor = await session_actor(call, key)
        handler = _HANDLERS[command.name]
        reply = await handler(call, actor, args)
        await _answer(call, actor, run_id, params.message, reply)
    except BaseException:
        reg.dedupe.discard(dedupe_key)
        placeholder.abandon(None)
        raise
    placeholder.settle({"runId": run_id, "status": "ok"})
    return {"runId": run_id, "status": "started"}


async def _answer(call: Call, actor: SessionActor, run_id: str, line: str, reply: str) -> None:
    t = now_ms()
    answer = AssistantMessage(
        content=[TextContent(reply)],
        timestamp=t,
        api="openai-responses",
        provider="openclaw",
        model="gateway-injected",
        stopReason="stop",
    )
    await actor.append_messages(
        [UserMessage(content=line, timestamp=t), answer],
        [
            MessageTags(idempotency_key=f"{run_id}:user", run_id=run_id),
            MessageTags(idempotency_key=run_id, run_id=run_id),
        ],
    )
    hub = call.gateway.actors.hub
    assert actor.row is not None
    hub.open_run(
        run_id, actor.key, owner=call.conn, session_id=actor.row.sessionId, agent_id=actor.agent_id
    )
    message = msgspec.to_builtins(answer)
    message["idempotencyKey"] = run_id
    hub.emit_chat(run_id, "final", message=message, stopReason="stop")
    hub.close_run(run_id)


async def _patch(call: Call, actor: SessionActor, **changes: Any) -> None:
    await actor.save_row(updatedAt=now_ms(), **changes)
    changed(call, actor.key, "patch", actor)


# --- the commands --------------------------------------------------------------------------


async def _help(call: Call, actor: SessionActor, args: str) -> str:
    await trio.lowlevel.checkpoint()
    return help_text()


async def _commands(call: Call, actor: SessionActor, args: str) -> str:
    await trio.lowlevel.checkpoint()
    return commands_text()


async def _status(call: Call, actor: SessionActor, args: str) -> str:
    gw = call.gateway
    assert actor.row is not None
    view = session_view(gw, actor.row)
    settings = actor.queue_settings()
    uptime_s = int(time_since(gw.process.started))
    used, window = int(view.get("totalTokens") or 0), int(view.get("contextTokens") or 0)
    pct = f" ({used * 100 // window}%)" if window else ""
    await trio.lowlevel.checkpoint()
    return "\n".join(
        [
            f"🦞 clawlane {gw.process.version}",
            f"⏱️ Uptime: gateway {_duration(uptime_s)}",
            "",
            f"🧠 Model: {view['modelProvider']}/{view['model']}",
            f"📚 Context: {format_tokens(used)}/{format_tokens(window)}{pct}",
            f"🧮 Tokens: {actor.row.inputTokens} in / {actor.row.outputTokens} out",
            "",
            f"🧵 Session: {actor.key} ({actor.row.sessionId})",
            f"🎛️ Modes: think {actor.row.thinkingLevel or 'off'} · verbose "
            f"{actor.row.verboseLevel or 'off'} · reasoning {actor.row.reasoningLevel or 'off'}",
            f"🪢 Queue: {settings.mode} (debounce {settings.debounce_ms}ms · cap {settings.cap} · "
            f"drop {settings.drop})",
            f"🏃 Runs: {'active' if view['hasActiveRun'] else 'idle'}",
        ]
    )


def time_since(started: float) -> float:
    return max(0.0, time.time() - started)


def _duration(seconds: int) -> str:
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}h {m}m {s}s" if h else (f"{m}m {s}s" if m else f"{s}s")


async def _name(call: Call, actor: SessionActor, args: str) -> str:
    if not args:
        await trio.lowlevel.checkpoint()
        return f"Session name: {actor.row.label if actor.row and actor.row.label else '(none)'}"
    if len(args) > 512:
        await trio.lowlevel.checkpoint()
        return "A session name is at most 512 characters."
    await _patch(call, actor, label=args)
    return f"⚙️ Session name set to {args}."


async def _compact(call: Call, actor: SessionActor, args: str) -> str:
    try:
        result = await actor.compact(max_kept_messages=None, instructions=args or None)
    except SessionBusy:
        return "The session has a run in progress; /compact when it ends."
    except (GenerationError, ProviderError) as exc:
        return f"Compaction failed: {getattr(exc, 'message', None) or exc}"
    if not result.get("compacted"):
        return "Nothing to compact yet."
    return (
        f"⚙️ Compacted: {format_tokens(result['tokensBefore'])} → "
        f"{format_tokens(result['tokensAfter'])} tokens."
    )


async def _think(call: Call, actor: SessionActor, args: str) -> str:
    gen = call.gateway.actors.supervisor.generation
    ref = model_ref(gen, actor.agent_id, actor.row)
    entry = next((e for e in gen.catalog if f"{e.provider}/{e.id}" == ref), None)
    levels = [t["id"] for t in thinking_levels(bool(entry and entry.reasoning))]
    level = args.lower()
    if not level:
        await trio.lowlevel.checkpoint()
        current = actor.row.thinkingLevel if actor.row else None
        return f"Thinking level: {current or 'off'}. Options: {', '.join(levels)}."
    if level == "default":
        await _patch(call, actor, thinkingLevel=None)
        return "⚙️ Thinking level reset to default."
    if level not in levels:
        await trio.lowlevel.checkpoint()
        return (
            f'Thinking level "{args}" is not supported for {ref}. Use one of: {", ".join(levels)}.'
        )
    await _patch(call, actor, thinkingLevel=level)
    return f"⚙️ Thinking level set to {level}."


async def _verbose(call: Call, actor: SessionActor, args: str) -> str:
    if args.strip():
        mode = normalize_verbose_level(args)
    else:  # a toggle
        current = actor.row.verboseLevel if actor.row else None
        mode = "off" if current in ("on", "full") else "on"
    if mode is None:
        await trio.lowlevel.checkpoint()
        return "Usage: /verbose on|off|full"
    await _patch(call, actor, verboseLevel=mode)
    return {
        "on": "⚙️ Verbose logging enabled.",
        "full": "⚙️ Verbose logging set to full.",
        "off": "⚙️ Verbose logging disabled.",
    }[mode]


async def _reasoning(call: Call, actor: SessionActor, args: str) -> str:
    mode = normalize_reasoning_level(args)
    if mode is None:
        await trio.lowlevel.checkpoint()
        current = actor.row.reasoningLevel if actor.row else None
        return f"Reasoning visibility: {current or 'off'}. Usage: /reasoning on|off|stream"
    await _patch(call, actor, reasoningLevel=mode)
    return f"⚙️ Reasoning visibility set to {mode}."


async def _model(call: Call, actor: SessionActor, args: str) -> str:
    gen = call.gateway.actors.supervisor.generation
    current = model_ref(gen, actor.agent_id, actor.row)
    if not args:
        await trio.lowlevel.checkpoint()
        return f"Current model: {current}. /models lists the others."
    if args.lower() in ("default", "reset"):
        await _patch(call, actor, modelOverride=None, providerOverride=None)
        return (
            f"Session model reset to configured default ({model_ref(gen, actor.agent_id, None)})."
        )
    try:
        resolved = gen.resolve(args, agent_id=actor.agent_id)
    except GenerationError as exc:
        await trio.lowlevel.checkpoint()
        return f"Unknown model {args!r}: {exc}"
    ref = f"{resolved.provider_id}/{resolved.model_id}"
    if ref == model_ref(gen, actor.agent_id, None):
        await _patch(call, actor, modelOverride=None, providerOverride=None)
        return f"Session model reset to configured default ({ref})."
    await _patch(
        call, actor, modelOverride=resolved.model_id, providerOverride=resolved.provider_id
    )
    return f"⚙️ Model set to {ref}."


async def _models(call: Call, actor: SessionActor, args: str) -> str:
    gen = call.gateway.actors.supervisor.generation
    current = model_ref(gen, actor.agent_id, actor.row)
    lines = ["🧠 Models", ""]
    for e in gen.catalog_for(actor.agent_id):
        ref = f"{e.provider}/{e.id}"
        marks = (" (current)" if ref == current else "") + ("" if e.available else " (no auth)")
        lines.append(f"  {ref}{marks}")
    await trio.lowlevel.checkpoint()
    return "\n".join(lines)


async def _queue(call: Call, actor: SessionActor, args: str) -> str:
    if not args:
        s = actor.queue_settings()
        await trio.lowlevel.checkpoint()
        return (
            f"🪢 Queue: {s.mode} (debounce {s.debounce_ms}ms · cap {s.cap} · drop {s.drop}). "
            f"Modes: {', '.join(QUEUE_MODES)}."
        )
    changes: dict[str, Any] = {}
    said: list[str] = []
    for token in args.split():
        name, sep, value = token.partition(":")
        lowered = token.lower()
        if lowered in ("reset", "default"):
            changes.update(queueMode=None, queueDebounceMs=None, queueCap=None, queueDrop=None)
            said.append("reset to defaults")
        elif not sep and normalize_mode(lowered):
            changes["queueMode"] = normalize_mode(lowered)
            said.append(f"mode set to {changes['queueMode']}")
        elif sep and name.lower() == "debounce" and parse_duration_ms(value) is not None:
            changes["queueDebounceMs"] = parse_duration_ms(value)
            said.append(f"debounce {changes['queueDebounceMs']}ms")
        elif sep and name.lower() == "cap" and value.isdigit() and int(value) >= 1:
            changes["queueCap"] = int(value)
            said.append(f"cap {value}")
        elif sep and name.lower() == "drop" and normalize_drop(value.lower()):
            changes["queueDrop"] = normalize_drop(value.lower())
            said.append(f"drop {changes['queueDrop']}")
        else:
            await trio.lowlevel.checkpoint()
            return (
                f"Unknown queue option {token!r}. Usage: /queue steer|followup|collect|interrupt "
                "[debounce:500ms] [cap:20] [drop:old|new|summarize]"
            )
    await _patch(call, actor, **changes)
    return "⚙️ Queue " + ", ".join(said) + "."


async def _usage(call: Call, actor: SessionActor, args: str) -> str:
    """The footer's mode (`off|tokens|full`, a reset word, none: the next one), or the cost."""
    assert actor.row is not None
    word = args.strip().lower()
    if word.startswith("cost"):
        return await usage_cost_text(call, actor.agent_id, actor.key, actor.row.sessionId)
    requested = normalize_usage_mode(word) if word else None
    if word in RESET_WORDS:
        await _patch(call, actor, responseUsage=None)
        return "⚙️ Usage footer: reset to default."
    if word and requested is None:
        await trio.lowlevel.checkpoint()
        return "⚙️ Usage: /usage off|tokens|full|reset|cost"
    configured = call.gateway.actors.supervisor.generation.config.messages.responseUsage
    current = effective_usage_mode(actor.row.responseUsage, configured, actor.row.channel)
    mode = requested or next_usage_mode(current)
    await _patch(call, actor, responseUsage=mode)
    return f"⚙️ Usage footer: {mode}."


_DECISION_WORDS: Final[dict[str, ApprovalDecision]] = {
    **dict.fromkeys(("allow", "once", "allow-once", "allowonce"), "allow-once"),
    **dict.fromkeys(("always", "allow-always", "allowalways"), "allow-always"),
    **dict.fromkeys(("deny", "reject", "block"), "deny"),
}
_APPROVE_USAGE: Final = (
    "Usage: /approve <id> <decision> (see the pending approval message for available decisions)"
)


async def _approve(call: Call, actor: SessionActor, args: str) -> str:
    """`/approve <id> allow-once|allow-always|deny` (or the decision first), as OpenClaw's:
    the exec approval with that id, else the plugin one; the caller needs
    `operator.approvals`."""
    await trio.lowlevel.checkpoint()
    words = args.split()
    if len(words) < 2:
        return _APPROVE_USAGE
    if words[0].lower() in _DECISION_WORDS:
        decision, approval_id = _DECISION_WORDS[words[0].lower()], " ".join(words[1:])
    elif words[1].lower() in _DECISION_WORDS:
        decision, approval_id = _DECISION_WORDS[words[1].lower()], words[0]
    else:
        return _APPROVE_USAGE
    if not call.conn.has_scope("operator.approvals"):
        return "❌ /approve requires operator.approvals for gateway clients."
    registries = (exec_desk(call.gateway), call.gateway.actors.approvals)
    for n, registry in enumerate(registries):
        try:
            resolve_in(call, registry, approval_id, decision)
        except GatewayError as exc:
            not_found = (exc.details or {}).get("reason") == "APPROVAL_NOT_FOUND"
            if not_found and n + 1 < len(registries):
                continue
            if not_found and _elsewhere(call, registries, approval_id, decision):
                break  # pending on another node of the cluster: sent there
            return f"❌ Failed to submit approval: {exc.message}"
        break
    return f"✅ Approval {decision} submitted for {approval_id}."


def _elsewhere(
    call: Call,
    registries: tuple[PluginApprovals, ...],
    approval_id: str,
    decision: ApprovalDecision,
) -> bool:
    """Send the decision to the cluster node the approval is pending on, if one is."""
    resolved_by = getattr(call.conn, "client_id", None) or None
    for registry in registries:
        peers = registry.peers
        if peers is not None and peers.resolve_elsewhere(
            registry.KIND, approval_id, decision, resolved_by
        ):
            return True
    return False


_HANDLERS = {
    "approve": _approve,
    "help": _help,
    "commands": _commands,
    "status": _status,
    "name": _name,
    "compact": _compact,
    "think": _think,
    "verbose": _verbose,
    "reasoning": _reasoning,
    "model": _model,
    "models": _models,
    "queue": _queue,
    "usage": _usage,
}
