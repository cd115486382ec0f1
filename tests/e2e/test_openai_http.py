"""The OpenAI-compatible HTTP endpoints against a real gateway on loopback, driven by the
official `openai` Python SDK (a blocking client, in a worker thread): models, completions
streaming and not, sessions named by `user` or a header, errors in OpenAI's shape, the
token, and the endpoints off by default. Raw HTTP where the SDK hides the wire."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx
import openai
import pytest
import trio
import trio.testing

from tests.conftest import local_config, open_client, running_gateway
from transports.server._gateway import Gateway

TOKEN = "openai-token"
_T = TypeVar("_T")


def base_url(gw: Gateway) -> str:
    return f"http://127.0.0.1:{gw.listeners[0].socket.getsockname()[1]}"


_clients: list[openai.OpenAI] = []


def sdk(gw: Gateway, api_key: str = TOKEN) -> openai.OpenAI:
    """An SDK client of `gw` (no retries), closed when the test ends (`close_clients`)."""
    client = openai.OpenAI(
        base_url=base_url(gw) + "/v1", api_key=api_key, max_retries=0, timeout=20
    )
    _clients.append(client)
    return client


@pytest.fixture(autouse=True)
def close_clients() -> Iterator[None]:
    yield
    while _clients:
        _clients.pop().close()


async def in_thread(fn: Callable[[], _T]) -> _T:
    return await trio.to_thread.run_sync(fn)


@pytest.fixture
async def gw(tmp_path: Path) -> AsyncIterator[Gateway]:
    config = local_config(gateway__http__endpoints__chatCompletions__enabled=True)
    async with running_gateway(tmp_path, config, token=TOKEN) as gateway:
        yield gateway


async def test_models_list_names_the_agent_targets(gw: Gateway) -> None:
    client = sdk(gw)
    with trio.fail_after(20):
        models = await in_thread(lambda: client.models.list())
        one = await in_thread(lambda: client.models.retrieve("openclaw/default"))
        with pytest.raises(openai.NotFoundError) as missing:
            await in_thread(lambda: client.models.retrieve("openclaw/nobody"))
    assert [m.id for m in models.data] == ["openclaw", "openclaw/default", "openclaw/main"]
    assert all(m.owned_by == "openclaw" and m.object == "model" for m in models.data)
    assert one.id == "openclaw/default"
    assert missing.value.status_code == 404
    assert "not found" in str(missing.value.body)


async def test_a_completion_is_an_agent_run_on_the_users_session(gw: Gateway) -> None:
    client = sdk(gw)
    with trio.fail_after(30):
        first = await in_thread(
            lambda: client.chat.completions.create(
                model="openclaw",
                user="conv-1",
                messages=[
                    {"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "hello there"},
                ],
            )
        )
        second = await in_thread(
            lambda: client.chat.completions.create(
                model="openclaw/main",
                user="conv-1",
                messages=[{"role": "user", "content": "and again"}],
            )
        )
        async with open_client(gw, token=TOKEN) as ws:
            history = await ws.request(
                "chat.history", {"sessionKey": "agent:main:openai-user:conv-1"}
            )
    assert first.object == "chat.completion"
    assert first.id.startswith("chatcmpl_")
    assert first.model == "openclaw"
    assert first.choices[0].message.role == "assistant"
    assert first.choices[0].message.content == "You said: hello there"
    assert first.choices[0].finish_reason == "stop"
    assert first.usage is not None and first.usage.completion_tokens > 0
    assert second.choices[0].message.content == "You said: and again"
    texts = [
        m["content"]
        if isinstance(m["content"], str)
        else "".join(c["text"] for c in m["content"] if c.get("type") == "text")
        for m in history["messages"]
    ]
    assert texts == ["hello there", "You said: hello there", "and again", "You said: and again"]
    # The run went through the gateway's own records, under its completion id.
    record = gw.registry.get(first.id)
    assert record is not None and record.status == "ok"


async def test_a_streaming_completion_arrives_in_chunks(gw: Gateway) -> None:
    client = sdk(gw)

    def run() -> list[Any]:
        stream = client.chat.completions.create(
            model="openclaw",
            stream=True,
            stream_options={"include_usage": True},
            messages=[{"role": "user", "content": "[[delay:5]] one two three four"}],
        )
        return list(stream)

    with trio.fail_after(30):
        chunks = await in_thread(run)
    assert chunks[0].choices[0].delta.role == "assistant"
    pieces = [
        c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content
    ]
    assert len(pieces) >= 4  # word by word, as the model streamed it
    assert "".join(pieces) == "You said: one two three four"
    finish = [
        c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason
    ]
    assert finish == ["stop"]
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert len({c.id for c in chunks}) == 1


async def test_the_stream_is_server_sent_events_ending_with_done(gw: Gateway) -> None:
    body = {"stream": True, "messages": [{"role": "user", "content": "hi"}]}
    with trio.fail_after(20):
        async with httpx.AsyncClient(base_url=base_url(gw)) as http:
            res = await http.post(
                "/v1/chat/completions", json=body, headers={"authorization": f"Bearer {TOKEN}"}
            )
    assert res.status_code == 200
    assert res.headers["content-type"] == "text/event-stream; charset=utf-8"
    events = [line for line in res.text.split("\n\n") if line]
    assert all(e.startswith("data: ") for e in events)
    assert events[-1] == "data: [DONE]"
    assert json.loads(events[0][6:])["object"] == "chat.completion.chunk"


async def test_the_session_header_names_the_session(gw: Gateway) -> None:
    client = sdk(gw)
    with trio.fail_after(20):
        await in_thread(
            lambda: client.chat.completions.create(
                model="openclaw",
                messages=[{"role": "user", "content": "x"}],
                extra_headers={"x-openclaw-session-key": "agent:main:my-app"},
            )
        )
        with pytest.raises(openai.BadRequestError) as reserved:
            await in_thread(
                lambda: client.chat.completions.create(
                    model="openclaw",
                    messages=[{"role": "user", "content": "x"}],
                    extra_headers={"x-openclaw-session-key": "cron:nightly"},
                )
            )
    assert gw.supervisor.peek_session("agent:main:my-app") is not None
    assert reserved.value.body["type"] == "invalid_request_error"  # type: ignore[index]
    assert "reserved" in reserved.value.body["message"]  # type: ignore[index]


async def test_without_user_each_request_gets_a_new_session(gw: Gateway) -> None:
    client = sdk(gw)
    with trio.fail_after(20):
        for _ in range(2):
            await in_thread(
                lambda: client.chat.completions.create(
                    model="openclaw", messages=[{"role": "user", "content": "x"}]
                )
            )
        async with open_client(gw, token=TOKEN) as ws:
            listed = await ws.request("sessions.list", {"search": "openai:"})
    assert listed["count"] == 2


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"model": "openclaw", "messages": []}, "Missing user message"),
        ({"model": "gpt-4o", "messages": [{"role": "user", "content": "x"}]}, "Invalid `model`"),
        (
            {"model": "openclaw/ghost", "messages": [{"role": "user", "content": "x"}]},
            "Unknown agent",
        ),
        ({"temperature": 3, "messages": [{"role": "user", "content": "x"}]}, "temperature"),
        (
            {"stop": ["a", "b", "c", "d", "e"], "messages": [{"role": "user", "content": "x"}]},
            "stop",
        ),
        ({"messages": "hi"}, "must be an array"),
    ],
    ids=["no-user-message", "provider-model", "unknown-agent", "temperature", "stop", "messages"],
)
async def test_bad_requests_get_openai_errors(
    gw: Gateway, body: dict[str, Any], message: str
) -> None:
    with trio.fail_after(20):
        async with httpx.AsyncClient(base_url=base_url(gw)) as http:
            res = await http.post(
                "/v1/chat/completions", json=body, headers={"authorization": f"Bearer {TOKEN}"}
            )
    assert res.status_code == 400
    assert res.headers["content-type"] == "application/json; charset=utf-8"
    error = res.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert message in error["message"]


async def test_a_body_that_is_not_json_is_a_400(gw: Gateway) -> None:
    with trio.fail_after(20):
        async with httpx.AsyncClient(base_url=base_url(gw)) as http:
            res = await http.post(
                "/v1/chat/completions",
                content=b"{not json",
                headers={"authorization": f"Bearer {TOKEN}"},
            )
    assert res.status_code == 400
    assert res.json()["error"]["type"] == "invalid_request_error"


async def test_a_failed_run_is_an_api_error(gw: Gateway) -> None:
    client = sdk(gw)
    with trio.fail_after(20):
        with pytest.raises(openai.InternalServerError) as failed:
            await in_thread(
                lambda: client.chat.completions.create(
                    model="openclaw", messages=[{"role": "user", "content": "[[fail:auth]]"}]
                )
            )
    assert failed.value.status_code == 500
    assert failed.value.body["type"] == "api_error"  # type: ignore[index]


async def test_a_failed_streaming_run_ends_with_an_error_event(gw: Gateway) -> None:
    client = sdk(gw)

    def run() -> None:
        stream = client.chat.completions.create(
            model="openclaw",
            stream=True,
            messages=[{"role": "user", "content": "[[fail-after:2]] one two three"}],
        )
        for _ in stream:
            pass

    with trio.fail_after(20):
        with pytest.raises(openai.APIError) as failed:
            await in_thread(run)
    assert "failure" in failed.value.message


async def test_the_token_is_required(gw: Gateway) -> None:
    with trio.fail_after(20):
        with pytest.raises(openai.AuthenticationError) as wrong:
            await in_thread(lambda: sdk(gw, api_key="wrong").models.list())
        async with httpx.AsyncClient(base_url=base_url(gw)) as http:
            missing = await http.post(
                "/v1/chat/completions", json={"messages": [{"role": "user", "content": "x"}]}
            )
    assert wrong.value.status_code == 401
    assert missing.status_code == 401
    assert missing.json() == {"error": {"message": "Unauthorized", "type": "unauthorized"}}
    assert gw.registry.statistics().known_runs == 0


async def test_the_endpoints_are_off_by_default(tmp_path: Path) -> None:
    async with running_gateway(tmp_path, token=TOKEN) as gw:
        client = sdk(gw)
        with trio.fail_after(20):
            with pytest.raises(openai.NotFoundError):
                await in_thread(lambda: client.models.list())
            with pytest.raises(openai.NotFoundError):
                await in_thread(
                    lambda: client.chat.completions.create(
                        model="openclaw", messages=[{"role": "user", "content": "x"}]
                    )
                )


async def test_a_client_that_goes_away_aborts_its_run(gw: Gateway) -> None:
    body = json.dumps(
        {"stream": True, "messages": [{"role": "user", "content": "[[delay:200]] a b c d e f"}]}
    ).encode()
    head = (
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
        f"Authorization: Bearer {TOKEN}\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    port = gw.listeners[0].socket.getsockname()[1]
    with trio.fail_after(20):
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        await stream.send_all(head + body)
        received = b""
        while b'"content"' not in received:  # the first piece of text
            received += await stream.receive_some(65_536)
        await stream.aclose()
        [record] = gw.registry.active()
        await record.done.wait()
    assert record.status == "aborted"
    assert record.abort_reason == "rpc"


async def test_a_client_that_goes_away_before_the_answer_aborts_its_run(gw: Gateway) -> None:
    body = json.dumps({"messages": [{"role": "user", "content": "[[delay:200]] a b c d e f"}]})
    head = (
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
        f"Authorization: Bearer {TOKEN}\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    port = gw.listeners[0].socket.getsockname()[1]
    with trio.fail_after(20):
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        await stream.send_all(head + body.encode())
        while not gw.registry.active():
            await trio.testing.wait_all_tasks_blocked(cushion=0.01)
        [record] = gw.registry.active()
        await stream.aclose()
        await record.done.wait()
        await trio.testing.wait_all_tasks_blocked()
    assert record.status == "aborted"
    assert record.abort_reason == "rpc"
    assert gw.http_sockets == 0  # the handler did not wait for an answer that never came
