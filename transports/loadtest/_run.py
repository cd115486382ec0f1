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
one event per 150 ms, as OpenClaw throttles them (`actors.runs._chat`), so a run whose deltas come
faster has fewer events; each connection's frame `seq` must have no gaps. Latency is the
receipt time minus the event's `ts` (ms epoch, stamped by the gateway's hub).

The load side must not be the bottleneck, so this module speaks WebSocket itself on a trio
stream (RFC 6455 client: masked frames out, unmasked frames parsed by hand in, one coalesced
`send_all` per connection) instead of going through `transports.client._client`.

Gateway memory and CPU come from psutil on the gateway's pid: this process with `--spawn`
(the gateway runs in-process; its CPU then includes the load side), the child with
`--spawn-process` (a `clawlane gateway` subprocess on a free port; the figures to quote),
or `--gateway-pid` for a gateway started elsewhere.

Errors: `LoadtestError` (cannot reach or start the gateway, bad options).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import sys
import time
from typing import Final

import trio

from ..access import is_loopback
from ._conn import (
    GATEWAY_MAX_INFLIGHT,
    SCOPED_CAP,
    SUBSCRIBE_METHOD,
    LoadtestError,
    LoadtestOptions,
    _Conn,
    _Loadtest,
    _split_url,
)
from ._gateway import _Sampler, _spawned_in_process, spawn_gateway_process
from ._report import LoadtestReport, Timeline, progress_line, write_report

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
            from ..access import local_client_token

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
    timeline = Timeline(options.sample_interval) if options.report_dir is not None else None
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(sampler.run)
            subscriber_mode = await _open_connections(lt, url, nursery, owners_n)
            lane_capacity = await _ask_status(lt, sampler, url)
            sampler.sample()
            started = time.monotonic()
            if options.progress:
                nursery.start_soon(progress_line, lt, sampler, started, total, options.duration)
            if timeline is not None:
                timeline.start(lt, sampler, started)
                nursery.start_soon(timeline.run, lt, sampler)
            await _drive_sessions(lt, owners_n, runs)
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
    report = _report(
        lt,
        sampler,
        max(elapsed, 1e-9),
        total=total,
        connections=owners_n,
        subscriber_mode=subscriber_mode,
        where=where,
        pid=sampler.pid if sampler.pid is not None else pid,
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


async def _open_connections(lt: _Loadtest, url: str, nursery: trio.Nursery, owners_n: int) -> str:
    """Open the owners' connections and the subscribers' (their tasks in `nursery`);
    the subscriber mode (`none`, `subscribe`, `unscoped+filter`). A checkpoint."""
    options = lt.options
    lt.owners = [_Conn(lt, i, subscriber=False) for i in range(owners_n)]
    # At most OPEN_PARALLEL handshakes at once: a gateway admits 32 unauthenticated
    # sockets per address (more are answered 503), as OpenClaw's does.
    opening_slots = trio.CapacityLimiter(OPEN_PARALLEL)
    async with trio.open_nursery() as opening:
        for conn in lt.owners:
            opening.start_soon(_open_bounded, opening_slots, conn, url, nursery, [SCOPED_CAP])
    if not options.subscribers_per_run:
        return "none"
    methods = set(lt.owners[0].hello.get("features", {}).get("methods", []))
    subscribe = SUBSCRIBE_METHOD in methods
    caps = [SCOPED_CAP] if subscribe else []
    lt.subscribers = [
        _Conn(lt, owners_n + i, subscriber=True) for i in range(options.subscribers_per_run)
    ]
    async with trio.open_nursery() as opening:
        for conn in lt.subscribers:
            opening.start_soon(_open_bounded, opening_slots, conn, url, nursery, caps)
    if subscribe:
        for conn in lt.subscribers:
            await _subscribe_all(conn, lt.prefix, options.sessions)
    return "subscribe" if subscribe else "unscoped+filter"


async def _ask_status(lt: _Loadtest, sampler: _Sampler, url: str) -> int | None:
    """The gateway's `status`: its main lane's capacity (None: not said); a gateway on
    this machine that says its pid is watched without `--gateway-pid`. A checkpoint."""
    status = await lt.owners[0].request("status", None, timeout=10)
    if not status.ok or not isinstance(status.value, dict):
        return None
    lane_capacity: int | None = None
    # clawlane's own figures live under `clawlane` (OpenClaw's shape around them).
    ours = status.value.get("clawlane")
    ours = ours if isinstance(ours, dict) else status.value
    with contextlib.suppress(KeyError, TypeError, ValueError):
        lane_capacity = int(ours["lanes"]["main"]["capacity"])
    reported = ours.get("process", {})
    if (
        sampler.proc is None
        and isinstance(reported, dict)
        and isinstance(reported.get("pid"), int)
        and is_loopback(_split_url(url)[0])
    ):
        sampler.attach(reported["pid"])
    return lane_capacity


async def _drive_sessions(lt: _Loadtest, owners_n: int, runs: int | None) -> None:
    """Every session's driver, to the end (its runs done, or the duration over)."""
    options = lt.options
    deadline = trio.current_time() + options.duration if options.duration is not None else None
    lt.start_driving(owners_n, deadline, runs)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(lt.expire_runs)
        await lt.all_driven.wait()
        nursery.cancel_scope.cancel()


def _report(
    lt: _Loadtest,
    sampler: _Sampler,
    elapsed: float,
    *,
    total: int | None,
    connections: int,
    subscriber_mode: str,
    where: str,
    pid: int | None,
    lane_capacity: int | None,
) -> LoadtestReport:
    options = lt.options
    lost, chat_missing = lt.tally()
    return LoadtestReport(
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
        connections=connections,
        subscribers=len(lt.subscribers),
        subscriber_mode=subscriber_mode,
        deltas=options.deltas,
        delta_delay_ms=options.delta_delay_ms,
        gateway=where,
        gateway_pid=pid,
        gateway_start_rss_bytes=sampler.start_rss,
        gateway_peak_rss_bytes=sampler.peak_rss,
        gateway_end_rss_bytes=sampler.rss,
        gateway_cpu_percent=sampler.cpu_percent,
        lane_capacity=lane_capacity,
    )


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
            code = failed[0].code or ("TIMEOUT" if not failed[0].finished else "UNKNOWN")
            raise LoadtestError(f"{SUBSCRIBE_METHOD} failed: {code}")


# --- the command line ----------------------------------------------------------------------


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
