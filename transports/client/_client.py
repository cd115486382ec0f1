"""A Python gateway client: handshake, request correlation, expect-final, events.

    async with open_gateway_client("ws://127.0.0.1:18789", token=T) as client:
        ack = await client.request("agent", {"message": "hi", "idempotencyKey": "k1"})
        final = await client.request("agent", {...}, expect_final=True)

Events arrive on `client.events` (a bounded memory channel receive side; when it is full
the oldest undelivered events are NOT kept: the reader waits, so a consumer that never reads
events should pass `on_event` instead) or through the `on_event` callback.

Errors in this module:
- `GatewayClientError`: could not connect, or the connection broke.
- `GatewayAuthError` (a `GatewayClientError`): the gateway refused the handshake.
- `GatewayRequestError`: a request failed; has `code`, `message`, `details`, `payload`.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import urllib.parse
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Final

import msgspec
import trio
import trio_websocket

from runtime.devices import DeviceIdentity, SignedFields

from .._errors import TransportError
from ._url import DEFAULT_URL

DEFAULT_SCOPES: Final = ("operator.admin", "operator.read", "operator.write")
"""What this client asks for unless told otherwise (always sent explicitly: a connect
without `scopes` is granted none)."""
_decoder: Final = msgspec.json.Decoder()
_encoder: Final = msgspec.json.Encoder()


class GatewayClientError(TransportError):
    """Could not reach the gateway, or the connection broke."""


class GatewayAuthError(GatewayClientError):
    """The gateway refused the handshake (token, protocol, params)."""

    def __init__(self, message: str, *, code: str = "", details: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.details = details


class GatewayRequestError(TransportError):
    """A request was answered with `ok:false`."""

    def __init__(
        self, code: str, message: str, *, details: Any = None, payload: Any = None
    ) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.details = details
        self.payload = payload


EventCallback = Callable[[str, Any, int | None], None]
FrameCallback = Callable[[dict[str, Any]], None]


class GatewayClient:
    """Use `open_gateway_client`."""

    def __init__(
        self,
        ws: trio_websocket.WebSocketConnection,
        on_event: EventCallback | None,
        on_frame: FrameCallback | None = None,
    ) -> None:
        self._ws = ws
        self._on_frame = on_frame
        self._ids = itertools.count(1)
        self._pending: dict[str, trio.MemorySendChannel[dict[str, Any]]] = {}
        self._on_event = on_event
        self._events_send, self.events = trio.open_memory_channel[tuple[str, Any, int | None]](1024)
        self.hello: dict[str, Any] = {}
        self.challenge: dict[str, Any] = {}
        self.device_token: str | None = None
        """`hello-ok.auth.deviceToken`, when the gateway issued one to our device."""
        self.last_request_id = ""
        """The id of the most recent request (for a `cancel` frame)."""
        self.closed: trio_websocket.CloseReason | None = None
        self._broken = trio.Event()

    async def _send(self, frame: dict[str, Any]) -> None:
        try:
            await self._ws.send_message(_encoder.encode(frame).decode())
        except trio_websocket.ConnectionClosed as exc:
            raise GatewayClientError(f"connection closed: {exc.reason}") from exc

    async def request(
        self,
        method: str,
        params: Any = None,
        *,
        expect_final: bool = False,
        timeout: float | None = 30.0,  # noqa: ASYNC109 - per-request deadlines are the API
    ) -> Any:
        """Send a request and return its payload. With `expect_final`, skip the
        `status:"accepted"` ack and return the final response. A checkpoint."""
        req_id = f"r{next(self._ids)}"
        self.last_request_id = req_id
        send, recv = trio.open_memory_channel[dict[str, Any]](4)
        self._pending[req_id] = send
        frame: dict[str, Any] = {"type": "req", "id": req_id, "method": method}
        if params is not None:
            frame["params"] = params
        try:
            await self._send(frame)
            with trio.fail_after(timeout if timeout is not None else float("inf")):
                while True:
                    try:
                        res = await recv.receive()
                    except trio.EndOfChannel:
                        raise GatewayClientError(
                            f"connection closed before {method} was answered"
                        ) from None
                    payload = res.get("payload")
                    if not res.get("ok"):
                        err = res.get("error") or {}
                        raise GatewayRequestError(
                            err.get("code", "UNKNOWN"),
                            err.get("message", "request failed"),
                            details=err.get("details"),
                            payload=payload,
                        )
                    if (
                        expect_final
                        and isinstance(payload, dict)
                        and payload.get("status") == "accepted"
                    ):
                        continue
                    return payload
        finally:
            self._pending.pop(req_id, None)

    async def cancel(self, req_id: str) -> None:
        await self._send({"type": "cancel", "id": req_id})

    async def send_raw(self, text: str) -> None:
        """Send any text frame (tests and tools)."""
        try:
            await self._ws.send_message(text)
        except trio_websocket.ConnectionClosed as exc:
            raise GatewayClientError(f"connection closed: {exc.reason}") from exc

    async def _reader(self) -> None:
        try:
            while True:
                text = await self._ws.get_message()
                try:
                    frame = _decoder.decode(text)
                except msgspec.DecodeError:
                    continue
                if not isinstance(frame, dict):
                    continue
                if self._on_frame is not None:
                    self._on_frame(frame)
                kind = frame.get("type")
                if kind == "res":
                    chan = self._pending.get(str(frame.get("id")))
                    if chan is not None:
                        try:
                            chan.send_nowait(frame)
                        except trio.WouldBlock:
                            pass
                elif kind == "event":
                    item = (str(frame.get("event")), frame.get("payload"), frame.get("seq"))
                    if self._on_event is not None:
                        self._on_event(*item)
                    else:
                        await self._events_send.send(item)
        except trio_websocket.ConnectionClosed as exc:
            self.closed = exc.reason
        finally:
            self._broken.set()
            for chan in self._pending.values():
                chan.close()
            self._events_send.close()

    async def _wait_challenge(self) -> None:
        try:
            with trio.fail_after(15):
                first = _decoder.decode(await self._ws.get_message())
            if self._on_frame is not None and isinstance(first, dict):
                self._on_frame(first)
        except (trio_websocket.ConnectionClosed, trio.TooSlowError) as exc:
            raise GatewayClientError("the gateway did not send connect.challenge") from exc
        if not (isinstance(first, dict) and first.get("event") == "connect.challenge"):
            raise GatewayClientError("the gateway did not send connect.challenge first")
        payload = first.get("payload")
        self.challenge = payload if isinstance(payload, dict) else {}

    async def _handshake(
        self,
        *,
        token: str | None,
        client_id: str,
        mode: str,
        scopes: list[str] | None,
        caps: list[str] | None,
        min_protocol: int,
        max_protocol: int,
        device: DeviceIdentity | None = None,
        device_token: str | None = None,
    ) -> None:
        granted = list(scopes) if scopes is not None else list(DEFAULT_SCOPES)
        params: dict[str, Any] = {
            "minProtocol": min_protocol,
            "maxProtocol": max_protocol,
            "client": {"id": client_id, "version": "0.1.0", "platform": "python", "mode": mode},
            "role": "operator",
            "scopes": granted,
        }
        if caps:
            params["caps"] = caps
        auth = {k: v for k, v in (("token", token), ("deviceToken", device_token)) if v}
        if auth:
            params["auth"] = auth
        if device is not None:
            params["device"] = device.connect_device(
                SignedFields(
                    device_id=device.device_id,
                    client_id=client_id,
                    client_mode=mode,
                    role="operator",
                    scopes=tuple(granted),
                    signed_at_ms=int(self.challenge.get("ts") or 0),
                    token=token or device_token or "",
                    nonce=str(self.challenge.get("nonce") or ""),
                    platform="python",
                )
            )
        try:
            self.hello = await self.request("connect", params, timeout=15)
        except GatewayRequestError as exc:
            raise GatewayAuthError(exc.message, code=exc.code, details=exc.details) from exc
        except GatewayClientError as exc:
            reason = self.closed.reason if self.closed else ""
            raise GatewayAuthError(
                f"the gateway closed the connection during the handshake {reason}".strip()
            ) from exc
        hello_auth: Any = self.hello.get("auth") if isinstance(self.hello, dict) else None
        if isinstance(hello_auth, dict) and isinstance(hello_auth.get("deviceToken"), str):
            self.device_token = hello_auth["deviceToken"]


def _handshake_failed(url: str, exc: trio_websocket.HandshakeError) -> GatewayClientError:
    if isinstance(exc, trio_websocket.ConnectionRejected):
        body = (exc.body or b"").decode("utf-8", "replace").strip()
        return GatewayClientError(
            f"the gateway at {url} refused the WebSocket upgrade: HTTP {exc.status_code}"
            + (f" {body}" if body else "")
        )
    return GatewayClientError(f"WebSocket handshake with {url} failed: {exc!r}")


@asynccontextmanager
async def open_websocket(
    url: str,
    *,
    max_message_size: int = 25 * 1024 * 1024,
    message_queue_size: int = 64,
    connect_timeout: float = 10.0,
    local_address: str | None = None,
    origin: str | None = None,
) -> AsyncIterator[trio_websocket.WebSocketConnection]:
    """A trio-websocket client connection whose TCP stream we own and always close.

    (trio-websocket leaves the socket open when the server starts the close handshake, so
    we open the stream ourselves and close it on the way out.) `local_address` binds the
    client's end (e.g. another loopback address); `origin` sends an `Origin` header as a
    browser would. Raises `GatewayClientError` when the gateway cannot be reached or
    refuses the upgrade.
    """
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "ws" or not parts.hostname:
        raise GatewayClientError(f"unsupported gateway url {url!r} (expected ws://host:port)")
    port = parts.port or 80
    resource = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    try:
        with trio.fail_after(connect_timeout):
            stream = await trio.open_tcp_stream(parts.hostname, port, local_address=local_address)
    except (OSError, trio.TooSlowError) as exc:
        reason = str(exc) or type(exc).__name__
        raise GatewayClientError(f"cannot reach the gateway at {url}: {reason}") from exc
    try:
        async with trio.open_nursery() as nursery:
            try:
                ws = await trio_websocket.wrap_client_stream(
                    nursery,
                    stream,
                    parts.hostname,
                    resource,
                    max_message_size=max_message_size,
                    message_queue_size=message_queue_size,
                    extra_headers=[(b"Origin", origin.encode())] if origin else None,
                )
            except trio_websocket.HandshakeError as exc:
                raise _handshake_failed(url, exc) from exc
            try:
                yield ws
            finally:
                with trio.move_on_after(2) as cleanup:
                    cleanup.shield = True
                    await ws.aclose()
                nursery.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        if len(group.exceptions) == 1:
            first = group.exceptions[0]
            if isinstance(first, trio_websocket.HandshakeError):
                raise _handshake_failed(url, first) from first
            raise first from None
        raise
    finally:
        await trio.aclose_forcefully(stream)


@asynccontextmanager
async def open_gateway_client(
    url: str = DEFAULT_URL,
    *,
    token: str | None = None,
    client_id: str = "cli",
    mode: str = "cli",
    scopes: list[str] | None = None,
    caps: list[str] | None = None,
    on_event: EventCallback | None = None,
    on_frame: FrameCallback | None = None,
    min_protocol: int = 4,
    max_protocol: int = 4,
    max_message_size: int = 25 * 1024 * 1024,
    device: DeviceIdentity | None = None,
    device_token: str | None = None,
    local_address: str | None = None,
    origin: str | None = None,
) -> AsyncIterator[GatewayClient]:
    """Connect and complete the handshake. Raises `GatewayClientError`/`GatewayAuthError`.

    `scopes` None asks for `DEFAULT_SCOPES` (always sent explicitly). With `device`, the
    connect is signed (v3) over the challenge nonce; a gateway that pairs the device
    answers with a device token (`client.device_token`), which a later connect may pass
    as `device_token` instead of the shared `token`."""
    token = token if token is not None else os.environ.get("CLAWLANE_GATEWAY_TOKEN") or None
    async with contextlib.AsyncExitStack() as stack:
        ws = await stack.enter_async_context(
            open_websocket(
                url, max_message_size=max_message_size, local_address=local_address, origin=origin
            )
        )
        client = GatewayClient(ws, on_event, on_frame)
        await client._wait_challenge()
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(client._reader)
                try:
                    await client._handshake(
                        token=token,
                        client_id=client_id,
                        mode=mode,
                        scopes=scopes,
                        caps=caps,
                        min_protocol=min_protocol,
                        max_protocol=max_protocol,
                        device=device,
                        device_token=device_token,
                    )
                    yield client
                finally:
                    nursery.cancel_scope.cancel()
        except BaseExceptionGroup as group:
            # The reader never fails; surface the caller's own exception as it was raised.
            if len(group.exceptions) == 1:
                raise group.exceptions[0] from None
            raise
