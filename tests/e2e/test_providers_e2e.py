"""The three HTTP model transports end to end: a real gateway whose provider `baseUrl` points at
the scripted loopback SSE server, and a real WebSocket client running `agent`.

Each test runs once per api (`openai-completions`, `openai-responses`, `anthropic-messages`);
the server answers in that provider's own wire format and records every request, so the tests
check what really went over HTTP: auth headers, per-model params, and the tool result sent back
in the provider's format. Waiting is on the server's events (`Script.started`,
`Pause.reached`, `Script.disconnected`), never on sleeps.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio

from runtime.llm._http import HttpProvider
from runtime.llm._types import ModelProvider
from runtime.model._config import Config, parse_config
from runtime.model._generation import (
    ModelRuntimeGeneration,
    build_generation,
    default_provider_factory,
)
from runtime.model._retire import close_all_providers, close_providers, generation_providers
from tests.conftest import open_client, running_gateway
from tests.e2e._events import Events, recorder_events, run_events, terminal_events
from tests.runtime.llm._sse_server import (
    Pause,
    RecordedRequest,
    Script,
    SSEServer,
    json_error,
    open_sse_server,
)
from tests.runtime.llm._streams import (
    AnthropicStream,
    ResponsesStream,
    chat_chunk,
    chat_text,
    chat_tool_calls,
)
from transports import GatewayRequestError
from transports.server._gateway import Gateway

API_KEY = "sk-e2e-0123456789"
KEY_VAR = "CLAWLANE_E2E_PROVIDER_KEY"
PROVIDER = "prov"
MODEL = "m1"
PARAMS = {"temperature": 0.25, "maxTokens": 321}
WORKSPACE = ("state", "workspaces", "main")


# --- the three wire formats ------------------------------------------------------------------


@attrs.frozen
class Dialect:
    """What differs between the apis: stream shapes, auth, params and tool results."""

    api: str
    path: str
    base_url: Callable[[SSEServer], str]
    text: Callable[[list[str]], list[bytes]]
    tool_call: Callable[[str, str, list[str]], list[bytes]]
    partial: Callable[[str], list[bytes]]
    """A stream that sends some text and then nothing more (a `Pause` is appended)."""
    auth_error: Any
    check_auth: Callable[[dict[str, str]], None]
    check_params: Callable[[dict[str, Any]], None]
    tool_exchange: Callable[[dict[str, Any], str], tuple[dict[str, Any], str]]
    """(the replayed tool call's arguments, the tool result text) from a request body."""
    call_id: str


def _bearer(headers: dict[str, str]) -> None:
    assert headers["authorization"] == f"Bearer {API_KEY}"
    assert "x-api-key" not in headers


def _completions_partial(text: str) -> list[bytes]:
    return [chat_chunk({"role": "assistant", "content": ""}), chat_chunk({"content": text})]


def _completions_params(body: dict[str, Any]) -> None:
    assert body["temperature"] == 0.25
    assert body["max_tokens"] == 321  # compatible servers get the classic name
    assert body["model"] == MODEL and body["stream"] is True


def _completions_exchange(body: dict[str, Any], call_id: str) -> tuple[dict[str, Any], str]:
    messages = body["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool"]
    (call,) = messages[2]["tool_calls"]
    assert call["id"] == call_id and call["type"] == "function"
    assert call["function"]["name"] == "write"
    result = messages[3]
    assert result["tool_call_id"] == call_id
    return json.loads(call["function"]["arguments"]), result["content"]


def _responses_text(words: list[str]) -> list[bytes]:
    return ResponsesStream().created().message(0, words).completed().chunks


def _responses_tool_call(call_id: str, name: str, fragments: list[str]) -> list[bytes]:
    return ResponsesStream().created().function_call(0, call_id, name, fragments).completed().chunks


def _responses_partial(text: str) -> list[bytes]:
    stream = ResponsesStream().created()
    stream.event(
        "response.output_item.added",
        output_index=0,
        item={"id": "msg_0", "type": "message", "status": "in_progress", "content": []},
    )
    stream.event(
        "response.output_text.delta", item_id="msg_0", output_index=0, content_index=0, delta=text
    )
    return stream.chunks


def _responses_params(body: dict[str, Any]) -> None:
    assert body["temperature"] == 0.25
    assert body["max_output_tokens"] == 321
    assert body["model"] == MODEL and body["stream"] is True and body["store"] is False


def _responses_exchange(body: dict[str, Any], call_id: str) -> tuple[dict[str, Any], str]:
    items = body["input"]
    assert [i["type"] for i in items] == ["message", "function_call", "function_call_output"]
    call, result = items[1], items[2]
    # Only the call id goes back (the transcript id is `call_id|item_id`).
    assert call["call_id"] == call_id and call["name"] == "write"
    assert result["call_id"] == call_id
    return json.loads(call["arguments"]), result["output"]


def _anthropic_text(words: list[str]) -> list[bytes]:
    return AnthropicStream().start().ping().text(words).stop().chunks


def _anthropic_tool_call(call_id: str, name: str, fragments: list[str]) -> list[bytes]:
    return AnthropicStream().start().tool_use(call_id, name, fragments).stop("tool_use").chunks


def _anthropic_partial(text: str) -> list[bytes]:
    stream = AnthropicStream().start()
    stream.event("content_block_start", index=0, content_block={"type": "text", "text": ""})
    stream.event("content_block_delta", index=0, delta={"type": "text_delta", "text": text})
    return stream.chunks


def _anthropic_auth(headers: dict[str, str]) -> None:
    assert headers["x-api-key"] == API_KEY
    assert headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in headers


def _anthropic_params(body: dict[str, Any]) -> None:
    assert body["temperature"] == 0.25
    assert body["max_tokens"] == 321
    assert body["model"] == MODEL and body["stream"] is True


def _anthropic_exchange(body: dict[str, Any], call_id: str) -> tuple[dict[str, Any], str]:
    messages = body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    (use,) = messages[1]["content"]
    assert use["type"] == "tool_use" and use["id"] == call_id and use["name"] == "write"
    (result,) = messages[2]["content"]
    assert result["type"] == "tool_result" and result["tool_use_id"] == call_id
    assert result["is_error"] is False
    text = "".join(part["text"] for part in result["content"] if part["type"] == "text")
    return use["input"], text


_OPENAI_401 = {
    "error": {
        "message": "Incorrect API key provided: sk-e2e-***",
        "type": "invalid_request_error",
        "param": None,
        "code": "invalid_api_key",
    }
}

DIALECTS = [
    Dialect(
        api="openai-completions",
        path="/v1/chat/completions",
        base_url=lambda s: f"{s.url}/v1",
        text=chat_text,
        tool_call=lambda cid, name, frags: chat_tool_calls([(cid, name, frags)]),
        partial=_completions_partial,
        auth_error=_OPENAI_401,
        check_auth=_bearer,
        check_params=_completions_params,
        tool_exchange=_completions_exchange,
        call_id="call_e2eWrite01",
    ),
    Dialect(
        api="openai-responses",
        path="/v1/responses",
        base_url=lambda s: f"{s.url}/v1",
        text=_responses_text,
        tool_call=_responses_tool_call,
        partial=_responses_partial,
        auth_error=_OPENAI_401,
        check_auth=_bearer,
        check_params=_responses_params,
        tool_exchange=_responses_exchange,
        call_id="call_e2eWrite02",
    ),
    Dialect(
        api="anthropic-messages",
        path="/v1/messages",
        base_url=lambda s: s.url,
        text=_anthropic_text,
        tool_call=_anthropic_tool_call,
        partial=_anthropic_partial,
        auth_error={
            "type": "error",
            "error": {"type": "authentication_error", "message": "invalid x-api-key"},
        },
        check_auth=_anthropic_auth,
        check_params=_anthropic_params,
        tool_exchange=_anthropic_exchange,
        call_id="toolu_01E2eWrite03",
    ),
]


@pytest.fixture(params=DIALECTS, ids=[d.api for d in DIALECTS])
def dialect(request: pytest.FixtureRequest) -> Dialect:
    value = request.param
    assert isinstance(value, Dialect)
    return value


def provider_config(
    dialect: Dialect,
    server: SSEServer,
    *,
    idle_timeout: int | None = None,
    headers: dict[str, str] | None = None,
) -> Config:
    """One provider aimed at the loopback server; its key comes from `${VAR}`."""
    defaults: dict[str, Any] = {
        "model": {"primary": f"{PROVIDER}/{MODEL}"},
        "models": {f"{PROVIDER}/{MODEL}": {"params": PARAMS}},
    }
    if idle_timeout is not None:
        defaults["llm"] = {"idleTimeoutSeconds": idle_timeout}
    raw = {
        "agents": {"defaults": defaults},
        "models": {
            "providers": {
                PROVIDER: {
                    "api": dialect.api,
                    "baseUrl": dialect.base_url(server),
                    "apiKey": f"${{{KEY_VAR}}}",
                    "models": [{"id": MODEL, "name": "e2e model"}],
                    **({"headers": headers} if headers else {}),
                }
            }
        },
    }
    return parse_config(raw, env={KEY_VAR: API_KEY})


@asynccontextmanager
async def provider_gateway(tmp_path: Path, config: Config) -> AsyncIterator[Gateway]:
    """`running_gateway`, then the provider transports of every generation it served closed
    once every run has ended (the gateway does not close its serving generation's). Only
    the transports are remembered: holding a generation would keep it from retiring."""
    gateway: Gateway | None = None
    served: list[ModelProvider] = []

    def remember(generation: ModelRuntimeGeneration) -> None:
        served.extend(generation_providers(generation))

    try:
        async with running_gateway(tmp_path, config) as gw:
            gateway = gw
            remember(gw.supervisor.generation)
            if gw.publisher is not None:
                gw.publisher.on_publish.append(remember)
            yield gw
    finally:
        if gateway is not None:
            with trio.CancelScope(shield=True):
                publisher = gateway.publisher
                await close_all_providers(
                    publisher.builder if publisher is not None else None,
                    gateway.supervisor.generation,
                )
                await close_providers(served)


def assistant_text(events: Events, run_id: str) -> str:
    return "".join(p["data"]["delta"] for p in run_events(events, run_id, "assistant"))


def lifecycle_phases(events: Events, run_id: str) -> list[str]:
    return [p["data"]["phase"] for p in run_events(events, run_id, "lifecycle")]


def chat_states(events: Events, run_id: str) -> list[str]:
    return [p["state"] for (e, p, _s) in events if e == "chat" and p["runId"] == run_id]


def check_gap_free(events: Events, run_id: str) -> None:
    seqs = [p["seq"] for p in run_events(events, run_id)]
    assert seqs == list(range(1, len(seqs) + 1))
    assert len(terminal_events(events, run_id)) == 1


def bodies(server: SSEServer) -> list[dict[str, Any]]:
    return [r.json() for r in server.requests]


def only_request(server: SSEServer) -> RecordedRequest:
    assert len(server.requests) == 1, [r.target for r in server.requests]
    return server.requests[0]


# --- (a) plain text ---------------------------------------------------------------------------


async def test_plain_text_streams_as_assistant_events_and_the_final_payload(
    tmp_path: Path, dialect: Dialect
) -> None:
    events, on_event = recorder_events()
    async with open_sse_server() as server:
        server.push(Script(chunks=dialect.text(["Hello", " from", " the", " provider"])))
        async with provider_gateway(tmp_path, provider_config(dialect, server)) as gw:
            with trio.fail_after(20):
                async with open_client(gw, on_event=on_event) as client:
                    final = await client.request(
                        "agent",
                        {"message": "say hello", "idempotencyKey": "txt"},
                        expect_final=True,
                    )
    assert final["status"] == "ok"
    assert final["result"]["payloads"] == [{"text": "Hello from the provider"}]
    assert final["result"]["meta"]["stopReason"] == "stop"
    assert assistant_text(events, "txt") == "Hello from the provider"
    assert len(run_events(events, "txt", "assistant")) == 4  # one event per model delta
    assert lifecycle_phases(events, "txt") == ["start", "end"]
    assert chat_states(events, "txt")[-1] == "final"
    check_gap_free(events, "txt")
    request = only_request(server)
    assert request.method == "POST" and request.target == dialect.path
    assert request.headers["accept"] == "text/event-stream"
    assert "say hello" in json.dumps(request.json())
    assert server.unscripted == 0


# --- (b) a tool call round trip ---------------------------------------------------------------


async def test_a_tool_call_round_trips_in_the_providers_format(
    tmp_path: Path, dialect: Dialect
) -> None:
    events, on_event = recorder_events()
    watcher_events, on_watcher_event = recorder_events()
    content = f"written via {dialect.api}"
    args = json.dumps({"path": "out.txt", "content": content})
    async with open_sse_server() as server:
        server.push(
            Script(chunks=dialect.tool_call(dialect.call_id, "write", [args[:9], args[9:]])),
            Script(chunks=dialect.text(["Wrote", " out.txt"])),
        )
        async with provider_gateway(tmp_path, provider_config(dialect, server)) as gw:
            with trio.fail_after(20):
                async with (
                    open_client(gw, caps=["tool-events"], on_event=on_event) as client,
                    open_client(gw, on_event=on_watcher_event) as watcher,
                ):
                    final = await client.request(
                        "agent",
                        {"message": "write the file", "idempotencyKey": "tool"},
                        expect_final=True,
                    )
                    await watcher.request("health")
    assert final["status"] == "ok"
    assert final["result"]["payloads"] == [{"text": "Wrote out.txt"}]
    assert tmp_path.joinpath(*WORKSPACE, "out.txt").read_text() == content

    tool = [p["data"] for p in run_events(events, "tool", "tool")]
    assert [(d["phase"], d["name"]) for d in tool] == [("start", "write"), ("result", "write")]
    assert tool[0]["args"] == {"path": "out.txt", "content": content}
    assert {d["toolCallId"] for d in tool} == {tool[0]["toolCallId"]}
    assert dialect.call_id in tool[0]["toolCallId"]
    assert tool[1]["isError"] is False
    check_gap_free(events, "tool")
    # A connection without the capability sees the run, but no tool events and no seq gap.
    assert run_events(watcher_events, "tool", "tool") == []
    assert run_events(watcher_events, "tool")
    check_gap_free(watcher_events, "tool")

    assert len(server.requests) == 2
    first, second = bodies(server)
    assert [t.get("name") or t.get("function", {}).get("name") for t in first["tools"]].count(
        "write"
    ) == 1
    replayed_args, result_text = dialect.tool_exchange(second, dialect.call_id)
    assert replayed_args == {"path": "out.txt", "content": content}
    assert "out.txt" in result_text
    assert server.unscripted == 0


# --- (c) auth headers -------------------------------------------------------------------------


async def test_the_api_key_from_a_config_variable_goes_out_in_the_providers_header(
    tmp_path: Path, dialect: Dialect
) -> None:
    async with open_sse_server() as server:
        server.push(Script(chunks=dialect.text(["ok"])))
        config = provider_config(dialect, server)
        assert config.models.providers[PROVIDER].apiKey == API_KEY  # `${VAR}` was substituted
        async with provider_gateway(tmp_path, config) as gw:
            with trio.fail_after(20):
                async with open_client(gw) as client:
                    final = await client.request(
                        "agent", {"message": "hi", "idempotencyKey": "auth"}, expect_final=True
                    )
    assert final["status"] == "ok"
    headers = only_request(server).headers
    dialect.check_auth(headers)
    assert headers["content-type"] == "application/json"


# --- (d) per-model params ---------------------------------------------------------------------


async def test_per_model_params_appear_in_the_request_body(
    tmp_path: Path, dialect: Dialect
) -> None:
    async with open_sse_server() as server:
        server.push(
            Script(chunks=dialect.text(["one"])),
            Script(chunks=dialect.text(["two"])),
        )
        async with provider_gateway(tmp_path, provider_config(dialect, server)) as gw:
            with trio.fail_after(20):
                async with open_client(gw) as client:
                    for key in ("p1", "p2"):
                        final = await client.request(
                            "agent", {"message": key, "idempotencyKey": key}, expect_final=True
                        )
                        assert final["status"] == "ok"
    assert len(server.requests) == 2
    for body in bodies(server):
        dialect.check_params(body)
    # The second run of the session replays the first exchange.
    assert "one" in json.dumps(bodies(server)[1])


# --- (e) a retryable failure before any output --------------------------------------------------


async def test_a_429_then_success_is_retried_within_one_run(
    tmp_path: Path, dialect: Dialect
) -> None:
    events, on_event = recorder_events()
    rate_limited = json_error(
        429,
        {"error": {"message": "Rate limit reached", "type": "rate_limit_error"}},
        headers=[("retry-after", "0")],
    )
    async with open_sse_server() as server:
        server.push(rate_limited, Script(chunks=dialect.text(["after", " retry"])))
        async with provider_gateway(tmp_path, provider_config(dialect, server)) as gw:
            with trio.fail_after(20):
                async with open_client(gw, on_event=on_event) as client:
                    final = await client.request(
                        "agent",
                        {"message": "retry me", "idempotencyKey": "r429"},
                        expect_final=True,
                    )
                    waited = await client.request("agent.wait", {"runId": "r429"})
    assert final["status"] == "ok"
    assert final["result"]["payloads"] == [{"text": "after retry"}]
    assert waited["status"] == "ok"
    assert lifecycle_phases(events, "r429") == ["start", "end"]
    assert assistant_text(events, "r429") == "after retry"
    check_gap_free(events, "r429")
    assert len(server.requests) == 2
    first, second = server.requests
    assert first.body == second.body  # the same turn, sent again
    assert rate_limited.finished.is_set()


# --- (f) an auth failure ------------------------------------------------------------------------


async def test_a_401_ends_the_run_with_a_clear_error_and_the_gateway_keeps_serving(
    tmp_path: Path, dialect: Dialect
) -> None:
    events, on_event = recorder_events()
    async with open_sse_server() as server:
        server.push(json_error(401, dialect.auth_error))
        async with provider_gateway(tmp_path, provider_config(dialect, server)) as gw:
            with trio.fail_after(20):
                async with open_client(gw, on_event=on_event) as client:
                    with pytest.raises(GatewayRequestError) as err:
                        await client.request(
                            "agent", {"message": "hi", "idempotencyKey": "a401"}, expect_final=True
                        )
                    waited = await client.request("agent.wait", {"runId": "a401"})
                    assert len(server.requests) == 1  # never retried
                    server.push(Script(chunks=dialect.text(["still", " here"])))
                    again = await client.request(
                        "agent", {"message": "again", "idempotencyKey": "after"}, expect_final=True
                    )
    message = err.value.message
    assert err.value.code == "UNAVAILABLE"
    assert "401" in message
    assert ("Incorrect API key" in message) or ("invalid x-api-key" in message)
    assert API_KEY not in message
    assert err.value.payload["status"] == "error"
    assert waited["status"] == "error" and waited["error"] == message
    (terminal,) = terminal_events(events, "a401")
    assert terminal["data"]["phase"] == "error" and terminal["data"]["error"] == message
    assert chat_states(events, "a401")[-1] == "error"
    check_gap_free(events, "a401")
    assert again["status"] == "ok" and again["result"]["payloads"] == [{"text": "still here"}]
    assert len(server.requests) == 2


async def test_a_malformed_or_dropped_stream_ends_the_run_with_a_clear_error(
    tmp_path: Path, dialect: Dialect
) -> None:
    events, on_event = recorder_events()
    async with open_sse_server() as server:
        server.push(
            Script(chunks=[b"data: {this is not json\n\n"]),
            Script(chunks=dialect.partial("cut"), truncate=True),
        )
        async with provider_gateway(tmp_path, provider_config(dialect, server)) as gw:
            with trio.fail_after(20):
                async with open_client(gw, on_event=on_event) as client:
                    with pytest.raises(GatewayRequestError) as malformed:
                        await client.request(
                            "agent", {"message": "m", "idempotencyKey": "bad"}, expect_final=True
                        )
                    with pytest.raises(GatewayRequestError) as dropped:
                        await client.request(
                            "agent", {"message": "d", "idempotencyKey": "drop"}, expect_final=True
                        )
                    await client.request("health")
    assert malformed.value.code == "UNAVAILABLE"
    assert "malformed stream from the provider" in malformed.value.message
    assert dropped.value.code == "UNAVAILABLE" and dropped.value.message
    assert assistant_text(events, "drop") == "cut"
    for run_id in ("bad", "drop"):
        (terminal,) = terminal_events(events, run_id)
        assert terminal["data"]["phase"] == "error"
        check_gap_free(events, run_id)
    # Malformed is not retryable; a drop after output must not be retried (it would repeat
    # output the client already has).
    assert len(server.requests) == 2


# --- (g) the LLM idle timeout -------------------------------------------------------------------


async def test_a_stalled_stream_trips_the_llm_idle_timeout(
    tmp_path: Path, dialect: Dialect
) -> None:
    events, on_event = recorder_events()
    stall = Pause()
    async with open_sse_server() as server:
        script = server.push(Script(chunks=[*dialect.partial("partial"), stall]))
        config = provider_config(dialect, server, idle_timeout=1)
        async with provider_gateway(tmp_path, config) as gw:
            with trio.fail_after(20):
                async with open_client(gw, on_event=on_event) as client:
                    with pytest.raises(GatewayRequestError) as err:
                        await client.request(
                            "agent",
                            {"message": "stall", "idempotencyKey": "idle"},
                            expect_final=True,
                        )
                    assert stall.reached.is_set()
                    await script.disconnected.wait()  # the watchdog closed the HTTP stream
                    server.push(Script(chunks=dialect.text(["fine"])))
                    again = await client.request(
                        "agent", {"message": "next", "idempotencyKey": "after"}, expect_final=True
                    )
    assert err.value.code == "UNAVAILABLE"
    assert "idle timeout" in err.value.message and "1s" in err.value.message
    (terminal,) = terminal_events(events, "idle")
    assert terminal["data"]["phase"] == "error"
    assert "LLM idle timeout" in terminal["data"]["error"]
    assert assistant_text(events, "idle") == "partial"
    check_gap_free(events, "idle")
    assert len(server.requests) == 2  # the idle timeout is never retried
    assert again["status"] == "ok"


# --- (h) abort ----------------------------------------------------------------------------------


async def test_a_run_timeout_aborts_and_closes_the_http_stream(
    tmp_path: Path, dialect: Dialect
) -> None:
    events, on_event = recorder_events()
    stall = Pause()
    async with open_sse_server() as server:
        script = server.push(Script(chunks=[*dialect.partial("partial"), stall]))
        # No idle watchdog: only the run timeout can end this run.
        config = provider_config(dialect, server, idle_timeout=0)
        async with provider_gateway(tmp_path, config) as gw:
            with trio.fail_after(20):
                async with open_client(gw, on_event=on_event) as client:
                    final = await client.request(
                        "agent",
                        {"message": "stall", "idempotencyKey": "abort", "timeout": 1},
                        expect_final=True,
                    )
                    await script.disconnected.wait()  # the server saw the client go
                    waited = await client.request("agent.wait", {"runId": "abort"})
    assert stall.reached.is_set() and not script.finished.is_set()
    meta = final["result"]["meta"]
    assert meta["aborted"] is True and meta["stopReason"] == "timeout"
    assert final["result"]["payloads"] == [{"text": "partial"}]
    assert waited["status"] == "timeout"
    (terminal,) = terminal_events(events, "abort")
    assert terminal["data"]["phase"] == "end" and terminal["data"]["aborted"] is True
    assert chat_states(events, "abort")[-1] == "aborted"
    check_gap_free(events, "abort")
    assert len(server.requests) == 1


async def test_an_abort_request_closes_the_http_stream_at_once(
    tmp_path: Path, dialect: Dialect
) -> None:
    events, on_event = recorder_events()
    stall = Pause()
    async with open_sse_server() as server:
        script = server.push(Script(chunks=[*dialect.partial("partial"), stall]))
        config = provider_config(dialect, server, idle_timeout=0)
        async with provider_gateway(tmp_path, config) as gw:
            with trio.fail_after(20):
                async with open_client(gw, on_event=on_event) as client:
                    ack = await client.request(
                        "agent", {"message": "stall", "idempotencyKey": "cancel"}
                    )
                    assert ack["status"] == "accepted"
                    await stall.reached.wait()
                    record = gw.supervisor.registry.get("cancel")
                    assert record is not None
                    record.abort("rpc")
                    await script.disconnected.wait()
                    waited = await client.request("agent.wait", {"runId": "cancel"})
    assert waited["status"] != "ok"
    (terminal,) = terminal_events(events, "cancel")
    assert terminal["data"]["phase"] == "end" and terminal["data"]["aborted"] is True
    check_gap_free(events, "cancel")


# --- pooled clients and generation retirement ---------------------------------------------------


def is_closed(provider: ModelProvider) -> bool:
    assert isinstance(provider, HttpProvider)
    return provider.closed


async def _retire_mid_run(gw: Gateway, dialect: Dialect, server: SSEServer, label: str) -> None:
    """Start a run on the serving generation, publish a new one while the run streams, and
    check the old client stays open until the run ended, then closes; the next run goes
    through the new generation's client (it sends `x-e2e-generation: <label>`)."""
    publisher = gw.publisher
    assert publisher is not None
    hold = Pause()
    chunks = dialect.text(["old", " generation"])
    server.push(Script(chunks=[chunks[0], hold, *chunks[1:]]))
    async with open_client(gw) as client:
        ack = await client.request("agent", {"message": "a", "idempotencyKey": "g1"})
        assert ack["status"] == "accepted"
        await hold.reached.wait()
        old = gw.supervisor.generation.providers[PROVIDER]
        updated = provider_config(dialect, server, headers={"x-e2e-generation": label})
        await publisher.publish_config(updated, reason="test")
        new = gw.supervisor.generation.providers[PROVIDER]
        assert new is not old
        await publisher.poll_once()
        assert not is_closed(old)  # the run still streams through it
        hold.release.set()
        waited = await client.request("agent.wait", {"runId": "g1", "timeoutMs": 10_000})
        assert waited["status"] == "ok"
        await publisher.poll_once()
        assert is_closed(old), "the retired generation's client is still open after its last run"
        assert not is_closed(new)
        server.push(Script(chunks=dialect.text(["new"])))
        final = await client.request(
            "agent", {"message": "b", "idempotencyKey": "g2"}, expect_final=True
        )
    assert final["status"] == "ok" and final["result"]["payloads"] == [{"text": "new"}]
    assert server.requests[-1].headers["x-e2e-generation"] == label
    dialect.check_auth(server.requests[-1].headers)


async def test_a_retired_generations_client_closes_after_its_last_run(
    tmp_path: Path, dialect: Dialect
) -> None:
    async with (
        open_sse_server() as server,
        provider_gateway(tmp_path, provider_config(dialect, server)) as gw,
    ):
        assert gw.publisher is not None
        with trio.fail_after(20):
            # A published generation with its own client (not the startup one: see below).
            second = provider_config(dialect, server, headers={"x-e2e-generation": "2"})
            await gw.publisher.publish_config(second, reason="test")
            await _retire_mid_run(gw, dialect, server, "3")
    assert server.requests[0].headers["x-e2e-generation"] == "2"
    assert server.unscripted == 0


async def test_the_startup_generations_client_closes_after_its_last_run(
    tmp_path: Path,
) -> None:
    dialect = DIALECTS[0]
    async with (
        open_sse_server() as server,
        provider_gateway(tmp_path, provider_config(dialect, server)) as gw,
    ):
        with trio.fail_after(20):
            await _retire_mid_run(gw, dialect, server, "2")


# --- the provider examples in `runtime.llm`'s face -----------------------------------------------


def test_the_provider_examples_are_valid_configs() -> None:
    import runtime.llm

    section = runtime.llm.__doc__ or ""
    blocks = [b.split("```", 1)[0] for b in section.split("```json\n")[1:]]
    env = {"OPENAI_API_KEY": "sk-o", "ANTHROPIC_API_KEY": "sk-a", "VLLM_API_KEY": "sk-v"}
    seen: dict[str, str] = {}
    for block in blocks:
        config = parse_config(json.loads(block), env=env)
        generation = build_generation(config, 1, provider_factory=default_provider_factory)
        primary = generation.agent(None).primary
        resolved = generation.resolve(primary)
        assert resolved.params, f"{primary}: the example shows per-model params"
        assert config.agents.defaults.llm.idleTimeoutSeconds is not None
        pconf = config.models.providers[resolved.provider_id]
        assert pconf.baseUrl is not None
        seen[pconf.baseUrl] = pconf.api
    assert seen == {
        "https://api.openai.com/v1": "openai-responses",
        "https://api.anthropic.com": "anthropic-messages",
        "http://127.0.0.1:11434/v1": "openai-completions",
        "http://127.0.0.1:8000/v1": "openai-completions",
    }
    assert '"api": "openai-completions"' in section and "${OPENAI_API_KEY}" in section
