"""Internal (operator) hooks: `InternalHooks` keyed `type` or `type:action` (`command:new`,
`agent:bootstrap`, `session:compact:before`, ...). Both keys fire for an event, in that order,
one handler at a time; errors are logged, never raised to the caller.

Errors raised here: `ValueError`/`TypeError` at registration (an empty key, a handler that is
not callable).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import attrs

__all__ = ["BootstrapFile", "InternalHookEvent", "InternalHookHandler", "InternalHooks"]

log = logging.getLogger("clawlane.hooks")


@attrs.frozen
class BootstrapFile:
    """A workspace file injected into the system prompt (AGENTS.md, SOUL.md, ...).
    `content` None: the file is missing."""

    name: str
    path: str
    content: str | None = None


def _now() -> datetime:
    return datetime.now(UTC)


@attrs.define(eq=False)
class InternalHookEvent:
    """An operator hook event. Handlers may mutate `context` and append to `messages`
    (delivered to the user for command:new/reset and compaction notices)."""

    type: str
    action: str
    sessionKey: str = ""
    context: dict[str, Any] = attrs.field(factory=dict)
    timestamp: datetime = attrs.field(factory=_now)
    messages: list[str] = attrs.field(factory=list)

    @property
    def key(self) -> str:
        return f"{self.type}:{self.action}"


InternalHookHandler = Callable[[InternalHookEvent], Awaitable[None] | None]


@attrs.define(eq=False)
class InternalHooks:
    """Operator hooks keyed by event `type` (`command`) or `type:action` (`command:new`)."""

    _handlers: dict[str, list[InternalHookHandler]] = attrs.field(init=False, factory=dict)

    def register(self, key: str, handler: InternalHookHandler) -> None:
        """Add a handler for `type` or `type:action`. Not a checkpoint."""
        if not key or not isinstance(key, str):
            raise ValueError(f"internal hook key must be 'type' or 'type:action', got {key!r}")
        if not callable(handler):
            raise TypeError(f"internal hook handler for {key!r} is not callable")
        self._handlers.setdefault(key, []).append(handler)

    def unregister(self, key: str, handler: InternalHookHandler) -> bool:
        handlers = self._handlers.get(key, [])
        if handler not in handlers:
            return False
        handlers.remove(handler)
        if not handlers:
            del self._handlers[key]
        return True

    def has_listeners(self, type: str, action: str) -> bool:
        return type in self._handlers or f"{type}:{action}" in self._handlers

    async def trigger(self, event: InternalHookEvent) -> None:
        """Call the `type` handlers, then the `type:action` ones, each in registration
        order, one at a time. Errors are logged; cancellation propagates."""
        handlers = [*self._handlers.get(event.type, ()), *self._handlers.get(event.key, ())]
        for handler in handlers:
            try:
                result = handler(event)
                if inspect.isawaitable(result):
                    await result
            except Exception:
                log.exception("[hooks] internal hook error [%s]", event.key)

    async def run_agent_bootstrap(
        self,
        files: Sequence[BootstrapFile],
        *,
        workspace_dir: str,
        session_key: str = "",
        session_id: str | None = None,
        agent_id: str | None = None,
    ) -> list[BootstrapFile]:
        """Trigger `agent:bootstrap` and return the bootstrap files as the handlers left
        them (they may add to, remove from or replace `context["bootstrapFiles"]`). Entries
        that are not `BootstrapFile`s (or mappings with its keys) are dropped and logged."""
        bootstrap = list(files)
        if not self.has_listeners("agent", "bootstrap"):
            return bootstrap
        event = InternalHookEvent(
            type="agent",
            action="bootstrap",
            sessionKey=session_key,
            context={
                "workspaceDir": workspace_dir,
                "bootstrapFiles": bootstrap,
                "sessionKey": session_key,
                "sessionId": session_id,
                "agentId": agent_id,
            },
        )
        await self.trigger(event)
        raw = event.context.get("bootstrapFiles")
        if not isinstance(raw, list):
            log.error("[hooks] agent:bootstrap left bootstrapFiles as %r; ignoring", type(raw))
            return list(files)
        out: list[BootstrapFile] = []
        for item in raw:
            if isinstance(item, BootstrapFile):
                out.append(item)
            elif isinstance(item, Mapping) and {"name", "path"} <= item.keys():
                out.append(BootstrapFile(str(item["name"]), str(item["path"]), item.get("content")))
            else:
                log.error("[hooks] agent:bootstrap: dropping invalid bootstrap file %r", item)
        return out
