"""The cluster primitives of `actors.cluster._primitives` inside one process: what a single gateway
uses, with the same contract as the Redis ones (`actors.cluster._redis`), so the gateway can go
through the interfaces without a change in behaviour. Trio-thread only; time is trio's
clock (expiry follows `autojump_clock` in tests). Every method is a checkpoint and never
raises `ClusterUnavailable`.

`open_local_cluster` bundles them as a `Cluster`, as `actors.cluster._redis.open_redis_cluster`
does for Redis.
"""

from __future__ import annotations

import collections
import time
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import attrs
import trio

from ._primitives import (
    DEFAULT_LEASE_TTL_S,
    ChannelMessage,
    Channels,
    Claim,
    Claims,
    Generations,
    Lease,
    Leases,
    NodeIdInUse,
    NodeRecords,
    RunStreams,
    StreamEntry,
    StreamGap,
    StreamRead,
    Version,
)

__all__ = [
    "Cluster",
    "LocalChannels",
    "LocalClaims",
    "LocalGenerations",
    "LocalLeases",
    "LocalNodeRecords",
    "LocalRunStreams",
    "next_token",
    "open_local_cluster",
]


def next_token(last: int) -> int:
    """A fencing token after `last`: at least the wall clock in microseconds, so tokens
    keep growing across restarts that lose the counter (as Redis's Lua script does)."""
    return max(last + 1, time.time_ns() // 1_000)


@attrs.frozen
class Cluster:
    """The four primitives one backend gives a node."""

    node_id: str
    leases: Leases
    claims: Claims
    streams: RunStreams
    generations: Generations
    nodes: NodeRecords
    channels: Channels
    backend: str


class LocalLeases(Leases):
    def __init__(self, *, owner: str = "local", ttl_s: float = DEFAULT_LEASE_TTL_S) -> None:
        super().__init__(owner=owner, ttl_s=ttl_s)
        self._held: dict[str, tuple[Lease, float]] = {}
        self._fences: dict[str, int] = {}

    def view(self, owner: str) -> LocalLeases:
        """Another owner's handle on the same leases (two nodes' worth, in one process)."""
        other = LocalLeases(owner=owner, ttl_s=self.ttl_s)
        other._held, other._fences = self._held, self._fences
        return other

    def _current(self, key: str) -> Lease | None:
        entry = self._held.get(key)
        if entry is None:
            return None
        if trio.current_time() >= entry[1]:
            del self._held[key]
            return None
        return entry[0]

    async def acquire(self, key: str) -> Lease | None:
        await trio.lowlevel.checkpoint()
        if self._current(key) is not None:
            return None
        token = next_token(self._fences.get(key, 0))
        self._fences[key] = token
        lease = Lease(key, token, self.owner)
        self._held[key] = (lease, trio.current_time() + self.ttl_s)
        return lease

    async def renew(self, lease: Lease) -> bool:
        await trio.lowlevel.checkpoint()
        if self._current(lease.key) != lease:
            return False
        self._held[lease.key] = (lease, trio.current_time() + self.ttl_s)
        return True

    async def release(self, lease: Lease) -> bool:
        await trio.lowlevel.checkpoint()
        if self._current(lease.key) != lease:
            return False
        del self._held[lease.key]
        return True

    async def fence(self, key: str) -> int | None:
        await trio.lowlevel.checkpoint()
        lease = self._current(key)
        return None if lease is None else lease.token

    async def holder(self, key: str) -> Lease | None:
        await trio.lowlevel.checkpoint()
        return self._current(key)

    async def reacquire(self, lease: Lease) -> Lease | None:
        await trio.lowlevel.checkpoint()
        if self._current(lease.key) is not None or self._fences.get(lease.key) != lease.token:
            return None
        token = next_token(lease.token)
        self._fences[lease.key] = token
        again = Lease(lease.key, token, self.owner)
        self._held[lease.key] = (again, trio.current_time() + self.ttl_s)
        return again

    def expire_now(self, key: str) -> None:
        """Tests: forget the holder of `key` (what a Redis key expiring does)."""
        self._held.pop(key, None)


class LocalClaims(Claims):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._entries: dict[str, tuple[bytes, bytes | None, float]] = {}
        self._owned: dict[str, set[str]] = {}

    def _live(self, key: str) -> tuple[bytes, bytes | None, float] | None:
        entry = self._entries.get(key)
        if entry is not None and trio.current_time() >= entry[2]:
            del self._entries[key]
            return None
        return entry

    async def claim(self, key: str, ack: bytes, *, owner: str | None = None) -> Claim:
        await trio.lowlevel.checkpoint()
        entry = self._live(key)
        if entry is not None:
            return Claim(False, entry[0], entry[1])
        self._sweep()
        self._entries[key] = (ack, None, trio.current_time() + self.ttl_s)
        if owner is not None:
            self._owned.setdefault(owner, set()).add(key)
        return Claim(True, ack)

    async def finish(self, key: str, final: bytes, *, owner: str | None = None) -> bool:
        await trio.lowlevel.checkpoint()
        if owner is not None:
            owned = self._owned.get(owner, set())
            owned.discard(key)
            if not owned:
                self._owned.pop(owner, None)
        entry = self._live(key)
        if entry is None:
            return False
        self._entries[key] = (entry[0], final, trio.current_time() + self.ttl_s)
        return True

    async def unfinished(self) -> dict[str, list[str]]:
        await trio.lowlevel.checkpoint()
        return {owner: sorted(keys) for owner, keys in self._owned.items() if keys}

    async def get(self, key: str) -> Claim | None:
        await trio.lowlevel.checkpoint()
        entry = self._live(key)
        return None if entry is None else Claim(False, entry[0], entry[1])

    def _sweep(self) -> None:
        """Expired keys go when a claim arrives (insertion order is expiry order enough)."""
        now = trio.current_time()
        for key in [k for k, (_a, _f, until) in self._entries.items() if until <= now]:
            del self._entries[key]


@attrs.define(eq=False)
class _Stream:
    entries: collections.deque[StreamEntry]
    expires: float
    changed: trio.Event = attrs.field(factory=trio.Event)

    @property
    def last_seq(self) -> int:
        return self.entries[-1].seq if self.entries else 0


class LocalRunStreams(RunStreams):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._streams: dict[str, _Stream] = {}

    def _live(self, run_id: str) -> _Stream | None:
        stream = self._streams.get(run_id)
        if stream is not None and trio.current_time() >= stream.expires:
            del self._streams[run_id]
            return None
        return stream

    async def append(self, run_id: str, seq: int, frame: bytes, *, terminal: bool = False) -> bool:
        await trio.lowlevel.checkpoint()
        if seq < 1:
            raise ValueError("seq starts at 1")
        stream = self._live(run_id)
        if stream is None:
            stream = _Stream(collections.deque(maxlen=self.maxlen), 0.0)
            self._streams[run_id] = stream
        if seq <= stream.last_seq:
            return False
        stream.entries.append(StreamEntry(seq, frame, terminal))
        ttl = self.ended_ttl_s if terminal else self.idle_ttl_s
        stream.expires = trio.current_time() + ttl
        stream.changed.set()
        stream.changed = trio.Event()
        return True

    async def read(self, run_id: str, after_seq: int = 0, *, limit: int = 1_000) -> StreamRead:
        await trio.lowlevel.checkpoint()
        stream = self._live(run_id)
        if stream is None:
            return StreamRead((), gap=False, ended=False)
        picked = tuple(e for e in stream.entries if e.seq > after_seq)[:limit]
        gap = bool(picked) and picked[0].seq != after_seq + 1
        return StreamRead(picked, gap=gap, ended=bool(picked) and picked[-1].terminal)

    async def follow(self, run_id: str, after_seq: int = 0) -> AsyncGenerator[StreamEntry, None]:
        last = after_seq
        while True:
            batch = await self.read(run_id, last)
            if batch.gap:
                raise StreamGap(f"run {run_id!r} stream no longer has seq {last + 1}")
            for entry in batch.entries:
                yield entry
                last = entry.seq
                if entry.terminal:
                    return
            if not batch.entries:
                await self._changed(run_id).wait()

    def _changed(self, run_id: str) -> trio.Event:
        stream = self._live(run_id)
        if stream is None:
            expires = trio.current_time() + self.idle_ttl_s
            stream = _Stream(collections.deque(maxlen=self.maxlen), expires)
            self._streams[run_id] = stream
        return stream.changed


class LocalGenerations(Generations):
    def __init__(self) -> None:
        self._current: Version | None = None
        self._changed = trio.Event()

    async def current(self) -> Version | None:
        await trio.lowlevel.checkpoint()
        return self._current

    async def publish(self, data: bytes, *, after: int | None = None) -> Version | None:
        await trio.lowlevel.checkpoint()
        number = 0 if self._current is None else self._current.number
        if after is not None and after != number:
            return None
        self._current = Version(number + 1, data)
        self._changed.set()
        self._changed = trio.Event()
        return self._current

    @asynccontextmanager
    async def subscribe(self) -> AsyncIterator[AsyncIterator[Version]]:
        await trio.lowlevel.checkpoint()
        yield _LocalSubscription(self)


class _LocalSubscription:
    def __init__(self, generations: LocalGenerations) -> None:
        self._generations = generations
        self.seen = 0

    def __aiter__(self) -> _LocalSubscription:
        return self

    async def __anext__(self) -> Version:
        while True:
            current = await self._generations.current()
            if current is not None and current.number > self.seen:
                self.seen = current.number
                return current
            await self._generations._changed.wait()


class LocalNodeRecords(NodeRecords):
    """In-process records; `view` gives another node's handle on the same table."""

    def __init__(self, *, node_id: str) -> None:
        super().__init__(node_id=node_id)
        self._records: dict[str, tuple[str, bytes, float]] = {}

    def view(self, node_id: str) -> LocalNodeRecords:
        other = LocalNodeRecords(node_id=node_id)
        other._records = self._records
        return other

    async def beat(self, record: bytes, *, ttl_s: float, over: str | None = None) -> None:
        await trio.lowlevel.checkpoint()
        current = self._live().get(self.node_id)
        if current is not None and current[0] not in (self.instance, over):
            raise NodeIdInUse(current[1])
        self._records[self.node_id] = (self.instance, record, trio.current_time() + ttl_s)

    async def holder(self) -> tuple[str, bytes] | None:
        await trio.lowlevel.checkpoint()
        return self._live().get(self.node_id)

    async def forget(self) -> None:
        await trio.lowlevel.checkpoint()
        current = self._live().get(self.node_id)
        if current is not None and current[0] == self.instance:
            del self._records[self.node_id]

    async def all(self) -> dict[str, bytes]:
        await trio.lowlevel.checkpoint()
        return {node_id: record for node_id, (_, record) in self._live().items()}

    def _live(self) -> dict[str, tuple[str, bytes]]:
        now = trio.current_time()
        for node_id in [n for n, (_, _, until) in self._records.items() if until <= now]:
            del self._records[node_id]
        return {n: (instance, record) for n, (instance, record, _) in self._records.items()}


class LocalChannels(Channels):
    """In-process channels: a deque each of (number, time sent, message); cursors are
    message numbers."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._channels: dict[str, collections.deque[tuple[int, float, bytes]]] = {}
        self._next = 0
        self._changed = trio.Event()

    async def send(self, channel: str, messages: Sequence[bytes]) -> None:
        await trio.lowlevel.checkpoint()
        queue = self._channels.setdefault(channel, collections.deque(maxlen=self.maxlen))
        now = trio.current_time()
        for data in messages:
            self._next += 1
            queue.append((self._next, now, data))
        while queue and queue[0][1] < now - self.retention_s:
            queue.popleft()
        self._changed.set()
        self._changed = trio.Event()

    async def tail(self, channel: str) -> str:
        await trio.lowlevel.checkpoint()
        queue = self._channels.get(channel)
        return f"{queue[-1][0]}-0" if queue else self.START

    def _after(self, cursors: Mapping[str, str], limit: int) -> list[ChannelMessage]:
        out: list[ChannelMessage] = []
        for channel, cursor in cursors.items():
            after = int(cursor.split("-", 1)[0])
            picked = [m for m in self._channels.get(channel, ()) if m[0] > after][:limit]
            out.extend(ChannelMessage(channel, f"{n}-0", data) for n, _t, data in picked)
        return out

    async def receive(
        self, cursors: Mapping[str, str], *, timeout_s: float, limit: int = 1_000
    ) -> list[ChannelMessage]:
        await trio.lowlevel.checkpoint()
        with trio.move_on_after(timeout_s):
            while not (found := self._after(cursors, limit)):
                await self._changed.wait()
            return found
        return []


@asynccontextmanager
async def open_local_cluster(
    *, node_id: str = "local", lease_ttl_s: float = DEFAULT_LEASE_TTL_S
) -> AsyncIterator[Cluster]:
    """The in-process primitives (nothing to open or close; a context for symmetry with
    `open_redis_cluster`)."""
    await trio.lowlevel.checkpoint()
    yield Cluster(
        node_id=node_id,
        leases=LocalLeases(owner=node_id, ttl_s=lease_ttl_s),
        claims=LocalClaims(),
        streams=LocalRunStreams(),
        generations=LocalGenerations(),
        nodes=LocalNodeRecords(node_id=node_id),
        channels=LocalChannels(),
        backend="local",
    )
