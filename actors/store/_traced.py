"""Store spans (with `diagnostics.otel` on): `clawlane.store.commit`, one per group commit
that holds a write made inside a trace (a run's end, an RPC's write), the child of the
first such write's trace; its attributes say how many operations the batch held
(`clawlane.store.batch_size`), how many came from traces (`clawlane.store.traced_writes`)
and the backend (`db.system.name`). The store notes a write's trace context as it is
submitted only while `runtime.telemetry.STATE.on`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from runtime import telemetry

COMMIT_SPAN = "clawlane.store.commit"


class CommitTraces:
    """The trace contexts of submitted writes, until their batch commits."""

    def __init__(self, backend: str) -> None:
        self._backend = backend
        self._contexts: dict[int, Any] = {}

    @property
    def pending(self) -> bool:
        return bool(self._contexts)

    def note(self, op: object) -> None:
        """Remember the current trace context for `op` (call only when telemetry is on)."""
        context = telemetry.capture()
        if context is not None:
            self._contexts[id(op)] = context

    def forget(self, op: object) -> None:
        self._contexts.pop(id(op), None)

    async def commit(
        self, commit: Callable[[Any], Awaitable[None]], batch: Sequence[object]
    ) -> None:
        """`commit(batch)`, inside a span when one of its writes came from a trace."""
        contexts = [c for op in batch if (c := self._contexts.pop(id(op), None)) is not None]
        if not contexts or not telemetry.STATE.on:
            await commit(batch)
            return
        span = telemetry.start_span(
            COMMIT_SPAN,
            {
                "clawlane.store.batch_size": len(batch),
                "clawlane.store.traced_writes": len(contexts),
                "db.system.name": self._backend,
            },
            context=contexts[0],
        )
        try:
            with telemetry.current(span):
                await commit(batch)
        finally:
            span.end()
