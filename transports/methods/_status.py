"""`health` and `status` in OpenClaw's shapes, with clawlane's own figures under `clawlane`.

`health` is the snapshot's `health` definition (what `openclaw health` prints: the agents,
their heartbeat, the session store and its count, the event loop); `status` what OpenClaw's
gateway answers (`sessions.byAgent`, `heartbeat`, `processMemory`, `pid`, `os`, ... what
`openclaw status --json` reads). clawlane's own fields (generation, lanes, runs, hub, store,
process, publisher) sit in one block, `status["clawlane"]` / `health["clawlane"]`.
The `health` event (and the hello-ok snapshot) carries the OpenClaw part only: the schema's
definition of it is closed.
"""

from __future__ import annotations

import os
import platform
import time
from typing import Any

import psutil
import trio
import trio.lowlevel

from runtime import telemetry
from runtime.heartbeat import heartbeat_summary

from ._context import Host

_proc = psutil.Process()
_last_sample: list[float] = []


def now_ms() -> int:
    return int(time.time() * 1000)


async def event_loop_view() -> dict[str, Any]:
    """OpenClaw's `eventLoop` block: the CPU since the last sample and the lag of one
    checkpoint now (a loop that answers late is busy). A checkpoint."""
    started = time.perf_counter()
    await trio.lowlevel.checkpoint()
    lag_ms = round((time.perf_counter() - started) * 1000, 1)
    wall = time.monotonic()
    cpu = sum(_proc.cpu_times()[:2])
    if _last_sample:
        last_wall, last_cpu = _last_sample
        interval = max(wall - last_wall, 1e-3)
        ratio = max(0.0, (cpu - last_cpu) / interval)
    else:
        interval, ratio = 0.0, 0.0
    _last_sample[:] = [wall, cpu]
    return {
        "degraded": False,
        "degradedSinceMs": None,
        "reasons": [],
        "intervalMs": round(interval * 1000, 3),
        "delayP99Ms": lag_ms,
        "delayMaxMs": lag_ms,
        "utilization": round(min(ratio, 1.0), 3),
        "cpuCoreRatio": round(ratio, 3),
    }


def _heartbeat_seconds(summaries: list[dict[str, Any]]) -> int:
    """OpenClaw's `heartbeatSeconds`: the first enabled agent's cadence (0: none)."""
    every = next((s["everyMs"] for s in summaries if s["enabled"]), None)
    return round(every / 1000) if every else 0


async def _session_counts(gw: Host) -> tuple[dict[str, int], dict[str, list[dict[str, Any]]]]:
    """Sessions per agent and each agent's most recent ones (at most 5)."""
    rows = await gw.actors.supervisor.store.list_sessions(limit=None)
    counts: dict[str, int] = {}
    recent: dict[str, list[dict[str, Any]]] = {}
    t = now_ms()
    for row in rows:
        counts[row.agentId] = counts.get(row.agentId, 0) + 1
        bucket = recent.setdefault(row.agentId, [])
        if len(bucket) < 5:
            bucket.append(
                {"key": row.key, "updatedAt": row.updatedAt, "age": max(0, t - row.updatedAt)}
            )
    for bucket in recent.values():
        bucket.sort(key=lambda r: -(r["updatedAt"] or 0))
    return counts, recent


async def health_view(gw: Host, *, extras: bool = True) -> dict[str, Any]:
    """The `health` result (with `extras`, clawlane's block too). A checkpoint."""
    started = time.perf_counter()
    gen = gw.actors.supervisor.generation
    path = str(gw.actors.supervisor.store.path)  # the SQLite file, or the PostgreSQL server
    counts, recent = await _session_counts(gw)
    beats = {agent_id: heartbeat_summary(gen, agent_id) for agent_id in gen.agents}
    agents = [
        {
            "agentId": agent_id,
            "isDefault": agent_id == gen.default_agent,
            "heartbeat": beats[agent_id],
            "sessions": {
                "path": path,
                "count": counts.get(agent_id, 0),
                "recent": recent.get(agent_id, []),
            },
        }
        for agent_id in gen.agents
    ]
    view: dict[str, Any] = {
        "ok": True,
        "ts": now_ms(),
        "durationMs": 0,
        "plugins": {
            "loaded": sorted(gw.actors.supervisor.plugins.plugins),
            "errors": [],
            "unavailable": [],
        },
        "configReload": {"hotReloadStatus": "active" if gw.process.config_path else "disabled"},
        "channels": {},
        "channelOrder": [],
        "channelLabels": {},
        "heartbeatSeconds": _heartbeat_seconds(list(beats.values())),
        "defaultAgentId": gen.default_agent,
        "agents": agents,
        "sessions": {
            "path": path,
            "count": sum(counts.values()),
            "recent": sorted(
                (r for bucket in recent.values() for r in bucket),
                key=lambda r: -(r["updatedAt"] or 0),
            )[:5],
        },
        "eventLoop": await event_loop_view(),
    }
    view["durationMs"] = int((time.perf_counter() - started) * 1000)
    if extras:
        sup = gw.actors.supervisor.statistics()
        view["clawlane"] = {
            "version": gw.process.version,
            "uptimeMs": int((time.time() - gw.process.started) * 1000),
            "generation": sup.generation,
            "sessions": {"active": sup.sessions, "busy": sup.busy_sessions},
            "runs": {"active": gw.actors.registry.statistics().active_runs},
        }
        await add_cluster(gw, view["clawlane"])
    return view


async def add_cluster(gw: Host, block: dict[str, Any]) -> None:
    """The cluster's nodes under clawlane's block, with `cluster.redis.url`."""
    cluster = await gw.process.cluster_view()
    if cluster is not None:
        block["cluster"] = cluster


def clawlane_status(gw: Host) -> dict[str, Any]:
    """clawlane's own figures (what `status` answered before it took OpenClaw's shape)."""
    sup = gw.actors.supervisor
    gen = sup.generation
    s = sup.statistics()
    hub = gw.actors.hub.statistics()
    reg = gw.actors.registry.statistics()
    store = sup.store.statistics()
    return {
        "version": gw.process.version,
        "uptimeMs": int((time.time() - gw.process.started) * 1000),
        "authMode": gw.trust.auth.mode,
        "generation": {
            "number": gen.number,
            "builtAt": gen.built_at_ms,
            "inputsHash": gen.inputs_hash,
            "defaultAgent": gen.default_agent,
            "models": len(gen.catalog),
        },
        "sessions": {"loaded": s.sessions, "busy": s.busy_sessions, "queuedRuns": s.queued_runs},
        "runs": {"active": reg.active_runs, "known": reg.known_runs, "waiters": reg.waiters},
        "lanes": {
            name: {
                "capacity": ls.capacity,
                "inUse": ls.in_use,
                "waiting": ls.waiting,
                "acquired": ls.acquired,
                "waitTotalMs": round(ls.wait_total_ms, 3),
                "waitMaxMs": round(ls.wait_max_ms, 3),
            }
            for name, ls in ((n, lane.statistics()) for n, lane in sup.lanes.items())
        },
        "connections": hub.connections,
        "events": {
            "emitted": hub.events_emitted,
            "delivered": hub.frames_delivered,
            "replayBytes": hub.replay_bytes,  # the replay buffers (bounded)
            "retainedRuns": hub.retained_runs,
        },
        "idleContextBytes": s.idle_context_bytes,  # idle sessions' contexts (bounded)
        "store": {"pending": store.pending, "commits": store.commits},
        "crashes": s.crashes,
        # For `clawlane loadtest` (RSS/CPU by pid when it runs on the same machine).
        "process": {"pid": os.getpid(), "rssBytes": _proc.memory_info().rss},
        "publisher": gw.actors.publisher.status_view() if gw.actors.publisher is not None else None,
        "durability": durability_view(gw),
        "telemetry": telemetry.health() or {"enabled": False},
    }


def durability_view(gw: Host) -> dict[str, Any]:
    """clawlane's durability: failed writes, turns not stored, what the last start recovered."""
    store = gw.actors.supervisor.store.statistics()
    sup = gw.actors.supervisor.statistics()
    recovery = gw.actors.recovery
    return {
        "storeFailedCommits": store.failed_commits,
        "storeFailedWrites": store.failed_writes,
        "storeLastError": store.last_error,
        "storeLastErrorAt": store.last_error_at_ms,
        "storeFailing": store.failing,
        "turnsNotStored": sup.turns_not_stored,
        "journalRowsWritten": store.runs_written,
        "runsEndedAtShutdown": sup.runs_forced_end,
        "submissionsWaiting": sup.submissions_waiting,
        "recovered": {
            "interrupted": recovery.interrupted if recovery else 0,
            "rerun": recovery.rerun if recovery else 0,
            "restored": len(recovery.runs) if recovery else 0,
        },
    }


def _heartbeat_view(gw: Host) -> dict[str, Any]:
    """`status`'s heartbeat settings per agent, its channels (none) and the system events
    waiting for each agent's main session."""
    gen = gw.actors.supervisor.generation
    return {
        "heartbeat": {
            "defaultAgentId": gen.default_agent,
            "agents": [
                {
                    "agentId": agent_id,
                    **{k: s[k] for k in ("enabled", "every", "everyMs")},
                    "waitingForRoute": False,  # no channels: nothing to route to
                }
                for agent_id, s in ((a, heartbeat_summary(gen, a)) for a in gen.agents)
            ],
        },
        "channelSummary": [],
        "queuedSystemEvents": [
            e.text
            for a in gen.agents
            for e in gw.actors.supervisor.services.system_events.peek(f"agent:{a}:main")
        ],
    }


async def status_view(gw: Host, *, cli_projection: bool = False) -> dict[str, Any]:
    """The `status` result. A checkpoint."""
    gen = gw.actors.supervisor.generation
    counts, recent = await _session_counts(gw)
    path = str(gw.actors.supervisor.store.path)  # the SQLite file, or the PostgreSQL server
    default = gen.agent(None)
    default_ref = gen.aliases.get(default.primary, default.primary)
    window = next(
        (e.contextWindow for e in gen.catalog if f"{e.provider}/{e.id}" == default_ref), None
    )
    memory = _proc.memory_info()
    active = gw.actors.registry.statistics().active_runs
    view: dict[str, Any] = {
        "runtimeVersion": gw.process.version,
        **_heartbeat_view(gw),
        "tasks": {
            "total": active,
            "active": active,
            "terminal": 0,
            "failures": 0,
            "byStatus": {"queued": 0, "running": active, "succeeded": 0, "failed": 0},
            "byRuntime": {"subagent": 0, "acp": 0, "cli": 0, "cron": 0},
        },
        "sessions": {
            "paths": [path],
            "count": sum(counts.values()),
            "defaults": {"model": default_ref, "contextTokens": window},
            "recent": sorted(
                (r for bucket in recent.values() for r in bucket),
                key=lambda r: -(r["updatedAt"] or 0),
            )[:5],
            "byAgent": [
                {
                    "agentId": agent_id,
                    "path": path,
                    "count": counts.get(agent_id, 0),
                    "recent": recent.get(agent_id, []),
                }
                for agent_id in gen.agents
            ],
        },
        "modelRuntime": {"degraded": False, "pendingAgents": []},
        "eventLoop": await event_loop_view(),
        "processMemory": {"rssBytes": memory.rss},
        "pid": os.getpid(),
        "os": {
            "platform": platform.system().lower(),
            "arch": platform.machine(),
            "release": platform.release(),
            "label": f"{platform.system().lower()} {platform.release()} ({platform.machine()})",
        },
        "clawlane": clawlane_status(gw),
    }
    await add_cluster(gw, view["clawlane"])
    if cli_projection:
        view["cliProjection"] = {
            "agents": {
                "defaultId": gen.default_agent,
                "ownership": "sole",
                "selectionRequired": False,
                "rows": [{"id": agent_id} for agent_id in gen.agents],
            },
            "updateChannel": None,
        }
    return view
