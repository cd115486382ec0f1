"""`open_cluster`: the cluster primitives the config asks for.

Redis (`_redis`, through coredis) with `cluster.redis.url`, else the in-process ones
(`_local`). `_redis` is imported only on the Redis branch: coredis (with beartype, anyio
and its command tables) is most of a gateway's import time and a good part of its memory,
and the embedded default never uses it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from ._local import Cluster, open_local_cluster

if TYPE_CHECKING:
    from runtime.model import Config

__all__ = ["open_cluster"]


@asynccontextmanager
async def open_cluster(config: Config, *, node_id: str) -> AsyncIterator[Cluster]:
    """The backend `config` asks for: Redis with `cluster.redis.url`, in-process without."""
    cluster = config.cluster
    ttl = cluster.leaseTtlMs / 1000
    if cluster.redis.url is None:
        async with open_local_cluster(node_id=node_id, lease_ttl_s=ttl) as local:
            yield local
        return
    from ._redis import open_redis_cluster

    async with open_redis_cluster(
        cluster.redis.url, node_id=node_id, prefix=cluster.redis.keyPrefix, lease_ttl_s=ttl
    ) as remote:
        yield remote
