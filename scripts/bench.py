#!/usr/bin/env python3
"""clawlane against the limits of this machine, measured in one run, printed as ratios.

First the raw limits, on loopback, with the receiving end in a child process (a plain
socket sink that reads and discards, so it never is the bottleneck) and ~190-byte frames (a real agent event):

- trio-websocket, one `send_message` per frame (1 connection);
- wsproto on a trio stream, one `send_all` per frame (1 connection);
- wsproto, each connection's pending frames coalesced into one `send_all`, in batches of 8
  and of 64, over 100 connections;
- one frame built once and its bytes shared by 100 connections (deliveries/s);
- small costs: an awaited memory-channel hop, a 190-byte `send_all`, msgspec vs json.dumps,
  spawning a trio task and the memory of an idle task with its own channel.

Then clawlane on the same workloads, each as a ratio to its limit or target:

- fan-out: the real `EventHub` and `transports.websocket._server` writers, 100 connections watching 8
  streaming runs; delivered frames/s ÷ the raw coalesced rate (batches of 64, 100 conns);
- runs/s: `clawlane loadtest` against a gateway child process (1,000 sessions, the local
  model at zero delay); ÷ the 3,000 runs/s target;
- scale: 10,000 sessions each streaming 20 deltas 50 ms apart: p99 latency ÷ 50 ms,
  gateway RSS ÷ 1 GiB, nothing lost; RSS per active run;
- paced: 5,000 sessions (2,000 quick) each streaming 2 runs of 20 deltas 50 ms apart:
  delivered ÷ demanded agent events/s and the gateway's CPU per delivered agent event
  (`bench_paced.py`, which says how to compare two versions);
- memory: bytes per idle session actor (tracemalloc) ÷ 8 KiB, never run and after one run;
  that idle actors own no task; that `reap_idle` forgets them and what it gives back;
- store: listing 100,000 sessions ÷ 1 s; group-commit writes/s ÷ the writes runs/s needs.

    scripts/bench                 # everything (a few minutes)
    scripts/bench --quick         # smaller sizes, one round, the scale test at 2,000 sessions
    scripts/bench --only raw,fanout
    scripts/bench --only paced

Ratios come from medians of rounds run in this process; absolute figures are shown too.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import selectors
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import msgspec
import trio
import trio.testing
import trio_websocket
from bench_paced import paced_figures
from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, Request, TextMessage

from actors import EventHub
from runtime.model import parse_config
from runtime.sessions import new_session_row
from transports import (
    GatewayOptions,
    LoadtestOptions,
    LoadtestReport,
    WebSocketServerConnection,
    client_frame,
    open_gateway,
    run_loadtest,
)

END = b"__bench_end__"
_UPGRADE = (
    b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
)
KiB = 1024
MiB = 1024 * 1024


def sample_payload() -> bytes:
    """An agent event frame the shape and size clawlane sends (~190 bytes)."""
    return msgspec.json.encode(
        {
            "type": "event",
            "event": "agent",
            "payload": {
                "runId": "r-0001",
                "seq": 12,
                "stream": "assistant",
                "ts": 1767225600000,
                "data": {"text": "The quick", "delta": " quick"},
                "sessionKey": "agent:main:b",
            },
            "seq": 1234,
        }
    )


# --- the sink (child process) ----------------------------------------------------------


def sink_main() -> None:
    """Accept connections, send each an HTTP upgrade request, read and discard; when the
    end marker arrives, answer with a masked "done" text frame. Exits when stdin closes."""
    lsock = socket.create_server(("127.0.0.1", 0), backlog=1024)
    lsock.setblocking(False)
    print(lsock.getsockname()[1], flush=True)
    sel = selectors.DefaultSelector()
    sel.register(lsock, selectors.EVENT_READ, None)
    stdin = sys.stdin.buffer
    sel.register(stdin, selectors.EVENT_READ, "stdin")
    tails: dict[socket.socket, bytes] = {}
    done = client_frame(b"done")
    while True:
        for key, _ in sel.select():
            obj = key.fileobj
            if obj is lsock:
                conn, _ = lsock.accept()
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 * MiB)
                conn.sendall(_UPGRADE)
                conn.setblocking(False)
                tails[conn] = b""
                sel.register(conn, selectors.EVENT_READ, None)
            elif key.data == "stdin":
                if not os.read(stdin.fileno(), 1):
                    return
            else:
                assert isinstance(obj, socket.socket)
                try:
                    data = obj.recv(4 * MiB)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    data = b""
                if not data:
                    sel.unregister(obj)
                    tails.pop(obj, None)
                    obj.close()
                    continue
                # The end marker is the last thing a sender writes before it waits.
                tail = (tails[obj] + data)[-64:]
                if tail.endswith(END):
                    obj.setblocking(True)
                    obj.sendall(done)
                    obj.setblocking(False)
                    tail = b""
                tails[obj] = tail


class Sink:
    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--sink"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        assert self.proc.stdout is not None
        self.port = int(self.proc.stdout.readline())

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


async def _connect(port: int) -> trio.SocketStream:
    return await trio.open_tcp_stream("127.0.0.1", port)


async def _accept_wsproto(stream: trio.SocketStream) -> WSConnection:
    ws = WSConnection(ConnectionType.SERVER)
    while True:
        ws.receive_data(await stream.receive_some(65536))
        for event in ws.events():
            if isinstance(event, Request):
                await stream.send_all(ws.send(AcceptConnection()))
                return ws


async def _wait_done(stream: trio.SocketStream) -> None:
    """Until the sink's masked "done" frame (10 bytes) has arrived."""
    got = 0
    while got < 10:
        chunk = await stream.receive_some(65536)
        if not chunk:
            raise RuntimeError("the sink went away")
        got += len(chunk)


# --- raw limits ------------------------------------------------------------------------


async def raw_trio_websocket(port: int, n: int, payload: bytes) -> float:
    """frames/s: trio-websocket server, one `send_message` per frame."""
    text = payload.decode()
    stream = await _connect(port)
    async with trio.open_nursery() as nursery:
        request = await trio_websocket.wrap_server_stream(nursery, stream)
        ws = await request.accept()
        t0 = time.perf_counter()
        for _ in range(n):
            await ws.send_message(text)
        await ws.send_message(END.decode())
        await ws.get_message()
        dt = time.perf_counter() - t0
        nursery.cancel_scope.cancel()
    await trio.aclose_forcefully(stream)
    return n / dt


async def raw_wsproto_per_frame(port: int, n: int, payload: bytes) -> float:
    """frames/s: wsproto framing, one `send_all` per frame."""
    text = payload.decode()
    stream = await _connect(port)
    ws = await _accept_wsproto(stream)
    t0 = time.perf_counter()
    for _ in range(n):
        await stream.send_all(ws.send(TextMessage(data=text)))
    await stream.send_all(ws.send(TextMessage(data=END.decode())))
    await _wait_done(stream)
    dt = time.perf_counter() - t0
    await trio.aclose_forcefully(stream)
    return n / dt


async def raw_wsproto_coalesced(port: int, n: int, payload: bytes, batch: int, conns: int) -> float:
    """frames/s: wsproto framing, `batch` frames per `send_all`, `conns` connections."""
    text = payload.decode()
    streams = [await _connect(port) for _ in range(conns)]
    wss = [await _accept_wsproto(s) for s in streams]
    per_conn = n // conns

    async def one(stream: trio.SocketStream, ws: WSConnection) -> None:
        sent = 0
        while sent < per_conn:
            k = min(batch, per_conn - sent)
            await stream.send_all(b"".join([ws.send(TextMessage(data=text)) for _ in range(k)]))
            sent += k
        await stream.send_all(ws.send(TextMessage(data=END.decode())))
        await _wait_done(stream)

    t0 = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for stream, ws in zip(streams, wss, strict=True):
            nursery.start_soon(one, stream, ws)
    dt = time.perf_counter() - t0
    for s in streams:
        await trio.aclose_forcefully(s)
    return per_conn * conns / dt


async def raw_frame_once_shared(port: int, n: int, payload: bytes, conns: int) -> float:
    """deliveries/s: each event framed once; its bytes queued on every connection; one
    writer task per connection drains its queue into one `send_all`."""
    streams = [await _connect(port) for _ in range(conns)]
    for s in streams:
        await _accept_wsproto(s)
    frame = bytes((0x81, 126)) + len(payload).to_bytes(2, "big") + payload
    outs: list[list[bytes]] = [[] for _ in streams]
    wakes = [trio.Event() for _ in streams]
    finished = False
    events = n // conns

    async def writer(i: int) -> None:
        stream, out = streams[i], outs[i]
        while True:
            if not out:
                if finished:
                    break
                await wakes[i].wait()
                wakes[i] = trio.Event()
                continue
            data = b"".join(out)
            out.clear()
            await stream.send_all(data)
        await stream.send_all(bytes((0x81, len(END))) + END)
        await _wait_done(stream)

    t0 = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for i in range(conns):
            nursery.start_soon(writer, i)
        for k in range(events):
            for out in outs:
                out.append(frame)
            if k % 64 == 63:
                for w in wakes:
                    w.set()
                await trio.lowlevel.checkpoint()
        finished = True
        for w in wakes:
            w.set()
    dt = time.perf_counter() - t0
    for s in streams:
        await trio.aclose_forcefully(s)
    return events * conns / dt


async def raw_channel_hop(n: int) -> float:
    """µs per awaited memory-channel hop (send in one task, receive in another)."""
    send, recv = trio.open_memory_channel[int](0)

    async def consumer() -> None:
        async for _ in recv:
            pass

    async with trio.open_nursery() as nursery:
        nursery.start_soon(consumer)
        t0 = time.perf_counter()
        for i in range(n):
            await send.send(i)
        dt = time.perf_counter() - t0
        await send.aclose()
    return dt / n * 1e6


async def raw_send_all(port: int, n: int, payload: bytes) -> float:
    """µs per `send_all` of one small frame on a trio socket stream."""
    stream = await _connect(port)
    await _accept_wsproto(stream)
    frame = bytes((0x81, 126)) + len(payload).to_bytes(2, "big") + payload
    t0 = time.perf_counter()
    for _ in range(n):
        await stream.send_all(frame)
    dt = time.perf_counter() - t0
    await stream.send_all(bytes((0x81, len(END))) + END)
    await _wait_done(stream)
    await trio.aclose_forcefully(stream)
    return dt / n * 1e6


def raw_encoders(n: int) -> tuple[float, float]:
    """payloads/s: msgspec.json.encode and json.dumps of an agent payload."""
    payload = msgspec.json.decode(sample_payload())["payload"]
    enc = msgspec.json.Encoder()
    t0 = time.perf_counter()
    for _ in range(n):
        enc.encode(payload)
    t1 = time.perf_counter()
    for _ in range(n):
        json.dumps(payload)
    t2 = time.perf_counter()
    return n / (t1 - t0), n / (t2 - t1)


async def raw_tasks(n: int) -> tuple[float, float]:
    """(µs to spawn a task, bytes per idle task that owns a memory channel)."""

    async def idle(task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        send, recv = trio.open_memory_channel[int](16)
        async with send, recv:
            await recv.receive()

    async with trio.open_nursery() as nursery:
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(n):
            nursery.start_soon(idle)
        await trio.testing.wait_all_tasks_blocked()
        after = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        nursery.cancel_scope.cancel()
    async with trio.open_nursery() as nursery:
        t0 = time.perf_counter()
        for _ in range(n):
            nursery.start_soon(idle)
        await trio.testing.wait_all_tasks_blocked()  # each ran to its first block
        dt = time.perf_counter() - t0
        nursery.cancel_scope.cancel()
    return dt / n * 1e6, (after - before) / n


# --- clawlane on the same workloads ----------------------------------------------------


class _Sub:
    """What `transports.server._connection.ClientConnection` is to the hub, minus the requests."""

    def __init__(self, ws: WebSocketServerConnection, i: int) -> None:
        self.ws = ws
        self._id = f"bench{i}"

    @property
    def conn_id(self) -> str:
        return self._id

    @property
    def wants_tool_events(self) -> bool:
        return False

    def push_event(self, frame: bytes) -> None:
        self.ws.send_event(frame)


async def clawlane_fanout(port: int, n: int, conns: int, runs: int) -> tuple[float, float]:
    """(delivered frames/s, mean frames per `send_all`): `runs` producer tasks emit agent
    events through a real `EventHub`, one event per checkpoint (a model streaming at zero
    delay), to `conns` real `WebSocketServerConnection` writers."""
    hub = EventHub()
    streams = [await _connect(port) for _ in range(conns)]
    wss = [WebSocketServerConnection(s, max_buffered_bytes=256 * MiB) for s in streams]
    for ws in wss:
        await ws.accept()
    for i, ws in enumerate(wss):
        hub.attach(_Sub(ws, i), scoped=False, can_read=True)
    per_run = n // (conns * runs)
    for r in range(runs):
        hub.open_run(f"r-{r:04d}", "agent:main:b")
    data = {"text": "The quick", "delta": " quick"}

    async def producer(r: int) -> None:
        run_id = f"r-{r:04d}"
        for _ in range(per_run):
            hub.emit_agent(run_id, "assistant", data)
            await trio.lowlevel.checkpoint()

    async def finish(ws: WebSocketServerConnection) -> None:
        ws.send_text(END)
        await ws.receive_message()

    t0 = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for ws in wss:
            nursery.start_soon(ws.run_writer)
        async with trio.open_nursery() as producers:
            for r in range(runs):
                producers.start_soon(producer, r)
        async with trio.open_nursery() as finishing:
            for ws in wss:
                finishing.start_soon(finish, ws)
        dt = time.perf_counter() - t0
        for ws in wss:
            ws.close(1000, "bye")
    delivered = sum(ws.frames_sent for ws in wss) - conns  # minus the end frames
    batches = sum(getattr(ws, "batches_sent", 0) for ws in wss)
    for s in streams:
        await trio.aclose_forcefully(s)
    return delivered / dt, (delivered / batches if batches else float("nan"))


async def idle_session_bytes(n: int) -> dict[str, float]:
    """tracemalloc bytes per idle session actor: loaded but never run, and after one run
    each (`clawlane loadtest` against this in-process gateway); the tasks idle actors
    leave behind (none expected); and how much `reap_idle` gives back."""
    config = parse_config({"agents": {"defaults": {"maxConcurrent": max(8, n)}}})
    with tempfile.TemporaryDirectory(prefix="clawlane-bench-") as tmp:
        options = GatewayOptions(host="127.0.0.1", port=0, state_dir=Path(tmp) / "state")
        async with open_gateway(config, options) as gateway:
            sup = gateway.supervisor
            root = trio.lowlevel.current_root_task()
            assert root is not None
            port = gateway.listeners[0].socket.getsockname()[1]
            await sup.session("agent:main:warm", "main")  # first allocations, caches
            await trio.testing.wait_all_tasks_blocked()
            tasks_before = _count_tasks(root)
            gc.collect()
            tracemalloc.start()
            m0 = tracemalloc.get_traced_memory()[0]
            for i in range(n):
                await sup.session(f"agent:main:idle-{i}", "main")
            gc.collect()
            m1 = tracemalloc.get_traced_memory()[0]
            await trio.testing.wait_all_tasks_blocked()
            tasks_after = _count_tasks(root)
            report = await run_loadtest(
                LoadtestOptions(
                    url=f"ws://127.0.0.1:{port}",
                    token=gateway.auth.token,
                    sessions=n,
                    connections=max(10, n // 100),
                    runs_per_session=1,
                    deltas=4,
                    progress=False,
                )
            )
            await trio.testing.wait_all_tasks_blocked()
            gc.collect()
            m2 = tracemalloc.get_traced_memory()[0]
            reaped = sup.reap_idle(now=time.monotonic() + 10 * 86_400)
            gc.collect()
            m3 = tracemalloc.get_traced_memory()[0]
            tracemalloc.stop()
            return {
                "bytes": (m1 - m0) / n,
                "bytes_after_one_run": (m2 - m1) / n,
                "bytes_after_reaping": (m3 - m0) / (2 * n),
                "tasks_added": float(tasks_after - tasks_before),
                "reaped": float(reaped),
                "expected_reaped": float(2 * n + 1),
                "runs_clean": float(report.clean and report.runs == n),
                "n": float(n),
            }


def _count_tasks(task: trio.lowlevel.Task) -> int:
    return 1 + sum(_count_tasks(t) for nursery in task.child_nurseries for t in nursery.child_tasks)


async def store_figures(rows: int) -> dict[str, float]:
    """Seconds to list `rows` sessions; group-commit writes/s (row upserts + appends)."""
    from actors import open_store

    with tempfile.TemporaryDirectory(prefix="clawlane-bench-") as tmp:
        async with open_store(Path(tmp) / "s.sqlite") as store:
            now = int(time.time() * 1000)
            t0 = time.perf_counter()
            for i in range(rows):
                await store.put_session(new_session_row(f"agent:main:s{i}", now_ms=now + i))
            await store.flush()
            write_dt = time.perf_counter() - t0
            await store.list_sessions(limit=1)  # a reader connection exists
            t0 = time.perf_counter()
            listed = await store.list_sessions()
            list_dt = time.perf_counter() - t0
            assert len(listed) == rows
            stats = store.statistics()
    return {
        "list_s": list_dt,
        "writes_per_s": rows / write_dt,
        "mean_batch": rows / max(stats.commits, 1),
    }


# --- driver ------------------------------------------------------------------------------


async def median_of(rounds: int, fn: Callable[[], Awaitable[float]]) -> float:
    return statistics.median([await fn() for _ in range(rounds)])


def row(name: str, value: str, limit: str, ratio: float | None, target: str = "") -> None:
    r = "" if ratio is None else f"{ratio:8.2f}"
    print(f"  {name:<46} {value:>16} {limit:>16} {r:>8}  {target}")


def verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


async def bench(args: argparse.Namespace) -> int:
    only = (
        set(args.only.split(","))
        if args.only
        else {"raw", "fanout", "runs", "scale", "paced", "memory", "store"}
    )
    quick = args.quick
    rounds = 1 if quick else args.rounds
    payload = sample_payload()
    n_single = 20_000 if quick else 60_000
    n_multi = 100_000 if quick else 400_000
    results: dict[str, Any] = {}
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"clawlane bench: load average {load} at start (other work skews absolute figures), "
        f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, "
        f"frame {len(payload)} B, {rounds} round(s) each (median)"
    )
    sink = Sink()
    try:
        port = sink.port
        c64 = 0.0
        if "raw" in only or "fanout" in only:
            print("\nraw limits (sink in a child process)")
            row("", "value", "", None)
            c64 = await median_of(
                rounds, lambda: raw_wsproto_coalesced(port, n_multi, payload, 64, 100)
            )
        if "raw" in only:
            tws = await median_of(rounds, lambda: raw_trio_websocket(port, n_single, payload))
            per = await median_of(rounds, lambda: raw_wsproto_per_frame(port, n_single, payload))
            c8 = await median_of(
                rounds, lambda: raw_wsproto_coalesced(port, n_multi, payload, 8, 100)
            )
            shared = await median_of(
                rounds, lambda: raw_frame_once_shared(port, n_multi * 10, payload, 100)
            )
            hop = await median_of(rounds, lambda: raw_channel_hop(50_000))
            send_us = await median_of(rounds, lambda: raw_send_all(port, 20_000, payload))
            ms, js = raw_encoders(200_000)
            spawn_us, task_bytes = await raw_tasks(20_000)
            results["raw"] = {
                "trio_websocket_per_frame": tws,
                "wsproto_per_frame": per,
                "wsproto_coalesced_8x100": c8,
                "wsproto_coalesced_64x100": c64,
                "frame_once_shared_100": shared,
                "channel_hop_us": hop,
                "send_all_us": send_us,
                "msgspec_per_s": ms,
                "json_dumps_per_s": js,
                "task_spawn_us": spawn_us,
                "idle_task_bytes": task_bytes,
            }
            row("trio-websocket send_message per frame", f"{tws:,.0f}/s", "", None)
            row("wsproto, one send_all per frame", f"{per:,.0f}/s", "", None)
            row("wsproto coalesced, batches of 8, 100 conns", f"{c8:,.0f}/s", "", None)
            row("wsproto coalesced, batches of 64, 100 conns", f"{c64:,.0f}/s", "", None)
            row("frame once, bytes shared by 100 conns", f"{shared:,.0f}/s", "deliveries", None)
            row("awaited memory-channel hop", f"{hop:.1f} µs", "", None)
            row("trio send_all of one frame", f"{send_us:.1f} µs", "", None)
            row("msgspec encode / json.dumps", f"{ms:,.0f}/s", f"{js:,.0f}/s", ms / js)
            row(
                "spawn a task (to its first block) / its bytes",
                f"{spawn_us:.1f} µs",
                f"{task_bytes:,.0f} B",
                None,
            )
        elif c64:
            row("wsproto coalesced, batches of 64, 100 conns", f"{c64:,.0f}/s", "", None)

        print("\nclawlane (ratio = clawlane ÷ limit or target)")
        row("", "clawlane", "limit/target", None, "verdict")
        if "fanout" in only:
            fan = [await clawlane_fanout(port, n_multi, 100, 8) for _ in range(rounds)]
            rate = statistics.median(f[0] for f in fan)
            per_batch = statistics.median(f[1] for f in fan)
            results["fanout"] = {
                "frames_per_s": rate,
                "frames_per_send_all": per_batch,
                "raw_c64": c64,
            }
            row(
                "fan-out frames/s (hub + ws writers, 100 conns)",
                f"{rate:,.0f}/s",
                f"{c64:,.0f}/s",
                rate / c64,
                f"≥ 0.50  {verdict(rate / c64 >= 0.5)}  ({per_batch:.1f} frames per send_all)",
            )
    finally:
        sink.close()

    if "runs" in only:
        report = await run_loadtest(
            LoadtestOptions(
                sessions=1000,
                connections=16,
                runs_per_session=2 if quick else 5,
                deltas=args.deltas,
                spawn_process=True,
                progress=False,
            )
        )
        results["runs"] = report.to_json()
        _print_loadtest("runs", report)
        row(
            f"runs/s (1,000 sessions, {args.deltas} deltas, 0 ms)",
            f"{report.runs_per_s:,.0f}/s",
            "3,000/s",
            report.runs_per_s / 3000,
            f"≥ 1.00  {verdict(report.runs_per_s >= 3000 and report.clean)}",
        )
        frames = report.events_per_s + report.chat_events_per_s + 2 * report.runs_per_s
        if c64:
            row(
                "  its frames/s (events + chat + 2 res per run)",
                f"{frames:,.0f}/s",
                f"{c64:,.0f}/s",
                frames / c64,
                "(share of the raw frame budget)",
            )
        row(
            "  latency p99 at that load",
            f"{report.latency_ms.p99:.1f} ms",
            "50 ms",
            report.latency_ms.p99 / 50,
            "",
        )

    if "scale" in only:
        sessions = args.scale_sessions or (2000 if quick else 10_000)
        report = await run_loadtest(
            LoadtestOptions(
                sessions=sessions,
                connections=100,
                runs_per_session=1,
                deltas=20,
                delta_delay_ms=50,
                spawn_process=True,
                progress=False,
                run_timeout=600,
            )
        )
        results["scale"] = report.to_json()
        _print_loadtest("scale", report)
        peak = report.gateway_peak_rss_bytes or 0
        start = report.gateway_start_rss_bytes or 0
        lat = report.latency_ms
        row(
            f"p99 latency ({sessions:,} sessions × 20 deltas / 50 ms)",
            f"{lat.p99:,.1f} ms",
            "50 ms",
            lat.p99 / 50,
            f"≤ 1.00  {verdict(lat.p99 <= 50)}  (p50 {lat.p50:.1f}, max {lat.max:.1f})",
        )
        dur = report.run_duration_ms
        row(
            "  run duration p50 / p99 (unloaded: 1,000 ms)",
            f"{dur.p50:,.0f} / {dur.p99:,.0f} ms",
            "1,000 ms",
            dur.p50 / 1000,
            "how far the model's pacing stretched under the load",
        )
        row(
            "  runs streaming at once (peak)",
            f"{report.peak_streaming_runs:,}",
            f"{sessions:,}",
            report.peak_streaming_runs / sessions,
            f"all {sessions:,} ran in {report.elapsed_s:.1f} s (1 s each unloaded)",
        )
        row(
            "  lost / duplicated / out of order",
            f"{report.lost}/{report.duplicated}/{report.out_of_order}",
            "0/0/0",
            None,
            verdict(report.clean),
        )
        row(
            "  gateway peak RSS",
            f"{peak / MiB:,.0f} MiB",
            "1,024 MiB",
            peak / (1024 * MiB),
            f"≤ 1.00  {verdict(peak <= 1024 * MiB)}",
        )
        row(
            "  RSS per active run",
            f"{(peak - start) / sessions / KiB:,.1f} KiB",
            "",
            None,
            "(peak − start) ÷ concurrent runs",
        )

    if "paced" in only:
        await _paced(args, quick, results)

    if "memory" in only:
        idle = await idle_session_bytes(2_000 if quick else 20_000)
        results["idle_session"] = idle
        row(
            "bytes per idle session actor (tracemalloc)",
            f"{idle['bytes']:,.0f} B",
            "8,192 B",
            idle["bytes"] / 8192,
            f"≤ 1.00  {verdict(idle['bytes'] <= 8192)}",
        )
        row(
            "  tasks left by idle actors",
            f"{idle['tasks_added']:.0f}",
            "0",
            None,
            verdict(idle["tasks_added"] == 0),
        )
        row(
            "  bytes per idle session after one run",
            f"{idle['bytes_after_one_run']:,.0f} B",
            "8,192 B",
            idle["bytes_after_one_run"] / 8192,
            "incl. bounded caches (run records, dedupe, replay)",
        )
        row(
            "  idle actors reaped",
            f"{idle['reaped']:,.0f}",
            f"{idle['expected_reaped']:,.0f}",
            idle["reaped"] / idle["expected_reaped"],
            verdict(idle["reaped"] == idle["expected_reaped"]),
        )
        row(
            "  left per session after reaping",
            f"{idle['bytes_after_reaping']:,.0f} B",
            "",
            None,
            "(held by the bounded caches)",
        )

    if "store" in only:
        st = await store_figures(20_000 if quick else 100_000)
        results["store"] = st
        rows_n = 20_000 if quick else 100_000
        row(
            f"list {rows_n:,} sessions from the store",
            f"{st['list_s'] * 1000:,.0f} ms",
            "1,000 ms",
            st["list_s"],
            f"≤ 1.00  {verdict(st['list_s'] < 1)}",
        )
        need = 3 * 3000
        row(
            "group-commit writes/s (one row per write)",
            f"{st['writes_per_s']:,.0f}/s",
            f"{need:,}/s",
            st["writes_per_s"] / need,
            f"≥ 1.00  {verdict(st['writes_per_s'] >= need)}  (3 writes per run at 3,000 runs/s; "
            f"{st['mean_batch']:.0f} per commit)",
        )

    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"\nload average {load} at the end")
    if args.json:
        print(json.dumps(results, separators=(",", ":"), default=str))
    return 0


async def _paced(args: argparse.Namespace, quick: bool, results: dict[str, Any]) -> None:
    sessions = args.paced_sessions or (2000 if quick else 5000)
    report, cpu = await paced_figures(sessions, args.paced_runs)
    results["paced"] = {"report": report.to_json(), **cpu}
    _print_loadtest("paced", report)
    demanded = cpu["demanded_events_per_s"]
    row(
        f"paced agent events/s ({sessions:,} sessions × {args.paced_runs} runs × 20 deltas / 50 ms)",
        f"{report.events_per_s:,.0f}/s",
        f"{demanded:,.0f}/s",
        report.events_per_s / demanded,
        f"delivered ÷ demanded; {verdict(report.clean)}",
    )
    row(
        "  gateway CPU per delivered agent event",
        f"{cpu['us_per_agent_event']:,.1f} µs",
        "",
        None,
        f"{cpu['agent_events_per_cpu_s']:,.0f} per CPU-second (user {cpu['gateway_user_s']:.1f} s,"
        f" system {cpu['gateway_system_s']:.1f} s)",
    )


def _print_loadtest(name: str, report: LoadtestReport) -> None:
    print(f"\n  [{name}] " + report.table().replace("\n", "\n  ") + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sink", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true", help="smaller sizes, one round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per raw figure (median)")
    parser.add_argument("--deltas", type=int, default=4, help="deltas per run for runs/s")
    parser.add_argument("--scale-sessions", type=int, default=None)
    parser.add_argument(
        "--paced-sessions", type=int, default=None, help="paced (5,000; 2,000 quick)"
    )
    parser.add_argument("--paced-runs", type=int, default=2, help="paced runs per session (2)")
    parser.add_argument(
        "--only", default="", help="comma list: raw,fanout,runs,scale,paced,memory,store"
    )
    parser.add_argument("--json", action="store_true", help="also print all figures as JSON")
    args = parser.parse_args()
    if args.sink:
        sink_main()
        return 0
    return trio.run(bench, args)


if __name__ == "__main__":
    sys.exit(main())
