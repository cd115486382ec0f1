"""Plain HTTP on the gateway's port, over real TCP sockets: the probes, routing (404, 405),
keep-alive and pipelining, every bound (head bytes, body bytes, slow heads, slow bodies),
the origin rule, and the WebSocket upgrade still served on the same port."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import h11
import pytest
import trio

from tests.conftest import local_config, open_client, running_gateway
from transports.http._server import MAX_HEAD_BYTES
from transports.server._gateway import Gateway


def port_of(gw: Gateway) -> int:
    return int(gw.listeners[0].socket.getsockname()[1])


async def send_raw(gw: Gateway, data: bytes, *, shutdown: bool = False) -> bytes:
    """Send `data`, then read until the server closes."""
    stream = await trio.open_tcp_stream("127.0.0.1", port_of(gw))
    async with stream:
        await stream.send_all(data)
        if shutdown:
            await stream.send_eof()
        out = bytearray()
        while True:
            try:
                chunk = await stream.receive_some(65_536)
            except trio.BrokenResourceError:
                break
            if not chunk:
                break
            out += chunk
        return bytes(out)


def parse(data: bytes) -> list[tuple[h11.Response, bytes]]:
    """Every response in `data`, with its body."""
    conn = h11.Connection(h11.CLIENT)
    conn.send(h11.Request(method="GET", target="/", headers=[("host", "x")]))
    conn.send(h11.EndOfMessage())
    conn.receive_data(data)
    conn.receive_data(b"")
    out: list[tuple[h11.Response, bytes]] = []
    response: h11.Response | None = None
    body = bytearray()
    while True:
        try:
            event = conn.next_event()
        except h11.RemoteProtocolError:  # closed where a next response could have begun
            return out
        if isinstance(event, h11.Response):
            response, body = event, bytearray()
        elif isinstance(event, h11.Data):
            body += event.data
        elif isinstance(event, h11.EndOfMessage):
            assert response is not None
            out.append((response, bytes(body)))
            if conn.our_state is h11.MUST_CLOSE or conn.their_state is not h11.DONE:
                return out
            conn.start_next_cycle()
            conn.send(h11.Request(method="GET", target="/", headers=[("host", "x")]))
            conn.send(h11.EndOfMessage())
        else:
            return out


def header(response: h11.Response, name: str) -> str | None:
    for key, value in response.headers:
        if key.decode() == name:
            return str(value.decode())
    return None


def get(
    path: str, *extra: str, method: str = "GET", close: bool = True, host: str = "127.0.0.1"
) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}", *extra]
    if close:
        lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


async def test_healthz_says_live_in_json(gateway: Gateway) -> None:
    with trio.fail_after(10):
        [(res, body)] = parse(await send_raw(gateway, get("/healthz")))
    assert res.status_code == 200
    assert header(res, "content-type") == "application/json; charset=utf-8"
    assert header(res, "cache-control") == "no-store"
    assert header(res, "x-content-type-options") == "nosniff"
    assert json.loads(body) == {"ok": True, "status": "live"}


async def test_readyz_details_go_to_loopback_callers(gateway: Gateway) -> None:
    with trio.fail_after(10):
        [(res, body)] = parse(await send_raw(gateway, get("/readyz")))
        [(proxied, proxied_body)] = parse(
            await send_raw(gateway, get("/readyz", "X-Forwarded-For: 203.0.113.9"))
        )
    assert res.status_code == 200
    data = json.loads(body)
    assert data["ready"] is True and data["failing"] == [] and data["uptimeMs"] >= 0
    # Through a proxy the caller is not local: only the verdict.
    assert proxied.status_code == 200 and json.loads(proxied_body) == {"ready": True}


async def test_head_answers_headers_without_a_body(gateway: Gateway) -> None:
    with trio.fail_after(10):
        raw = await send_raw(gateway, get("/healthz", method="HEAD"))
    head, _, rest = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK")
    assert b"content-length: 27" in head
    assert rest == b""


async def test_unknown_path_is_404_and_wrong_method_405(gateway: Gateway) -> None:
    with trio.fail_after(10):
        [(missing, _)] = parse(await send_raw(gateway, get("/nope")))
        [(post, post_body)] = parse(
            await send_raw(gateway, get("/healthz", "Content-Length: 2", method="POST") + b"{}")
        )
    assert missing.status_code == 404
    assert post.status_code == 405 and header(post, "allow") == "GET, HEAD"
    assert post_body == b"Method Not Allowed"


async def test_openai_routes_are_404_unless_enabled(gateway: Gateway) -> None:
    with trio.fail_after(10):
        [(res, _)] = parse(await send_raw(gateway, get("/v1/models")))
    assert res.status_code == 404


async def test_keep_alive_serves_pipelined_requests_in_order(gateway: Gateway) -> None:
    data = get("/healthz", close=False) + get("/readyz", close=False) + get("/nope")
    with trio.fail_after(10):
        responses = parse(await send_raw(gateway, data))
    assert [r.status_code for r, _ in responses] == [200, 200, 404]
    assert json.loads(responses[1][1])["ready"] is True


async def test_http_1_0_closes_after_one_response(gateway: Gateway) -> None:
    with trio.fail_after(10):
        raw = await send_raw(gateway, b"GET /healthz HTTP/1.0\r\n\r\n")
    assert raw.startswith(b"HTTP/1.1 200")
    assert raw.endswith(b'{"ok":true,"status":"live"}')


async def test_a_head_over_the_limit_gets_431(gateway: Gateway) -> None:
    big = "X-Big: " + "a" * (MAX_HEAD_BYTES + 10)
    with trio.fail_after(10):
        [(res, _)] = parse(await send_raw(gateway, get("/healthz", big)))
    assert res.status_code == 431


async def test_a_head_over_the_limit_in_small_pieces_gets_431(gateway: Gateway) -> None:
    with trio.fail_after(10):
        stream = await trio.open_tcp_stream("127.0.0.1", port_of(gateway))
        async with stream:
            await stream.send_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
            raw = bytearray()
            try:
                for _ in range(MAX_HEAD_BYTES // 1000 + 2):
                    await stream.send_all(b"X-Pad: " + b"b" * 990 + b"\r\n")
            except trio.BrokenResourceError:
                pass
            while chunk := await stream.receive_some(65_536):
                raw += chunk
    assert raw.startswith(b"HTTP/1.1 431")


async def test_a_malformed_request_gets_400(gateway: Gateway) -> None:
    with trio.fail_after(10):
        raw = await send_raw(gateway, b"GET /healthz HTTP/1.1\r\nno colon here\r\n\r\n")
    assert raw.startswith(b"HTTP/1.1 400")


async def test_a_body_over_the_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    config = local_config(gateway__http__endpoints__chatCompletions__enabled=True)
    async with running_gateway(tmp_path, config) as gw:
        big = 5 * 1024 * 1024
        auth = f"Authorization: Bearer {gw.auth.token}"
        head = get(
            "/v1/chat/completions", auth, f"Content-Length: {big}", method="POST", close=False
        )
        with trio.fail_after(10):
            stream = await trio.open_tcp_stream("127.0.0.1", port_of(gw))
            async with stream:
                await stream.send_all(head + b"x" * 1000)  # the rest never comes
                raw = bytearray()
                while chunk := await stream.receive_some(65_536):
                    raw += chunk
        [(res, _)] = parse(bytes(raw))
        assert res.status_code == 413
        assert header(res, "connection") == "close"


async def test_a_chunked_body_over_the_limit_gets_413(tmp_path: Path) -> None:
    config = local_config(gateway__http__endpoints__chatCompletions__enabled=True)
    async with running_gateway(tmp_path, config) as gw:
        chunk = b"x" * 65_536
        body = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(70)) + b"0\r\n\r\n"
        auth = f"Authorization: Bearer {gw.auth.token}"
        head = get("/v1/chat/completions", auth, "Transfer-Encoding: chunked", method="POST")
        with trio.fail_after(20):
            stream = await trio.open_tcp_stream("127.0.0.1", port_of(gw))
            async with stream:
                raw = bytearray()
                try:
                    await stream.send_all(head + body)
                except trio.BrokenResourceError:
                    pass
                try:
                    while data := await stream.receive_some(65_536):
                        raw += data
                except trio.BrokenResourceError:
                    pass
        assert raw.startswith(b"HTTP/1.1 413")


async def test_a_slow_head_is_cut_off_at_the_handshake_deadline(
    tmp_path: Path, autojump_clock: Any
) -> None:
    async with running_gateway(tmp_path) as gw:
        with trio.fail_after(60):
            stream = await trio.open_tcp_stream("127.0.0.1", port_of(gw))
            async with stream:
                await stream.send_all(b"GET /healthz HTTP/1.1\r\n")  # and no more
                start = trio.current_time()
                assert await stream.receive_some(1024) == b""
                assert 9.9 <= trio.current_time() - start <= 11
            assert gw.http_sockets == 0


async def test_a_body_that_never_ends_gets_408(tmp_path: Path, autojump_clock: Any) -> None:
    config = local_config(gateway__http__endpoints__chatCompletions__enabled=True)
    async with running_gateway(tmp_path, config) as gw:
        auth = f"Authorization: Bearer {gw.auth.token}"
        head = get("/v1/chat/completions", auth, "Content-Length: 100", method="POST", close=False)
        with trio.fail_after(120):
            stream = await trio.open_tcp_stream("127.0.0.1", port_of(gw))
            async with stream:
                await stream.send_all(head + b"{")
                raw = bytearray()
                while chunk := await stream.receive_some(65_536):
                    raw += chunk
        assert raw.startswith(b"HTTP/1.1 408")


async def test_an_idle_keep_alive_connection_is_closed(tmp_path: Path, autojump_clock: Any) -> None:
    async with running_gateway(tmp_path) as gw:
        with trio.fail_after(60):
            stream = await trio.open_tcp_stream("127.0.0.1", port_of(gw))
            async with stream:
                await stream.send_all(get("/healthz", close=False))
                start = trio.current_time()
                raw = bytearray()
                while chunk := await stream.receive_some(65_536):
                    raw += chunk  # the response, then the close after the idle timeout
                assert 4.9 <= trio.current_time() - start <= 6
        [(res, _)] = parse(bytes(raw))
        assert res.status_code == 200


async def test_a_foreign_origin_is_refused(gateway: Gateway) -> None:
    """The WebSocket upgrade's rule (`transports.access._origins`): the gateway's own origin only."""
    host = f"127.0.0.1:{port_of(gateway)}"

    async def status(origin: str) -> tuple[int, bytes]:
        [(res, body)] = parse(
            await send_raw(gateway, get("/healthz", f"Origin: {origin}", host=host))
        )
        return res.status_code, body

    with trio.fail_after(10):
        foreign = await status("https://evil.example")
        same = await status(f"http://{host}")
        other_port = await status("http://127.0.0.1:1")
        opaque = await status("null")
    assert foreign[0] == 403
    error = json.loads(foreign[1])["error"]
    assert error["type"] == "forbidden" and error["message"].startswith("origin not allowed")
    assert same[0] == 200
    assert other_port[0] == 403 and opaque[0] == 403


async def test_allowed_origins_are_read_from_the_config(tmp_path: Path) -> None:
    config = local_config(gateway__controlUi__allowedOrigins=["https://ui.example"])
    async with running_gateway(tmp_path, config) as gw:
        with trio.fail_after(10):
            [(res, _)] = parse(await send_raw(gw, get("/healthz", "Origin: https://ui.example")))
    assert res.status_code == 200


async def test_readyz_is_503_while_shutting_down(gateway: Gateway) -> None:
    with trio.fail_after(10):
        stream = await trio.open_tcp_stream("127.0.0.1", port_of(gateway))
        async with stream:
            await stream.send_all(get("/healthz", close=False))
            first = b""
            while not first.endswith(b'"status":"live"}'):  # the whole first response
                first += await stream.receive_some(65_536)
            gateway.begin_shutdown("test")  # the connection is kept alive
            await stream.send_all(get("/readyz"))
            raw = bytearray()
            while chunk := await stream.receive_some(65_536):
                raw += chunk
    [(res, body)] = parse(bytes(raw))
    assert res.status_code == 503
    assert json.loads(body)["failing"] == ["shutdown"]


async def test_readyz_is_503_without_a_store_or_a_generation(
    gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store whose writer failed is closed; a gateway without its publisher has published
    no generation. Each is named; /healthz still answers 200 (the process is alive)."""
    monkeypatch.setattr(gateway.supervisor.store, "_closed", True)
    with trio.fail_after(10):
        [(store, store_body)] = parse(await send_raw(gateway, get("/readyz")))
        monkeypatch.setattr(gateway, "publisher", None)
        [(both, both_body)] = parse(await send_raw(gateway, get("/ready")))
        [(live, _)] = parse(await send_raw(gateway, get("/healthz")))
    assert store.status_code == 503 and json.loads(store_body)["failing"] == ["store"]
    assert both.status_code == 503
    assert json.loads(both_body)["failing"] == ["store", "generation"]
    assert live.status_code == 200


async def test_websocket_and_http_share_the_port(gateway: Gateway) -> None:
    with trio.fail_after(10):
        async with open_client(gateway) as client:
            [(res, _)] = parse(await send_raw(gateway, get("/healthz")))
            assert res.status_code == 200
            assert (await client.request("health"))["ok"] is True


@pytest.mark.parametrize(
    "request_bytes",
    [b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 40, b"\r\n\r\n", b"GET\r\n\r\n"],
    ids=["tls-hello", "blank", "no-target"],
)
async def test_garbage_never_hurts_the_gateway(gateway: Gateway, request_bytes: bytes) -> None:
    with trio.fail_after(15):
        with trio.move_on_after(12):
            await send_raw(gateway, request_bytes, shutdown=True)
        [(res, _)] = parse(await send_raw(gateway, get("/healthz")))
    assert res.status_code == 200


async def test_an_upload_without_the_token_is_refused_before_its_body(tmp_path: Path) -> None:
    config = local_config(gateway__http__endpoints__chatCompletions__enabled=True)
    async with running_gateway(tmp_path, config) as gw:
        head = get("/v1/chat/completions", "Content-Length: 1000000", method="POST", close=False)
        with trio.fail_after(10):
            stream = await trio.open_tcp_stream("127.0.0.1", port_of(gw))
            async with stream:
                await stream.send_all(head)  # no body at all: the answer comes anyway
                raw = bytearray()
                while chunk := await stream.receive_some(65_536):
                    raw += chunk
        [(res, body)] = parse(bytes(raw))
        assert res.status_code == 401
        assert json.loads(body)["error"]["type"] == "unauthorized"


async def test_wrong_tokens_are_rate_limited_like_the_websockets(tmp_path: Path) -> None:
    async with running_gateway(tmp_path, remote_peer_addresses=frozenset({"127.0.0.1"})) as gw:
        wrong = get("/metrics", "Authorization: Bearer wrong")
        right = get("/metrics", f"Authorization: Bearer {gw.auth.token}")
        with trio.fail_after(20):
            statuses = [parse(await send_raw(gw, wrong))[0][0].status_code for _ in range(10)]
            [(limited, body)] = parse(await send_raw(gw, right))
    assert statuses == [401] * 10
    assert limited.status_code == 429  # locked out: even the right token waits
    assert int(header(limited, "retry-after") or 0) >= 1
    assert json.loads(body)["error"]["type"] == "rate_limited"
