"""What the HTTP side counts, and the gateway as a `/metrics` scrape reads it.

`HttpCounters` (requests answered, by route and status class) and `MetricsHost` live apart
from `_metrics` (the Prometheus collector) so that a gateway keeps its counters without
loading prometheus-client until `/metrics` is first served.
"""

from __future__ import annotations

import collections
from typing import Final, Protocol

from ..methods import Host

__all__ = ["HTTP_ROUTES", "ROLES", "HttpCounters", "MetricsHost"]

HTTP_ROUTES: Final = (
    "healthz",
    "readyz",
    "metrics",
    "dashboard",
    "v1_models",
    "v1_chat_completions",
    "other",
)
ROLES: Final = ("operator", "node", "other")


class HttpCounters:
    """HTTP requests answered, by route and status class. Bounded: routes are a fixed
    set (`HTTP_ROUTES`), codes a class ("2xx")."""

    def __init__(self) -> None:
        self.answered: collections.Counter[tuple[str, str]] = collections.Counter()

    def count(self, route: str, status: int) -> None:
        route = route if route in HTTP_ROUTES else "other"
        self.answered[(route, f"{min(max(status // 100, 1), 5)}xx")] += 1


class MetricsHost(Host, Protocol):
    """The gateway as a scrape reads it: what the methods see, its sockets and counters,
    and its readiness."""

    @property
    def websocket_sockets(self) -> int: ...
    @property
    def http_sockets(self) -> int: ...
    @property
    def http_counters(self) -> HttpCounters: ...

    slow_consumer_closes: int

    def readiness_failures(self) -> list[str]: ...
