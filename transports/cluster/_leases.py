"""A cluster node's session leases: which node owns a session's lane, and how a session
moves between nodes. `SessionLeases` is the part of the `Router` (`_cluster_route`) that
holds them.

- **Owning.** `owner` answers which node owns a session, taking its lease
  (`session:<key>`, `actors.Leases`) when it is free; `own_actor` gives the session's actor
  here the lease's fencing token (the store refuses writes with an older one).
- **Keeping.** `run_leases` renews every held lease in one round trip each third of the
  TTL; a renewal that comes after the lease lapsed takes it again when nobody took it
  since; a lease lost aborts the session's runs and forgets its actor (with its copy of
  the session). So does a lease not renewed within the TTL (`LAPSED_FRACTION`: Redis not
  answering, the process frozen), as soon as this node sees it: when the renewal has not
  come back by then, or when a request on its session comes first and Redis does not
  renew it then (the request then asks Redis who owns it; taken here again, the session
  is loaded as stored). An actor made here while this node does not hold the lease (a
  request racing its loss) carries a fence the store refuses (`fence_of`), and is dropped
  when this node takes the lease.
- **Moving.** A session whose actor was reaped idle here has its lease released, so the
  next request on any node takes it (not while system events wait for its next turn here:
  a bounded number, the queue keeps 10,000 sessions at most). A run that no request brings
  (a cron firing on the node running cron) moves its session here: `take_session` asks the
  owner to let it go (`let_go`, done once the session is idle there) and takes the lease,
  bounded in time. A release in flight makes a request here wait for it, then take the
  lease again (it would otherwise adopt the lease being released, and lose it when the
  release lands).

Errors: `ClusterError` (Redis failing), `ClusterUnavailable` (no reachable owner),
`StoreError` (the store cannot record a lease's fencing token, or load the session).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Final

import trio

from actors import Cluster, ClusterError, ClusterUnavailable, Fence, Lease
from runtime.model import GenerationError

from ._wire import RouterHost

__all__ = ["HANDOFF_WAIT_S", "SessionLeases"]

log = logging.getLogger("clawlane.cluster")

HANDOFF_WAIT_S: Final = 30.0
HANDOFF_RETRY_S: Final = 0.25
NO_LEASE: Final = 0
"""The fencing token of an actor made on a node that does not hold its session's lease."""
LAPSED_FRACTION: Final = 0.9
"""Held leases taken or last renewed longer ago than this part of the TTL are lost here
(`SessionLeases._lose`): they may have expired in Redis and gone to another node."""


def _session_of(lease: Lease) -> str:
    """The session key of a session lease (`session:<key>`)."""
    return lease.key[len("session:") :]


class SessionLeases:
    """This node's session leases (see the module docstring). The `Router` has one, and
    hands it `send` (a message to a node's inbox: a handoff asks the owner to let go)."""

    def __init__(
        self,
        gateway: RouterHost,
        cluster: Cluster,
        *,
        ttl_s: float,
        send: Callable[[str, dict[str, Any]], None],
    ) -> None:
        self.send = send
        self.gateway = gateway
        self.cluster = cluster
        self.node_id = cluster.node_id
        self.ttl_s = ttl_s
        self.held: dict[str, Lease] = {}
        """Sessions this node owns: their leases."""
        self.alive: set[str] = {cluster.node_id}
        self.leases_lost = 0
        self.leases_late = 0
        self._renewed_at = 0.0
        self._adopted: dict[str, float] = {}
        """When leases were taken since the last renewal (each good for a TTL from then)."""
        self._releasing: dict[str, trio.Event] = {}
        self._pins: dict[str, int] = {}
        """Sessions whose leases requests here keep (`pinned`): how many requests."""

    @contextlib.contextmanager
    def pinned(self, key: str) -> Iterator[None]:
        """Keep the lease of `key`, if this node holds or takes it, until the block ends:
        for a request that makes no actor (`wake`, `system-event` queue a text, which then
        keeps it). Not a checkpoint."""
        self._pins[key] = self._pins.get(key, 0) + 1
        try:
            yield
        finally:
            left = self._pins.pop(key) - 1
            if left:
                self._pins[key] = left

    async def owner(self, key: str) -> str:
        """The node that owns session `key`: this one if it holds the lease or takes it
        now. A lease still held by a node that is gone is waited out (its TTL)."""
        while (releasing := self._releasing.get(key)) is not None:
            await releasing.wait()  # this node is giving it up: ask Redis once that is done
        if key in self.held and (not self._lapsed(key) or await self._renew_lapsed(key)):
            return self.node_id
        leases = self.cluster.leases
        with trio.move_on_after(self.ttl_s * 2):
            while True:
                asked = trio.current_time()  # the lease, if taken, lasts a TTL from about then
                lease = await leases.acquire(f"session:{key}")
                if lease is not None:
                    await self._adopt(key, lease, asked)
                    return self.node_id
                holder = await leases.holder(f"session:{key}")
                if holder is None:
                    continue
                if holder.owner == self.node_id:  # kept in Redis, given up here (lapsed)
                    asked = trio.current_time()
                    if await leases.renew(holder):
                        await self._adopt(key, holder, asked)
                        return self.node_id
                    continue
                if holder.owner in self.alive:
                    return holder.owner
                await trio.sleep(self.ttl_s / 10)  # a gone node's lease: until it expires
        raise ClusterUnavailable(f"session {key!r} has no reachable owner")

    async def _adopt(self, key: str, lease: Lease, taken_at: float) -> None:
        """Hold `lease` (taken or renewed at `taken_at`: good for a TTL from then) here once
        the store knows its fencing token. An actor of the session with an older fence
        (made here while this node did not hold the lease: its copy may predate another
        node's writes) is dropped, its runs aborted. A `StoreError` (the database away)
        leaves it not adopted: the request is answered the store's outage, and the next one
        adopts it (this node still holds it in Redis, or takes it again)."""
        known = self.held.get(key)
        if known is not None and known.token >= lease.token:
            return
        sup = self.gateway.actors.supervisor
        await sup.store.advance_fence(Fence(key, lease.token))
        known = self.held.get(key)
        if known is None or known.token < lease.token:
            actor = sup.peek_session(key)
            if actor is not None and actor.fence is not None and actor.fence.token < lease.token:
                self._drop_actor(key)  # made here without the lease (`fence_of`)
            self.held[key] = lease
            self._adopted[key] = taken_at
        self._fence_actor(key)

    def fence_of(self, key: str) -> Fence:
        """The fence of an actor made here for session `key` (`Supervisor.session_fence`):
        the token of the lease held, else `NO_LEASE`, older than any a node took (its
        writes are refused: this node does not own the session)."""
        lease = self.held.get(key)
        return Fence(key, lease.token if lease is not None else NO_LEASE)

    def _drop_actor(self, key: str) -> None:
        """Forget the session's actor here (if any), its runs aborted (those queued as the
        journal says: `Supervisor.settle_dropped`)."""
        sup = self.gateway.actors.supervisor
        actor = sup.drop_session(key)
        if actor is not None:
            queued = actor.lane.clear()
            actor.abort(None, "interrupt")
            if queued:
                sup.settle_dropped(actor, queued)

    def _fence_actor(self, key: str) -> None:
        """The session's actor here (if any) writes with the token of the lease held now."""
        lease = self.held.get(key)
        actor = self.gateway.actors.supervisor.peek_session(key)
        if lease is not None and actor is not None:
            actor.fence = Fence(key, lease.token)

    async def own_actor(self, key: str) -> None:
        """The session's actor here, carrying this node's fencing token (for a known agent:
        the handler answers an unknown one)."""
        sup = self.gateway.actors.supervisor
        lease = self.held.get(key)
        if lease is None:
            return
        agent_id = key.split(":")[1] if key.startswith("agent:") else None
        agent_id = agent_id or sup.generation.default_agent
        try:
            sup.generation.agent(agent_id)
        except GenerationError:
            return
        await sup.session(key, agent_id)
        self._fence_actor(key)

    async def run_leases(self) -> None:
        """Renew every held lease each third of the TTL, then give up those of sessions
        gone idle here. Until cancelled. The actors made here from now on carry the lease's
        fence from their start (`fence_of`)."""
        self.gateway.actors.supervisor.session_fence = self.fence_of
        self._renewed_at = trio.current_time()
        while True:
            await trio.sleep(self.ttl_s / 3)
            await self._renew_all()
            await self._release_idle()

    def _lapsed(self, key: str) -> bool:
        """The held lease of `key` was taken or last renewed too long ago to be trusted: it
        may have expired in Redis (this node was frozen, or cut off from Redis)."""
        since = max(self._renewed_at, self._adopted.get(key, self._renewed_at))
        return trio.current_time() - since > self.ttl_s * LAPSED_FRACTION

    async def _renew_lapsed(self, key: str) -> bool:
        """Renew the lease of `key`, not renewed within its TTL (a freeze, a partition, a
        renewal late): True if Redis still had it (nobody took it: the session's copy here
        is the stored one), else the lease is lost here (`_lose`: the caller asks Redis
        who owns it). Bounded by a third of the TTL."""
        lease = self.held[key]
        asked = trio.current_time()
        renewed = False
        with trio.move_on_after(self.ttl_s / 3):
            try:
                renewed = await self.cluster.leases.renew(lease)
            except ClusterError as exc:
                log.warning("node %s: lease of session %s not renewed: %s", self.node_id, key, exc)
        if self.held.get(key) is not lease:
            return False  # renewed, lost or released meanwhile: ask again
        if renewed:
            self._adopted[key] = asked
            return True
        self._lose([key])
        return False

    async def _renew_all(self) -> None:
        """One renewal of every held lease (one round trip). A lease that expired before
        its renewal came (an overloaded node, a slow Redis) is taken again if nobody took
        it since; one another node took, or all of them when Redis could not renew them
        before they could expire, are lost: also when Redis does not answer by then (a
        partition: the call waits on, and the leases with it, until the heal)."""
        leases = list(self.held.values())
        sent = trio.current_time()
        left = self._renewed_at + self.ttl_s * LAPSED_FRACTION - sent
        results: list[bool] | None = None
        with trio.move_on_after(max(left, self.ttl_s / 3)):
            try:
                results = await self.cluster.leases.renew_many(leases)
            except ClusterError as exc:
                log.warning("node %s: session leases not renewed: %s", self.node_id, exc)
        if results is None:
            self._lose([key for key in self.held if self._lapsed(key)])
            return
        self._renewed_at = sent
        self._adopted = {k: t for k, t in self._adopted.items() if t > sent}
        late = [lease for lease, ok in zip(leases, results, strict=True) if not ok]
        if late:
            await self._renew_late(late)

    async def _renew_late(self, late: list[Lease]) -> None:
        """Take the `late` leases again, all at once (Redis restarted empty: every one)."""
        late = [lease for lease in late if self.held.get(_session_of(lease)) is lease]
        try:
            taken = await self.cluster.leases.reacquire_many(late)
        except ClusterError:
            taken = [None] * len(late)
        stale: list[Lease] = []  # released here meanwhile: let them go again
        lost: list[str] = []
        for lease, again in zip(late, taken, strict=True):
            key = _session_of(lease)
            if self.held.get(key) is not lease:
                stale += [again] if again is not None else []
            elif again is None:
                lost.append(key)
            else:
                self.held[key] = again
                self.leases_late += 1
                self._fence_actor(key)
        self._lose(lost)
        if stale:
            with contextlib.suppress(ClusterError):
                await self.cluster.leases.release_many(stale)

    async def _release_idle(self) -> None:
        """Give up the leases of the sessions whose actors are gone here (reaped idle), all
        at once (a reaper pass can forget tens of thousands). Kept: a session with requests
        waiting here, one a request here holds (`pinned`), and one with system events queued
        here (`wake`, `system-event`: its next turn, wherever requested, comes here and
        reads them)."""
        sup = self.gateway.actors.supervisor
        queued = sup.services.system_events
        gone = self.held.keys() - sup.session_keys() - self._pins.keys()
        await self._release([k for k in gone if not sup.order.outstanding(k) and not queued.has(k)])

    async def _release(self, keys: list[str]) -> None:
        """Give the sessions' leases up (their actors are gone here). A request for one of
        them here meanwhile waits for the release (`owner`), then takes the lease again."""
        leases = {}
        for key in keys:
            lease = self.held.pop(key, None)
            if lease is not None and key not in self._releasing:
                leases[key] = lease
                self._releasing[key] = trio.Event()
        if not leases:
            return
        try:
            await self.cluster.leases.release_many(list(leases.values()))
        except ClusterError as exc:
            log.info("%d session leases not released (they expire): %s", len(leases), exc)
        finally:
            for key in leases:
                self._releasing.pop(key).set()

    # --- a run no request routed (cron's): its session moves here -------------------------

    async def take_session(self, key: str) -> None:
        """Own session `key` here before a run that no routed request brought (a cron
        firing): take its lease; while another node holds it, ask that node to let it go
        (it does once the session is idle there) and try again, for `HANDOFF_WAIT_S` at
        most. Raises `ClusterUnavailable` naming the node that keeps it."""
        deadline = trio.current_time() + HANDOFF_WAIT_S
        while True:
            owner = await self.owner(key)
            if owner == self.node_id:
                await self.own_actor(key)
                return
            if trio.current_time() >= deadline:
                raise ClusterUnavailable(f"session {key!r} stays busy on node {owner}")
            self.send(owner, {"t": "note", "from": self.node_id, "release": key})
            await trio.sleep(HANDOFF_RETRY_S)  # what the owner does is seen in Redis only

    async def let_go(self, key: str) -> None:
        """(Another node asked, `take_session`.) Give the session up if it is idle here:
        its actor forgotten, its lease released. A checkpoint."""
        sup = self.gateway.actors.supervisor
        actor = sup.peek_session(key)
        if key not in self.held or sup.order.outstanding(key) or (actor and actor.busy):
            await trio.lowlevel.checkpoint()
            return
        sup.drop_session(key)
        await self._release([key])

    def _lose(self, keys: Iterable[str]) -> None:
        """Give up the leases of `keys`: their actors forgotten, their runs aborted."""
        for key in keys:
            self._adopted.pop(key, None)
            if self.held.pop(key, None) is None:
                continue
            self.leases_lost += 1
            log.warning("node %s: lost the lease of session %s", self.node_id, key)
            self._drop_actor(key)
