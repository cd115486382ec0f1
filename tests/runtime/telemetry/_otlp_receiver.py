"""An OTLP/HTTP protobuf receiver on a trio loopback socket, for the telemetry tests: it
decodes what the exporters send (`/v1/traces`, `/v1/metrics`, `/v1/logs`) with the
opentelemetry-proto messages and keeps it, flattened (`spans`, `metrics`, `logs`); `changed`
wakes a test waiting for something to arrive. `status` other than 200 refuses every export."""

from __future__ import annotations

import gzip
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import attrs
import h11
import trio
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue


def value_of(v: AnyValue) -> Any:
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind is not None else None


def attributes_of(kvs: Any) -> dict[str, Any]:
    return {kv.key: value_of(kv.value) for kv in kvs}


@attrs.frozen
class ReceivedSpan:
    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    kind: int
    attributes: dict[str, Any]
    resource: dict[str, Any]
    status_code: int


@attrs.frozen
class ReceivedLog:
    body: Any
    severity: str
    trace_id: str
    span_id: str
    attributes: dict[str, Any]


class Receiver:
    def __init__(self, port: int) -> None:
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.status = 200
        self.spans: list[ReceivedSpan] = []
        self.metrics: dict[str, list[Any]] = {}
        self.logs: list[ReceivedLog] = []
        self.requests: dict[str, int] = {}
        self.changed = trio.Event()

    async def wait_for(self, ready: Callable[[], bool]) -> None:
        while not ready():
            await self.changed.wait()

    def span(self, name: str) -> ReceivedSpan:
        found = [s for s in self.spans if s.name == name]
        assert len(found) == 1, (name, [s.name for s in self.spans])
        return found[0]

    def _decode(self, path: str, body: bytes) -> bytes:
        if path == "/v1/traces":
            traces = ExportTraceServiceRequest.FromString(body)
            for rs in traces.resource_spans:
                resource = attributes_of(rs.resource.attributes)
                for ss in rs.scope_spans:
                    for s in ss.spans:
                        self.spans.append(
                            ReceivedSpan(
                                s.name,
                                s.trace_id.hex(),
                                s.span_id.hex(),
                                s.parent_span_id.hex(),
                                s.kind,
                                attributes_of(s.attributes),
                                resource,
                                s.status.code,
                            )
                        )
            return bytes(ExportTraceServiceResponse().SerializeToString())
        if path == "/v1/metrics":
            metrics = ExportMetricsServiceRequest.FromString(body)
            for rm in metrics.resource_metrics:
                for sm in rm.scope_metrics:
                    for m in sm.metrics:
                        self.metrics.setdefault(m.name, []).append(m)
            return bytes(ExportMetricsServiceResponse().SerializeToString())
        logs = ExportLogsServiceRequest.FromString(body)
        for rl in logs.resource_logs:
            for sl in rl.scope_logs:
                for r in sl.log_records:
                    self.logs.append(
                        ReceivedLog(
                            value_of(r.body) if r.HasField("body") else None,
                            r.severity_text,
                            r.trace_id.hex(),
                            r.span_id.hex(),
                            attributes_of(r.attributes),
                        )
                    )
        return bytes(ExportLogsServiceResponse().SerializeToString())

    async def _serve(self, stream: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        while True:
            event = await self._next(stream, conn)
            if not isinstance(event, h11.Request):
                return
            path = event.target.decode()
            headers = {k.decode().lower(): v.decode() for k, v in event.headers}
            body = b""
            while True:
                part = await self._next(stream, conn)
                if isinstance(part, h11.Data):
                    body += part.data
                elif isinstance(part, h11.EndOfMessage):
                    break
                else:
                    return
            self.requests[path] = self.requests.get(path, 0) + 1
            if headers.get("content-encoding") == "gzip":
                body = gzip.decompress(body)
            if self.status == 200 and path in ("/v1/traces", "/v1/metrics", "/v1/logs"):
                status, answer = 200, self._decode(path, body)
            else:
                status, answer = (self.status if self.status != 200 else 404), b""
            self.changed.set()
            self.changed = trio.Event()
            head = [("content-type", "application/x-protobuf"), ("content-length", str(len(answer)))]
            await stream.send_all(conn.send(h11.Response(status_code=status, headers=head)))
            await stream.send_all(conn.send(h11.Data(data=answer)) + conn.send(h11.EndOfMessage()))
            if conn.our_state is h11.MUST_CLOSE:
                return
            conn.start_next_cycle()

    async def _next(self, stream: trio.SocketStream, conn: h11.Connection) -> Any:
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                data = await stream.receive_some(65536)
                conn.receive_data(data)
                continue
            return event

    async def _handle(self, stream: trio.SocketStream) -> None:
        async with stream:
            try:
                await self._serve(stream)
            except (trio.BrokenResourceError, trio.ClosedResourceError, h11.RemoteProtocolError):
                pass


@asynccontextmanager
async def open_receiver() -> AsyncIterator[Receiver]:
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    receiver = Receiver(listeners[0].socket.getsockname()[1])
    async with trio.open_nursery() as nursery:
        nursery.start_soon(trio.serve_listeners, receiver._handle, listeners)
        yield receiver
        nursery.cancel_scope.cancel()


def histogram_count(receiver: Receiver, name: str) -> int:
    """How many observations `name` holds, over every export (cumulative: the last)."""
    found = receiver.metrics.get(name, [])
    if not found:
        return 0
    last = found[-1]
    kind = last.WhichOneof("data")
    points = getattr(last, kind).data_points
    return sum(int(getattr(p, "count", 0) or getattr(p, "as_int", 0)) for p in points)


__all__ = ["KeyValue", "ReceivedLog", "ReceivedSpan", "Receiver", "histogram_count", "open_receiver"]
