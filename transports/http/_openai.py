"""OpenAI-compatible HTTP, as OpenClaw offers it: `GET /v1/models`, `GET /v1/models/{id}`
and `POST /v1/chat/completions` (streaming SSE and not), so Open WebUI, LibreChat or any
OpenAI SDK can talk to the gateway. Off unless `gateway.http.endpoints.chatCompletions.
enabled` (404 then, as for any unknown path); `Authorization: Bearer <gateway token>` when
the gateway has a token (what the routes check before any body is read).

A completion is an `agent` run, made through `Methods.call` by an in-process caller
(`_http_caller`), so it is validated, queued and persisted exactly like one from the
WebSocket. OpenClaw's agent-first model contract: `model` names an agent target
(`openclaw`, `openclaw/default`, `openclaw/<agentId>`, `openclaw:<agentId>`,
`agent:<agentId>`), not a provider model; `x-openclaw-model` overrides the backend model,
`x-openclaw-agent-id` the agent. The session: `x-openclaw-session-key` names it
explicitly (not in the reserved `subagent:`, `cron:`, `acp:` namespaces); otherwise the
`user` field gives a stable one (`agent:<id>:openai-user:<user>`), and without either each
request gets a new one (`agent:<id>:openai:<uuid>`). System and developer messages become
the run's extra system prompt; earlier turns of `messages` are given as context lines before
the current message, as OpenClaw does.

Sampling fields (`temperature`, `top_p`, penalties, `seed`, `stop`, token caps) are
validated as OpenClaw validates them and are not forwarded: the agent's configured model
params apply (clawlane's `agent` method has no per-request sampling params). Client `tools`
are refused (400): clawlane runs its own tools.

Errors are OpenAI's shape, `{"error": {"message", "type"}}`: 400 `invalid_request_error`,
401 `unauthorized`, 403 `forbidden`, 404, 405, 413, 500 `api_error` for a failed run. A
stream that fails after it started sends `data: {"error": ...}` then `data: [DONE]`. The
client going away aborts the run (reason `rpc`).
"""

from __future__ import annotations

import math
import re
import time
import uuid
from typing import Any, Final, Protocol

import msgspec
import trio

from .._errors import TransportError
from ._caller import Answer, Caller, CallerHost
from ._server import Exchange, Request, Response, Route


class OpenAiHost(CallerHost, Protocol):
    """The gateway as the OpenAI-compatible routes see it: what an in-process caller sees
    (the supervisor among its `actors`), and its slow-consumer count."""

    slow_consumer_closes: int
    """Counted here too: an SSE stream closed for a slow consumer."""


MAX_BODY_BYTES: Final = 4 * 1024 * 1024
SSE_WRITE_TIMEOUT_S: Final = 30.0
HISTORY_MARKER: Final = "[Chat messages since your last reply - for context]"
CURRENT_MARKER: Final = "[Current message - respond to this]"
RESERVED_KEY_PREFIXES: Final = ("subagent:", "cron:", "acp:")
_AGENT_MODEL: Final = re.compile(
    r"^(?:openclaw[:/]|agent:)(?P<agent>[a-z0-9][a-z0-9_-]{0,63})$", re.IGNORECASE
)
_json: Final = msgspec.json.Encoder()


class InvalidRequest(TransportError):
    """A 400 `invalid_request_error` with this message."""


def error_response(status: int, message: str, kind: str, **headers: str) -> Response:
    body = _json.encode({"error": {"message": message, "type": kind}})
    return Response(
        status,
        body,
        "application/json; charset=utf-8",
        tuple((k.replace("_", "-"), v) for k, v in headers.items()),
    )


def json_response(status: int, payload: Any) -> Response:
    return Response(status, _json.encode(payload), "application/json; charset=utf-8")


def _sse(data: Any) -> bytes:
    return b"data: " + _json.encode(data) + b"\n\n"


# --- the agent-first model contract ----------------------------------------------------------


def agent_for_model(model: str | None, default_agent: str) -> str | None:
    """The agent a `model` id targets; None when it is not an agent target."""
    raw = (model or "").strip()
    if not raw or raw.lower() in ("openclaw", "openclaw/default"):
        return default_agent
    m = _AGENT_MODEL.match(raw)
    return m.group("agent").lower() if m else None


def model_ids(gw: OpenAiHost) -> list[str]:
    gen = gw.actors.supervisor.generation
    ids = ["openclaw", "openclaw/default"]
    ids.extend(
        f"openclaw/{agent}" for agent in sorted(gen.agents) if f"openclaw/{agent}" not in ids
    )
    return ids


def _model_object(model_id: str) -> dict[str, Any]:
    return {
        "id": model_id,
        "object": "model",
        "created": 0,
        "owned_by": "openclaw",
        "permission": [],
    }


# --- the request ------------------------------------------------------------------------------


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and part.get("type") in ("text", "input_text"):
                text = part.get("text")
                if isinstance(text, str):
                    parts.append(text)
        return "\n".join(parts)
    return ""


def build_prompt(messages: Any) -> tuple[str, str | None]:
    """(the message for the run, the extra system prompt) from OpenAI `messages`, as
    OpenClaw builds them. Raises `InvalidRequest`."""
    if not isinstance(messages, list):
        raise InvalidRequest("`messages` must be an array.")
    system: list[str] = []
    entries: list[tuple[str, str]] = []  # (role, "Sender: body" or body)
    for msg in messages:
        if not isinstance(msg, dict):
            continue
        role = msg.get("role")
        if not isinstance(role, str):
            continue
        content = _text_of(msg.get("content")).strip()
        if role in ("system", "developer"):
            if content:
                system.append(content)
            continue
        role = "tool" if role == "function" else role
        if role not in ("user", "assistant", "tool") or not content:
            continue
        sender = {"user": "User", "assistant": "Assistant"}.get(role)
        if sender is None:
            ref = msg.get("tool_call_id") or msg.get("name")
            sender = f"Tool:{ref}" if isinstance(ref, str) and ref else "Tool"
        entries.append((role, f"{sender}: {content}" if sender else content))
    current = max(
        (i for i, (role, _) in enumerate(entries) if role in ("user", "tool")), default=-1
    )
    if current < 0:
        raise InvalidRequest("Missing user message in `messages`.")
    role, line = entries[current]
    history = [text for _, text in entries[:current]]
    extra = "\n\n".join(system) or None
    if not history and role != "tool":
        return line.split(": ", 1)[1], extra
    return "\n".join([HISTORY_MARKER, *history, "", CURRENT_MARKER, line]), extra


def _check_number(payload: dict[str, Any], field: str, low: float, high: float) -> None:
    value = payload.get(field)
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidRequest(f"`{field}` must be a number.")
    if not low <= value <= high:
        raise InvalidRequest(f"`{field}` must be between {low:g} and {high:g}.")


def validate_sampling(payload: dict[str, Any]) -> None:
    """OpenClaw's checks of the sampling fields (accepted, not forwarded)."""
    _check_number(payload, "temperature", 0, 2)
    _check_number(payload, "top_p", 0, 1)
    _check_number(payload, "frequency_penalty", -2, 2)
    _check_number(payload, "presence_penalty", -2, 2)
    seed = payload.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise InvalidRequest("`seed` must be an integer.")
    for field in ("max_completion_tokens", "max_tokens"):
        cap = payload.get(field)
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
            raise InvalidRequest(f"{field} must be a positive safe integer")
    stop = payload.get("stop")
    if stop is not None:
        stops = [stop] if isinstance(stop, str) else stop
        if not isinstance(stops, list) or len(stops) > 4:
            raise InvalidRequest("Invalid stop: stop supports at most 4 sequences")
        if not all(isinstance(s, str) and s for s in stops):
            raise InvalidRequest("Invalid stop: stop entries must be non-empty strings")
    tools = payload.get("tools")
    if tools not in (None, []):
        raise InvalidRequest("Invalid tools/tool_choice: client tools are not supported")


def session_key_for(req: Request, agent_id: str, user: str | None) -> str:
    explicit = (req.header("x-openclaw-session-key") or "").strip()
    if explicit:
        if explicit.lower().startswith(RESERVED_KEY_PREFIXES) or any(
            f":{p}" in explicit.lower() for p in RESERVED_KEY_PREFIXES
        ):
            raise InvalidRequest(
                "`x-openclaw-session-key` cannot use reserved internal session namespaces."
            )
        return explicit
    main = f"openai-user:{user.strip()}" if user and user.strip() else f"openai:{uuid.uuid4()}"
    return f"agent:{agent_id}:{main}"


def agent_params(
    gw: OpenAiHost, req: Request, payload: dict[str, Any], run_id: str
) -> dict[str, Any]:
    """The `agent` request for a completion. Raises `InvalidRequest`."""
    model = payload.get("model", "openclaw")
    if not isinstance(model, str):
        raise InvalidRequest("Invalid `model`. Use `openclaw` or `openclaw/<agentId>`.")
    user = payload.get("user")
    if user is not None and not isinstance(user, str):
        raise InvalidRequest("`user` must be a string.")
    if not isinstance(payload.get("stream", False), bool):
        raise InvalidRequest("`stream` must be a boolean.")
    validate_sampling(payload)
    gen = gw.actors.supervisor.generation
    agent_id = (req.header("x-openclaw-agent-id") or "").strip().lower() or agent_for_model(
        model, gen.default_agent
    )
    if agent_id is None:
        raise InvalidRequest("Invalid `model`. Use `openclaw` or `openclaw/<agentId>`.")
    if agent_id not in gen.agents:
        raise InvalidRequest(f"Unknown agent '{agent_id}'.")
    message, extra = build_prompt(payload.get("messages"))
    params: dict[str, Any] = {
        "message": message,
        "idempotencyKey": run_id,
        "agentId": agent_id,
        "sessionKey": session_key_for(req, agent_id, user),
    }
    if extra:
        params["extraSystemPrompt"] = extra
    override = (req.header("x-openclaw-model") or "").strip()
    if override:
        params["model"] = override
    return params


# --- the answer ------------------------------------------------------------------------------


def _failure(answer: Answer) -> Response:
    error = answer.error or {}
    message = str(error.get("message") or "agent run failed")
    code = error.get("code")
    if code == "INVALID_REQUEST":
        return error_response(400, message, "invalid_request_error")
    if code == "FORBIDDEN" or message.startswith("missing scope"):
        return error_response(403, message, "forbidden")
    return error_response(500, message, "api_error")


def _final_text(final: Any) -> str:
    result = final.get("result") if isinstance(final, dict) else None
    payloads = result.get("payloads", []) if isinstance(result, dict) else []
    texts = [
        p["text"]
        for p in payloads
        if isinstance(p, dict) and isinstance(p.get("text"), str) and not p.get("isReasoning")
    ]
    return "\n\n".join(texts)


def _usage(final: Any) -> dict[str, int]:
    result = final.get("result") if isinstance(final, dict) else None
    meta = result.get("meta", {}) if isinstance(result, dict) else {}
    usage = meta.get("agentMeta", {}).get("usage", {}) if isinstance(meta, dict) else {}
    prompt = int(usage.get("input") or 0)
    completion = int(usage.get("output") or 0)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": int(usage.get("total") or prompt + completion),
    }


def _finish_reason(final: Any) -> str:
    result = final.get("result") if isinstance(final, dict) else None
    meta = result.get("meta", {}) if isinstance(result, dict) else {}
    return "length" if meta.get("stopReason") in ("length", "max_tokens") else "stop"


class OpenAiRoutes:
    """The `/v1/*` routes of one gateway."""

    def __init__(self, gateway: OpenAiHost) -> None:
        self.gw = gateway

    def route(self, req: Request) -> Route | Response:
        path = req.path
        if path == "/v1/models" or path.startswith("/v1/models/"):
            if req.method not in ("GET", "HEAD"):
                return Response.text(405, "Method Not Allowed", headers=(("allow", "GET"),))
            return Route(self.models)
        if path == "/v1/chat/completions":
            if req.method != "POST":
                return Response.text(405, "Method Not Allowed", headers=(("allow", "POST"),))
            return Route(self.chat_completions, max_body=MAX_BODY_BYTES)
        return Response.text(404, "Not Found")

    async def models(self, req: Request, exchange: Exchange) -> Response:
        ids = model_ids(self.gw)
        if req.path == "/v1/models":
            return json_response(200, {"object": "list", "data": [_model_object(i) for i in ids]})
        wanted = req.path[len("/v1/models/") :]
        if not wanted:
            return error_response(400, "Missing model id.", "invalid_request_error")
        if agent_for_model(wanted, "default") is None:
            return error_response(400, "Invalid model id.", "invalid_request_error")
        if wanted not in ids:
            return error_response(404, f"Model '{wanted}' not found.", "invalid_request_error")
        return json_response(200, _model_object(wanted))

    async def chat_completions(self, req: Request, exchange: Exchange) -> Response | None:
        try:
            payload = msgspec.json.decode(req.body)
        except msgspec.DecodeError as exc:
            return error_response(400, f"Invalid JSON body: {exc}", "invalid_request_error")
        if not isinstance(payload, dict):
            return error_response(400, "The body must be a JSON object.", "invalid_request_error")
        run_id = f"chatcmpl_{uuid.uuid4().hex}"
        try:
            params = agent_params(self.gw, req, payload, run_id)
        except InvalidRequest as exc:
            return error_response(400, str(exc), "invalid_request_error")
        stream = payload.get("stream") is True
        options = payload.get("stream_options")
        include_usage = (
            stream and isinstance(options, dict) and options.get("include_usage") is True
        )
        model = payload.get("model", "openclaw")
        identity = {"id": run_id, "created": int(time.time()), "model": model}
        caller = Caller(
            self.gw, label="openai", events=stream, traceparent=req.header("traceparent")
        )
        request = trio.CancelScope()
        response: Response | None = None  # stays None when streamed, or the client left
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(caller.call, "agent", params, request)
                nursery.start_soon(_abort_on_disconnect, exchange, request, nursery.cancel_scope)
                try:
                    if stream:
                        await _stream_completion(self.gw, caller, exchange, identity, include_usage)
                    else:
                        response = await _completion(caller, identity)
                finally:
                    nursery.cancel_scope.cancel()
        finally:
            caller.close()
        return response


async def _abort_on_disconnect(
    exchange: Exchange, request: trio.CancelScope, handler: trio.CancelScope
) -> None:
    await exchange.disconnected.wait()
    request.cancel()  # the agent request: its handler aborts the run (reason `rpc`)
    handler.cancel()  # and stop waiting for an answer that will not come


def _is_ack(answer: Answer) -> bool:
    return (
        answer.ok
        and isinstance(answer.payload, dict)
        and answer.payload.get("status") == "accepted"
    )


async def _completion(caller: Caller, identity: dict[str, Any]) -> Response:
    while True:
        await caller.wait()
        answers, _ = caller.take()
        for answer in answers:
            if _is_ack(answer):
                continue
            if not answer.ok:
                return _failure(answer)
            final = answer.payload
            content = _final_text(final) or "No response from OpenClaw."
            return json_response(
                200,
                {
                    **identity,
                    "object": "chat.completion",
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": content},
                            "finish_reason": _finish_reason(final),
                        }
                    ],
                    "usage": _usage(final),
                },
            )


def _chunk(identity: dict[str, Any], delta: dict[str, Any], finish: str | None) -> bytes:
    return _sse(
        {
            **identity,
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
    )


_SSE_HEADERS: Final = [("cache-control", "no-cache")]
_SSE_TYPE: Final = "text/event-stream; charset=utf-8"


class _TextStream:
    """The assistant text streamed so far; OpenAI streams only append."""

    def __init__(self, identity: dict[str, Any]) -> None:
        self.identity = identity
        self.sent = ""
        self.broken = False  # the text was rewound (a retry): no more appending

    def chunks(self, events: list[dict[str, Any]]) -> list[bytes]:
        out: list[bytes] = []
        for frame in events:
            payload = frame.get("payload") or {}
            if frame.get("event") != "agent" or payload.get("stream") != "assistant":
                continue
            text = (payload.get("data") or {}).get("text")
            if not isinstance(text, str) or self.broken:
                continue
            if not text.startswith(self.sent):
                self.broken = True
                continue
            piece, self.sent = text[len(self.sent) :], text
            if piece:
                out.append(_chunk(self.identity, {"content": piece}, None))
        return out

    def finish(self, final: Any, include_usage: bool) -> bytes | None:
        """The last chunks and `[DONE]`; None when the final text does not extend what
        was streamed."""
        text = _final_text(final) or self.sent or "No response from OpenClaw."
        if not text.startswith(self.sent):
            return None
        out = (
            [_chunk(self.identity, {"content": text[len(self.sent) :]}, None)]
            if text != self.sent
            else []
        )
        out.append(_chunk(self.identity, {}, _finish_reason(final)))
        if include_usage:
            usage = {
                **self.identity,
                "object": "chat.completion.chunk",
                "choices": [],
                "usage": _usage(final),
            }
            out.append(_sse(usage))
        out.append(b"data: [DONE]\n\n")
        return b"".join(out)


async def _stream_completion(
    gw: OpenAiHost,
    caller: Caller,
    exchange: Exchange,
    identity: dict[str, Any],
    include_usage: bool,
) -> None:
    """Wait for the run's acceptance (a refusal is a plain JSON error), then stream its
    assistant text as chunks, then the finish chunk (and usage), then `[DONE]`."""
    text = _TextStream(identity)
    while True:
        await caller.wait()
        answers, events = caller.take()
        if caller.overflowed:
            gw.slow_consumer_closes += 1
            await _stream_error(exchange, "the client did not keep up with the stream")
            return
        if not exchange.started:
            if not answers:
                continue
            if not answers[0].ok:
                response = _failure(answers[0])
                await exchange.stream(response.status, response.content_type, [])
                await exchange.write(response.body)
                await exchange.end()
                return
            await exchange.stream(200, _SSE_TYPE, _SSE_HEADERS)
            await exchange.write(_chunk(identity, {"role": "assistant"}, None))
        pieces = text.chunks(events)
        if pieces:
            await exchange.write(b"".join(pieces), timeout_s=SSE_WRITE_TIMEOUT_S)
        final = next((a for a in answers if not _is_ack(a)), None)
        if final is None:
            continue
        if not final.ok:
            await _stream_error(
                exchange, str((final.error or {}).get("message") or "agent run failed")
            )
            return
        tail = text.finish(final.payload, include_usage)
        if tail is None:
            await _stream_error(
                exchange,
                "Assistant output cannot be represented as an append-only response stream.",
            )
            return
        await exchange.write(tail, timeout_s=SSE_WRITE_TIMEOUT_S)
        await exchange.end()
        return


async def _stream_error(exchange: Exchange, message: str) -> None:
    """OpenClaw's failed stream: an `error` object, then `[DONE]`."""
    if not exchange.started:
        await exchange.stream(200, _SSE_TYPE, _SSE_HEADERS)
    await exchange.write(
        _sse({"error": {"message": message, "type": "api_error"}}) + b"data: [DONE]\n\n",
        timeout_s=SSE_WRITE_TIMEOUT_S,
    )
    await exchange.end()
