"""The `message` tool, and the set of built-in tools."""

from __future__ import annotations

from typing import Annotated

import msgspec

from ._exec import ExecTool
from ._fs import EditTool, LsTool, ReadTool, WriteTool
from ._patch import ApplyPatchTool
from ._tool import Tool, ToolContext, ToolResult, text_result

__all__ = ["MessageParams", "MessageTool", "builtin_tools"]


class MessageParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename="camel"):
    text: Annotated[str, msgspec.Meta(min_length=1, description="The message to send.")]


class MessageTool:
    """`message`: deliver a message to the conversation's channel through `ctx.send_message`."""

    name = "message"
    description = "Send a message to the user now, without ending the turn."
    params = MessageParams
    mutating = True

    async def run(self, args: MessageParams, ctx: ToolContext) -> ToolResult:
        """Await the delivery (a checkpoint); a delivery failure is an error result."""
        await ctx.send_message(args.text)
        return text_result("sent", details={"chars": len(args.text)})


def builtin_tools() -> list[Tool]:
    """Fresh instances of the built-ins, in OpenClaw's catalog order: ls, read, write, edit,
    apply_patch, exec, message."""
    return [
        LsTool(),
        ReadTool(),
        WriteTool(),
        EditTool(),
        ApplyPatchTool(),
        ExecTool(),
        MessageTool(),
    ]
