"""What the nodes of a cluster say to each other, and where it goes.

Two kinds of channel (`actors.Channels`, Redis streams), named after a node:

- `inbox:<node>`: requests forwarded to the node and the answers to the requests it
  forwarded. One message each, msgpack:
  - `req`  {fid, from, hops, conn, id, method, params, traceparent?}: run this request here
    (`traceparent`: the forwarding node's RPC span, with telemetry on).
  - `res`  {fid, ok, payload?, error?}: an answer (`agent` has two: ack, then final).
  - `ev`   {fid, frames}: event frames for the forwarding connection (`runs.replay`).
  - `end`  {fid}: the request is done; nothing more will come for `fid`.
  - `cancel` {fid}: the client cancelled the request.
  - `hello` {from}: a node started (the others relay their events to it from now on).
- `events:<node>`: the frames of the node's own runs, for every other node's clients
  (`actors.EventHub.relay`). One message is a batch: a list of
  `[kind, run id, session key, frame, public frame]` (the public frame is `b""` when it is
  the frame itself, nil for a tool event).

`Outbox` queues what this node sends, bounded in bytes, and one task (`Outbox.run`) sends
it in order per channel, each channel's queue in one round trip, retrying while Redis is
away. Event batches are what gives way first when the bound is reached (counted in
`dropped_frames`); requests and answers are refused by `put` then (the caller answers
`UNAVAILABLE`).

`ForwardedClient` is the connection of another node as the method handlers see it;
`Forward` is a request this node forwarded, until its `end`.

`ClaimNote` and `ClaimFinal` are what an idempotency claim holds (`actors.Claims`): which
node accepted a run, and how it ended.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Final, Protocol

import attrs
import msgspec
import trio

from actors import (
    Channels,
    ClusterError,
    EventHub,
    RunRegistry,
    Supervisor,
    Ticket,
)
from runtime.protocol import UNAVAILABLE, GatewayError, RequestFrame, operator_scope_satisfied

__all__ = [
    "MAX_OUTBOX_BYTES",
    "Caller",
    "ClaimFinal",
    "ClaimNote",
    "ConnInfo",
    "Forward",
    "ForwardedClient",
    "MethodCaller",
    "Outbox",
    "RouterActors",
    "RouterHost",
    "answer_from_final",
    "conn_info",
    "decode_batch",
    "decode_message",
    "encode_message",
    "error_from",
    "error_to",
    "events_channel",
    "inbox_channel",
    "lost_reason",
    "started_ms_of",
    "unavailable",
]

log = logging.getLogger("clawlane.cluster")

MAX_OUTBOX_BYTES: Final = 64 * 1024 * 1024
RETRY_S: Final = 0.5

_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder()


def inbox_channel(node_id: str) -> str:
    return f"inbox:{node_id}"


def events_channel(node_id: str) -> str:
    return f"events:{node_id}"


def encode_message(message: dict[str, Any]) -> bytes:
    return _encoder.encode(message)


def decode_message(data: bytes) -> dict[str, Any]:
    message = _decoder.decode(data)
    if not isinstance(message, dict):
        raise ValueError("a node message is a map")
    return message


_Batch = list[tuple[int, str, str, bytes, "bytes | None"]]
_batch_decoder = msgspec.msgpack.Decoder(list[tuple[int, str, str, bytes, bytes | None]])


def decode_batch(data: bytes) -> _Batch:
    """An event batch, each public frame as the hub gave it (the frame itself again, or
    None for a tool event)."""
    return [
        (kind, run_id, key, frame, frame if public == b"" else public)
        for kind, run_id, key, frame, public in _batch_decoder.decode(data)
    ]


def error_to(error: GatewayError) -> dict[str, Any]:
    shape = msgspec.to_builtins(error.shape())
    assert isinstance(shape, dict)
    return shape


def error_from(shape: dict[str, Any]) -> GatewayError:
    return GatewayError(
        str(shape.get("code", "UNAVAILABLE")),
        str(shape.get("message", "")),
        details=shape.get("details", msgspec.UNSET),
        retryable=shape.get("retryable", msgspec.UNSET),
        retry_after_ms=shape.get("retryAfterMs", msgspec.UNSET),
    )


class ConnInfo(msgspec.Struct, frozen=True):
    """Who a forwarded request comes from: what its handler on the owner checks."""

    connId: str
    role: str
    scopes: list[str]
    granted: list[str]
    auth: str
    device: str | None = None
    scoped: bool = False
    tools: bool = False


class ClaimNote(msgspec.Struct, frozen=True):
    """An idempotency claim's ack: the node that accepted the run, and for what."""

    node: str
    sessionKey: str
    method: str


class ClaimFinal(msgspec.Struct, frozen=True, omit_defaults=True):
    """How a claimed run ended: the `agent.wait` status, and the final answers."""

    wait: str
    error: str | None = None
    startedAt: int | None = None
    endedAt: int | None = None
    result: Any = None
    """The `agent` final result payload (`{payloads, meta}`) when it ended ok."""


@attrs.define(eq=False)
class Outbox:
    """Messages to other nodes, sent in order per channel by `run`."""

    channels: Channels
    max_bytes: int = MAX_OUTBOX_BYTES
    queued_bytes: int = 0
    frames_queued: int = 0
    """Event frames queued for this node's feed, all told."""
    dropped_frames: int = 0
    send_errors: int = 0
    _queues: dict[str, list[bytes]] = attrs.field(factory=dict)
    _frames: _Batch = attrs.field(factory=list)
    _frames_channel: str = ""
    _frame_bytes: int = 0
    _wake: trio.Event = attrs.field(factory=trio.Event)

    def put(self, channel: str, message: dict[str, Any]) -> bool:
        """Queue `message` for `channel`; False (nothing queued) past the byte bound."""
        data = encode_message(message)
        if self.queued_bytes + self._frame_bytes + len(data) > self.max_bytes:
            return False
        self._queues.setdefault(channel, []).append(data)
        self.queued_bytes += len(data)
        self._wake.set()
        return True

    def frame(
        self, channel: str, kind: int, run_id: str, key: str, frame: bytes, public: bytes | None
    ) -> None:
        """Queue one event frame for this node's event feed (dropped past the bound)."""
        size = len(frame) + (0 if public is None or public is frame else len(public)) + 64
        if self.queued_bytes + self._frame_bytes + size > self.max_bytes:
            self.dropped_frames += 1
            return
        self._frames_channel = channel
        # b"": the public frame is the frame itself; None: no public frame (a tool event)
        shared = None if public is None else (b"" if public is frame else public)
        self._frames.append((kind, run_id, key, frame, shared))
        self._frame_bytes += size
        self.frames_queued += 1
        self._wake.set()

    def _take(self) -> dict[str, list[bytes]]:
        queues, self._queues = self._queues, {}
        if self._frames:
            batch, self._frames = self._frames, []
            self._frame_bytes = 0
            queues.setdefault(self._frames_channel, []).append(_encoder.encode(batch))
        return queues

    async def run(self) -> None:
        """Send everything queued, in order per channel, until cancelled."""
        while True:
            await self._wake.wait()
            self._wake = trio.Event()
            for channel, messages in self._take().items():
                await self._send(channel, messages)

    async def _send(self, channel: str, messages: list[bytes]) -> None:
        size = sum(len(m) for m in messages)
        while True:
            try:
                await self.channels.send(channel, messages)
                break
            except ClusterError as exc:
                self.send_errors += 1
                log.warning("messages to %s not sent yet, retrying: %s", channel, exc)
                await trio.sleep(RETRY_S)
        if not channel.startswith("events:"):
            self.queued_bytes -= size


class MethodCaller(Protocol):
    """The method table as the router uses it: it serves the requests it takes here, and
    is where the connections reach the router (`router`, set when the node starts)."""

    router: Any

    async def call(
        self,
        conn: Any,
        frame: RequestFrame,
        scope: trio.CancelScope,
        ticket: Ticket | None = None,
    ) -> None: ...

    def admissible(self, conn: Any, frame: RequestFrame) -> bool: ...


class RouterActors(Protocol):
    """What runs, as the router sees it (the gateway's `actors` role)."""

    @property
    def supervisor(self) -> Supervisor: ...
    @property
    def hub(self) -> EventHub: ...
    @property
    def registry(self) -> RunRegistry: ...
    @property
    def cron(self) -> object | None:
        """This node's cron scheduler while it runs cron, else None."""


class RouterHost(Protocol):
    """The gateway as the router sees it: what runs (`actors`), the method table, and
    where the other nodes' notices land."""

    @property
    def actors(self) -> RouterActors: ...
    @property
    def methods(self) -> MethodCaller: ...

    def on_note(self, note: dict[str, Any]) -> None:
        """A notice another node sent every node (`Router.tell_all`) or this one."""

    def on_node(self, node: str, how: str) -> None:
        """A node `joined` (first seen), said `hello` (its process started) or is `gone`."""


class Caller(Protocol):
    """The connection a routed request came from (a `methods.Client`)."""

    role: str
    scopes: frozenset[str]
    granted_scopes: list[str]
    auth_method: str
    device_id: str | None
    scoped: bool

    @property
    def conn_id(self) -> str: ...
    @property
    def wants_tool_events(self) -> bool: ...
    def push_event(self, frame: bytes) -> None: ...
    def respond(self, req_id: str, payload: Any = None) -> None: ...
    def respond_error(
        self, req_id: str, error: GatewayError, payload: Any = msgspec.UNSET
    ) -> None: ...


def unavailable(message: str) -> GatewayError:
    return GatewayError(UNAVAILABLE, message, retryable=True, retry_after_ms=1_000)


@attrs.define(eq=False)
class Forward:
    """A request this node forwarded, until its `end` (or its node is gone)."""

    conn: Caller
    req_id: str
    method: str
    node: str
    run_id: str | None = None
    """The run an `agent.wait` asks for."""
    deadline: float = float("inf")
    """When an `agent.wait` stops waiting (trio's clock)."""
    incarnation: int | None = None
    """When `node` started, as its record said when the request was sent (a node started
    again under its id never answers what its former process was sent)."""
    answers: int = 0
    done: bool = False
    changed: trio.Event = attrs.field(factory=trio.Event)

    def poke(self) -> None:
        self.changed.set()
        self.changed = trio.Event()


class ForwardedClient:
    """The connection of another node, as the method handlers here see it: its identity
    and scopes, its answers sent back to that node. Event frames pushed to it go back too
    only when `relay_events` (a `runs.replay`): a run's live events reach the other node
    through the event feeds."""

    def __init__(
        self, send: Callable[[str, dict[str, Any]], None], node: str, fid: str, info: ConnInfo
    ) -> None:
        self._send = send
        self.node = node
        self.fid = fid
        self._conn_id = f"{node}/{info.connId}"
        self.role = info.role
        self.scopes = frozenset(info.scopes)
        self.granted_scopes = list(info.granted)
        self.auth_method = info.auth
        self.device_id = info.device
        self.scoped = info.scoped
        self._tools = info.tools
        self.viewed_sessions: set[str] = set()
        self.pending: dict[str, Any] = {}
        self.relay_events = False

    @property
    def conn_id(self) -> str:
        return self._conn_id

    @property
    def wants_tool_events(self) -> bool:
        return self._tools

    def has_scope(self, scope: str) -> bool:
        return operator_scope_satisfied(scope, self.scopes)

    def push_event(self, frame: bytes) -> None:
        if self.relay_events:
            self._send(self.node, {"t": "ev", "fid": self.fid, "frames": [frame]})

    def respond(self, req_id: str, payload: Any = None) -> None:
        self._send(self.node, {"t": "res", "fid": self.fid, "ok": True, "payload": payload})

    def respond_error(self, req_id: str, error: GatewayError, payload: Any = msgspec.UNSET) -> None:
        message: dict[str, Any] = {"t": "res", "fid": self.fid, "ok": False}
        message["error"] = error_to(error)
        if payload is not msgspec.UNSET:
            message["payload"] = payload
        self._send(self.node, message)


def conn_info(conn: Caller) -> dict[str, Any]:
    info = ConnInfo(
        connId=conn.conn_id,
        role=conn.role,
        scopes=sorted(conn.scopes),
        granted=list(conn.granted_scopes),
        auth=conn.auth_method,
        device=conn.device_id,
        scoped=conn.scoped,
        tools=conn.wants_tool_events,
    )
    data = msgspec.to_builtins(info)
    assert isinstance(data, dict)
    return data


def started_ms_of(record: bytes) -> int | None:
    """A node record's `startedAtMs` (`_cluster_node`), None if it has none."""
    try:
        value = msgspec.json.decode(record).get("startedAtMs")
    except (msgspec.DecodeError, AttributeError):
        return None
    return value if isinstance(value, int) else None


def lost_reason(run_id: str, node: str) -> str:
    return f"run {run_id} was interrupted: node {node} was lost"


_final_decoder: Final = msgspec.json.Decoder(ClaimFinal)


def answer_from_final(conn: Caller, frame: RequestFrame, run_id: str, final: bytes) -> None:
    """A repeated key whose run ended on another node: its answer from the claim's final."""
    claim = _final_decoder.decode(final)
    if frame.method == "agent.wait":
        result: dict[str, Any] = {"runId": run_id, "status": claim.wait}
        for name in ("startedAt", "endedAt", "error"):
            if getattr(claim, name) is not None:
                result[name] = getattr(claim, name)
        conn.respond(frame.id, result)
    elif claim.wait == "error":
        message = claim.error or "run failed"
        payload: dict[str, Any] = {"runId": run_id, "status": "error", "summary": message}
        conn.respond_error(frame.id, GatewayError(UNAVAILABLE, message), payload=payload)
    elif frame.method == "agent":
        result = claim.result or {"payloads": [], "meta": {}}
        payload = {"runId": run_id, "status": "ok", "summary": "completed", "result": result}
        conn.respond(frame.id, payload)
    else:
        conn.respond(frame.id, {"runId": run_id, "status": "ok"})
