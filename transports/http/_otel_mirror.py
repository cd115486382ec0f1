"""What `/metrics` serves, over OTLP too (with `diagnostics.otel` metrics on): each gauge
and counter family of the Prometheus collector (`_metrics.GatewayCollector`) becomes an
observable gauge or counter of the same name (`clawlane_runs_active`,
`clawlane_runs_started`, ...; histograms stay on `/metrics`, their OTLP counterparts are
the `openclaw.*` histograms). The collector reads the gateway in the trio thread, twice per
export interval and once more as the gateway stops; the exporter's thread reads only the
latest snapshot."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

import trio

from runtime import telemetry

from ._counters import MetricsHost

Readings = dict[str, list[tuple[float, Mapping[str, str]]]]


def _snapshot(collector: Any) -> tuple[Readings, dict[str, tuple[str, str]]]:
    """The gauge and counter readings, by family name; and each family's kind and help."""
    readings: Readings = {}
    kinds: dict[str, tuple[str, str]] = {}
    for family in collector.collect():
        if family.type not in ("gauge", "counter"):
            continue
        wanted = family.name + "_total" if family.type == "counter" else family.name
        readings[family.name] = [
            (float(s.value), dict(s.labels)) for s in family.samples if s.name == wanted
        ]
        kinds[family.name] = (family.type, family.documentation)
    return readings, kinds


async def mirror_metrics(gateway: MetricsHost) -> None:
    """Register the instruments, then refresh their snapshot every export interval until
    cancelled (the gateway's nursery). Returns at once when metrics are not exported
    (telemetry off: the default)."""
    interval = telemetry.metrics_interval_s()
    if interval is None:
        return
    from ._metrics import GatewayCollector  # prometheus-client: only when mirroring

    collector = GatewayCollector(gateway)
    latest, kinds = _snapshot(collector)

    def reader(name: str) -> Any:
        def read() -> Iterator[tuple[float, Mapping[str, str]]]:
            yield from latest.get(name, ())

        return read

    for name, (kind, description) in kinds.items():
        telemetry.observe(name, "counter" if kind == "counter" else "gauge", description, reader(name))
    try:
        while True:
            await trio.sleep(interval / 2)  # a timer: at most half an interval stale
            latest, _ = _snapshot(collector)
    finally:  # the gateway stops: its last figures go with the final export
        with contextlib.suppress(Exception):
            latest, _ = _snapshot(collector)
