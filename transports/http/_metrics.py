"""`GET /metrics`: the gateway in the Prometheus text format (prometheus-client).

Imported when `/metrics` is first served (`_routes`), not at start: prometheus-client (with
its HTTP server and WSGI modules) is several MiB that a gateway nobody scrapes never needs.

Almost everything is read when Prometheus scrapes, by a custom collector, from what the
actors keep anyway (`statistics()` of the supervisor, its lanes, the hub, the registry, the
store and the publisher) and from the few cheap counters and histograms the run path keeps
(`actors._metrics`): nothing is added to a run's work for a metric nobody reads. Each
gateway has its own `CollectorRegistry` (several gateways share a test process), with
prometheus-client's process and GC collectors besides ours.

Labels are bounded: `status` (ok, error, aborted), `reason` (the abort reasons), `kind`
(provider error kinds), `lane` (the four global lanes), `role` (operator, node, pending,
other), `route` (the fixed HTTP routes, "other"), `code` (1xx..5xx). No run id, session
key, model or client name ever becomes a label.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Final

from prometheus_client import CollectorRegistry, GCCollector, ProcessCollector, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from actors import ABORT_REASONS, PROVIDER_ERROR_KINDS, RUN_STATUSES, HistogramSnapshot
from runtime import telemetry

from ._counters import ROLES, MetricsHost

CONTENT_TYPE: Final = "text/plain; version=0.0.4; charset=utf-8"


def _histogram(
    name: str, doc: str, snapshots: dict[tuple[str, ...], HistogramSnapshot], labels: list[str]
) -> HistogramMetricFamily:
    family = HistogramMetricFamily(name, doc, labels=labels)
    for values, snap in snapshots.items():
        family.add_metric(list(values), snap.buckets(), snap.sum)
    return family


class GatewayCollector(Collector):
    """Reads one gateway's state at scrape time. Runs in the trio thread (the scrape
    handler calls `generate_latest` there): everything it reads is consistent."""

    def __init__(self, gateway: MetricsHost) -> None:
        self._gw = gateway

    def collect(self) -> Iterator[Metric]:
        yield from self._process()
        yield from self._runs()
        yield from self._events()
        yield from self._lanes()
        yield from self._connections()
        yield from self._store()
        yield from self._generations()
        yield from self._telemetry()

    def _telemetry(self) -> Iterator[Metric]:
        """The OTLP exporters' health (`diagnostics.otel`; nothing while it is off)."""
        health = telemetry.health()
        if health is None:
            return
        labels = ["signal"]
        ok = GaugeMetricFamily(
            "clawlane_telemetry_exporter_up", "1 while the last export succeeded.", labels=labels
        )
        exports = CounterMetricFamily(
            "clawlane_telemetry_exports", "OTLP exports, by result.", labels=[*labels, "result"]
        )
        dropped = CounterMetricFamily(
            "clawlane_telemetry_dropped",
            "Spans, metric batches or log records dropped (queue full, export failed).",
            labels=labels,
        )
        for signal in health["signals"]:
            name = signal["signal"]
            ok.add_metric([name], 1 if signal["ok"] else 0)
            exports.add_metric([name, "ok"], signal["exportsOk"])
            exports.add_metric([name, "failed"], signal["exportsFailed"])
            dropped.add_metric([name], signal["itemsDropped"])
        yield from (ok, exports, dropped)

    def _process(self) -> Iterator[Metric]:
        gw = self._gw
        info = GaugeMetricFamily(
            "clawlane_build_info", "The gateway's version (value 1).", labels=["version"]
        )
        info.add_metric([gw.process.version], 1)
        yield info
        yield GaugeMetricFamily(
            "clawlane_uptime_seconds",
            "Seconds since the gateway started.",
            time.time() - gw.process.started,
        )
        yield GaugeMetricFamily(
            "clawlane_ready", "1 when /readyz answers 200.", 1 if not gw.readiness_failures() else 0
        )

    def _runs(self) -> Iterator[Metric]:
        gw = self._gw
        runs = gw.actors.registry.metrics.snapshot()
        reg = gw.actors.registry.statistics()
        sup = gw.actors.supervisor.statistics()
        yield CounterMetricFamily(
            "clawlane_runs_started", "Runs accepted (each gets lifecycle start).", runs.started
        )
        ended = CounterMetricFamily(
            "clawlane_runs_ended", "Runs ended, by terminal status.", labels=["status"]
        )
        for status in RUN_STATUSES:
            ended.add_metric([status], runs.ended.get(status, 0))
        yield ended
        aborted = CounterMetricFamily(
            "clawlane_runs_aborted", "Aborted runs, by reason.", labels=["reason"]
        )
        for reason in ABORT_REASONS:
            aborted.add_metric([reason], runs.aborted.get(reason, 0))
        yield aborted
        yield _histogram(
            "clawlane_run_duration_seconds",
            "Runs from lifecycle start to their end, by terminal status.",
            {(s,): h for s, h in runs.duration.items()},
            ["status"],
        )
        yield _histogram(
            "clawlane_run_first_event_seconds",
            "From a run's acceptance to its first output event (queueing included).",
            {(): gw.actors.hub.first_event.snapshot()},
            [],
        )
        errors = CounterMetricFamily(
            "clawlane_provider_errors",
            "Model provider errors that ended a run or a fallback candidate, by kind.",
            labels=["kind"],
        )
        for kind in PROVIDER_ERROR_KINDS:
            errors.add_metric([kind], runs.provider_errors.get(kind, 0))
        yield errors
        yield GaugeMetricFamily("clawlane_runs_active", "Runs queued or running.", reg.active_runs)
        yield GaugeMetricFamily(
            "clawlane_runs_queued", "Runs waiting in their session's lane.", sup.queued_runs
        )
        yield GaugeMetricFamily(
            "clawlane_sessions_loaded", "Session actors in memory.", sup.sessions
        )
        yield GaugeMetricFamily(
            "clawlane_sessions_busy", "Sessions with a run queued or running.", sup.busy_sessions
        )
        yield CounterMetricFamily(
            "clawlane_session_crashes", "Session actor crashes (contained).", sup.crashes
        )
        yield GaugeMetricFamily(
            "clawlane_session_idle_context_bytes",
            "Estimated bytes of the contexts idle sessions keep in memory (bounded).",
            sup.idle_context_bytes,
        )
        yield CounterMetricFamily(
            "clawlane_session_contexts_dropped",
            "Idle sessions' contexts let go past the bound (reloaded at their next run).",
            sup.contexts_dropped,
        )

    def _events(self) -> Iterator[Metric]:
        """The runs' events: emitted, delivered, and what the replay buffers keep."""
        hub = self._gw.actors.hub.statistics()
        yield CounterMetricFamily(
            "clawlane_events_emitted", "Agent events emitted by runs.", hub.events_emitted
        )
        yield CounterMetricFamily(
            "clawlane_events_delivered",
            "Event frames queued to subscribers (each event once per receiver).",
            hub.frames_delivered,
        )
        yield GaugeMetricFamily(
            "clawlane_replay_bytes",
            "Bytes of event frames the runs' replay buffers hold (bounded).",
            hub.replay_bytes,
        )
        yield GaugeMetricFamily(
            "clawlane_replay_runs_retained",
            "Ended runs whose replay buffers are kept for late subscribers (bounded).",
            hub.retained_runs,
        )

    def _lanes(self) -> Iterator[Metric]:
        lanes = self._gw.actors.supervisor.lanes
        capacity = GaugeMetricFamily(
            "clawlane_lane_capacity", "Slots of a global lane.", labels=["lane"]
        )
        in_use = GaugeMetricFamily("clawlane_lane_in_use", "Slots in use.", labels=["lane"])
        waiting = GaugeMetricFamily(
            "clawlane_lane_waiting", "Runs waiting for a slot.", labels=["lane"]
        )
        waits: dict[tuple[str, ...], HistogramSnapshot] = {}
        for name, lane in lanes.items():
            s = lane.statistics()
            capacity.add_metric([name], s.capacity)
            in_use.add_metric([name], s.in_use)
            waiting.add_metric([name], s.waiting)
            waits[(name,)] = lane.wait_histogram()
        yield capacity
        yield in_use
        yield waiting
        yield _histogram(
            "clawlane_lane_wait_seconds",
            "Waits for a global lane slot (a free slot counts as 0).",
            waits,
            ["lane"],
        )

    def _connections(self) -> Iterator[Metric]:
        gw = self._gw
        roles = dict.fromkeys(ROLES, 0)
        for conn in gw.process.connections.values():
            role = conn.role if conn.role in roles else "other"
            roles[role] += 1
        family = GaugeMetricFamily(
            "clawlane_connections",
            "WebSocket connections: authenticated by role, and `pending` (handshake).",
            labels=["role"],
        )
        for role, n in roles.items():
            family.add_metric([role], n)
        family.add_metric(["pending"], max(gw.websocket_sockets - len(gw.process.connections), 0))
        yield family
        yield GaugeMetricFamily(
            "clawlane_http_connections", "Open plain HTTP connections.", gw.http_sockets
        )
        answered = CounterMetricFamily(
            "clawlane_http_requests", "HTTP requests answered.", labels=["route", "code"]
        )
        for (route, code), n in sorted(gw.http_counters.answered.items()):
            answered.add_metric([route, code], n)
        yield answered
        yield CounterMetricFamily(
            "clawlane_slow_consumer_closes",
            "Connections closed because they did not read fast enough (1008, or an SSE "
            "stream cut off).",
            gw.slow_consumer_closes,
        )

    def _store(self) -> Iterator[Metric]:
        sup = self._gw.actors.supervisor
        store = sup.store.statistics()
        yield GaugeMetricFamily(
            "clawlane_store_queue_depth", "Writes submitted and not yet committed.", store.pending
        )
        yield GaugeMetricFamily(
            "clawlane_store_backlog",
            "Writes waiting for room in the store's channel.",
            sup.statistics().persist_backlog,
        )
        yield CounterMetricFamily(
            "clawlane_store_commits", "Transactions committed.", store.commits
        )
        yield CounterMetricFamily(
            "clawlane_store_commit_failures", "Transactions rolled back.", store.failed_commits
        )
        yield CounterMetricFamily(
            "clawlane_store_rows_written", "Session rows upserted.", store.rows_written
        )
        yield CounterMetricFamily(
            "clawlane_store_entries_written", "Transcript entries appended.", store.entries_written
        )
        yield _histogram(
            "clawlane_store_commit_seconds",
            "One group commit, as the event loop waits for it.",
            {(): sup.store.commit_seconds.snapshot()},
            [],
        )

    def _generations(self) -> Iterator[Metric]:
        gw = self._gw
        yield GaugeMetricFamily(
            "clawlane_generation",
            "The serving model runtime generation's number.",
            gw.actors.supervisor.generation.number,
        )
        pub = gw.actors.publisher.statistics() if gw.actors.publisher is not None else None
        yield CounterMetricFamily(
            "clawlane_generation_publishes", "Generations published.", pub.published if pub else 0
        )
        yield CounterMetricFamily(
            "clawlane_generation_publish_failures",
            "Generation builds that failed (the previous one kept serving).",
            pub.failed if pub else 0,
        )


def open_registry(gateway: MetricsHost) -> CollectorRegistry:
    """The registry `/metrics` renders: ours, plus the process and GC collectors."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(GatewayCollector(gateway))
    ProcessCollector(registry=registry)
    GCCollector(registry=registry)
    return registry


def render(registry: CollectorRegistry) -> bytes:
    """The text exposition format (version 0.0.4). Not a checkpoint; ~1 ms."""
    return generate_latest(registry)
