"""What a run's turn needs besides its session: one `TurnServices` per host.

The gateway's supervisor and the embedded runtime each own one, so a turn runs the same way
in both: the plugin hooks and the internal hooks, the plugins' tools, the prompt cache
(skills snapshots, bootstrap files), the block-streaming flusher, the agents' workspaces,
and the per-generation settings read from the config (compaction, block streaming, prompt
limits, the LLM idle window, the tool policy). `turn_spec` builds the `TurnSpec` of one run
from them.

All methods run in the trio thread; only `workspace_for` is a checkpoint (it may create the
workspace, in a worker thread). The block flusher needs a task (`block_flusher.run`) that
the host starts; without it block replies are still delivered at the end of each model turn.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

import attrs
import msgspec
import trio

from ..heartbeat import HeartbeatRespondTool, HeartbeatResponses, SystemEventQueue
from ..hooks._events import MessageSendingEvent, MessageSentEvent
from ..hooks._internal import InternalHooks
from ..hooks._registry import HookRegistry
from ..llm._types import Message
from ..loop._agent import SteerInbox, ToolRunner
from ..loop._approval import ApprovalGate
from ..loop._toolrunner import RunTools, ToolSet
from ..memory import MemoryService, memory_tools
from ..model._config import ToolsConfig, ToolSearchConfig, llm_idle_timeout_seconds
from ..model._generation import ModelRuntimeGeneration, RunStores
from ..model._plugins import PluginRegistry
from ..protocol import ClawlaneError
from ..sessions._sessions import MemoryFlushRecord, SessionRow
from ..tools import (
    AutomationsHost,
    CardDesk,
    ConfigReader,
    DenialStreaks,
    ExecApprover,
    ExecSettings,
    ProcessRegistry,
    QuestionDesk,
    SessionsHost,
    Tool,
    ToolPolicy,
    ToolScope,
    WebSettings,
    automations_tools,
    builtin_tools,
    ensure_workspace,
    requested_policy,
    session_tools,
    subagent_policy,
    tool_spec,
)
from ..tools._search import serves_locally, tool_search_settings
from ._blocks import BlockFlusher, BlockSink
from ._chunking import BlockStreamingSettings
from ._compaction import CompactionSettings
from ._exec_reviewer import exec_reviewer
from ._memorysettings import memory_settings
from ._prompt import PromptCache
from ._turnspec import HistoryEntries, TurnSpec
from ._websettings import web_settings

__all__ = ["MessageCancelled", "TurnServices"]

_TOOLSETS_MAX: Final = 256


class MessageCancelled(ClawlaneError):
    """A plugin's `message_sending` hook cancelled a message the `message` tool sent."""


def _scope(tools: ToolsConfig | None) -> ToolScope | None:
    """A config `tools` section as a policy scope (OpenClaw's keys)."""
    if tools is None:
        return None
    by_provider = {
        key: ToolScope(entry.profile, entry.allow, entry.alsoAllow, entry.deny)
        for key, entry in tools.byProvider.items()
    }
    return ToolScope(tools.profile, tools.allow, tools.alsoAllow, tools.deny, by_provider)


def _search_setting(setting: bool | ToolSearchConfig | None) -> bool | dict[str, Any] | None:
    """`tools.toolSearch` as plain data for `runtime.tools.tool_search_settings`."""
    if setting is None or isinstance(setting, bool):
        return setting
    return dict(msgspec.to_builtins(setting))


def _serves_locally(generation: ModelRuntimeGeneration, model_ref: str | None) -> bool:
    """Whether a run of `model_ref` gets Tool Search's local limits (`serves_locally`)."""
    provider, sep, model_id = (model_ref or "").partition("/")
    if not sep:
        return False
    entry = generation.config.models.providers.get(provider)
    return serves_locally(provider, model_id, entry.baseUrl if entry is not None else None)


SendMessage = Callable[[str, int], None]
"""Delivers a message the `message` tool sends (its text and timestamp in ms)."""


class TurnServices:
    """The shared pieces of a host's turns (see the module docstring)."""

    def __init__(self, *, workspace_root: Path, plugins: PluginRegistry | None = None) -> None:
        self.hooks = HookRegistry()
        self.internal_hooks = InternalHooks()
        self.prompt_cache = PromptCache()
        self.block_flusher = BlockFlusher()
        self.plugins = plugins if plugins is not None else PluginRegistry()
        self.workspace_root = workspace_root
        self.processes: ProcessRegistry | None = None
        """The host's background commands (the gateway's supervisor sets its registry): with
        it `exec` can yield into the background and `process` is offered; without it (the
        embedded runtime) every command runs in the foreground."""
        self.config_reader: ConfigReader | None = None
        """What the `gateway` tool reads (the gateway's config methods set it); without it
        (the embedded runtime) `gateway` is not offered."""
        self.cards: CardDesk | None = None
        """Where `progress_card` keeps the session's card: the gateway sets its cards;
        without them (the embedded runtime) `progress_card` is not offered."""
        self.questions: QuestionDesk | None = None
        """Where `ask_user` asks the operators: the gateway sets its registry of questions;
        without one (the embedded runtime) `ask_user` is not offered."""
        self.exec_approver: ExecApprover | None = None
        """The host's exec approvals and approvals document (the gateway sets its
        `actors.ExecApprovals`); without one an exec the policy asks about is settled by
        `askFallback` at once."""
        self.review_streaks = DenialStreaks()
        """Consecutive exec auto-reviewer denials per session (`mode: auto`)."""
        self.sessions: SessionsHost | None = None
        """The sessions the session tools reach (the gateway sets its host): with it
        `sessions_list`, `sessions_send`, `sessions_spawn`, ... are offered; without it (the
        embedded runtime) they are not."""
        self.automations: AutomationsHost | None = None
        """The scheduler the `automations` tool reaches (the gateway's cron scheduler sets
        its host while it runs); without it (the embedded runtime, a cluster node not running
        cron) `automations` is not offered."""
        self.system_events = SystemEventQueue()
        """Texts queued for a session's next turn (`system-event`, `wake`): the turn's
        message carries them first (`runtime.heartbeat`)."""
        self.heartbeat_responses = HeartbeatResponses()
        """What heartbeat runs' `heartbeat_respond` accepted, for the heartbeat runner."""
        self.approvals: ApprovalGate | None = None
        """Where a tool call a plugin wants approved is asked: the gateway sets its registry
        of plugin approvals; without one (the embedded runtime) such calls are refused."""
        self._workspaces: dict[str, Path] = {}
        self._making: dict[str, trio.Event] = {}
        self._toolsets: dict[
            tuple[int, int, str, str, str], tuple[tuple[Any, ...], ToolPolicy, ToolSet]
        ] = {}
        self._turn_settings: tuple[int, dict[str, Any]] | None = None
        self.memory = MemoryService(workspace_root.parent / "memory")
        """The agents' memory indexes (`<state-dir>/memory/<agentId>.sqlite` for the gateway)."""

    # --- settings from the generation -----------------------------------------------------

    @staticmethod
    def idle_timeout(generation: ModelRuntimeGeneration, *, cron: bool = False) -> float | None:
        """The LLM idle window; `cron`: a run on the cron lane (no watchdog by default)."""
        return llm_idle_timeout_seconds(generation.config.agents.defaults, cron=cron)

    def turn_settings(self, generation: ModelRuntimeGeneration) -> dict[str, Any]:
        """The per-run settings read from the config (prompt preparation, compaction, block
        streaming) and the shared caches and flushers. Built once per generation."""
        cached = self._turn_settings
        if cached is None or cached[0] != generation.number:
            cached = self._turn_settings = (generation.number, self._settings(generation))
        return cached[1]

    def _settings(self, generation: ModelRuntimeGeneration) -> dict[str, Any]:
        defaults = generation.config.agents.defaults
        raw = msgspec.to_builtins(defaults)
        settings: dict[str, Any] = {
            "compaction": CompactionSettings.from_agent_defaults(raw),
            "block_streaming": BlockStreamingSettings.from_agent_defaults(raw),
            "prompt_cache": self.prompt_cache,
            "internal_hooks": self.internal_hooks,
            "block_flusher": self.block_flusher,
            "resource_roots": tuple(defaults.resources),
        }
        if defaults.bootstrapMaxChars is not None:
            settings["bootstrap_max_chars"] = defaults.bootstrapMaxChars
        if defaults.bootstrapTotalMaxChars is not None:
            settings["bootstrap_total_max_chars"] = defaults.bootstrapTotalMaxChars
        return settings

    @staticmethod
    def tool_policy(
        generation: ModelRuntimeGeneration, agent_id: str, model_ref: str | None = None
    ) -> ToolPolicy:
        """The agent's tool policy for a run on `model_ref` (`provider/model`), as OpenClaw
        layers it (`runtime.tools.ToolPolicy.resolve`): the global `tools`, then the agent's
        own `tools` (else `agents.defaults.tools`), each with its `byProvider` entry."""
        config = generation.config
        entry = next((a for a in config.agents.entries if a.id == agent_id), None)
        agent_tools = entry.tools if entry and entry.tools else config.agents.defaults.tools
        return ToolPolicy.resolve(
            _scope(config.tools),
            _scope(agent_tools),
            agent_id=agent_id,
            model_ref=model_ref,
        )

    @staticmethod
    def exec_settings(generation: ModelRuntimeGeneration) -> ExecSettings:
        """`exec`'s settings: the config's `tools.exec.*` (global), OpenClaw's defaults."""
        raw = generation.config.tools.exec
        default = ExecSettings()
        return ExecSettings(
            timeout_s=float(raw.timeoutSeconds or default.timeout_s),
            background_ms=raw.backgroundMs or default.background_ms,
            cleanup_ms=raw.cleanupMs or default.cleanup_ms,
            notify_on_exit=raw.notifyOnExit,
            notify_on_exit_empty_success=raw.notifyOnExitEmptySuccess,
        )

    def agent_exec_settings(
        self, generation: ModelRuntimeGeneration, agent_id: str
    ) -> ExecSettings:
        """`exec_settings` with the agent's exec policy (the global `tools.exec`, then the
        agent's own `tools.exec`, else `agents.defaults.tools.exec`, key by key) and the
        host's approver."""
        config = generation.config
        entry = next((a for a in config.agents.entries if a.id == agent_id), None)
        agent_tools = entry.tools if entry and entry.tools else config.agents.defaults.tools
        policy = requested_policy(config.tools.exec, agent_tools.exec if agent_tools else None)
        reviewer = None
        if policy.auto_review:
            reviewer = exec_reviewer(generation, agent_id, self.review_streaks)
        return attrs.evolve(
            self.exec_settings(generation),
            policy=policy,
            approver=self.exec_approver,
            reviewer=reviewer,
        )

    @staticmethod
    def web_settings(generation: ModelRuntimeGeneration) -> WebSettings:
        """The web tools' settings: the config's `tools.web.*` (global only, as OpenClaw's)."""
        return web_settings(generation.config.tools.web)

    def memory_tools(self, generation: ModelRuntimeGeneration) -> list[Any]:
        """`memory_search` and `memory_get` (none with `memory.search.enabled: false`)."""
        config = generation.config
        if config.memory.search.enabled is False:
            return []
        return list(memory_tools(self.memory, lambda agent_id: memory_settings(config, agent_id)))

    # --- workspaces -----------------------------------------------------------------------

    def known_workspace(self, agent_id: str, configured: str | None) -> Path | None:
        """The agent's workspace if `workspace_for` made it already. Not a checkpoint."""
        return self._workspaces.get(configured or f"{self.workspace_root}/{agent_id}")

    async def workspace_for(self, agent_id: str, configured: str | None) -> Path:
        """The agent's workspace (created when missing). A checkpoint (disk I/O in a thread)."""
        key = configured or f"{self.workspace_root}/{agent_id}"
        known = self._workspaces.get(key)
        if known is not None:
            await trio.lowlevel.checkpoint()
            return known

        while (making := self._making.get(key)) is not None:
            await making.wait()  # another run is creating it: share that (once per agent)
            known = self._workspaces.get(key)
            if known is not None:
                return known

        def make() -> Path:
            path = Path(configured).expanduser() if configured else self.workspace_root / agent_id
            return ensure_workspace(path)

        making = self._making[key] = trio.Event()
        try:
            resolved = await trio.to_thread.run_sync(make)
        finally:
            del self._making[key]
            making.set()
        self._workspaces[key] = resolved
        return resolved

    # --- one run --------------------------------------------------------------------------

    def run_tools(
        self,
        generation: ModelRuntimeGeneration,
        *,
        agent_id: str,
        session_key: str,
        session_id: str,
        run_id: str,
        workspace: Path,
        send: SendMessage,
        cron: bool = False,
        model_ref: str | None = None,
        heartbeat: bool = False,
    ) -> RunTools:
        """The tools of one run: built-ins and plugin tools, the agent's policy, the hooks,
        the host's approvals (none asked for a `cron` run: no one watches it); a message the
        `message` tool sends passes `message_sending` / `message_sent` and goes to `send`.
        `model_ref`: the run's model, whose `tools.byProvider` entries apply."""
        hooks = self.hooks

        async def deliver(text: str) -> None:
            content, cancelled = text, False
            if hooks.has("message_sending"):
                content, cancelled = await hooks.run_message_sending(
                    MessageSendingEvent(to=session_key, content=text)
                )
            if cancelled:
                raise MessageCancelled("a plugin cancelled this message")
            send(content, int(time.time() * 1000))
            if hooks.has("message_sent"):
                await hooks.fire(
                    "message_sent",
                    MessageSentEvent(to=session_key, content=content, success=True),
                )

        role = self.sessions.subagent_role(session_key) if self.sessions is not None else None
        tools, policy, toolset = self._toolset(generation, agent_id, model_ref, role)
        if heartbeat:  # offered to a heartbeat run whatever the policy (OpenClaw forces it)
            respond = HeartbeatRespondTool(self.heartbeat_responses)
            tools = (*tools, respond)
            toolset = attrs.evolve(  # the rest of the set (a search catalog) kept
                toolset,
                by_name=MappingProxyType({**toolset.by_name, respond.name: respond}),
                specs=(*toolset.specs, tool_spec(respond)),
            )
        return RunTools(
            tools=tools,
            policy=policy,
            toolset=toolset,
            workspace=workspace,
            agent_id=agent_id,
            session_key=session_key,
            session_id=session_id,
            run_id=run_id,
            deliver_message=deliver,
            hooks=hooks,
            approvals=self.approvals,
            trigger="cron" if cron else "user",
            image_max_side=generation.config.agents.defaults.imageMaxDimensionPx,
        )

    def _toolset(
        self,
        generation: ModelRuntimeGeneration,
        agent_id: str,
        model_ref: str | None,
        role: str | None,
    ) -> tuple[tuple[Tool, ...], ToolPolicy, ToolSet]:
        """The agent's tools, policy and offered set for a run of `model_ref` by a session
        of `role` (a subagent's is smaller): built once per generation, plugins' version,
        agent, model and role, and shared by the runs alike."""
        key = (generation.number, self.plugins.version, agent_id, model_ref or "", role or "")
        shared = self._toolsets.get(key)
        if shared is None:
            if len(self._toolsets) >= _TOOLSETS_MAX:
                self._toolsets.clear()
            policy = self.tool_policy(generation, agent_id, model_ref)
            builtins = builtin_tools(
                self.web_settings(generation),
                # Without `process` (denied) exec runs in the foreground, as OpenClaw's.
                processes=self.processes if policy.permits("process") else None,
                exec_settings=self.agent_exec_settings(generation, agent_id),
                questions=self.questions,
                cards=self.cards if generation.config.tools.updatePlan is not False else None,
                config_reader=self.config_reader,
            )
            tools = (*builtins, *self.plugins.tools())
            tools = (*tools, *self.memory_tools(generation))
            tools = (*tools, *self.host_tools())
            sub = generation.config.tools.subagents.tools
            offered = subagent_policy(role, sub.allow, sub.alsoAllow, sub.deny)
            if offered is not None:  # a subagent is offered less, as OpenClaw's
                tools = tuple(offered.filter(tools))
            search = tool_search_settings(
                _search_setting(generation.config.tools.toolSearch),
                local=_serves_locally(generation, model_ref),
            )
            owners = {name: r.id for r in self.plugins.plugins.values() for name in r.tools}
            toolset = ToolSet.of(tools, policy, search, owners=owners)
            shared = self._toolsets[key] = (tools, policy, toolset)
        return shared

    def host_tools(self) -> list[Tool]:
        """The tools over the gateway's hosts: the session tools and `automations`, each
        while its host is set."""
        tools: list[Tool] = []
        if self.sessions is not None:
            tools += session_tools(self.sessions)
        if self.automations is not None:
            tools += automations_tools(self.automations, self.sessions)
        return tools

    def turn_spec(
        self,
        generation: ModelRuntimeGeneration,
        stores: RunStores,
        *,
        run_id: str,
        session_key: str,
        session_id: str,
        agent_id: str,
        message: str,
        history: Sequence[Message],
        history_tokens: int | None,
        model_ref: str,
        fallbacks: Sequence[str],
        history_clean: bool = False,
        workspace: Path,
        tools: ToolRunner,
        steer_inbox: SteerInbox | None = None,
        extra_system_prompt: str | None = None,
        reasoning_level: str | None = None,
        history_entries: HistoryEntries | None = None,
        on_block: BlockSink | None = None,
        cron: bool = False,
        system_prompt: str | None = None,
        row: SessionRow | None = None,
        on_memory_flush: Callable[[MemoryFlushRecord], None] | None = None,
        light_context: bool = False,
    ) -> TurnSpec:
        """One run's `TurnSpec` with this host's hooks, caches and the generation's
        settings (and what the session's `row` says of its compactions and memory flush).
        Not a checkpoint."""
        extra: dict[str, Any] = {} if system_prompt is None else {"system_prompt": system_prompt}
        if row is not None:
            extra.update(compaction_count=row.compactionCount, memory_flush=row.memoryFlush)
        if on_memory_flush is not None:
            extra["on_memory_flush"] = on_memory_flush
        return TurnSpec(
            run_id=run_id,
            session_key=session_key,
            session_id=session_id,
            agent_id=agent_id,
            message=message,
            steer_inbox=steer_inbox,
            history=history,
            history_tokens=history_tokens,
            history_clean=history_clean,
            generation=generation,
            stores=stores,
            model_ref=model_ref,
            extra_system_prompt=extra_system_prompt,
            workspace_dir=str(workspace),
            tools=tools,
            hooks=self.hooks,
            idle_timeout=self.idle_timeout(generation, cron=cron),
            reasoning_level=reasoning_level,
            history_entries=history_entries,
            fallbacks=fallbacks,
            on_block=on_block,
            light_context=light_context,
            **self.turn_settings(generation),
            **extra,
        )
