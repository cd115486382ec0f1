"""An operator invokes one tool directly, without a model turn: `tools.invoke` over the
WebSocket (scope `operator.write`) and `POST /tools/invoke` over HTTP (`transports.http`),
both through `invoke_gateway_tool`, as OpenClaw's gateway does.

What a call goes through, in order:
- the target session: `sessionKey` (default the agent's `main`) made canonical; an `agentId`
  that is unknown or not the session's agent is refused (`agent id "x" does not match
  session agent "y"`);
- the tool: one of the agent's tools under its policy (what a run there is offered, with
  OpenClaw's aliases) that OpenClaw scopes to its gateway: its own tools (`group:openclaw`:
  `sessions_list`, `session_status`, `progress_card`, `memory_get`, `web_fetch`, ...) and the
  plugins' tools, never the workspace's file and command tools (`read`, `write`, `edit`,
  `ls`, `apply_patch`, `exec`, `process`), as OpenClaw's `tools.invoke` resolves them
  (observed on its 2026.9.6 gateway); OpenClaw's default deny list holds on both surfaces
  (OpenClaw resolves both as its HTTP surface: `exec`, `spawn`, `shell`, `fs_write`,
  `fs_delete`, `fs_move`, `apply_patch`, `sessions_spawn`, `sessions_send`, `cron`,
  `gateway`, `nodes`), and the owner-only `cron`, `gateway` and `nodes` need
  `operator.admin` besides; anything else is `Tool not available: <name>` (HTTP 404);
- the call: the plugins' `before_tool_call` hooks (a block is refused: `tool_call_blocked`,
  HTTP 403; an approval a hook asks for is asked of the operators only with `confirm: true`),
  the arguments validated, the tool run in the agent's workspace, `after_tool_call`.

Answers: over the WebSocket OpenClaw's `ToolsInvokeResult` envelope, `{ok: true, toolName,
output, source: "core" | "plugin"}` or `{ok: false, toolName, error: {code, message}}`
(`validation_error`, `not_found`, `forbidden`, `internal_error`); over HTTP `{ok: true,
result}` (200) or `{ok: false, error: {type, message}}` with OpenClaw's statuses (400
`invalid_request` or `tool_error` for a tool's error result, 403, 404). A payload that
reports an error (the session tools' `{status: "error", ...}`) is what the tool answered:
`ok: true`, as OpenClaw's tool returned it; a failure in OpenClaw's thrown shape
(`runtime.tools.thrown_result`) is `tool_error` with its message unwrapped (OpenClaw says
`tool execution failed` for a throw it does not count as bad input; clawlane cannot tell the
two apart and gives the message). A `message` the tool would send has no conversation to go
to here: it is the tool's error.
"""

from __future__ import annotations

import os
from typing import Any, Final

import attrs
import trio

from actors import Supervisor
from runtime.llm import TextContent, ToolCallContent
from runtime.loop import call_directly
from runtime.model import GenerationError
from runtime.protocol import ToolsInvokeParams, opt
from runtime.sessions import SessionKeyError
from runtime.tools import TOOL_GROUPS, normalize_tool_name, thrown_message

from ._context import Call, MethodTable

__all__ = ["InvokeOutcome", "invoke_gateway_tool", "register"]

OWNER_ONLY: Final = frozenset({"automations", "cron", "gateway", "nodes"})
HTTP_DENY: Final = frozenset(
    {
        "exec",
        "spawn",
        "shell",
        "fs_write",
        "fs_delete",
        "fs_move",
        "apply_patch",
        "sessions_spawn",
        "sessions_send",
        "cron",
        "automations",
        "gateway",
        "nodes",
    }
)
_RPC_CODES: Final = {
    "invalid_request": "validation_error",
    "not_found": "not_found",
    "tool_call_blocked": "forbidden",
    "tool_error": "internal_error",
}
_REFUSED_PREFIXES: Final = ("tool call blocked", "tool call not approved")
_GATEWAY_SCOPED: Final = TOOL_GROUPS["group:openclaw"]
"""The core tools OpenClaw's gateway lets an operator invoke: its own, not the workspace's."""


@attrs.frozen
class InvokeOutcome:
    """How one invocation ended: `status` (OpenClaw's HTTP status), the tool's name, and its
    result (`ToolResult` as plain data) or the error's `type` and `message`."""

    status: int
    tool_name: str
    result: Any = None
    source: str = "core"
    error_type: str | None = None
    message: str | None = None

    @property
    def ok(self) -> bool:
        return self.error_type is None

    def rpc(self) -> dict[str, Any]:
        """The `ToolsInvokeResult` envelope."""
        if self.ok:
            return {
                "ok": True,
                "toolName": self.tool_name,
                "output": self.result,
                "source": self.source,
            }
        assert self.error_type is not None
        code = _RPC_CODES.get(self.error_type, "internal_error")
        error = {"code": code, "message": self.message or self.error_type}
        return {"ok": False, "toolName": self.tool_name, "error": error}

    def http(self) -> dict[str, Any]:
        """The `POST /tools/invoke` body."""
        if self.ok:
            return {"ok": True, "result": self.result}
        return {"ok": False, "error": {"type": self.error_type, "message": self.message}}


def _refused(status: int, name: str, kind: str, message: str) -> InvokeOutcome:
    return InvokeOutcome(status, name, error_type=kind, message=message)


async def invoke_gateway_tool(
    supervisor: Supervisor,
    params: ToolsInvokeParams,
    *,
    owner: bool,
    action: str | None = None,
) -> InvokeOutcome:
    """Invoke one tool as the module docstring says; `owner`: the caller holds
    `operator.admin`; `action` (HTTP's): the args' `action` when the tool takes one and the
    args do not set it. Never raises but `trio.Cancelled` (the tool is cancelled with the
    request). A checkpoint."""
    name = params.name.strip()
    if not name:
        await trio.lowlevel.checkpoint()
        return _refused(400, params.name, "invalid_request", "tools.invoke requires name")
    canonical = normalize_tool_name(name)
    generation = supervisor.generation
    requested_agent = opt(params.agentId)
    try:
        key = supervisor.resolve_key(opt(params.sessionKey) or "main", requested_agent)
        agent_id = key.split(":")[1] if key.startswith("agent:") else generation.default_agent
        agent = generation.agent(agent_id)
    except (SessionKeyError, GenerationError) as exc:
        await trio.lowlevel.checkpoint()
        return _refused(400, name, "invalid_request", str(exc))
    if requested_agent is not None and requested_agent != agent.id:
        await trio.lowlevel.checkpoint()
        message = f'agent id "{requested_agent}" does not match session agent "{agent.id}"'
        return _refused(400, name, "invalid_request", message)
    if (canonical in OWNER_ONLY and not owner) or canonical in HTTP_DENY:
        await trio.lowlevel.checkpoint()
        return _refused(404, name, "not_found", f"Tool not available: {name}")
    return await _run(supervisor, params, name, key, agent, action)


async def _run(
    supervisor: Supervisor,
    params: ToolsInvokeParams,
    name: str,
    key: str,
    agent: Any,
    action: str | None,
) -> InvokeOutcome:
    services = supervisor.services
    generation = supervisor.generation
    workspace = services.known_workspace(agent.id, agent.workspace) or await services.workspace_for(
        agent.id, agent.workspace
    )
    row = await supervisor.store.get_session(key)
    session_id = row.sessionId if row is not None else ""

    def send(text: str, ts: int) -> None:
        raise RuntimeError("tools.invoke has no conversation to send a message to")

    call_id = f"invoke-{opt(params.idempotencyKey) or os.urandom(6).hex()}"
    tools = services.run_tools(
        generation,
        agent_id=agent.id,
        session_key=key,
        session_id=session_id,
        run_id=call_id,
        workspace=workspace,
        send=send,
        model_ref=agent.primary,
    )
    assert tools.toolset is not None
    tool = tools.toolset.find(name)
    owners = {n for r in supervisor.plugins.plugins.values() for n in r.tools}
    if tool is None or (tool.name not in _GATEWAY_SCOPED and tool.name not in owners):
        return _refused(404, name, "not_found", f"Tool not available: {name}")
    if opt(params.confirm) is not True:
        tools.approvals = None  # OpenClaw's report mode: no operator is asked
    args = dict(opt(params.args) or {})
    if action is not None and "action" not in args and "action" in tool.params.__struct_fields__:
        args["action"] = action
    call_content = ToolCallContent(id=call_id, name=name, arguments=args)
    outcome = await call_directly(tools, call_content, _no_emit)  # deferred ones too
    source = "plugin" if tool.name in owners else "core"
    details = outcome.result.get("details") if isinstance(outcome.result, dict) else None
    thrown = thrown_message(details, tool.name)
    if not outcome.message.isError or (thrown is None and isinstance(details, dict)):
        # what the tool answered, an error its payload reports included (OpenClaw's tool
        # returned it: `sessions_history` of a missing session is `ok: true`)
        return InvokeOutcome(200, tool.name, result=outcome.result, source=source)
    if thrown is not None:  # the tool failed as OpenClaw's throws: its message, unwrapped
        return _refused(400, tool.name, "tool_error", thrown or "tool execution failed")
    text = " ".join(c.text for c in outcome.message.content if isinstance(c, TextContent))
    if text.startswith(_REFUSED_PREFIXES):
        return _refused(403, tool.name, "tool_call_blocked", text)
    return _refused(400, tool.name, "tool_error", text or "tool execution failed")


def _no_emit(stream: str, data: dict[str, Any]) -> None:
    """Partial results of a direct invocation go nowhere (no run to stream them in)."""


def register(methods: MethodTable) -> None:
    methods.add("tools.invoke", tools_invoke, ToolsInvokeParams)


async def tools_invoke(call: Call, params: ToolsInvokeParams) -> dict[str, Any]:
    owner = call.conn.has_scope("operator.admin")
    outcome = await invoke_gateway_tool(call.gateway.actors.supervisor, params, owner=owner)
    return outcome.rpc()
