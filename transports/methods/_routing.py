"""Where a request goes before its handler runs: here, or (in a cluster) to the node that
owns what it concerns; with its place in its session's order.

A connection's reader hands every request to the method table (`Methods.route`) as it is
received, before a task exists for it. The table decides, in this order:

1. In a cluster, a request the table would admit and that concerns a session (or another
   owned thing) is the router's: its `Route` names the router's target, and the ticket the
   router reserves (runs of a session keep their order across nodes).
2. `agent` takes its task-free path (`start_agent`): answered already (no `Route`), or
   handed to the general path with the place it took in its session's order.
3. The other methods that start runs (`ORDERED_METHODS`) take their place in their
   session's order now, as they are received.

`Methods.serve` then runs the request on its route, in the task the connection made for it:
forwarded by the router, or through the table (`Methods.call`). The connection never sees
the router; the router is the table's (`Methods.router`, set by the gateway when it is a
node of a cluster).
"""

from __future__ import annotations

from typing import Any

import attrs

from actors import Ticket

from ._context import Forwarder as Forwarder

__all__ = ["Forwarder", "Route"]


@attrs.define(eq=False, slots=True)
class Route:
    """A request on its way to its handler: its place in its session's order (`ticket`)
    and, when the router takes it, what the router routes it by (`target`)."""

    ticket: Ticket | None = None
    target: Any = None
    span: Any = None
    """The request's span while telemetry is on (`_traced`), served and ended with it."""
    received: float = 0.0
    """When the request was received (`time.perf_counter`), while telemetry is on."""

    def release(self) -> None:
        """Give the place in the order up (the handler is done with it). Idempotent."""
        if self.ticket is not None:
            self.ticket.release()
