"""The server's WebSocket framing, byte by byte, over a real TCP socket (RFC 6455).

`transports.websocket._server` parses what clients send by hand (wsproto only does the upgrade): these
tests send crafted frames (fragments, pings between fragments, 16- and 64-bit lengths,
frames split across writes, the upgrade and a frame in one write) and every kind of
protocol error, and check what comes back: answers, pongs, and the close code (1002 for a
protocol error, 1007 for text that is not UTF-8, the peer's own code echoed)."""

from __future__ import annotations

import base64
import json
import os
import struct
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from tests.conftest import local_config, running_gateway
from transports.server._gateway import Gateway

CONNECT = {
    "minProtocol": 4,
    "maxProtocol": 4,
    "client": {"id": "test", "version": "1", "platform": "p", "mode": "test"},
    "scopes": ["operator.read"],
}
"""Unsigned and without a token: these tests' gateway has `gateway.auth.mode: "none"`
(frames are the subject here; a connect pipelined with the upgrade cannot sign the
challenge it has not seen)."""


def frame(
    opcode: int, payload: bytes, *, fin: bool = True, mask: bool = True, rsv: int = 0
) -> bytes:
    """A client frame (masked unless told otherwise)."""
    first = (0x80 if fin else 0) | rsv | opcode
    n = len(payload)
    if n < 126:
        head = bytes((first, (0x80 if mask else 0) | n))
    elif n < 65_536:
        head = struct.pack("!BBH", first, (0x80 if mask else 0) | 126, n)
    else:
        head = struct.pack("!BBQ", first, (0x80 if mask else 0) | 127, n)
    if not mask:
        return head + payload
    key = os.urandom(4)
    masked = (
        bytes(b ^ key[i % 4] for i, b in enumerate(payload)) if n < 4096 else _mask(payload, key)
    )
    return head + key + masked


def _mask(payload: bytes, key: bytes) -> bytes:
    full = key * (len(payload) // 4 + 1)
    return (int.from_bytes(payload, "big") ^ int.from_bytes(full[: len(payload)], "big")).to_bytes(
        len(payload), "big"
    )


def request(req_id: str, method: str, params: Any = None) -> bytes:
    body: dict[str, Any] = {"type": "req", "id": req_id, "method": method}
    if params is not None:
        body["params"] = params
    return json.dumps(body).encode()


class RawSocket:
    """A WebSocket client made of a TCP stream and the frame rules, nothing else."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.buf = bytearray()

    async def read_frame(self) -> tuple[int, bytes]:
        """The next server frame: (opcode, payload). Server frames are never masked."""
        while True:
            if len(self.buf) >= 2:
                b0, b1 = self.buf[0], self.buf[1]
                assert not b1 & 0x80, "server frames must not be masked"
                n, head = b1 & 0x7F, 2
                if n == 126 and len(self.buf) >= 4:
                    n, head = struct.unpack("!H", self.buf[2:4])[0], 4
                elif n == 127 and len(self.buf) >= 10:
                    n, head = struct.unpack("!Q", self.buf[2:10])[0], 10
                if (n < 126 or head > 2) and len(self.buf) >= head + n:
                    payload = bytes(self.buf[head : head + n])
                    del self.buf[: head + n]
                    assert b0 & 0x80  # the server sends whole frames
                    return b0 & 0x0F, payload
            data = await self.stream.receive_some(65_536)
            if not data:
                raise EOFError("the server closed the TCP connection")
            self.buf += data

    async def read_json(self) -> dict[str, Any]:
        opcode, payload = await self.read_frame()
        assert opcode == 0x1, (opcode, payload)
        result: dict[str, Any] = json.loads(payload)
        return result

    async def response(self, req_id: str) -> dict[str, Any]:
        while True:
            msg = await self.read_json()
            if msg["type"] == "res" and msg["id"] == req_id:
                return msg

    async def closed_with(self) -> int | None:
        """Read until the server's close frame; its code (None when it has none)."""
        while True:
            opcode, payload = await self.read_frame()
            if opcode == 0x8:
                return struct.unpack("!H", payload[:2])[0] if payload else None

    async def send(self, data: bytes) -> None:
        await self.stream.send_all(data)


def upgrade_request(port: int) -> bytes:
    key = base64.b64encode(os.urandom(16)).decode()
    return (
        f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
        f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
    ).encode()


@asynccontextmanager
async def raw_socket(
    gw: Gateway, *, first: bytes = b"", handshake: bool = True
) -> AsyncIterator[RawSocket]:
    port = gw.listeners[0].socket.getsockname()[1]
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        sock = RawSocket(stream)
        await sock.send(upgrade_request(port) + first)
        while b"\r\n\r\n" not in sock.buf:
            sock.buf += await stream.receive_some(65_536)
        head, _, rest = bytes(sock.buf).partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 101"), head
        sock.buf = bytearray(rest)
        challenge = await sock.read_json()
        assert challenge["event"] == "connect.challenge"
        if handshake:
            await sock.send(frame(0x1, request("c", "connect", CONNECT)))
            assert (await sock.response("c"))["ok"] is True
        yield sock


@pytest.fixture
async def gw(tmp_path: Path) -> AsyncIterator[Gateway]:
    async with running_gateway(tmp_path, local_config(gateway__auth__mode="none")) as gateway:
        yield gateway


async def test_fragments_with_a_ping_between_them_make_one_message_and_a_pong(gw: Gateway) -> None:
    with trio.fail_after(10):
        async with raw_socket(gw) as sock:
            body = request("h1", "health")
            await sock.send(frame(0x1, body[:5], fin=False))
            await sock.send(frame(0x9, b"are you there", fin=True))
            await sock.send(frame(0x0, body[5:12], fin=False) + frame(0x0, body[12:], fin=True))
            assert await sock.read_frame() == (0xA, b"are you there")
            assert (await sock.response("h1"))["payload"]["ok"] is True


async def test_long_lengths_split_writes_binary_frames_and_a_pipelined_first_frame(
    gw: Gateway,
) -> None:
    with trio.fail_after(20):
        async with raw_socket(
            gw, first=frame(0x1, request("c", "connect", CONNECT)), handshake=False
        ) as sock:
            assert (await sock.response("c"))["ok"] is True  # the frame sent with the upgrade
            for pad, req_id in ((40_000, "h16"), (70_000, "h64big")):  # 16- and 64-bit forms
                await sock.send(frame(0x1, request(req_id, "health", {"pad": "x" * pad})))
                assert (await sock.response(req_id))["payload"]["ok"] is True
            body = request("h64", "health")
            long_form = bytes((0x81, 0x80 | 127)) + struct.pack("!Q", len(body))
            key = os.urandom(4)
            data = long_form + key + _mask(body, key)  # a 64-bit length for a short payload
            for i in range(len(data)):  # one byte per write
                await sock.send(data[i : i + 1])
            assert (await sock.response("h64"))["payload"]["ok"] is True
            await sock.send(frame(0x2, request("hb", "health")))  # binary carrying JSON
            assert (await sock.response("hb"))["payload"]["ok"] is True


@pytest.mark.parametrize(
    ("name", "data", "code"),
    [
        ("unmasked", frame(0x1, b"{}", mask=False), 1002),
        ("reserved bits", frame(0x1, b"{}", rsv=0x40), 1002),
        ("reserved opcode", frame(0x3, b"x"), 1002),
        ("reserved control opcode", frame(0xB, b"x"), 1002),
        ("fragmented ping", frame(0x9, b"x", fin=False), 1002),
        ("long ping", frame(0x9, b"x" * 126), 1002),
        ("continuation first", frame(0x0, b"x"), 1002),
        ("start inside a message", frame(0x1, b"x", fin=False) + frame(0x1, b"y"), 1002),
        ("text that is not UTF-8", frame(0x1, b"\xff\xfe{}"), 1007),
        ("one-byte close", frame(0x8, b"\x03"), 1002),
        ("close with a reserved code", frame(0x8, struct.pack("!H", 1005)), 1002),
        ("close with an unassigned code", frame(0x8, struct.pack("!H", 2000)), 1002),
        ("close reason not UTF-8", frame(0x8, struct.pack("!H", 1000) + b"\xff"), 1007),
    ],
)
async def test_protocol_errors_close_with_their_code(
    gw: Gateway, name: str, data: bytes, code: int
) -> None:
    with trio.fail_after(10):
        async with raw_socket(gw) as sock:
            await sock.send(data)
            assert await sock.closed_with() == code, name
        # the gateway carries on for everyone else
        async with raw_socket(gw) as other:
            await other.send(frame(0x1, request("h", "health")))
            assert (await other.response("h"))["payload"]["ok"] is True


@pytest.mark.parametrize(
    ("sent", "echoed"), [(struct.pack("!H", 4001) + b"bye", 4001), (b"", None)]
)
async def test_the_peers_close_is_echoed(gw: Gateway, sent: bytes, echoed: int | None) -> None:
    with trio.fail_after(10):
        async with raw_socket(gw) as sock:
            await sock.send(frame(0x8, sent))
            assert await sock.closed_with() == echoed
            with pytest.raises(EOFError):
                await sock.read_frame()  # then the server drops the TCP connection


async def test_a_declared_length_over_the_limit_closes_1009_before_the_payload(gw: Gateway) -> None:
    with trio.fail_after(10):
        async with raw_socket(gw, handshake=False) as sock:  # pre-auth: 64 KiB
            head = bytes((0x81, 0x80 | 127)) + struct.pack("!Q", 1 << 40) + os.urandom(4)
            await sock.send(head)  # a terabyte announced, nothing of it sent
            assert await sock.closed_with() == 1009


async def test_the_size_limit_holds_during_the_close_grace(gw: Gateway) -> None:
    gw.close_grace_s = 30
    with trio.fail_after(20):
        async with raw_socket(gw) as sock:
            (conn,) = gw.connections.values()
            head = bytes((0x81, 0x80 | 127)) + struct.pack("!Q", 1 << 30) + os.urandom(4)
            await sock.send(head)  # 1 GiB announced: over the 25 MiB limit
            assert await sock.closed_with() == 1009
            chunk = os.urandom(1 << 20)
            for _ in range(8):  # the client sends on; the gateway reads it and keeps nothing
                await sock.send(chunk)
                await trio.testing.wait_all_tasks_blocked()
                assert conn.ws.received_bytes_held <= 64 * 1024


async def test_a_client_that_pings_and_never_reads_is_closed_1008_with_its_outbox_bounded(
    tmp_path: Path,
) -> None:
    bound = 64 * 1024
    config = local_config(gateway__auth__mode="none")
    async with running_gateway(tmp_path, config, max_buffered_bytes=bound) as gw:
        gw.close_grace_s = 30
        with trio.fail_after(30):
            async with raw_socket(gw) as sock:
                (conn,) = gw.connections.values()
                pings = frame(0x9, b"p" * 125) * 200
                peak = 0
                for _ in range(2000):  # at most ~26 MB of pings; the kernel buffers far less
                    await sock.send(pings)
                    await trio.testing.wait_all_tasks_blocked()
                    peak = max(peak, conn.ws.buffered_bytes)
                    if conn.ws.close_reason is not None:
                        break
                assert conn.ws.close_reason == "slow consumer"
                assert peak <= bound + 200
                while True:  # the pongs already written, then the close
                    opcode, payload = await sock.read_frame()
                    if opcode == 0x8:
                        break
                    assert opcode == 0xA
                assert struct.unpack("!H", payload[:2])[0] == 1008
