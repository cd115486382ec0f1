"""Cheap measurements the actors keep for the gateway's `/metrics` (and the dashboard).

The run path is hot (thousands of runs a second), so what is counted there is a few plain
integer additions: a `Histogram` here is a list of bucket counts, a sum and a `bisect`
(~0.3 µs an observation, against ~1.5 µs for prometheus-client's locked one). Everything
else the gateway exports is read from the actors' `statistics()` when it is scraped.
Nothing here is a checkpoint; use from the trio thread (the store's commit timer is read
and written there too).

Labels are bounded: run statuses and abort reasons are closed literals, provider error
kinds are `runtime.llm`'s closed set (anything else is counted as `unknown`).
"""

from __future__ import annotations

import bisect
import collections
from collections.abc import Sequence
from typing import Any, Final

import attrs

RUN_SECONDS_BUCKETS: Final = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)
"""A whole run, from lifecycle start to its end."""
FIRST_EVENT_BUCKETS: Final = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0)
"""A run's acceptance to its first output event (queueing, prompt, the model's first chunk)."""
WAIT_BUCKETS: Final = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 30.0, 120.0)
"""Waiting for a global lane slot."""
COMMIT_BUCKETS: Final = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)
"""One group commit of the store (a transaction in the writer thread, with its hand-over)."""

RUN_STATUSES: Final = ("ok", "error", "aborted")
ABORT_REASONS: Final = (
    "rpc",
    "stop",
    "timeout",
    "interrupt",
    "shutdown",
    "disconnect",
    "dropped",
    "reset",
    "deleted",
)
PROVIDER_ERROR_KINDS: Final = (
    "auth",
    "rate_limit",
    "overloaded",
    "context_overflow",
    "timeout",
    "network",
    "malformed",
    "bad_request",
    "server",
    "unknown",
)


@attrs.frozen
class HistogramSnapshot:
    """Cumulative bucket counts (one per bound, then +Inf), the sum and the count."""

    bounds: tuple[float, ...]
    cumulative: tuple[int, ...]
    sum: float
    count: int

    def buckets(self) -> list[tuple[str, int]]:
        """As prometheus-client's `HistogramMetricFamily` takes them."""
        names = [repr(float(b)) for b in self.bounds] + ["+Inf"]
        return list(zip(names, self.cumulative, strict=True))


class Histogram:
    """Fixed buckets: `observe` is a bisect and two additions."""

    __slots__ = ("_bounds", "_counts", "_sum")

    def __init__(self, bounds: Sequence[float]) -> None:
        self._bounds = tuple(bounds)
        self._counts = [0] * (len(self._bounds) + 1)
        self._sum = 0.0

    def observe(self, value: float) -> None:
        # bisect_left: a value equal to a bound goes in that bound's bucket (le).
        self._counts[bisect.bisect_left(self._bounds, value)] += 1
        self._sum += value

    def snapshot(self, *, extra_zeros: int = 0) -> HistogramSnapshot:
        """`extra_zeros`: observations of 0 counted elsewhere (e.g. lane slots taken at
        once, which are not observed one by one)."""
        running = extra_zeros
        cumulative = []
        for n in self._counts:
            running += n
            cumulative.append(running)
        return HistogramSnapshot(self._bounds, tuple(cumulative), self._sum, running)


@attrs.frozen
class RunMetricsSnapshot:
    started: int
    ended: dict[str, int]
    aborted: dict[str, int]
    duration: dict[str, HistogramSnapshot]
    provider_errors: dict[str, int]


class RunMetrics:
    """Runs accepted and ended, by status; durations; provider errors by kind. Fed by the
    `RunRegistry` (`started` on `add`, `ended` on `finish`)."""

    def __init__(self) -> None:
        self.started = 0
        self._ended = dict.fromkeys(RUN_STATUSES, 0)
        self._aborted = dict.fromkeys(ABORT_REASONS, 0)
        self._duration = {s: Histogram(RUN_SECONDS_BUCKETS) for s in RUN_STATUSES}
        self._provider_errors: collections.Counter[str] = collections.Counter()

    def run_ended(
        self,
        status: str,
        *,
        duration_s: float | None,
        abort_reason: str | None,
        error_kind: str | None,
        final: dict[str, Any] | None,
    ) -> None:
        if status not in self._ended:
            status = "error"
        self._ended[status] += 1
        if duration_s is not None:
            self._duration[status].observe(max(duration_s, 0.0))
        if status == "aborted" and abort_reason is not None and abort_reason in self._aborted:
            self._aborted[abort_reason] += 1
        attempts = final.get("meta", {}).get("attempts") if final else None
        counted = False
        if attempts:
            # Each candidate that failed (fallback), the last one included.
            for attempt in attempts:
                if attempt.get("outcome") == "error":
                    self.provider_error(attempt.get("errorKind"))
                    counted = True
        if error_kind is not None and not counted:
            self.provider_error(error_kind)

    def provider_error(self, kind: object) -> None:
        known = isinstance(kind, str) and kind in PROVIDER_ERROR_KINDS
        self._provider_errors[kind if known and isinstance(kind, str) else "unknown"] += 1

    def snapshot(self) -> RunMetricsSnapshot:
        return RunMetricsSnapshot(
            started=self.started,
            ended=dict(self._ended),
            aborted=dict(self._aborted),
            duration={s: h.snapshot() for s, h in self._duration.items()},
            provider_errors=dict(self._provider_errors),
        )
