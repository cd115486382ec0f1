"""`diagnostics.otel.*`: OpenClaw's keys, and what they resolve to with the standard `OTEL_*`
environment fallbacks (`resolve`). Nothing here imports OpenTelemetry."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Annotated, Final, Literal

import attrs
import msgspec

DEFAULT_ENDPOINT: Final = "http://localhost:4318"
DEFAULT_SERVICE_NAME: Final = "openclaw"
DEFAULT_METRIC_PREFIX: Final = "openclaw."
MIN_FLUSH_INTERVAL_MS: Final = 1000
DEFAULT_FLUSH_INTERVAL_MS: Final = 60_000
PROTOCOL: Final = "http/protobuf"
DEFAULT_QUEUE_ITEMS: Final = 2048
SIGNALS: Final = ("traces", "metrics", "logs")

MetricNamePrefix = Annotated[
    str, msgspec.Meta(max_length=128, pattern=r"^(?:[A-Za-z][A-Za-z0-9_./-]*)?$")
]


class OtelConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    """`diagnostics.otel` (OpenClaw's keys). Off unless `enabled`; then traces and metrics
    default on and logs off. Unset keys fall back to the `OTEL_*` environment (`resolve`)."""

    enabled: bool | None = None
    endpoint: str | None = None
    tracesEndpoint: str | None = None
    metricsEndpoint: str | None = None
    logsEndpoint: str | None = None
    protocol: Literal["http/protobuf"] | None = None
    headers: dict[str, str] = {}
    serviceName: str | None = None
    metricNamePrefix: MetricNamePrefix | None = None
    traces: bool | None = None
    metrics: bool | None = None
    logs: bool | None = None
    logsExporter: Literal["otlp", "stdout", "both"] | None = None
    sampleRate: Annotated[float, msgspec.Meta(ge=0, le=1)] | None = None
    flushIntervalMs: Annotated[int, msgspec.Meta(ge=0)] | None = None
    captureContent: bool | None = None


class CacheTraceConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    """`diagnostics.cacheTrace` (accepted; clawlane writes no cache-trace artifacts)."""

    enabled: bool | None = None


class DiagnosticsConfig(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True
):
    """`diagnostics.*` (OpenClaw's keys): `enabled: false` turns every diagnostic export off;
    `otel` is OpenTelemetry over OTLP/HTTP; `flags` and `cacheTrace` are accepted."""

    enabled: bool | None = None
    flags: list[str] = []
    otel: OtelConfig = OtelConfig()
    cacheTrace: CacheTraceConfig = CacheTraceConfig()


@attrs.frozen
class OtelSettings:
    """What the exporters are built from: each signal's exact URL (None: that signal off)."""

    service_name: str
    headers: Mapping[str, str]
    traces_url: str | None
    metrics_url: str | None
    logs_url: str | None
    sample_rate: float | None
    flush_interval_ms: int
    capture_content: bool
    metric_prefix: str
    export_timeout_s: float = 10.0
    max_queue_items: int = DEFAULT_QUEUE_ITEMS
    max_queue_bytes: int = 8 * 1024 * 1024


def _signal_url(shared: str, signal: str) -> str:
    """The shared endpoint made a signal's URL: `/v1/<signal>` appended, or (a shared endpoint
    already ending in a signal path) that path's last segment replaced, as OpenClaw does."""
    base = shared.rstrip("/")
    for other in SIGNALS:
        if base.endswith(f"/v1/{other}"):
            return f"{base[: -len(other)]}{signal}"
    return f"{base}/v1/{signal}"


def _env_headers(raw: str) -> dict[str, str]:
    """`OTEL_EXPORTER_OTLP_HEADERS`: `k=v,k2=v2` (values percent-decoded)."""
    from urllib.parse import unquote

    out: dict[str, str] = {}
    for part in raw.split(","):
        key, sep, value = part.partition("=")
        if sep and key.strip():
            out[key.strip().lower()] = unquote(value.strip())
    return out


def resolve(
    config: DiagnosticsConfig, env: Mapping[str, str] | None = None
) -> OtelSettings | None:
    """The settings the exporters use, or None when nothing is exported: `diagnostics.otel`
    not enabled, `diagnostics.enabled` false, `OTEL_SDK_DISABLED=true`, or no signal left.
    Config keys win over the environment; a signal's own endpoint (config, then env) is used
    as is, the shared one (config, then `OTEL_EXPORTER_OTLP_ENDPOINT`) gets `/v1/<signal>`.
    A protocol other than `http/protobuf` (config, then `OTEL_EXPORTER_OTLP_<SIGNAL>_PROTOCOL`,
    then `OTEL_EXPORTER_OTLP_PROTOCOL`) turns that signal off. `OTEL_TRACES_SAMPLER` (a
    ratio, or always_off) with `OTEL_TRACES_SAMPLER_ARG` stands in for `sampleRate`,
    `OTEL_BSP_MAX_QUEUE_SIZE` bounds the queues, `OTEL_METRIC_EXPORT_INTERVAL` for
    `flushIntervalMs`."""
    env = os.environ if env is None else env
    otel = config.otel
    if not otel.enabled or config.enabled is False:
        return None
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    shared = otel.endpoint or env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or DEFAULT_ENDPOINT
    wanted = {"traces": otel.traces, "metrics": otel.metrics, "logs": otel.logs}
    own = {"traces": otel.tracesEndpoint, "metrics": otel.metricsEndpoint, "logs": otel.logsEndpoint}
    urls: dict[str, str | None] = {}
    for signal in SIGNALS:
        on = wanted[signal] if wanted[signal] is not None else signal != "logs"
        if signal == "logs" and otel.logsExporter == "stdout":
            on = False  # clawlane's stdout is its own log stream (`--log-format json`)
        up = signal.upper()
        protocol = (
            otel.protocol
            or env.get(f"OTEL_EXPORTER_OTLP_{up}_PROTOCOL", "").strip()
            or env.get("OTEL_EXPORTER_OTLP_PROTOCOL", "").strip()
            or PROTOCOL
        )
        if not on or protocol != PROTOCOL:
            urls[signal] = None
            continue
        urls[signal] = (
            own[signal]
            or env.get(f"OTEL_EXPORTER_OTLP_{up}_ENDPOINT")
            or _signal_url(shared, signal)
        )
    if not any(urls.values()):
        return None
    headers = {**_env_headers(env.get("OTEL_EXPORTER_OTLP_HEADERS", "")), **otel.headers}
    interval = otel.flushIntervalMs
    if interval is None:
        interval = _positive(env, "OTEL_METRIC_EXPORT_INTERVAL") or DEFAULT_FLUSH_INTERVAL_MS
    queue = _positive(env, "OTEL_BSP_MAX_QUEUE_SIZE") or DEFAULT_QUEUE_ITEMS
    return OtelSettings(
        service_name=otel.serviceName or env.get("OTEL_SERVICE_NAME") or DEFAULT_SERVICE_NAME,
        headers=headers,
        traces_url=urls["traces"],
        metrics_url=urls["metrics"],
        logs_url=urls["logs"],
        sample_rate=otel.sampleRate if otel.sampleRate is not None else _env_ratio(env),
        flush_interval_ms=max(MIN_FLUSH_INTERVAL_MS, interval),
        capture_content=bool(otel.captureContent),
        metric_prefix=(
            otel.metricNamePrefix if otel.metricNamePrefix is not None else DEFAULT_METRIC_PREFIX
        ),
        max_queue_items=queue,
    )


def _positive(env: Mapping[str, str], name: str) -> int | None:
    """A positive integer from the environment (anything else: unset, as the SDK does)."""
    raw = env.get(name, "").strip()
    return int(raw) if raw.isdigit() and int(raw) > 0 else None


def _env_ratio(env: Mapping[str, str]) -> float | None:
    """`OTEL_TRACES_SAMPLER=traceidratio|parentbased_traceidratio` with its
    `OTEL_TRACES_SAMPLER_ARG` (0..1), the fallback for `sampleRate`; `always_off` is 0."""
    sampler = env.get("OTEL_TRACES_SAMPLER", "").strip().lower()
    if sampler in ("always_off", "parentbased_always_off"):
        return 0.0
    if sampler not in ("traceidratio", "parentbased_traceidratio"):
        return None
    try:
        ratio = float(env.get("OTEL_TRACES_SAMPLER_ARG", "1"))
    except ValueError:
        return None
    return ratio if 0.0 <= ratio <= 1.0 else None
