"""What stands between a finished span and the collector: a queue bounded in items and in
(estimated) bytes that drops with a counter when full (`BoundedSpans`), one worker thread
that exports it in batches, and each signal's health (`SignalHealth`): exports that
succeeded and failed, items sent and dropped, the last error. A collector that is down or
slow only fills the queue: `on_end` never blocks the trio thread and never raises."""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import attrs
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

log = logging.getLogger("clawlane.telemetry")

SPAN_OVERHEAD_BYTES = 200
"""What a span costs the queue beyond its name and attributes (ids, times, status)."""
ATTRIBUTE_BYTES = 48
"""What an attribute costs (a key and a short value); a long string counts its length."""
LONG_VALUE = 256


@attrs.define
class SignalHealth:
    """One signal's exporter, as `status` and `/metrics` report it. Written by the exporter
    thread, read by the trio thread (plain counters: a torn read is one export stale)."""

    signal: str
    url: str
    exports_ok: int = 0
    exports_failed: int = 0
    items_exported: int = 0
    items_dropped: int = 0
    last_error: str | None = None
    last_success_at: float | None = None
    failing: bool = False

    def exported(self, ok: bool, items: int, error: str | None = None) -> None:
        """Count one export of `items` (from the exporter thread); log a failure's first
        occurrence and the recovery once, not every attempt."""
        if ok:
            self.exports_ok += 1
            self.items_exported += items
            self.last_success_at = time.time()
            if self.failing:
                log.warning("telemetry %s export to %s resumed", self.signal, self.url)
            self.failing = False
            return
        self.exports_failed += 1
        self.items_dropped += items
        self.last_error = error or "export failed"
        if not self.failing:
            log.warning(
                "telemetry %s export to %s failed: %s (runs go on; items are dropped)",
                self.signal,
                self.url,
                self.last_error,
            )
        self.failing = True

    def view(self) -> dict[str, Any]:
        return {
            "signal": self.signal,
            "url": self.url,
            "ok": not self.failing,
            "exportsOk": self.exports_ok,
            "exportsFailed": self.exports_failed,
            "itemsExported": self.items_exported,
            "itemsDropped": self.items_dropped,
            "lastError": self.last_error,
            "lastSuccessAt": self.last_success_at,
        }


def span_bytes(span: ReadableSpan, *, long_values: bool) -> int:
    """An estimate of what `span` weighs in the queue (and roughly on the wire): cheap, per
    attribute, unless `long_values` (`captureContent`: arguments and results) may be there,
    whose lengths then count."""
    attributes = span.attributes or {}
    size = SPAN_OVERHEAD_BYTES + len(span.name) + ATTRIBUTE_BYTES * len(attributes)
    if long_values:
        for value in attributes.values():
            if isinstance(value, str) and len(value) > LONG_VALUE:
                size += len(value)
    return size


class BoundedSpans(SpanProcessor):
    """A batch span processor whose queue holds at most `max_items` spans and `max_bytes`
    (by `span_bytes`): a span that does not fit is dropped and counted (`health`). The
    worker thread exports a batch every `delay_s`, or sooner once `batch` spans wait."""

    def __init__(
        self,
        exporter: SpanExporter,
        health: SignalHealth,
        *,
        max_items: int,
        max_bytes: int,
        delay_s: float,
        batch: int = 512,
        long_values: bool = False,
    ) -> None:
        self._exporter = exporter
        self._health = health
        self._max_items = max_items
        self._max_bytes = max_bytes
        self._delay_s = delay_s
        self._batch = batch
        self._long_values = long_values
        self._queue: deque[tuple[ReadableSpan, int]] = deque()
        self._bytes = 0
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = False
        self._export_lock = threading.Lock()
        self._worker = threading.Thread(
            target=self._run, name="clawlane-otel-spans", daemon=True
        )
        self._worker.start()

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        pass

    def on_end(self, span: ReadableSpan) -> None:
        if span.context is None or not span.context.trace_flags.sampled:
            return
        size = span_bytes(span, long_values=self._long_values)
        with self._lock:
            if (
                self._stopping
                or len(self._queue) >= self._max_items
                or self._bytes + size > self._max_bytes
            ):
                self._health.items_dropped += 1
                return
            self._queue.append((span, size))
            self._bytes += size
            full = len(self._queue) >= self._batch
        if full:
            self._wake.set()

    def _take(self) -> list[ReadableSpan]:
        with self._lock:
            n = min(self._batch, len(self._queue))
            taken = [self._queue.popleft() for _ in range(n)]
            self._bytes -= sum(size for _, size in taken)
        return [span for span, _ in taken]

    def _export_all(self, deadline: float) -> None:
        with self._export_lock:
            while time.monotonic() < deadline:
                spans = self._take()
                if not spans:
                    return
                try:
                    result = self._exporter.export(spans)
                except Exception as exc:  # an exporter bug must not kill the worker
                    self._health.exported(False, len(spans), repr(exc))
                    continue
                ok = result is SpanExportResult.SUCCESS
                self._health.exported(ok, len(spans), None if ok else "the collector refused")

    def _run(self) -> None:
        while not self._stopping:
            self._wake.wait(self._delay_s)
            self._wake.clear()
            self._export_all(time.monotonic() + 3600)
        self._export_all(time.monotonic() + 3600)  # what was queued before the stop

    def shutdown(self, timeout_s: float = 5.0) -> None:
        """Export what is queued, for at most `timeout_s`, then stop the worker."""
        deadline = time.monotonic() + timeout_s
        with self._lock:
            self._stopping = True
        self._wake.set()
        self._worker.join(timeout_s / 2)  # its last round exports what is queued
        self._exporter.shutdown()  # a retry against a dead collector stops waiting
        self._worker.join(max(0.0, deadline - time.monotonic()))
        with self._lock:
            self._health.items_dropped += len(self._queue)
            self._queue.clear()
            self._bytes = 0

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        self._export_all(time.monotonic() + timeout_millis / 1000)
        return True


def counting(export: Callable[..., Any], health: SignalHealth, success: object) -> Callable[..., Any]:
    """`export` (a metrics or logs exporter's) counting its results into `health`."""

    def export_counted(batch: Any, *args: Any, **kwargs: Any) -> Any:
        items = len(batch) if isinstance(batch, Sequence) else 1
        try:
            result = export(batch, *args, **kwargs)
        except Exception as exc:
            health.exported(False, items, repr(exc))
            raise
        health.exported(result == success, items, None if result == success else "failed")
        return result

    return export_counted
