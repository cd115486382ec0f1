"""One agent turn with its plugin hooks around it: what happens between a message arriving
and the attempt loop's last model turn.

Order (OpenClaw's): `message_received` (observe) → `before_model_resolve` and the legacy
`before_agent_start` (model/provider overrides; the first defined wins) → the model is
resolved from the run's generation → `before_prompt_build` (+ legacy) shapes the system prompt
and the user prompt → `before_agent_reply` may claim the turn (a synthetic reply or silence,
no model call) → the attempt loop (`llm_input`/`llm_output` inside) → `agent_end` (observe),
also on failure. Cancellation skips `agent_end`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import attrs

from ._agent import AgentRunInput, Emit, NoTools, RunProgress, ToolRunner, now_ms, run_agent
from ._generation import ModelRuntimeGeneration, ResolvedModel, RunStores
from ._hooks import (
    AgentEndEvent,
    AgentHookContext,
    BeforeAgentReplyEvent,
    BeforeAgentStartEvent,
    BeforeModelResolveEvent,
    BeforePromptBuildEvent,
    HookRegistry,
    MessageReceivedEvent,
)
from .llm._types import Message, UserMessage

BASE_SYSTEM_PROMPT = (
    "You are a helpful assistant running inside clawlane, an OpenClaw-compatible gateway."
)


@attrs.frozen
class TurnSpec:
    run_id: str
    session_key: str
    session_id: str
    agent_id: str
    message: str
    history: Sequence[Message]
    generation: ModelRuntimeGeneration
    stores: RunStores
    model_ref: str
    system_prompt: str = BASE_SYSTEM_PROMPT
    extra_system_prompt: str | None = None
    workspace_dir: str | None = None
    tools: ToolRunner = attrs.field(factory=NoTools)
    hooks: HookRegistry | None = None
    idle_timeout: float | None = None
    channel: str = "webchat"


@attrs.define
class TurnResult:
    model: ResolvedModel | None = None
    user_message: UserMessage | None = None
    claimed_by: str | None = None


def _join(*parts: str | None) -> str:
    return "\n\n".join(p for p in parts if p)


async def run_turn(
    spec: TurnSpec, emit: Emit, progress: RunProgress, result: TurnResult
) -> TurnResult:
    """Run the turn; fills `result` as it goes (so a failing turn still says its model).

    Raises `ProviderError` (model failure) and `GenerationError` (model not resolvable).
    """
    hooks = spec.hooks if spec.hooks is not None and spec.hooks.has_any() else None
    ctx = AgentHookContext(
        runId=spec.run_id,
        agentId=spec.agent_id,
        sessionKey=spec.session_key,
        sessionId=spec.session_id,
        workspaceDir=spec.workspace_dir,
        messageProvider=spec.channel,
        trigger="user",
        channelId=spec.channel,
    )
    started = time.monotonic()
    prompt = spec.message
    if hooks is not None and hooks.has("message_received"):
        await hooks.fire(
            "message_received",
            MessageReceivedEvent(from_=spec.session_key, content=prompt, timestamp=now_ms()),
        )
    model_ref = spec.model_ref
    legacy = None
    if hooks is not None:
        provider_o, model_o = await hooks.run_before_model_resolve(
            BeforeModelResolveEvent(prompt=prompt), ctx
        )
        if hooks.has("before_agent_start"):
            legacy = await hooks.run_before_agent_start(
                BeforeAgentStartEvent(prompt=prompt, messages=list(spec.history)), ctx
            )
            provider_o = provider_o if provider_o is not None else legacy.provider_override
            model_o = model_o if model_o is not None else legacy.model_override
        if model_o or provider_o:
            current_provider, _, current_model = spec.generation.aliases.get(
                model_ref, model_ref
            ).partition("/")
            model_ref = f"{provider_o or current_provider}/{model_o or current_model}"
            if model_o and "/" in model_o:
                model_ref = model_o
    model = spec.generation.resolve(model_ref)
    result.model = model

    system_prompt = spec.system_prompt
    prepend_context = append_context = None
    prepend_system = append_system = None
    if hooks is not None:
        built = await hooks.run_before_prompt_build(
            BeforePromptBuildEvent(prompt=prompt, messages=list(spec.history)), ctx
        )
        if built.system_prompt is not None:
            system_prompt = built.system_prompt
        elif legacy is not None and legacy.system_prompt is not None:
            system_prompt = legacy.system_prompt
        prepend_context = _join(built.prepend_context, legacy.prepend_context if legacy else None)
        append_context = _join(built.append_context, legacy.append_context if legacy else None)
        prepend_system = _join(
            built.prepend_system_context, legacy.prepend_system_context if legacy else None
        )
        append_system = _join(
            built.append_system_context, legacy.append_system_context if legacy else None
        )
    system_prompt = _join(prepend_system, system_prompt, spec.extra_system_prompt, append_system)
    user_text = _join(prepend_context, prompt, append_context)
    user = UserMessage(content=user_text, timestamp=now_ms())
    result.user_message = user

    success = False
    error: str | None = None
    try:
        if hooks is not None and hooks.has("before_agent_reply"):
            claim = await hooks.run_before_agent_reply(
                BeforeAgentReplyEvent(cleanedBody=prompt), ctx
            )
            if claim is not None:
                result.claimed_by = claim.plugin_id
                text = _claim_text(claim.reply)
                if text:
                    progress.text = text
                    emit("assistant", {"text": text, "delta": text})
                success = True
                return result
        inp = AgentRunInput(
            run_id=spec.run_id,
            provider=spec.stores.providers[model.provider_id],
            provider_id=model.provider_id,
            model_id=model.model_id,
            api=model.api,
            system_prompt=system_prompt,
            history=list(spec.history),
            user_message=user,
            params=dict(model.params),
            tools=spec.tools,
            idle_timeout=spec.idle_timeout,
            session_id=spec.session_id,
            hooks=hooks,
        )
        await run_agent(inp, emit, progress)
        success = True
        return result
    except Exception as exc:
        error = str(exc)
        raise
    finally:
        if hooks is not None and hooks.has("agent_end") and (success or error is not None):
            await hooks.fire(
                "agent_end",
                AgentEndEvent(
                    messages=list(progress.messages),
                    success=success,
                    error=error,
                    durationMs=(time.monotonic() - started) * 1000,
                ),
                ctx,
            )


def _claim_text(reply: Any) -> str:
    if isinstance(reply, dict):
        text = reply.get("text")
        return text if isinstance(text, str) else ""
    if isinstance(reply, str):
        return reply
    return ""
