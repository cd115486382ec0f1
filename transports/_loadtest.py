"""`clawlane loadtest`: drive a gateway with many sessions over real WebSockets and report.

    clawlane loadtest --spawn --sessions 1000 --runs-per-session 5 --deltas 8
    clawlane loadtest --url ws://127.0.0.1:18789 --gateway-pid 4242 --sessions 100 --json

Each session gets a driver task that starts runs one after another on its session key (the
`local` model, paced by `[[deltas:N]]` and `[[delay:MS]]`) and waits for each final `res`.
Sessions are spread over `--connections` connections that advertise `session-scoped-events`,
so each sees only its own runs. `--subscribers-per-run K` adds K connections that watch every
session: scoped connections that call `sessions.messages.subscribe` for each session when the
gateway lists that method, otherwise connections WITHOUT the scoped capability, which receive
every run and keep those of this load test (the report says which: `subscriber_mode`).

What is judged, per run and per connection that should see it (the owner and every
subscriber): the run's agent `seq` must go 1..M (lifecycle start, the assistant events,
lifecycle end at M) with nothing missing (`lost`), nothing twice (`duplicated`) and nothing
backwards (`out_of_order`), M at most N+2: the gateway coalesces the N assistant deltas to
one event per 150 ms, as OpenClaw throttles them (`actors._chat`), so a run whose deltas come
faster has fewer events; each connection's frame `seq` must have no gaps. Latency is the
receipt time minus the event's `ts` (ms epoch, stamped by the gateway's hub).

The load side must not be the bottleneck, so this module speaks WebSocket itself on a trio
stream (RFC 6455 client: masked frames out, unmasked frames parsed by hand in, one coalesced
`send_all` per connection) instead of going through `transports._client`.

Gateway memory and CPU come from psutil on the gateway's pid: this process with `--spawn`
(the gateway runs in-process; its CPU then includes the load side), the child with
`--spawn-process` (a `clawlane gateway` subprocess on a free port; the figures to quote),
or `--gateway-pid` for a gateway started elsewhere.

Errors: `LoadtestError` (cannot reach or start the gateway, bad options).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import functools
import hashlib
import itertools
import json
import os
import signal
import struct
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Final

import attrs
import msgspec
import psutil
import trio

from runtime.model import parse_config

from ._client import DEFAULT_URL
from ._errors import TransportError
from ._loadtest_report import Timeline, progress_line, write_report

SCOPED_CAP: Final = "session-scoped-events"
GATEWAY_MAX_INFLIGHT: Final = 256  # transports._connection.MAX_INFLIGHT_REQUESTS
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
    report_dir: Path | None = None  # issue 14: samples.csv, chart.svg, ... (_loadtest_report)
    sample_interval: float = 1.0


@attrs.frozen
class LatencySummary:
    p50: float
    p95: float
    p99: float
    max: float


@attrs.frozen
class LoadtestReport:
    runs: int
    runs_expected: int | None
    runs_failed: int
    elapsed_s: float
    runs_per_s: float
    events: int
    events_per_s: float
    chat_events: int
    chat_events_per_s: float
    latency_ms: LatencySummary
    run_duration_ms: LatencySummary
    lost: int
    duplicated: int
    out_of_order: int
    unexpected: int
    chat_terminal_missing: int
    conn_seq_gaps: int
    peak_streaming_runs: int
    errors: dict[str, int]
    sessions: int
    connections: int
    subscribers: int
    subscriber_mode: str
    deltas: int
    delta_delay_ms: float
    gateway: str
    gateway_pid: int | None
    gateway_start_rss_bytes: int | None
    gateway_peak_rss_bytes: int | None
    gateway_end_rss_bytes: int | None
    gateway_cpu_percent: float | None
    lane_capacity: int | None

    @property
    def clean(self) -> bool:
        """Nothing lost, duplicated, reordered or failed."""
        return not (
            self.lost
            or self.duplicated
            or self.out_of_order
            or self.unexpected
            or self.chat_terminal_missing
            or self.conn_seq_gaps
            or self.errors
            or self.runs_failed
        )

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = attrs.asdict(self)
        data["clean"] = self.clean
        return data

    def table(self) -> str:
        def mib(n: int | None) -> str:
            return "n/a" if n is None else f"{n / 1048576:,.1f} MiB"

        lat = self.latency_ms
        dur = self.run_duration_ms
        expected = f" / {self.runs_expected:,}" if self.runs_expected is not None else ""
        errors = ", ".join(f"{k} {v:,}" for k, v in sorted(self.errors.items())) or "none"
        cpu = "n/a" if self.gateway_cpu_percent is None else f"{self.gateway_cpu_percent:.0f} %"
        if self.gateway.startswith("in-process"):
            cpu += " (includes the load side: same process)"
        rows = [
            ("runs completed", f"{self.runs:,}{expected} in {self.elapsed_s:.2f} s"),
            ("runs failed", f"{self.runs_failed:,}"),
            ("runs streaming at once (peak)", f"{self.peak_streaming_runs:,}"),
            ("runs/s", f"{self.runs_per_s:,.0f}"),
            ("agent events/s", f"{self.events_per_s:,.0f}  ({self.events:,} delivered)"),
            ("chat events/s", f"{self.chat_events_per_s:,.0f}  ({self.chat_events:,} delivered)"),
            (
                "latency p50/p95/p99/max",
                f"{lat.p50:.1f} / {lat.p95:.1f} / {lat.p99:.1f} / {lat.max:.1f} ms",
            ),
            (
                "run duration p50/p99/max",
                f"{dur.p50:,.0f} / {dur.p99:,.0f} / {dur.max:,.0f} ms (lifecycle start to end;"
                f" unloaded {self.deltas * self.delta_delay_ms:,.0f} ms)",
            ),
            (
                "lost / duplicated / out-of-order",
                f"{self.lost:,} / {self.duplicated:,} / {self.out_of_order:,}",
            ),
            (
                "unexpected / chat terminal missing / frame seq gaps",
                f"{self.unexpected:,} / {self.chat_terminal_missing:,} / {self.conn_seq_gaps:,}",
            ),
            ("errors", errors),
            (
                "gateway peak RSS",
                f"{mib(self.gateway_peak_rss_bytes)} (at start {mib(self.gateway_start_rss_bytes)})",
            ),
            ("gateway CPU", cpu),
        ]
        width = max(len(k) for k, _ in rows)
        head = (
            f"clawlane loadtest: {self.sessions:,} sessions on {self.connections} connections"
            f" (+{self.subscribers} subscribers, {self.subscriber_mode}), {self.deltas} deltas"
            f" {self.delta_delay_ms:g} ms apart; gateway {self.gateway}"
        )
        if self.lane_capacity is not None and self.lane_capacity < self.sessions:
            head += f"\n  note: the gateway's lane admits {self.lane_capacity} runs at once"
        if -(-self.sessions // self.connections) > GATEWAY_MAX_INFLIGHT:
            head += (
                f"\n  note: over {GATEWAY_MAX_INFLIGHT} sessions per connection: the gateway"
                " refuses requests past that many in flight (UNAVAILABLE); add --connections"
            )
        lines = [head, ""]
        lines += [f"  {k.ljust(width)}  {v}" for k, v in rows]
        lines.append("")
        lines.append("  result: " + ("CLEAN" if self.clean else "PROBLEMS (see above)"))
        return "\n".join(lines)


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


def client_frame(payload: bytes, opcode: int = 0x1) -> bytes:
    """One masked FIN client frame (RFC 6455 §5.3)."""
    n = len(payload)
    if n < 126:
        head = bytes((0x80 | opcode, 0x80 | n))
    elif n < 65_536:
        head = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, n)
    else:
        head = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, n)
    key = os.urandom(4)
    if not n:
        return head + key
    mask = int.from_bytes((key * (n // 4 + 1))[:n], "big")
    return head + key + (int.from_bytes(payload, "big") ^ mask).to_bytes(n, "big")


def _split_url(url: str) -> tuple[str, int, str]:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "ws" or not parts.hostname:
        raise LoadtestError(f"unsupported gateway url {url!r} (expected ws://host:port)")
    resource = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return parts.hostname, parts.port or 80, resource


@attrs.define(eq=False, slots=True)
class _Request:
    kind: str  # "agent" or "generic"
    done: trio.Event = attrs.field(factory=trio.Event)
    accepted: bool = False
    ok: bool = False
    code: str | None = None
    value: Any = None


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
        self._rest = b""
        self._fragments: list[bytes] = []
        self._out: list[bytes] = []
        self._wake = trio.Event()
        self._ids = itertools.count(1)
        self.pending: dict[str, _Request] = {}
        self.runs: dict[str, _Track | None] = {}  # None: complete and folded
        self.frame_seq = 0
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
        self._rest = rest
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

    def send_request(self, method: str, params: Any, kind: str) -> _Request:
        """Queue a request; the writer sends it. Not a checkpoint."""
        req_id = f"r{next(self._ids)}"
        req = _Request(kind)
        if self.closed:
            req.code = "CONNECTION_CLOSED"
            req.done.set()
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
        if not req.done.is_set():
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
            if self._rest:
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
        for req in self.pending.values():
            if not req.done.is_set():
                req.code = req.code or "CONNECTION_CLOSED"
                req.done.set()
        self.pending.clear()

    def _parse(self, data: bytes, now_ms: float) -> None:
        work = self._rest + data if self._rest else data
        n = len(work)
        pos = 0
        while n - pos >= 2:
            b0 = work[pos]
            b1 = work[pos + 1]
            length = b1 & 0x7F
            if length < 126:
                start = pos + 2
            elif length == 126:
                if n - pos < 4:
                    break
                length = (work[pos + 2] << 8) | work[pos + 3]
                start = pos + 4
            else:
                if n - pos < 10:
                    break
                length = int.from_bytes(work[pos + 2 : pos + 10], "big")
                start = pos + 10
            if b1 & 0x80:
                raise trio.BrokenResourceError("the server sent a masked frame")
            end = start + length
            if end > n:
                break
            payload = work[start:end]
            pos = end
            opcode = b0 & 0x0F
            if opcode == 0x1 or opcode == 0x2 or opcode == 0x0:
                if not b0 & 0x80:
                    self._fragments.append(payload)
                    continue
                if self._fragments:
                    self._fragments.append(payload)
                    payload = b"".join(self._fragments)
                    self._fragments.clear()
                self._on_message(payload, now_ms)
            elif opcode == 0x8:
                self._out.append(client_frame(payload[:2], 0x8))
                self._wake.set()
                self.closed = True
                break
            elif opcode == 0x9:
                self._out.append(client_frame(payload, 0xA))
                self._wake.set()
        self._rest = work[pos:]

    def _on_message(self, payload: bytes, now_ms: float) -> None:
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
                    lt.latency.add(now_ms - p.ts)
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
            req.ok = bool(frame.ok)
            if not req.ok:
                req.code = frame.error.code if frame.error is not None else "UNKNOWN"
            req.done.set()

    def _on_untyped(self, payload: bytes) -> None:
        try:
            raw = _any_decoder.decode(payload)
        except msgspec.DecodeError:
            self.lt.error("BAD_FRAME")
            return
        if isinstance(raw, dict) and raw.get("type") == "res":
            req = self.pending.get(str(raw.get("id")))
            if req is not None:
                self._resolve_generic(req, str(raw.get("id")), payload)

    def _resolve_generic(self, req: _Request, req_id: str, payload: bytes) -> None:
        raw = _any_decoder.decode(payload)
        del self.pending[req_id]
        req.ok = bool(raw.get("ok"))
        req.value = raw.get("payload")
        if not req.ok:
            err = raw.get("error") or {}
            req.code = str(err.get("code", "UNKNOWN"))
            req.value = err.get("message")
        req.done.set()

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

    async def drive(
        self, index: int, conn: _Conn, deadline: float | None, runs: int | None
    ) -> None:
        key = f"{self.prefix}s{index}"
        timeout = self.options.run_timeout
        for n in itertools.count():
            if runs is not None and n >= runs:
                return
            if deadline is not None and trio.current_time() >= deadline:
                return
            if conn.closed:
                return
            run_id = f"{self.prefix}s{index}-{n}"
            conn.runs[run_id] = _Track()
            params = {"message": self.message, "sessionKey": key, "idempotencyKey": run_id}
            req = conn.send_request("agent", params, "agent")
            self.in_flight += 1
            with trio.move_on_after(timeout):
                await req.done.wait()
            self.in_flight -= 1
            if not req.done.is_set():
                req.code = "TIMEOUT"
            if req.ok:
                self.runs_ok += 1
                self.ok_runs.append(run_id)
            else:
                self.runs_failed += 1
                self.error(req.code or "UNKNOWN")
                conn.runs.pop(run_id, None)

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


class _Sampler:
    """Peak RSS and CPU of the gateway process, sampled in the background."""

    def __init__(self, pid: int | None) -> None:
        self.proc: psutil.Process | None = None
        self.pid: int | None = None
        self.start_rss: int | None = None
        self.peak_rss: int | None = None
        self.rss: int | None = None
        self._cpu0 = 0.0
        self._t0 = 0.0
        self.cpu_percent: float | None = None
        if pid is not None:
            self.attach(pid)

    def attach(self, pid: int) -> None:
        """Watch `pid` from now on (RSS at start, CPU from now)."""
        try:
            proc = psutil.Process(pid)
            self.start_rss = self.peak_rss = self.rss = proc.memory_info().rss
            times = proc.cpu_times()
        except psutil.Error:
            return
        self.proc, self.pid = proc, pid
        self._cpu0 = times.user + times.system
        self._t0 = time.monotonic()

    def sample(self) -> None:
        if self.proc is None:
            return
        try:
            rss = self.proc.memory_info().rss
        except psutil.Error:
            self.proc = None
            return
        self.rss = rss
        if self.peak_rss is None or rss > self.peak_rss:
            self.peak_rss = rss

    def finish(self) -> None:
        if self.proc is None:
            return
        self.sample()
        try:
            times = self.proc.cpu_times()
        except psutil.Error:
            return
        wall = time.monotonic() - self._t0
        if wall > 0:
            self.cpu_percent = round(100.0 * (times.user + times.system - self._cpu0) / wall, 1)

    async def run(self, interval: float = 0.1) -> None:
        while True:
            self.sample()
            await trio.sleep(interval)


@contextlib.asynccontextmanager
async def _spawned_in_process(
    options: LoadtestOptions,
) -> AsyncIterator[tuple[str, int, str | None]]:
    from ._gateway import GatewayOptions, open_gateway

    config = parse_config(
        {
            "agents": {
                "defaults": {"maxConcurrent": options.max_concurrent or max(8, options.sessions)}
            }
        }
    )
    with tempfile.TemporaryDirectory(prefix="clawlane-loadtest-") as tmp:
        gw_options = GatewayOptions(
            host="127.0.0.1", port=0, state_dir=Path(tmp) / "state", token=options.token
        )
        async with open_gateway(config, gw_options) as gateway:
            port = gateway.listeners[0].socket.getsockname()[1]
            yield f"ws://127.0.0.1:{port}", os.getpid(), gateway.auth.token


@contextlib.asynccontextmanager
async def spawn_gateway_process(
    *, max_concurrent: int, token: str | None = None, spawned_log: Path | None = None
) -> AsyncIterator[tuple[str, int, str | None]]:
    """Run `clawlane gateway` in a child process on a free loopback port: (url, pid, the
    token to connect with: `token`, else the one the child created in its state dir).

    On exit the child gets SIGINT (a clean shutdown), then SIGKILL if it lingers; its log
    (stdout and stderr) is copied to `spawned_log` when given.
    """
    with tempfile.TemporaryDirectory(prefix="clawlane-loadtest-") as tmp:
        state = Path(tmp) / "state"
        state.mkdir()
        config = state / "clawlane.json"
        config.write_text(json.dumps({"agents": {"defaults": {"maxConcurrent": max_concurrent}}}))
        argv = [
            sys.executable,
            "-c",
            "import sys; from transports._cli import main; sys.exit(main())",
            "gateway",
            "--port",
            "0",
            "--state-dir",
            str(state),
            "--config",
            str(config),
        ]
        if token:
            argv += ["--token", token]
        if os.environ.get("CLAWLANE_LOG_LEVEL", "").lower() != "debug":
            argv += ["--log-level", "info"]  # its startup line says where it listens
        log_path = Path(tmp) / "gateway.log"
        with log_path.open("wb") as log:
            proc = await trio.lowlevel.open_process(
                argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL
            )
            try:
                url = await _read_listening_url(proc, log_path, offset=0)
                from ._auth import read_token_file, token_path

                yield url, proc.pid, token or read_token_file(token_path(state))
            finally:
                with trio.CancelScope(shield=True):
                    if proc.returncode is None:
                        proc.send_signal(signal.SIGINT)
                        with trio.move_on_after(40):
                            await proc.wait()
                    if proc.returncode is None:
                        proc.kill()
                        await proc.wait()
                    if spawned_log is not None:
                        await trio.to_thread.run_sync(_copy_log, log_path, spawned_log)


def _copy_log(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(source.read_bytes())


def _read_from(path: Path, offset: int) -> str:
    with path.open("rb") as f:
        f.seek(offset)
        return f.read().decode(errors="replace")


async def _read_listening_url(
    proc: trio.Process, log_path: Path, *, offset: int | None = None
) -> str:
    """Wait (30 s at most) for the gateway's startup log line in `log_path` and return its
    URL. Only what the file gains from `offset` on counts (default: its size now, for a
    log file another gateway wrote to before)."""
    start = offset if offset is not None else (await trio.Path(log_path).stat()).st_size
    text = ""
    with trio.move_on_after(30):
        while True:
            text = await trio.to_thread.run_sync(_read_from, log_path, start)
            for line in text.splitlines():
                if "listening on ws://" in line:
                    return line.split("listening on ", 1)[1].split()[0]
            if proc.poll() is not None:
                break
            await trio.sleep(0.05)
    raise LoadtestError(f"the spawned gateway did not start:\n{text[-2000:]}")


OPEN_PARALLEL: Final = 16


async def _open_bounded(
    slots: trio.CapacityLimiter, conn: _Conn, url: str, nursery: trio.Nursery, caps: list[str]
) -> None:
    async with slots:
        await conn.open(url, nursery, caps)


async def run_loadtest(options: LoadtestOptions) -> LoadtestReport:
    """Run one load test to the end and report. A checkpoint. Raises `LoadtestError`."""
    if options.sessions < 1 or options.deltas < 1 or (options.connections or 1) < 1:
        raise LoadtestError("--sessions, --connections and --deltas must be at least 1")
    if options.spawn and options.spawn_process:
        raise LoadtestError("--spawn and --spawn-process are exclusive")
    token = options.token or os.environ.get("CLAWLANE_GATEWAY_TOKEN") or None
    try:
        return await _run_somewhere(options, token)
    except BaseExceptionGroup as group:
        leaves = list(_leaves(group))
        if all(isinstance(e, LoadtestError | OSError) for e in leaves):
            first = leaves[0]
            if isinstance(first, LoadtestError):
                raise first from None
            raise LoadtestError(f"cannot reach the gateway: {first}") from first
        raise


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in _leaves(sub)]
    return [exc]


async def _run_somewhere(options: LoadtestOptions, token: str | None) -> LoadtestReport:
    async with contextlib.AsyncExitStack() as stack:
        url, pid, where = options.url, options.gateway_pid, "at " + options.url
        if options.spawn:
            url, pid, token = await stack.enter_async_context(_spawned_in_process(options))
            where = f"in-process (pid {pid})"
        elif options.spawn_process:
            url, pid, token = await stack.enter_async_context(
                spawn_gateway_process(
                    max_concurrent=options.max_concurrent or max(8, options.sessions),
                    token=options.token,
                    spawned_log=(
                        options.report_dir / "gateway.log" if options.report_dir else None
                    ),
                )
            )
            where = f"child process (pid {pid})"
        elif token is None:
            from ._auth import local_client_token

            token = local_client_token(url)  # a local gateway's token file
        return await _run(options, url, token, pid, where)
    raise AssertionError("unreachable")  # pragma: no cover


async def _run(
    options: LoadtestOptions, url: str, token: str | None, pid: int | None, where: str
) -> LoadtestReport:
    lt = _Loadtest(options, url, token)
    sampler = _Sampler(pid)
    runs = options.runs_per_session
    if runs is None and options.duration is None:
        runs = 10
    total = options.sessions * runs if runs is not None else None
    wanted = options.connections if options.connections is not None else -(-options.sessions // 100)
    owners_n = min(wanted, options.sessions)
    lane_capacity: int | None = None
    subscriber_mode = "none"
    timeline = Timeline(options.sample_interval) if options.report_dir is not None else None
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(sampler.run)
            lt.owners = [_Conn(lt, i, subscriber=False) for i in range(owners_n)]
            # At most OPEN_PARALLEL handshakes at once: a gateway admits 32 unauthenticated
            # sockets per address (more are answered 503), as OpenClaw's does.
            opening_slots = trio.CapacityLimiter(OPEN_PARALLEL)
            async with trio.open_nursery() as opening:
                for conn in lt.owners:
                    opening.start_soon(
                        _open_bounded, opening_slots, conn, url, nursery, [SCOPED_CAP]
                    )
            methods = set(lt.owners[0].hello.get("features", {}).get("methods", []))
            if options.subscribers_per_run:
                subscribe = SUBSCRIBE_METHOD in methods
                subscriber_mode = "subscribe" if subscribe else "unscoped+filter"
                caps = [SCOPED_CAP] if subscribe else []
                lt.subscribers = [
                    _Conn(lt, owners_n + i, subscriber=True)
                    for i in range(options.subscribers_per_run)
                ]
                async with trio.open_nursery() as opening:
                    for conn in lt.subscribers:
                        opening.start_soon(_open_bounded, opening_slots, conn, url, nursery, caps)
                if subscribe:
                    for conn in lt.subscribers:
                        await _subscribe_all(conn, lt.prefix, options.sessions)
            status = await lt.owners[0].request("status", None, timeout=10)
            if status.ok and isinstance(status.value, dict):
                # clawlane's own figures live under `clawlane` (OpenClaw's shape around them).
                ours = status.value.get("clawlane")
                ours = ours if isinstance(ours, dict) else status.value
                with contextlib.suppress(KeyError, TypeError, ValueError):
                    lane_capacity = int(ours["lanes"]["main"]["capacity"])
                # A gateway on this machine that says its pid: watch it without --gateway-pid.
                from ._gateway import is_loopback

                reported = ours.get("process", {})
                if (
                    sampler.proc is None
                    and isinstance(reported, dict)
                    and isinstance(reported.get("pid"), int)
                    and is_loopback(_split_url(url)[0])
                ):
                    sampler.attach(reported["pid"])
            sampler.sample()
            started = time.monotonic()
            if options.progress:
                nursery.start_soon(progress_line, lt, sampler, started, total, options.duration)
            if timeline is not None:
                timeline.start(lt, sampler, started)
                nursery.start_soon(timeline.run, lt, sampler)
            deadline = (
                trio.current_time() + options.duration if options.duration is not None else None
            )
            async with trio.open_nursery() as drivers:
                for i in range(options.sessions):
                    drivers.start_soon(lt.drive, i, lt.owners[i % owners_n], deadline, runs)
            elapsed = time.monotonic() - started
            if timeline is not None:
                timeline.take(lt, sampler)
            if lt.subscribers:
                with trio.move_on_after(options.drain_timeout):
                    await lt.all_seen()
            lt.stopping = True
            nursery.cancel_scope.cancel()
    except OSError as exc:
        raise LoadtestError(f"cannot reach the gateway at {url}: {exc}") from exc
    finally:
        lt.stopping = True
        with trio.CancelScope(shield=True):
            for conn in [*lt.owners, *lt.subscribers]:
                await conn.aclose()
    sampler.finish()
    lost, chat_missing = lt.tally()
    elapsed = max(elapsed, 1e-9)
    report = LoadtestReport(
        runs=lt.runs_ok,
        runs_expected=total,
        runs_failed=lt.runs_failed,
        elapsed_s=round(elapsed, 3),
        runs_per_s=round(lt.runs_ok / elapsed, 1),
        events=lt.events,
        events_per_s=round(lt.events / elapsed, 1),
        chat_events=lt.chat_events,
        chat_events_per_s=round(lt.chat_events / elapsed, 1),
        latency_ms=lt.latency.summary(),
        run_duration_ms=lt.durations.summary(),
        lost=lost,
        duplicated=lt.duplicated,
        out_of_order=lt.out_of_order,
        unexpected=lt.unexpected,
        chat_terminal_missing=chat_missing,
        conn_seq_gaps=lt.conn_seq_gaps,
        peak_streaming_runs=lt.peak_streaming,
        errors=dict(lt.errors),
        sessions=options.sessions,
        connections=owners_n,
        subscribers=len(lt.subscribers),
        subscriber_mode=subscriber_mode,
        deltas=options.deltas,
        delta_delay_ms=options.delta_delay_ms,
        gateway=where,
        gateway_pid=sampler.pid if sampler.pid is not None else pid,
        gateway_start_rss_bytes=sampler.start_rss,
        gateway_peak_rss_bytes=sampler.peak_rss,
        gateway_end_rss_bytes=sampler.rss,
        gateway_cpu_percent=sampler.cpu_percent,
        lane_capacity=lane_capacity,
    )
    if timeline is not None and options.report_dir is not None:
        title = (
            f"clawlane loadtest: {options.sessions:,} sessions, {options.deltas} deltas"
            f" {options.delta_delay_ms:g} ms apart; {report.runs:,} runs in {elapsed:.1f} s"
        )
        await trio.to_thread.run_sync(
            functools.partial(
                write_report, options.report_dir, timeline.samples, report, title=title
            )
        )
    return report


async def _subscribe_all(conn: _Conn, prefix: str, sessions: int) -> None:
    """`sessions.messages.subscribe` to every session, a window of requests at a time
    (the gateway refuses more than `GATEWAY_MAX_INFLIGHT` in flight per connection)."""
    window = GATEWAY_MAX_INFLIGHT // 2
    for first in range(0, sessions, window):
        reqs = [
            conn.send_request(SUBSCRIBE_METHOD, {"key": f"{prefix}s{i}"}, "generic")
            for i in range(first, min(first + window, sessions))
        ]
        with trio.move_on_after(30):
            for req in reqs:
                await req.done.wait()
        failed = [r for r in reqs if not r.ok]
        if failed:
            code = failed[0].code or ("TIMEOUT" if not failed[0].done.is_set() else "UNKNOWN")
            raise LoadtestError(f"{SUBSCRIBE_METHOD} failed: {code}")


# --- the command line ----------------------------------------------------------------------


def add_loadtest_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add `loadtest` to the `clawlane` subcommands."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "loadtest",
        help="drive a gateway with many sessions and report throughput, latency, losses",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
    )
    p.add_argument(
        "--url",
        default=os.environ.get("CLAWLANE_GATEWAY_URL", DEFAULT_URL),
        help=f"gateway URL (default: $CLAWLANE_GATEWAY_URL or {DEFAULT_URL})",
    )
    p.add_argument("--token", default=None, help="gateway token (default: $CLAWLANE_GATEWAY_TOKEN)")
    p.add_argument("--sessions", type=int, default=100, help="concurrent sessions (default 100)")
    p.add_argument(
        "--connections",
        type=int,
        default=None,
        help="connections the sessions share (default: one per 100 sessions)",
    )
    p.add_argument(
        "--runs-per-session",
        type=int,
        default=None,
        help="runs each session makes, one after another (default 10; unlimited with --duration)",
    )
    p.add_argument("--deltas", type=int, default=8, help="assistant deltas per run (default 8)")
    p.add_argument(
        "--delta-delay-ms",
        type=float,
        default=0.0,
        help="model pause before each delta (default 0)",
    )
    p.add_argument(
        "--duration", type=float, default=None, help="keep starting runs for this many seconds"
    )
    p.add_argument(
        "--subscribers-per-run",
        type=int,
        default=0,
        help="extra connections watching every session (default 0)",
    )
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--spawn", action="store_true", help="run a gateway in this process")
    where.add_argument(
        "--spawn-process",
        action="store_true",
        help="run a gateway in a child process (its own CPU; the figures to quote)",
    )
    p.add_argument(
        "--gateway-pid", type=int, default=None, help="pid of the gateway, for its RSS and CPU"
    )
    p.add_argument(
        "--max-concurrent",
        type=int,
        default=None,
        help="a spawned gateway's agents.defaults.maxConcurrent (default: --sessions)",
    )
    p.add_argument("--run-timeout", type=float, default=300.0, help="seconds per run (default 300)")
    p.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    p.add_argument(
        "--report",
        type=Path,
        default=None,
        metavar="DIR",
        help="write samples.csv, chart.svg (throughput and latency over time), report.json,"
        " report.txt (and the spawned gateway's log) into DIR",
    )
    p.add_argument(
        "--sample-interval",
        type=float,
        default=1.0,
        help="seconds between the --report samples (default 1)",
    )
    return p


def loadtest_main(args: argparse.Namespace) -> int:
    """Exit 0 when clean, 1 when anything was lost/duplicated/reordered/failed, 2 on bad
    options, 3 when the gateway could not be reached or started."""
    options = LoadtestOptions(
        url=args.url,
        token=args.token,
        sessions=args.sessions,
        connections=args.connections,
        runs_per_session=args.runs_per_session,
        deltas=args.deltas,
        delta_delay_ms=args.delta_delay_ms,
        duration=args.duration,
        subscribers_per_run=args.subscribers_per_run,
        spawn=args.spawn,
        spawn_process=args.spawn_process,
        gateway_pid=args.gateway_pid,
        max_concurrent=args.max_concurrent,
        run_timeout=args.run_timeout,
        progress=not args.no_progress,
        report_dir=args.report,
        sample_interval=args.sample_interval,
    )
    if options.sample_interval <= 0:
        print("clawlane: --sample-interval must be above 0", file=sys.stderr)
        return 2
    if min(options.sessions, options.deltas, options.connections or 1) < 1:
        print(
            "clawlane: --sessions, --connections and --deltas must be at least 1", file=sys.stderr
        )
        return 2
    try:
        report = trio.run(run_loadtest, options)
    except LoadtestError as exc:
        print(f"clawlane: {exc}", file=sys.stderr)
        return 3
    if args.json:
        print(json.dumps(report.to_json(), separators=(",", ":")))
    else:
        print(report.table())
    return 0 if report.clean else 1
