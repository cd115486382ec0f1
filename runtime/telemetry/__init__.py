"""OpenTelemetry: traces, metrics and logs over OTLP/HTTP protobuf, off by default.

Configured by OpenClaw's `diagnostics.otel.*` keys (`DiagnosticsConfig`, `OtelConfig`):
`enabled`, `endpoint` (the base: `/v1/traces`, `/v1/metrics`, `/v1/logs` are appended),
`tracesEndpoint` / `metricsEndpoint` / `logsEndpoint` (exact URLs), `protocol`
(`http/protobuf`, the only one), `serviceName` (default `openclaw`), `headers`, `traces` /
`metrics` (on by default once enabled) / `logs` (off by default; `logsExporter: "stdout"`
leaves them to `--log-format json`, `otlp` and `both` export them), `sampleRate` (a ratio
sampler on root spans; a caller's `traceparent` decides for its trace), `flushIntervalMs`
(the metric export interval, at least 1000), `captureContent` (tool arguments and results on
tool spans, log bodies), `metricNamePrefix` (replaces `openclaw.` on clawlane's own metric
names). Unset keys fall back to the standard environment: `OTEL_EXPORTER_OTLP_ENDPOINT`,
`OTEL_EXPORTER_OTLP_{TRACES,METRICS,LOGS}_ENDPOINT`, `OTEL_SERVICE_NAME`,
`OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_EXPORTER_OTLP[_<SIGNAL>]_PROTOCOL`,
`OTEL_METRIC_EXPORT_INTERVAL`; `OTEL_SDK_DISABLED=true` turns it all off (`resolve`). Read
when the gateway starts.

`open_telemetry(config.diagnostics)` is the gateway's: it exports inside its block.

The hot paths' contract (`_switch`): off, a hook point costs one attribute read
(`if telemetry.STATE.on:`) and the OpenTelemetry packages are not imported at all (they are
the optional extra `clawlane[otel]`). On, `start_span` / `current` / `capture` /
`traceparent_of` / `current_traceparent` / `fail` make and carry spans (`current_ids`: the
trace and span ids `--log-format json` puts on a line logged inside a span) (a run's span is started in the session's
task from the context its request `capture`d), `record` feeds the instruments of
`_otel.INSTRUMENTS`, `observe` adds observable gauges and counters (the gateway mirrors
what `/metrics` serves with them), `health` reports each exporter.

Spans: `openclaw.gateway.rpc` (one per RPC, continuing the request frame's `traceparent`, or
an HTTP route's `traceparent` header), `openclaw.run` (session id, agent, model, outcome,
queued and run time), `openclaw.model.call` (GenAI conventions: `gen_ai.operation.name`
`chat`, `gen_ai.request.model`, `gen_ai.usage.input_tokens` / `output_tokens`, time to first
token; the provider's HTTP request carries its `traceparent`), `openclaw.tool.execution`,
`openclaw.compaction`, `clawlane.store.commit` (a group commit, in the trace of its first
write, linked to the others').

Faults: exporting runs in the SDK's threads. Spans wait in a queue bounded in items and
bytes (`_export.BoundedSpans`) that drops with a counter when a collector is down or slow;
an export failure is logged once (and its recovery), counted, and never reaches a run.
`shutdown` flushes for at most a few seconds when the gateway stops.
"""

from ._config import DiagnosticsConfig as DiagnosticsConfig
from ._config import OtelConfig as OtelConfig
from ._config import OtelSettings as OtelSettings
from ._config import resolve as resolve
from ._switch import STATE as STATE
from ._switch import Span as Span
from ._switch import capture as capture
from ._switch import configure as configure
from ._switch import current as current
from ._switch import current_ids as current_ids
from ._switch import current_traceparent as current_traceparent
from ._switch import fail as fail
from ._switch import fail_current as fail_current
from ._switch import health as health
from ._switch import metrics_interval_s as metrics_interval_s
from ._switch import observe as observe
from ._switch import open_telemetry as open_telemetry
from ._switch import record as record
from ._switch import shutdown as shutdown
from ._switch import start_span as start_span
from ._switch import traceparent_of as traceparent_of

__all__ = [
    "STATE",
    "DiagnosticsConfig",
    "OtelConfig",
    "OtelSettings",
    "Span",
    "capture",
    "configure",
    "current",
    "current_ids",
    "current_traceparent",
    "fail",
    "fail_current",
    "health",
    "metrics_interval_s",
    "observe",
    "open_telemetry",
    "record",
    "resolve",
    "shutdown",
    "start_span",
    "traceparent_of",
]
