"""Routing across the gateway nodes of one cluster (`cluster.redis.url` set).

The primitives (leases, claims, channels, shared documents) live in `actors.cluster`; this
folder is what a node does with them on the edge:
- `_wire`: what nodes say to each other (forwarded requests, answers, events) and where it goes.
- `_leases`: which node owns a session's lane, renewed while the node lives, moved when it dies.
- `_claims`: idempotency claims, sent in batches, and what a duplicate on another node gets.
- `_route`: `Router`, one owner per session; a request for a session owned elsewhere is
  forwarded to its owner and its answers and events come back (`Target`).
- `_node`: `open_node`, the gateway as a node: hello, node records, the router, presence.
- `_presence`: OpenClaw's presence (`system-presence`, the `presence` event, the snapshot in
  `hello-ok`): the clients and gateways connected here and on the nodes this one knows.

Without cluster config none of this is imported: the embedded gateway has no router.
"""

from ._node import ClusterNode as ClusterNode
from ._node import open_node as open_node
from ._node import start_node as start_node
from ._presence import PRESENCE_MODES as PRESENCE_MODES
from ._presence import Presence as Presence
from ._route import Router as Router
from ._route import Target as Target

__all__ = [
    "PRESENCE_MODES",
    "ClusterNode",
    "Presence",
    "Router",
    "Target",
    "open_node",
    "start_node",
]
