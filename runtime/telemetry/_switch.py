"""The switch the hot paths read (`STATE.on`) and the calls they make once it is on.

Off (the default) nothing here has imported OpenTelemetry: a hook point costs one attribute
read (`if telemetry.STATE.on:`). `configure` imports `_otel` (the SDK, its exporters) and
turns the switch on; `shutdown` turns it off and stops the exporters. Every call below but
`configure`, `shutdown`, `capture` and `health` is for when the switch is on."""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, Any, Literal, Protocol

import trio

from ._config import DiagnosticsConfig, OtelSettings, resolve

if TYPE_CHECKING:
    from ._otel import Exporting

Attributes = Mapping[str, str | bool | int | float]


class Span(Protocol):
    """The parts of an OpenTelemetry span the hook points use."""

    def set_attribute(self, key: str, value: Any) -> None: ...

    def set_attributes(self, attributes: Mapping[str, Any]) -> None: ...

    def end(self, end_time: int | None = None) -> None: ...


class _State:
    """Whether telemetry is on (`on`), whether content may leave the process
    (`capture_content`), and the exporters while on (`impl`)."""

    __slots__ = ("capture_content", "impl", "on", "users")

    def __init__(self) -> None:
        self.on = False
        self.capture_content = False
        self.impl: Exporting | None = None
        self.users = 0  # the `open_telemetry` blocks sharing `impl`


STATE = _State()


def configure(settings: OtelSettings | None) -> None:
    """Start exporting per `settings` (None: stay off). Replaces an earlier configuration's
    exporters without flushing them (call `shutdown` first to flush). Not a checkpoint; it
    starts the exporters' threads."""
    if settings is None:
        return
    from ._otel import Exporting

    previous = STATE.impl
    STATE.impl = Exporting(settings)
    STATE.capture_content = settings.capture_content
    STATE.on = True
    if previous is not None:
        previous.close(timeout_s=0)


async def shutdown(*, timeout_s: float = 5.0) -> None:
    """Turn telemetry off and flush what is queued to the collector in a thread, for at most
    `timeout_s` (a collector that is down or slow delays the gateway's stop by no more). A
    checkpoint; cancelling it abandons the flush."""
    impl = STATE.impl
    STATE.on = False
    STATE.impl = None
    STATE.users = 0
    STATE.capture_content = False
    if impl is not None:
        with trio.move_on_after(timeout_s + 1):
            await trio.to_thread.run_sync(impl.close, timeout_s, abandon_on_cancel=True)


@asynccontextmanager
async def open_telemetry(config: DiagnosticsConfig) -> AsyncIterator[OtelSettings | None]:
    """Export per `diagnostics` (and the `OTEL_*` environment) inside the block: yields the
    resolved settings, None when telemetry stays off (then nothing is imported). The SDK is
    imported in a thread. Telemetry is the process's: gateways of one process (a test's
    cluster nodes) with the same settings share its exporters, and the last one out shuts
    them down (shielded, bounded); other settings replace the earlier ones."""
    settings = resolve(config)
    if settings is None:
        yield None
        return
    impl = STATE.impl
    if impl is None or impl.settings != settings:
        await trio.to_thread.run_sync(importlib.import_module, f"{__package__}._otel")
        configure(settings)
        STATE.users = 0
    STATE.users += 1
    try:
        yield settings
    finally:
        STATE.users -= 1
        if STATE.users <= 0:
            with trio.CancelScope(shield=True):
                await shutdown()


def _impl() -> Exporting:
    impl = STATE.impl
    assert impl is not None, "telemetry is off"
    return impl


def start_span(
    name: str,
    attributes: Attributes | None = None,
    *,
    context: Any = None,
    traceparent: str | None = None,
    client: bool = False,
    server: bool = False,
) -> Span:
    """Start a span, the child of `context` (what `capture` returned), else of the
    `traceparent` given (W3C; a malformed one starts a new trace), else of this task's
    current span. Not a checkpoint."""
    return _impl().start_span(
        name, attributes, context=context, traceparent=traceparent, client=client, server=server
    )


@contextmanager
def current(span: Span) -> Iterator[Span]:
    """Make `span` the current span of this task inside the block (spans started there are
    its children; `capture` returns it). Does not end it."""
    with _impl().current(span):
        yield span


def capture() -> Any:
    """This task's current trace context (to carry to another task: `start_span(context=)`),
    or None when telemetry is off. Not a checkpoint."""
    impl = STATE.impl
    return impl.capture() if impl is not None else None


def traceparent_of(span: Span) -> str | None:
    """The W3C `traceparent` naming `span` (None when it is not recorded)."""
    return _impl().traceparent_of(span)


def current_traceparent() -> str | None:
    """The W3C `traceparent` of this task's current span (to carry to another node), None
    when there is none or telemetry is off. Not a checkpoint."""
    impl = STATE.impl
    return impl.current_traceparent() if impl is not None else None


def current_ids() -> tuple[str, str] | None:
    """(trace id, span id) of this task's current span, in hex, for a log line; None when
    there is none or telemetry is off. Not a checkpoint."""
    impl = STATE.impl
    return impl.current_ids() if impl is not None else None


def fail(span: Span, error_type: str, message: str = "") -> None:
    """Mark `span` failed: status ERROR, `error.type`."""
    _impl().fail(span, error_type, message)


def fail_current(error_type: str, message: str = "") -> None:
    """Mark this task's current span failed (nothing when there is none)."""
    _impl().fail_current(error_type, message)


def record(instrument: str, value: float, attributes: Attributes | None = None) -> None:
    """Add `value` to a counter or a histogram (`_otel.INSTRUMENTS`); nothing when metrics
    are off. Not a checkpoint."""
    _impl().record(instrument, value, attributes)


def metrics_interval_s() -> float | None:
    """How often metrics are exported (seconds), None when they are not (telemetry off, or
    `diagnostics.otel.metrics` false)."""
    impl = STATE.impl
    if impl is None or impl.settings.metrics_url is None:
        return None
    return impl.settings.flush_interval_ms / 1000


def observe(
    name: str,
    kind: Literal["gauge", "counter"],
    description: str,
    read: Callable[[], Iterable[tuple[float, Mapping[str, str]]]],
) -> None:
    """An observable gauge or (monotonic, cumulative) counter named `name` whose values are
    `read()` (value, attributes) pairs, called from the metric exporter's thread at each
    export: `read` must only look at a snapshot the trio thread made. Nothing when metrics
    are off. Not a checkpoint."""
    impl = STATE.impl
    if impl is not None:
        impl.observe(name, kind, description, read)


def health() -> dict[str, Any] | None:
    """The exporters' health (`status`, `/metrics`), or None when telemetry is off."""
    impl = STATE.impl
    return impl.health() if impl is not None else None
