"""The OpenTelemetry SDK, wired per `OtelSettings`: imported only by `configure`.

`Exporting` owns the gateway's own providers (none is installed as OpenTelemetry's global,
so a second gateway in one process, or a test, starts fresh): a tracer provider feeding
`BoundedSpans` and the OTLP/HTTP span exporter; a meter provider with a periodic reader and
the OTLP/HTTP metric exporter; a logger provider feeding `BoundedLogs` and the OTLP/HTTP
log exporter, fed by a handler on the root logger. Each exporter runs in its own thread:
nothing here blocks the trio thread but `close`, which the switch runs in a thread."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Final

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry._logs import SeverityNumber
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.metrics import CallbackOptions, Meter, Observation
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricExportResult, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from ._config import OtelSettings
from ._export import BoundedLogs, BoundedSpans, SignalHealth, counting

log = logging.getLogger("clawlane.telemetry")

INSTRUMENTS: Final = {
    # name (the owned ones get `metricNamePrefix`), kind, unit, description
    "tokens": ("counter", "{token}", "Tokens used by model calls, by openclaw.token"),
    "cost.usd": ("counter", "USD", "What model calls cost (reported, else the price table)"),
    "run.duration_ms": ("histogram", "ms", "A run's time from its start to its end"),
    "queue.wait_ms": ("histogram", "ms", "A run's time from its acceptance to its start"),
    "queue.lane.enqueue": ("counter", "{run}", "Runs placed on a session's lane"),
    "queue.lane.dequeue": ("counter", "{run}", "Runs taken off a session's lane to run"),
    "queue.depth": ("histogram", "{run}", "Runs left waiting in the lane as one starts"),
    "model_call.duration_ms": ("histogram", "ms", "One model request, to its last byte"),
    "tool.execution.duration_ms": ("histogram", "ms", "One tool call"),
    "gateway.rpc.requests": ("counter", "{request}", "Gateway RPC requests received"),
    "gateway.rpc.handler_ms": ("histogram", "ms", "A request's time from receipt to its end"),
    "gen_ai.client.token.usage": ("histogram", "{token}", "GenAI tokens per model call"),
    "gen_ai.client.operation.duration": ("histogram", "s", "GenAI model call duration"),
}
"""What `record` may name."""

_SEVERITY: Final = {
    logging.DEBUG: SeverityNumber.DEBUG,
    logging.INFO: SeverityNumber.INFO,
    logging.WARNING: SeverityNumber.WARN,
    logging.ERROR: SeverityNumber.ERROR,
    logging.CRITICAL: SeverityNumber.FATAL,
}
_RECORD_KEYS: Final = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


class _LogBridge(logging.Handler):
    """Python's log records as OTLP log records, with the emitting task's trace and span
    ids; the message only with `captureContent` (else the body is withheld)."""

    def __init__(self, provider: LoggerProvider, *, capture_content: bool) -> None:
        super().__init__(logging.NOTSET)
        self._logger = provider.get_logger("clawlane")
        self._capture = capture_content

    def emit(self, record: logging.LogRecord) -> None:
        if record.name.startswith("opentelemetry"):
            return  # the exporters' own complaints would feed themselves
        try:
            attributes: dict[str, Any] = {
                "logger.name": record.name,
                "code.function.name": record.funcName,
                "code.line.number": record.lineno,
            }
            for key, value in vars(record).items():
                if key not in _RECORD_KEYS and isinstance(value, str | bool | int | float):
                    attributes[f"clawlane.{key}"] = value
            self._logger.emit(
                timestamp=int(record.created * 1e9),
                severity_number=_SEVERITY.get(record.levelno, SeverityNumber.INFO),
                severity_text=record.levelname,
                body=record.getMessage() if self._capture else None,
                attributes=attributes,
            )
        except Exception:
            self.handleError(record)


class Exporting:
    """The exporters of one configuration, and what the switch's calls do with them."""

    def __init__(self, settings: OtelSettings) -> None:
        self.settings = settings
        # The exporters' own warnings (every retry, every dropped item) would flood the
        # gateway's log: `SignalHealth` logs a failure and a recovery once instead.
        logging.getLogger("opentelemetry").setLevel(logging.CRITICAL)
        resource = Resource.create({"service.name": settings.service_name})
        self.signals: dict[str, SignalHealth] = {}
        self._propagator = TraceContextTextMapPropagator()
        self._tracer_provider: TracerProvider | None = None
        self._meter_provider: MeterProvider | None = None
        self._logger_provider: LoggerProvider | None = None
        self._bridge: _LogBridge | None = None
        self._instruments: dict[str, Any] = {}
        self._meter: Meter | None = None
        self.tracer: trace.Tracer = trace.NoOpTracer()
        if settings.traces_url:
            self._start_traces(settings, resource, settings.traces_url)
        if settings.metrics_url:
            self._start_metrics(settings, resource, settings.metrics_url)
        if settings.logs_url:
            self._start_logs(settings, resource, settings.logs_url)

    def _start_traces(self, settings: OtelSettings, resource: Resource, url: str) -> None:
        health = self.signals["traces"] = SignalHealth("traces", url)
        rate = settings.sample_rate
        sampler = ParentBased(TraceIdRatioBased(rate)) if rate is not None else None
        provider = TracerProvider(resource=resource, sampler=sampler)
        exporter = OTLPSpanExporter(
            endpoint=url, headers=dict(settings.headers), timeout=settings.export_timeout_s
        )
        provider.add_span_processor(
            BoundedSpans(
                exporter,
                health,
                max_items=settings.max_queue_items,
                max_bytes=settings.max_queue_bytes,
                delay_s=min(5.0, settings.flush_interval_ms / 1000),
                long_values=settings.capture_content,
            )
        )
        self._tracer_provider = provider
        self.tracer = provider.get_tracer("clawlane")

    def _start_metrics(self, settings: OtelSettings, resource: Resource, url: str) -> None:
        health = self.signals["metrics"] = SignalHealth("metrics", url)
        exporter = OTLPMetricExporter(
            endpoint=url, headers=dict(settings.headers), timeout=settings.export_timeout_s
        )
        exporter.export = counting(  # type: ignore[method-assign]
            exporter.export, health, MetricExportResult.SUCCESS
        )
        reader = PeriodicExportingMetricReader(
            exporter,
            export_interval_millis=settings.flush_interval_ms,
            export_timeout_millis=min(settings.flush_interval_ms, settings.export_timeout_s * 1000),
        )
        provider = MeterProvider(resource=resource, metric_readers=[reader])
        meter = self._meter = provider.get_meter("clawlane")
        for name, (kind, unit, description) in INSTRUMENTS.items():
            full = name if name.startswith("gen_ai.") else f"{settings.metric_prefix}{name}"
            make = meter.create_counter if kind == "counter" else meter.create_histogram
            self._instruments[name] = make(full, unit=unit, description=description)
        self._meter_provider = provider

    def _start_logs(self, settings: OtelSettings, resource: Resource, url: str) -> None:
        health = self.signals["logs"] = SignalHealth("logs", url)
        exporter = OTLPLogExporter(
            endpoint=url, headers=dict(settings.headers), timeout=settings.export_timeout_s
        )
        provider = LoggerProvider(resource=resource)
        provider.add_log_record_processor(
            BoundedLogs(
                exporter,
                health,
                max_items=settings.max_queue_items,
                max_bytes=settings.max_queue_bytes,
                delay_s=min(5.0, settings.flush_interval_ms / 1000),
            )
        )
        self._logger_provider = provider
        self._bridge = _LogBridge(provider, capture_content=settings.capture_content)
        logging.getLogger().addHandler(self._bridge)

    # --- spans -------------------------------------------------------------------------

    def start_span(
        self,
        name: str,
        attributes: Mapping[str, Any] | None,
        *,
        context: Any,
        traceparent: str | None,
        client: bool,
        server: bool,
    ) -> trace.Span:
        if context is None and traceparent:
            context = self._propagator.extract({"traceparent": traceparent})
        kind = SpanKind.CLIENT if client else SpanKind.SERVER if server else SpanKind.INTERNAL
        return self.tracer.start_span(name, context=context, kind=kind, attributes=attributes)

    @contextmanager
    def current(self, span: Any) -> Iterator[None]:
        token = otel_context.attach(trace.set_span_in_context(span))
        try:
            yield
        finally:
            otel_context.detach(token)

    def capture(self) -> Any:
        return otel_context.get_current()

    def traceparent_of(self, span: Any) -> str | None:
        ctx = span.get_span_context()
        if not ctx.is_valid:
            return None
        return f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{int(ctx.trace_flags):02x}"

    def current_traceparent(self) -> str | None:
        return self.traceparent_of(trace.get_current_span())

    def current_ids(self) -> tuple[str, str] | None:
        ctx = trace.get_current_span().get_span_context()
        if not ctx.is_valid:
            return None
        return f"{ctx.trace_id:032x}", f"{ctx.span_id:016x}"

    def fail_current(self, error_type: str, message: str) -> None:
        span = trace.get_current_span()
        if span.is_recording():
            self.fail(span, error_type, message)

    def fail(self, span: Any, error_type: str, message: str) -> None:
        span.set_attribute("error.type", error_type)
        span.set_status(Status(StatusCode.ERROR, message or error_type))

    # --- metrics -----------------------------------------------------------------------

    def record(self, name: str, value: float, attributes: Mapping[str, Any] | None) -> None:
        instrument = self._instruments.get(name)
        if instrument is None:
            return
        if INSTRUMENTS[name][0] == "counter":
            instrument.add(value, attributes)
        else:
            instrument.record(value, attributes)

    def observe(
        self,
        name: str,
        kind: str,
        description: str,
        read: Callable[[], Iterable[tuple[float, Mapping[str, str]]]],
    ) -> None:
        if self._meter is None:
            return

        def callback(options: CallbackOptions) -> Iterable[Observation]:
            return [Observation(value, dict(attributes)) for value, attributes in read()]

        if kind == "counter":
            self._meter.create_observable_counter(name, [callback], description=description)
        else:
            self._meter.create_observable_gauge(name, [callback], description=description)

    # --- health, close -----------------------------------------------------------------

    def health(self) -> dict[str, Any]:
        return {
            "enabled": True,
            "serviceName": self.settings.service_name,
            "signals": [h.view() for h in self.signals.values()],
        }

    def close(self, timeout_s: float) -> None:
        """Flush and stop every exporter, side by side, for at most `timeout_s` in all (an
        exporter still retrying then finishes in its daemon thread, its items dropped).
        Blocking: the switch calls it in a thread."""
        if self._bridge is not None:
            logging.getLogger().removeHandler(self._bridge)
        deadline = time.monotonic() + timeout_s
        steps: list[Callable[[], object]] = []
        if self._tracer_provider is not None:
            steps.append(self._tracer_provider.shutdown)
        meters = self._meter_provider
        if meters is not None:
            # the final export: a collector that answers does within two seconds
            steps.append(lambda: meters.shutdown(timeout_millis=min(timeout_s, 2.0) * 1000))
        logs = self._logger_provider
        if logs is not None:
            steps.append(logs.shutdown)

        def run(step: Callable[[], object]) -> None:
            try:
                step()
            except Exception as exc:  # a collector that is away: what is left is dropped
                log.warning("telemetry: stopping an exporter: %s", exc)

        # The signals stop side by side: a dead collector costs the stop one wait, not three.
        threads = [threading.Thread(target=run, args=(step,), daemon=True) for step in steps]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
