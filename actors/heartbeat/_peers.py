"""`HeartbeatPeers`: what the heartbeats (`Heartbeats.peers`) ask of the other nodes of a
cluster, which `transports.cluster` answers (None on a gateway alone, where nothing of this
is asked): where a wake or a cron job's system event goes (the node owning its session), and
the `heartbeat` events and `set-heartbeats` every node shares.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from runtime.heartbeat import EventDelivery

from ._wakes import Wake

__all__ = ["HeartbeatPeers"]


class HeartbeatPeers(Protocol):
    """The other nodes of a cluster (`transports.cluster`), as `Heartbeats.peers`."""

    async def send_wake(self, wake: Wake, session_key: str) -> bool:
        """Send `wake` (for `session_key`) to the node that owns that session, when another
        node owns it: True once sent (it runs there), False when it runs here (this node
        owns it, nobody does, or its owner cannot be told). A checkpoint."""
        ...

    async def deliver_event(
        self,
        agent_id: str,
        session_key: str,
        text: str,
        *,
        context_key: str,
        wait: bool,
        here: Callable[[], Awaitable[EventDelivery]],
    ) -> EventDelivery:
        """A cron job's system event for `session_key`, delivered on the node that owns the
        session: `here()` when that is this node (or nobody does: this node takes it), else
        sent to the owner (`Heartbeats.deliver_routed` there) and its answer. A
        checkpoint."""
        ...

    def tell_event(self, event: dict[str, Any]) -> None:
        """A `heartbeat` event emitted here, for the other nodes (`adopt_event` there)."""
        ...

    async def share_enabled(self, enabled: bool) -> None:
        """`set-heartbeats` here: stored for the cluster (a node that starts later follows
        it) and told to the other nodes (`adopt_enabled` there). Raises `StoreError` when
        it cannot be stored (nothing changed). A checkpoint."""
        ...
