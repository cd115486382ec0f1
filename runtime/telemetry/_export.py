"""What stands between a finished span or log record and the collector: a queue bounded in
items and in (estimated) bytes that drops with a counter when full (`ExportQueue`, fed by
`BoundedSpans` and `BoundedLogs`), one worker thread that exports it in batches, and each
signal's health (`SignalHealth`): exports that succeeded and failed, items sent and
dropped, the last error. A collector that is down or slow only fills the queue: nothing
here blocks the trio thread or raises into it."""

from __future__ import annotations

import copy
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import attrs
from opentelemetry.context import Context
from opentelemetry.sdk._logs import LogRecordProcessor, ReadableLogRecord, ReadWriteLogRecord
from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult
from opentelemetry.sdk.resources import Resource
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


class ExportQueue:
    """A queue of finished items (spans, log records) holding at most `max_items` and
    `max_bytes` (by the size each `put` gives): an item that does not fit is dropped and
    counted (`health`). One worker thread `export`s a batch every `delay_s`, or sooner once
    `batch` items wait; `export(items)` says whether the collector took them."""

    def __init__(
        self,
        export: Callable[[list[Any]], bool],
        health: SignalHealth,
        *,
        max_items: int,
        max_bytes: int,
        delay_s: float,
        batch: int = 512,
    ) -> None:
        self._export = export
        self._health = health
        self._max_items = max_items
        self._max_bytes = max_bytes
        self._delay_s = delay_s
        self._batch = batch
        self._queue: deque[tuple[Any, int]] = deque()
        self._bytes = 0
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = False
        self._export_lock = threading.Lock()
        self._exporting_since: float | None = None
        self._worker = threading.Thread(
            target=self._run, name=f"clawlane-otel-{health.signal}", daemon=True
        )
        self._worker.start()

    def put(self, item: Any, size: int) -> None:
        """Queue `item` (from any thread; never blocks, never raises), or drop it."""
        with self._lock:
            if (
                self._stopping
                or len(self._queue) >= self._max_items
                or self._bytes + size > self._max_bytes
            ):
                self._health.items_dropped += 1
                return
            self._queue.append((item, size))
            self._bytes += size
            full = len(self._queue) >= self._batch
        if full:
            self._wake.set()

    def _take(self) -> list[Any]:
        with self._lock:
            n = min(self._batch, len(self._queue))
            taken = [self._queue.popleft() for _ in range(n)]
            self._bytes -= sum(size for _, size in taken)
        return [item for item, _ in taken]

    def flush(self, deadline: float) -> None:
        """Export what is queued until `deadline` (time.monotonic) in this thread."""
        with self._export_lock:
            while time.monotonic() < deadline:
                items = self._take()
                if not items:
                    return
                self._exporting_since = time.monotonic()
                try:
                    ok = self._export(items)
                except Exception as exc:  # an exporter bug must not kill the worker
                    self._health.exported(False, len(items), repr(exc))
                    continue
                finally:
                    self._exporting_since = None
                self._health.exported(ok, len(items), None if ok else "the collector refused")

    def _run(self) -> None:
        while not self._stopping:
            self._wake.wait(self._delay_s)
            self._wake.clear()
            self.flush(time.monotonic() + 3600)
        self.flush(time.monotonic() + 3600)  # what was queued before the stop

    def shutdown(self, stop_exporter: Callable[[], object], timeout_s: float) -> None:
        """Export what is queued, for at most `timeout_s`, then stop the worker; what is
        left is counted as dropped. `stop_exporter` interrupts an export that is retrying."""
        deadline = time.monotonic() + timeout_s
        with self._lock:
            self._stopping = True
        self._wake.set()
        # Its last round exports what is queued, while the collector answers: an export
        # that has been retrying for a second (a collector down or failing) is given up.
        while self._worker.is_alive() and time.monotonic() < deadline:
            self._worker.join(0.05)
            since = self._exporting_since
            if self._health.failing or (since is not None and time.monotonic() - since > 1):
                break
        stop_exporter()  # a retry against a dead collector stops waiting
        self._worker.join(max(0.0, deadline - time.monotonic()))
        with self._lock:
            self._health.items_dropped += len(self._queue)
            self._queue.clear()
            self._bytes = 0


class BoundedSpans(SpanProcessor):
    """Finished (sampled) spans into an `ExportQueue`, sized by `span_bytes`."""

    def __init__(
        self,
        exporter: SpanExporter,
        health: SignalHealth,
        *,
        max_items: int,
        max_bytes: int,
        delay_s: float,
        long_values: bool = False,
    ) -> None:
        self._exporter = exporter
        self._long_values = long_values
        self._queue = ExportQueue(
            lambda spans: exporter.export(spans) is SpanExportResult.SUCCESS,
            health,
            max_items=max_items,
            max_bytes=max_bytes,
            delay_s=delay_s,
        )

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        pass

    def on_end(self, span: ReadableSpan) -> None:
        if span.context is None or not span.context.trace_flags.sampled:
            return
        self._queue.put(span, span_bytes(span, long_values=self._long_values))

    def shutdown(self, timeout_s: float = 5.0) -> None:
        self._queue.shutdown(self._exporter.shutdown, timeout_s)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        self._queue.flush(time.monotonic() + timeout_millis / 1000)
        return True


class BoundedLogs(LogRecordProcessor):
    """Emitted log records into an `ExportQueue`, sized by their body and attributes."""

    def __init__(
        self,
        exporter: LogRecordExporter,
        health: SignalHealth,
        *,
        max_items: int,
        max_bytes: int,
        delay_s: float,
    ) -> None:
        self._exporter = exporter
        self._queue = ExportQueue(
            lambda records: exporter.export(records) is LogRecordExportResult.SUCCESS,
            health,
            max_items=max_items,
            max_bytes=max_bytes,
            delay_s=delay_s,
        )

    def on_emit(self, log_record: ReadWriteLogRecord) -> None:
        record = copy.copy(log_record.log_record)
        record.context = Context()  # what the exporter reads is on the record already
        readable = ReadableLogRecord(
            log_record=record,
            resource=log_record.resource or Resource.create({}),
            instrumentation_scope=log_record.instrumentation_scope,
            limits=log_record.limits,
        )
        body = record.body
        size = SPAN_OVERHEAD_BYTES + ATTRIBUTE_BYTES * len(record.attributes or {})
        self._queue.put(readable, size + (len(body) if isinstance(body, str) else 0))

    def shutdown(self, timeout_s: float = 5.0) -> None:
        self._queue.shutdown(self._exporter.shutdown, timeout_s)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        self._queue.flush(time.monotonic() + timeout_millis / 1000)
        return True


def counting(export: Callable[..., Any], health: SignalHealth, success: object) -> Callable[..., Any]:
    """`export` (the metrics exporter's) counting its results into `health`."""

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
