"""The load tool's side of the wire (`clawlane loadtest`): its WebSocket client and what it
judges.

`_Conn` is one connection: an RFC 6455 client on a trio stream (the HTTP upgrade by hand,
masked frames out and server frames in through `_wscodec`, one coalesced `send_all` per
connection), its requests (`connect`, `agent`, ...) and the events it receives, judged per
run (`_Track`: agent `seq` 1..M without loss, duplicates or reordering; the chat terminal)
and per connection (frame `seq` without gaps). `_Loadtest` holds one load test's state:
the options, the counters, the latency histogram (`_Histogram`), the session drivers.

Errors: `LoadtestError`.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import os
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import attrs
import msgspec
import trio

from .._errors import TransportError
from ..client import DEFAULT_URL
from ..websocket import CLOSE, PING, Control, FrameError, FrameParser, client_frame

SCOPED_CAP: Final = "session-scoped-events"
GATEWAY_MAX_INFLIGHT: Final = 256  # transports.server._connection.MAX_INFLIGHT_REQUESTS
SUBSCRIBE_METHOD: Final = "sessions.messages.subscribe"
RECEIVE_CHUNK: Final = 262_144
_WS_GUID: Final = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
_encoder: Final = msgspec.json.Encoder()


class LoadtestError(TransportError):
    """The load test could not run (gateway unreachable, handshake refused, bad options)."""


# --- options and report --------------------------------------------------------------------


@attrs.frozen
class LoadtestOptions:
    """What to run. `runs_per_session` None means 10, or unlimited with `duration`."""

    url: str = DEFAULT_URL
    token: str | None = None
    sessions: int = 100
    connections: int | None = None  # None: one per 100 sessions
    runs_per_session: int | None = None
    deltas: int = 8
    delta_delay_ms: float = 0.0
    duration: float | None = None
    subscribers_per_run: int = 0
    spawn: bool = False
    spawn_process: bool = False
    gateway_pid: int | None = None
    max_concurrent: int | None = None
    run_timeout: float = 300.0
    drain_timeout: float = 10.0
    progress: bool = True
    prefix: str | None = None
    report_dir: Path | None = None  # samples.csv, chart.svg, ... (_report)
    sample_interval: float = 1.0


@attrs.frozen
class LatencySummary:
    p50: float
    p95: float
    p99: float
    max: float


# --- latency histogram ---------------------------------------------------------------------

_FINE_MS: Final = 100.0  # 0.05 ms buckets below this, 1 ms buckets above
_FINE_BUCKETS: Final = 2000
_COARSE_BUCKETS: Final = 120_000


class _Histogram:
    __slots__ = ("buckets", "count", "max")

    def __init__(self) -> None:
        self.buckets = [0] * (_FINE_BUCKETS + _COARSE_BUCKETS)
        self.count = 0
        self.max = 0.0

    def add(self, ms: float) -> None:
        if ms < 0.0:
            ms = 0.0
        if ms > self.max:
            self.max = ms
        if ms < _FINE_MS:
            i = int(ms * 20.0)
        else:
            i = _FINE_BUCKETS + int(ms - _FINE_MS)
            if i >= _FINE_BUCKETS + _COARSE_BUCKETS:
                i = _FINE_BUCKETS + _COARSE_BUCKETS - 1
        self.buckets[i] += 1
        self.count += 1

    def quantile(self, q: float) -> float:
        if not self.count:
            return 0.0
        rank = q * self.count
        seen = 0
        for i, n in enumerate(self.buckets):
            seen += n
            if n and seen >= rank:
                upper = (i + 1) / 20.0 if i < _FINE_BUCKETS else _FINE_MS + (i - _FINE_BUCKETS + 1)
                return min(upper, self.max)
        return self.max

    def summary(self) -> LatencySummary:
        return LatencySummary(
            p50=round(self.quantile(0.50), 2),
            p95=round(self.quantile(0.95), 2),
            p99=round(self.quantile(0.99), 2),
            max=round(self.max, 2),
        )


# --- wire: a minimal, fast RFC 6455 client --------------------------------------------------


class _Data(msgspec.Struct):
    phase: str | None = None


class _Payload(msgspec.Struct):
    """The fields the load test reads from any payload (others are skipped)."""

    runId: str | None = None
    seq: int | None = None
    stream: str | None = None
    ts: int | None = None
    state: str | None = None
    status: str | None = None
    data: _Data | None = None


class _Error(msgspec.Struct):
    code: str = "UNKNOWN"
    message: str = ""


class _Frame(msgspec.Struct):
    type: str
    id: str | None = None
    ok: bool | None = None
    event: str | None = None
    seq: int | None = None
    payload: _Payload | None = None
    error: _Error | None = None


_frame_decoder: Final = msgspec.json.Decoder(_Frame)
_any_decoder: Final = msgspec.json.Decoder()


def _split_url(url: str) -> tuple[str, int, str]:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "ws" or not parts.hostname:
        raise LoadtestError(f"unsupported gateway url {url!r} (expected ws://host:port)")
    resource = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return parts.hostname, parts.port or 80, resource


class _Request:
    """One request in flight; `finish` once answered, failed or given up on. `done` (an
    event, made only for whoever waits: not per run) is set then, and `on_done` called."""

    __slots__ = ("_done", "accepted", "code", "finished", "kind", "ok", "on_done", "value")

    def __init__(self, kind: str, on_done: Callable[[_Request], None] | None = None) -> None:
        self.kind = kind  # "agent" or "generic"
        self.on_done = on_done  # called once, where it finishes
        self.finished = False
        self.accepted = False
        self.ok = False
        self.code: str | None = None
        self.value: Any = None
        self._done: trio.Event | None = None

    @property
    def done(self) -> trio.Event:
        if self._done is None:
            self._done = trio.Event()
            if self.finished:
                self._done.set()
        return self._done

    def finish(self) -> None:
        """Answered, failed or given up on: `done` set and `on_done` called (once)."""
        if self.finished:
            return
        self.finished = True
        if self._done is not None:
            self._done.set()
        if self.on_done is not None:
            self.on_done(self)


class _Track:
    """One run as one connection sees it."""

    __slots__ = ("chat_terminal", "end_seq", "mask", "max_seq", "started_ts", "unique")

    def __init__(self) -> None:
        self.end_seq = 0  # the lifecycle end's seq, once seen
        self.mask = 0
        self.unique = 0
        self.max_seq = 0
        self.chat_terminal = False
        self.started_ts: int | None = None


class _Conn:
    """One WebSocket connection of the load side: reader, coalescing writer, requests."""

    def __init__(self, lt: _Loadtest, index: int, *, subscriber: bool) -> None:
        self.lt = lt
        self.index = index
        self.subscriber = subscriber
        self.stream: trio.SocketStream | None = None
        self._frames = FrameParser(masked=False, text=False)
        self._out: list[bytes] = []
        self._wake = trio.Event()
        self._ids = itertools.count(1)
        self.pending: dict[str, _Request] = {}
        self.runs: dict[str, _Track | None] = {}  # None: complete and folded
        self.frame_seq = 0
        self._now_ms = 0.0
        self.closed = False
        self.hello: dict[str, Any] = {}

    # --- opening ---------------------------------------------------------------------------

    async def open(self, url: str, nursery: trio.Nursery, caps: list[str]) -> None:
        """TCP connect, HTTP upgrade, `connect.challenge`, `connect` -> hello-ok."""
        host, port, resource = _split_url(url)
        try:
            self.stream = await trio.open_tcp_stream(host, port)
        except OSError as exc:
            raise LoadtestError(f"cannot reach the gateway at {url}: {exc}") from exc
        key = base64.b64encode(os.urandom(16))
        request = (
            (
                f"GET {resource} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
                "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
            ).encode()
            + b"Sec-WebSocket-Key: "
            + key
            + b"\r\n\r\n"
        )
        await self.stream.send_all(request)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = await self.stream.receive_some(16_384)
            if not chunk or len(data) > 65_536:
                raise LoadtestError(f"WebSocket upgrade with {url} failed")
            data += chunk
        head, _, rest = data.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        accept = base64.b64encode(hashlib.sha1(key + _WS_GUID).digest())
        headers = {
            k.strip().lower(): v.strip() for k, _, v in (line.partition(b":") for line in lines[1:])
        }
        if (
            not lines[0].startswith(b"HTTP/1.1 101")
            or headers.get(b"sec-websocket-accept") != accept
        ):
            raise LoadtestError(
                f"WebSocket upgrade with {url} refused: {lines[0].decode(errors='replace')}"
            )
        self._frames.feed(rest)
        nursery.start_soon(self._reader, name=f"loadtest-reader-{self.index}")
        nursery.start_soon(self._writer, name=f"loadtest-writer-{self.index}")
        params: dict[str, Any] = {
            "minProtocol": 4,
            "maxProtocol": 4,
            "client": {
                "id": "gateway-client",
                "displayName": "clawlane loadtest",
                "version": "0.1.0",
                "platform": "python",
                "mode": "backend",
            },
            "role": "operator",
            "scopes": ["operator.admin", "operator.read", "operator.write"],
        }
        if caps:
            params["caps"] = caps
        if self.lt.token:
            params["auth"] = {"token": self.lt.token}
        req = await self.request("connect", params, timeout=15.0)
        if not req.ok:
            raise LoadtestError(f"the gateway refused the handshake: {req.code}: {req.value}")
        self.hello = req.value if isinstance(req.value, dict) else {}

    # --- requests --------------------------------------------------------------------------

    def send_request(
        self,
        method: str,
        params: Any,
        kind: str,
        on_done: Callable[[_Request], None] | None = None,
    ) -> _Request:
        """Queue a request; the writer sends it. Not a checkpoint."""
        req_id = f"r{next(self._ids)}"
        req = _Request(kind, on_done)
        if self.closed:
            req.code = "CONNECTION_CLOSED"
            req.finish()
            return req
        self.pending[req_id] = req
        frame = {"type": "req", "id": req_id, "method": method, "params": params}
        self._out.append(client_frame(_encoder.encode(frame)))
        self._wake.set()
        return req

    async def request(self, method: str, params: Any, *, timeout: float) -> _Request:  # noqa: ASYNC109
        req = self.send_request(method, params, "generic")
        with trio.move_on_after(timeout):
            await req.done.wait()
        if not req.finished:
            req.code = "TIMEOUT"
        return req

    # --- tasks -----------------------------------------------------------------------------

    async def _writer(self) -> None:
        assert self.stream is not None
        out = self._out
        try:
            while True:
                if not out:
                    await self._wake.wait()
                    self._wake = trio.Event()
                    continue
                data = b"".join(out)
                out.clear()
                await self.stream.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self._lost_connection()

    async def _reader(self) -> None:
        assert self.stream is not None
        stream = self.stream
        try:
            if self._frames.buffer:
                self._parse(b"", time.time() * 1000.0)
            while not self.closed:
                data = await stream.receive_some(RECEIVE_CHUNK)
                if not data:
                    break
                self._parse(data, time.time() * 1000.0)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            self._lost_connection()

    def _lost_connection(self) -> None:
        if not self.closed:
            self.closed = True
            if not self.lt.stopping:
                self.lt.error("CONNECTION_CLOSED")
        pending = list(self.pending.values())
        self.pending.clear()
        for req in pending:
            if not req.finished:
                req.code = req.code or "CONNECTION_CLOSED"
                req.finish()

    def _parse(self, data: bytes, now_ms: float) -> None:
        """The frames in `data` (after what is kept of earlier reads): each message to
        `_on_message`; a ping answered, a close answered and the connection closed."""
        frames = self._frames
        frames.buffer += data
        self._now_ms = now_ms
        frames.take_whole(self._on_message)
        while True:
            try:
                message = frames.next_message()
            except FrameError as exc:
                raise trio.BrokenResourceError(f"the server broke the protocol: {exc}") from exc
            if message is None:
                return
            if type(message) is bytes:
                self._on_message(message)
                continue
            assert isinstance(message, Control)
            if message.opcode == CLOSE:
                self._out.append(client_frame(message.payload[:2], 0x8))
                self._wake.set()
                self.closed = True
                return
            if message.opcode == PING:
                self._out.append(client_frame(message.payload, 0xA))
                self._wake.set()

    def _on_message(self, payload: bytes | memoryview) -> None:
        """One message received at `_now_ms`."""
        lt = self.lt
        try:
            frame = _frame_decoder.decode(payload)
        except msgspec.ValidationError:
            self._on_untyped(payload)
            return
        except msgspec.DecodeError:
            lt.error("BAD_FRAME")
            return
        kind = frame.type
        if kind == "event":
            fseq = frame.seq
            if fseq is not None:
                if fseq != self.frame_seq + 1:
                    lt.conn_seq_gaps += 1
                self.frame_seq = fseq
            p = frame.payload
            if p is None or p.runId is None or not p.runId.startswith(lt.prefix):
                return
            event = frame.event
            if event == "agent":
                lt.events += 1
                if p.ts is not None:
                    lt.latency.add(self._now_ms - p.ts)
                self._on_agent(p.runId, p.seq or 0, p.ts, p.stream == "lifecycle")
            elif event == "chat":
                lt.chat_events += 1
                if p.state in ("final", "aborted", "error"):
                    self._on_chat_terminal(p.runId)
        elif kind == "res" and frame.id is not None:
            req = self.pending.get(frame.id)
            if req is None:
                return
            if req.kind == "generic":
                self._resolve_generic(req, frame.id, payload)
                return
            p = frame.payload
            if frame.ok and p is not None and p.status == "accepted":
                req.accepted = True
                return
            del self.pending[frame.id]
            if req.finished:  # given up on (timed out) before the answer came
                return
            req.ok = bool(frame.ok)
            if not req.ok:
                req.code = frame.error.code if frame.error is not None else "UNKNOWN"
            req.finish()

    def _on_untyped(self, payload: bytes | memoryview) -> None:
        try:
            raw = _any_decoder.decode(payload)
        except msgspec.DecodeError:
            self.lt.error("BAD_FRAME")
            return
        if isinstance(raw, dict) and raw.get("type") == "res":
            req = self.pending.get(str(raw.get("id")))
            if req is not None:
                self._resolve_generic(req, str(raw.get("id")), payload)

    def _resolve_generic(self, req: _Request, req_id: str, payload: bytes | memoryview) -> None:
        raw = _any_decoder.decode(payload)
        del self.pending[req_id]
        req.ok = bool(raw.get("ok"))
        req.value = raw.get("payload")
        if not req.ok:
            err = raw.get("error") or {}
            req.code = str(err.get("code", "UNKNOWN"))
            req.value = err.get("message")
        req.finish()

    def _on_agent(self, run_id: str, seq: int, ts: int | None, lifecycle: bool) -> None:
        lt = self.lt
        track = self.runs.get(run_id, lt)
        if track is None:  # already complete: anything more is extra
            if 1 <= seq <= lt.expected:
                lt.duplicated += 1
            else:
                lt.unexpected += 1
            return
        if track is lt:
            track = self.runs[run_id] = _Track()
        assert isinstance(track, _Track)
        if seq < 1 or seq > lt.expected:
            lt.unexpected += 1
            return
        bit = 1 << seq
        if track.mask & bit:
            lt.duplicated += 1
            return
        if not self.subscriber:
            if seq == 1:
                lt.streaming += 1
                if lt.streaming > lt.peak_streaming:
                    lt.peak_streaming = lt.streaming
                track.started_ts = ts
            elif lifecycle:
                lt.streaming -= 1
                if ts is not None and track.started_ts is not None:
                    lt.durations.add(float(ts - track.started_ts))
        if lifecycle and seq > 1:
            track.end_seq = seq
        track.mask |= bit
        track.unique += 1
        if seq < track.max_seq:
            lt.out_of_order += 1
        else:
            track.max_seq = seq
        if track.unique == track.end_seq and track.chat_terminal:
            self.runs[run_id] = None
            lt.folded(self)

    def _on_chat_terminal(self, run_id: str) -> None:
        lt = self.lt
        track = self.runs.get(run_id, lt)
        if track is None:
            lt.unexpected += 1
            return
        if track is lt:
            track = self.runs[run_id] = _Track()
        assert isinstance(track, _Track)
        if track.chat_terminal:
            lt.unexpected += 1
            return
        track.chat_terminal = True
        if track.unique == track.end_seq:
            self.runs[run_id] = None
            lt.folded(self)

    async def aclose(self) -> None:
        if self.stream is not None:
            await trio.aclose_forcefully(self.stream)


# --- the load test -------------------------------------------------------------------------


class _Driver:
    """One session's runs, back to back: the next is sent from the last one's answer, in
    the reader task that parsed it (no task per session, no task switch per run)."""

    __slots__ = ("conn", "key", "on_done", "req", "run_id", "runs", "sent_at")

    def __init__(self, conn: _Conn, key: str) -> None:
        self.conn = conn
        self.key = key
        self.runs = 0
        self.run_id = ""
        self.req: _Request | None = None
        self.sent_at = 0.0
        self.on_done = self._done

    def _done(self, req: _Request) -> None:
        self.conn.lt.run_done(self, req)


class _Loadtest:
    def __init__(self, options: LoadtestOptions, url: str, token: str | None) -> None:
        self.options = options
        self.url = url
        self.token = token
        self.prefix = options.prefix or f"lt{os.urandom(3).hex()}-"
        self.expected = options.deltas + 2
        self.latency = _Histogram()
        self.durations = _Histogram()
        self.events = 0
        self.chat_events = 0
        self.duplicated = 0
        self.out_of_order = 0
        self.unexpected = 0
        self.conn_seq_gaps = 0
        self.errors: dict[str, int] = {}
        self.runs_ok = 0
        self.runs_failed = 0
        self.ok_runs: list[str] = []
        self.in_flight = 0
        self.drivers: list[_Driver] = []
        self.driving = 0
        self.all_driven = trio.Event()
        self.deadline: float | None = None
        self.runs_per_driver: int | None = None
        self.stopping = False
        self.streaming = 0
        self.peak_streaming = 0
        self.subscriber_folds = 0
        self.folds_wanted = 1 << 62
        self.folds_reached = trio.Event()
        self.owners: list[_Conn] = []
        self.subscribers: list[_Conn] = []
        self.message = f"[[deltas:{options.deltas}]] [[delay:{options.delta_delay_ms:g}]] load test"

    def error(self, code: str) -> None:
        self.errors[code] = self.errors.get(code, 0) + 1

    def start_driving(self, owners_n: int, deadline: float | None, runs: int | None) -> None:
        """Send every session's first run; each next one goes from the last one's answer
        (`run_done`), until `runs` each or `deadline`; `all_driven` is set at the end.
        Not a checkpoint."""
        self.deadline = deadline
        self.runs_per_driver = runs
        for i in range(self.options.sessions):
            driver = _Driver(self.owners[i % owners_n], f"{self.prefix}s{i}")
            self.drivers.append(driver)
            self.driving += 1
            self._next_run(driver)
        if not self.driving:
            self.all_driven.set()

    def _next_run(self, driver: _Driver) -> None:
        n, conn = driver.runs, driver.conn
        if (
            (self.runs_per_driver is not None and n >= self.runs_per_driver)
            or (self.deadline is not None and trio.current_time() >= self.deadline)
            or conn.closed
        ):
            driver.req = None
            self.driving -= 1
            if not self.driving:
                self.all_driven.set()
            return
        driver.runs = n + 1
        driver.run_id = run_id = f"{driver.key}-{n}"
        conn.runs[run_id] = _Track()
        params = {"message": self.message, "sessionKey": driver.key, "idempotencyKey": run_id}
        driver.sent_at = trio.current_time()
        self.in_flight += 1
        driver.req = conn.send_request("agent", params, "agent", driver.on_done)  # conn is open

    def run_done(self, driver: _Driver, req: _Request) -> None:
        self.in_flight -= 1
        if req.ok:
            self.runs_ok += 1
            self.ok_runs.append(driver.run_id)
        else:
            self.runs_failed += 1
            self.error(req.code or "UNKNOWN")
            driver.conn.runs.pop(driver.run_id, None)
        self._next_run(driver)

    async def expire_runs(self) -> None:
        """Give up on runs unanswered for `run_timeout` (each counted `TIMEOUT`; its
        session goes on with its next run). Runs until cancelled."""
        timeout = self.options.run_timeout
        while True:
            await trio.sleep(min(1.0, timeout / 4))
            cut = trio.current_time() - timeout
            for driver in self.drivers:
                req = driver.req
                if req is not None and driver.sent_at <= cut and not req.finished:
                    req.code = "TIMEOUT"
                    req.finish()

    def folded(self, conn: _Conn) -> None:
        """`conn` has seen one run complete."""
        if conn.subscriber:
            self.subscriber_folds += 1
            if self.subscriber_folds >= self.folds_wanted:
                self.folds_reached.set()

    async def all_seen(self) -> None:
        """Wait until every subscriber has seen every ok run complete. A checkpoint."""
        self.folds_wanted = len(self.ok_runs) * len(self.subscribers)
        if self.subscriber_folds < self.folds_wanted:
            await self.folds_reached.wait()
        else:
            await trio.lowlevel.checkpoint()

    def tally(self) -> tuple[int, int]:
        """(lost agent events, runs without their terminal chat event) over all viewers."""
        lost = 0
        chat_missing = 0
        owner_of = {}
        for conn in self.owners:
            for run_id in conn.runs:
                owner_of[run_id] = conn
        for run_id in self.ok_runs:
            viewers = [owner_of[run_id]] if run_id in owner_of else []
            if not viewers:
                lost += self.expected  # the owner never even tracked it
                chat_missing += 1
            viewers += self.subscribers
            for conn in viewers:
                track = conn.runs.get(run_id, self)
                if track is None:
                    continue
                if not isinstance(track, _Track):
                    lost += self.expected
                    chat_missing += 1
                    continue
                # without its lifecycle end: that and whatever came before it is missing
                lost += (track.end_seq or track.max_seq + 1) - track.unique
                chat_missing += 0 if track.chat_terminal else 1
        return lost, chat_missing
