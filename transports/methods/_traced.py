"""The span of a gateway RPC (with `diagnostics.otel` on): started in the reader as the
request is received, the child of the request frame's `traceparent` (a fresh trace without
one), current while it is routed and served (so the runs it starts are its children), ended
once it is answered (its time from receipt to its end: the `gateway.rpc.handler_ms`
metric); an error answer marks it failed (`rpc_failed`: its code as
`error.type`). The table calls here only when `runtime.telemetry.STATE.on`."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

from runtime import telemetry
from runtime.protocol import GatewayError, RequestFrame

from ._context import Client
from ._routing import Route

RPC_SPAN = "openclaw.gateway.rpc"


def traced_route(
    route: Callable[[Client, RequestFrame, bool], Route | None],
    conn: Client,
    frame: RequestFrame,
    fast: bool,
) -> Route | None:
    """`route(conn, frame, fast)` inside the request's span; the span goes with the
    returned `Route`, or ends here when the request is answered already."""
    span = telemetry.start_span(
        RPC_SPAN,
        {"openclaw.gateway.rpc.method": frame.method, "rpc.method": frame.method},
        traceparent=frame.traceparent if frame.method != "connect" else None,
        server=True,
    )
    method = {"openclaw.gateway.rpc.method": frame.method}
    telemetry.record("gateway.rpc.requests", 1, method)
    received = time.perf_counter()
    try:
        with telemetry.current(span):
            found = route(conn, frame, fast)
    except BaseException:
        span.end()
        raise
    if found is None:
        _end(span, received, method)
    else:
        found.span = span
        found.received = received
    return found


async def traced_serve(
    serve: Callable[[], Awaitable[None]], span: telemetry.Span, received: float, method: str
) -> None:
    """`serve()` inside the request's span, which ends with it."""
    try:
        with telemetry.current(span):
            await serve()
    finally:
        _end(span, received, {"openclaw.gateway.rpc.method": method})


def _end(span: telemetry.Span, received: float, method: dict[str, str]) -> None:
    span.end()
    telemetry.record("gateway.rpc.handler_ms", (time.perf_counter() - received) * 1000, method)


def rpc_failed(error: GatewayError) -> None:
    """The request being served is answered with `error`: its span says so."""
    telemetry.fail_current(error.code, str(error))
