"""The `message` tool, and the set of built-in tools."""

from __future__ import annotations

from typing import Annotated

import msgspec

from ._ask import AskUserTool, QuestionDesk
from ._edit import EditTool
from ._exec import ExecSettings
from ._fs import LsTool, ReadTool, WriteTool
from ._gateway import ConfigReader, GatewayTool
from ._patch import ApplyPatchTool
from ._process import ProcessRegistry
from ._process_tool import ProcessTool
from ._progress import CardDesk, ProgressCardTool
from ._tool import Tool, ToolContext, ToolResult, text_result
from ._web import WebSettings, web_tools

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


def builtin_tools(
    web: WebSettings | None = None,
    *,
    processes: ProcessRegistry | None = None,
    exec_settings: ExecSettings | None = None,
    questions: QuestionDesk | None = None,
    cards: CardDesk | None = None,
    config_reader: ConfigReader | None = None,
) -> list[Tool]:
    """Fresh instances of the built-ins, in OpenClaw's catalog order: ls, read, write, edit,
    apply_patch, exec (with `exec_settings`, `tools.exec.*`), process (with the host's
    `processes`; without them exec runs in the foreground only), message; with `web`
    (`tools.web.*`), then web_search and web_fetch, each unless disabled there; ask_user
    with the host's `questions`, progress_card with its `cards`,
    gateway with its `config_reader`."""
    return [
        LsTool(),
        ReadTool(),
        WriteTool(),
        EditTool(),
        ApplyPatchTool(),
        (exec_settings or ExecSettings()).tool(processes),
        *((ProcessTool(processes),) if processes is not None else ()),
        MessageTool(),
        *(web_tools(web) if web is not None else ()),
        *((ProgressCardTool(cards),) if cards is not None else ()),
        *((AskUserTool(questions),) if questions is not None else ()),
        *((GatewayTool(config_reader),) if config_reader is not None else ()),
    ]
