"""The server side of the dashboard (`GET /`): the gateway methods it needs beyond
OpenClaw's, and the sampler behind its chart. All clawlane-only, all `operator.read`.

- `clawlane.dashboard` `{}`: a snapshot: the lanes (capacity, in use, waiting), the runs
  queued or running (newest `RUNS_MAX`), the connections (first `CONNECTIONS_MAX`), the
  store and the publisher in brief.
- `clawlane.generations` `{}`: the generation history (`Publisher.history`: publishes and
  failed builds, with their reasons and errors).
- `clawlane.series` `{sinceMs?}`: one sample a second for the last `SERIES_SECONDS`
  (runs started and ended per second, events per second, the mean time to a run's first
  event in that second, runs queued, main lane slots in use), newer than `sinceMs`.

The sampler is one task reading counters the actors keep anyway, once a second.
"""

from __future__ import annotations

import collections
import time
from typing import Any, Final

import msgspec
import trio

from runtime.protocol import opt

from ._context import Call, Host, MethodTable

SERIES_SECONDS: Final = 600
RUNS_MAX: Final = 200
CONNECTIONS_MAX: Final = 200
SAMPLE_INTERVAL_S: Final = 1.0
READ_SCOPE: Final = "operator.read"


class EmptyParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    pass


class SeriesParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    sinceMs: int | msgspec.UnsetType = msgspec.UNSET


_Counters = tuple[float, int, int, int, float, int]
"""(monotonic time, runs started, runs ended, events emitted, first-event sum, count)."""


class Sampler:
    """Samples the gateway's counters once a second into a bounded ring."""

    def __init__(self, gateway: Host) -> None:
        self._gw = gateway
        self.samples: collections.deque[dict[str, Any]] = collections.deque(maxlen=SERIES_SECONDS)
        self._last: _Counters | None = None

    def _counters(self) -> _Counters:
        gw = self._gw
        runs = gw.actors.registry.metrics
        first = gw.actors.hub.first_event.snapshot()
        ended = sum(runs.snapshot().ended.values())
        events = gw.actors.hub.statistics().events_emitted
        return (time.monotonic(), runs.started, ended, events, first.sum, first.count)

    def sample(self) -> None:
        """Take one sample (the first call only sets the baseline). Not a checkpoint."""
        now = self._counters()
        last, self._last = self._last, now
        if last is None:
            return
        dt = max(now[0] - last[0], 1e-6)
        firsts = now[5] - last[5]
        sup = self._gw.actors.supervisor.statistics()
        main = self._gw.actors.supervisor.lanes["main"].statistics()
        self.samples.append(
            {
                "ts": int(time.time() * 1000),
                "runsStartedPerS": round((now[1] - last[1]) / dt, 2),
                "runsPerS": round((now[2] - last[2]) / dt, 2),
                "eventsPerS": round((now[3] - last[3]) / dt, 2),
                "firstEventMs": round((now[4] - last[4]) / firsts * 1000, 2) if firsts else None,
                "queued": sup.queued_runs,
                "laneInUse": main.in_use,
                "laneCapacity": main.capacity,
            }
        )

    async def run(self) -> None:
        """Sample every `SAMPLE_INTERVAL_S` until cancelled."""
        while True:
            self.sample()
            await trio.sleep(SAMPLE_INTERVAL_S)


# --- the methods ------------------------------------------------------------------------------


def _run_view(rec: Any) -> dict[str, Any]:
    view = {
        "runId": rec.run_id,
        "sessionKey": rec.session_key,
        "agentId": rec.agent_id,
        "status": rec.status,
        "acceptedAt": rec.accepted_at,
    }
    if rec.started_at is not None:
        view["startedAt"] = rec.started_at
    return view


def _connection_view(conn: Any) -> dict[str, Any]:
    return {
        "connId": conn.conn_id,
        "clientId": conn.client_id,
        "mode": conn.client_mode,
        "role": conn.role,
        "scopes": sorted(conn.scopes),
        "scoped": conn.scoped,
        "bufferedBytes": conn.buffered_bytes,
    }


async def dashboard(call: Call, params: EmptyParams) -> dict[str, Any]:
    gw = call.gateway
    sup = gw.actors.supervisor
    s = sup.statistics()
    active = sorted(gw.actors.registry.active(), key=lambda r: r.accepted_at, reverse=True)
    conns = list(gw.process.connections.values())
    store = sup.store.statistics()
    pub = gw.actors.publisher.statistics() if gw.actors.publisher is not None else None
    await trio.lowlevel.checkpoint()
    return {
        "ts": int(time.time() * 1000),
        "uptimeMs": int((time.time() - gw.process.started) * 1000),
        "version": gw.process.version,
        "generation": sup.generation.number,
        "lanes": [
            {
                "name": name,
                "capacity": ls.capacity,
                "inUse": ls.in_use,
                "waiting": ls.waiting,
                "acquired": ls.acquired,
                "waitMaxMs": round(ls.wait_max_ms, 3),
            }
            for name, ls in ((n, lane.statistics()) for n, lane in sup.lanes.items())
        ],
        "sessions": {"loaded": s.sessions, "busy": s.busy_sessions, "queuedRuns": s.queued_runs},
        "runs": {
            "active": len(active),
            "queued": sum(1 for r in active if r.status == "queued"),
            "items": [_run_view(r) for r in active[:RUNS_MAX]],
        },
        "connections": {
            "count": len(conns),
            "items": [_connection_view(c) for c in conns[:CONNECTIONS_MAX]],
        },
        "store": {
            "pending": store.pending,
            "commits": store.commits,
            "failed": store.failed_commits,
        },
        "publisher": {"published": pub.published, "failed": pub.failed} if pub else None,
    }


async def generations(call: Call, params: EmptyParams) -> dict[str, Any]:
    gw = call.gateway
    await trio.lowlevel.checkpoint()
    history = gw.actors.publisher.history() if gw.actors.publisher is not None else []
    return {"serving": gw.actors.supervisor.generation.describe(), "history": history}


async def series(call: Call, params: SeriesParams) -> dict[str, Any]:
    since = opt(params.sinceMs) or 0
    await trio.lowlevel.checkpoint()
    samples = [s for s in call.gateway.process.sampler.samples if s["ts"] > since]
    return {"intervalMs": int(SAMPLE_INTERVAL_S * 1000), "samples": samples}


def register(methods: MethodTable) -> None:
    methods.add("clawlane.dashboard", dashboard, EmptyParams, scope=READ_SCOPE)
    methods.add("clawlane.generations", generations, EmptyParams, scope=READ_SCOPE)
    methods.add("clawlane.series", series, SeriesParams, scope=READ_SCOPE)
