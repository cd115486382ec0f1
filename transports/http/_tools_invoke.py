"""`POST /tools/invoke`: an operator invokes one tool directly over HTTP, as OpenClaw's
gateway offers it (Bearer token as for every route; the shared secret is full operator
access, `operator.admin` included).

The body: `{tool | name, action?, args?, sessionKey?, agentId?, idempotencyKey?, dryRun?}`
(`name` wins over `tool`; `action` goes into `args.action` when the tool takes one;
`dryRun` is accepted and ignored, as OpenClaw's). At most 2 MB. What the call goes through
and the answers: `transports.methods._tools_invoke` (`invoke_gateway_tool`, HTTP's deny
list included): 200 `{ok: true, result}`, else `{ok: false, error: {type, message}}` with
400, 403 or 404.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from actors import Supervisor
from runtime.protocol import ToolsInvokeParams

from ..methods import invoke_gateway_tool
from ._server import Exchange, Request, Response

__all__ = ["MAX_BODY_BYTES", "tools_invoke"]

MAX_BODY_BYTES: Final = 2 * 1024 * 1024
_json: Final = msgspec.json.Encoder()


def _answer(status: int, payload: dict[str, Any]) -> Response:
    return Response(status, _json.encode(payload), "application/json; charset=utf-8")


def _invalid(message: str) -> Response:
    return _answer(400, {"ok": False, "error": {"type": "invalid_request", "message": message}})


async def tools_invoke(supervisor: Supervisor, req: Request, exchange: Exchange) -> Response:
    """Answer one `POST /tools/invoke` (auth already checked). A checkpoint."""
    try:
        body = msgspec.json.decode(req.body) if req.body else {}
    except msgspec.DecodeError as exc:
        return _invalid(f"Invalid JSON body: {exc}")
    if not isinstance(body, dict):
        return _invalid("The body must be a JSON object.")
    name = body.get("name") or body.get("tool")
    action = body.get("action")
    if action is not None and not isinstance(action, str):
        return _invalid("action must be a string")
    fields = {k: body[k] for k in ("args", "sessionKey", "agentId", "idempotencyKey") if k in body}
    try:
        params = msgspec.convert({"name": name, **fields}, ToolsInvokeParams)
    except msgspec.ValidationError as exc:
        return _invalid(f"invalid tools.invoke request: {exc}")
    outcome = await invoke_gateway_tool(supervisor, params, owner=True, action=action)
    return _answer(outcome.status, outcome.http())
