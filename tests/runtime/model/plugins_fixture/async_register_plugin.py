"""A plugin with an async register() that checkpoints before registering."""

from __future__ import annotations

import trio

from runtime.plugin_sdk import MessageSendingEvent, MessageSendingResult, PluginApi


async def _shout(event: MessageSendingEvent) -> MessageSendingResult:
    return MessageSendingResult(content=event.content.upper())


async def register(api: PluginApi) -> None:
    await trio.lowlevel.checkpoint()
    api.on("message_sending", _shout)
