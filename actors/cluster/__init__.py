"""The coordination primitives the gateways of a cluster share, behind small interfaces.

- `_primitives`: the interfaces (`Cluster`: leases with fencing tokens, idempotency claims,
  run event feeds, channels between nodes, node records, single-owner jobs) and their value
  types (`Lease`, `Fence`, `Claim`, ...).
- `_local`: all of it inside one process: what a single gateway uses.
- `_redis`: all of it on Redis 7+ through coredis (native under trio), for `--workers` and
  many machines; `open_redis_cluster` is resolved on first use, so that coredis loads only
  when a cluster is configured.
- `_open`: `open_cluster`, whichever of the two the config asks for.

A session actor never knows which it has. Errors are `ClusterError` (under `ActorError`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from ._local import Cluster as Cluster
from ._local import open_local_cluster as open_local_cluster
from ._open import open_cluster as open_cluster
from ._primitives import ChannelMessage as ChannelMessage
from ._primitives import Channels as Channels
from ._primitives import Claim as Claim
from ._primitives import Claims as Claims
from ._primitives import ClusterError as ClusterError
from ._primitives import ClusterUnavailable as ClusterUnavailable
from ._primitives import Generations as Generations
from ._primitives import HeldLease as HeldLease
from ._primitives import Lease as Lease
from ._primitives import LeaseBusy as LeaseBusy
from ._primitives import LeaseLost as LeaseLost
from ._primitives import Leases as Leases
from ._primitives import NodeIdInUse as NodeIdInUse
from ._primitives import NodeRecords as NodeRecords
from ._primitives import RunStreams as RunStreams
from ._primitives import StreamEntry as StreamEntry
from ._primitives import StreamGap as StreamGap
from ._primitives import StreamRead as StreamRead
from ._primitives import Version as Version
from ._primitives import run_single_owner as run_single_owner

if TYPE_CHECKING:
    from ._redis import open_redis_cluster as open_redis_cluster

__all__ = [
    "ChannelMessage",
    "Channels",
    "Claim",
    "Claims",
    "Cluster",
    "ClusterError",
    "ClusterUnavailable",
    "Generations",
    "HeldLease",
    "Lease",
    "LeaseBusy",
    "LeaseLost",
    "Leases",
    "NodeIdInUse",
    "NodeRecords",
    "RunStreams",
    "StreamEntry",
    "StreamGap",
    "StreamRead",
    "Version",
    "open_cluster",
    "open_local_cluster",
    "open_redis_cluster",
    "run_single_owner",
]


def __getattr__(name: str) -> object:
    if name != "open_redis_cluster":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = importlib.import_module("._redis", __name__).open_redis_cluster
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
