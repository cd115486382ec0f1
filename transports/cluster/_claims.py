"""A cluster node's idempotency claims: sent in batches, and what
becomes of those of a node that is gone.

`ClaimBatch` sends this node's claims and finals to Redis together (see its docstring);
`FinalsBudget` bounds the bytes of the finals a node leaves there. `recall`: a key found
unclaimed while Redis's claims are younger than a claim's TTL (`Claim.doubtful`: Redis
restarted empty) is looked up in the run journal (PostgreSQL) before its run goes ahead:
a run accepted already, by any node, never runs twice.

The reaper: what becomes of the runs of a node that is gone.

A node claims each run it accepts (`actors.Claims`, listed under its id until the run's
final is stored). When a node dies, its claims stay unfinished. The reaper runs on one
node at a time (`run_single_owner("reaper")`): every lease TTL it lists the unfinished
claims, and a node seen gone (no heartbeat record) twice in a row has each of its runs
reported interrupted, as a restart reports one: in its session (transcript, row, journal:
`actors.report_lost`, written by this node once it owns the session; skipped, and logged,
when another node serves the session by then) and in its claim (an `error` final naming
the node, so `agent.wait` answers it and a retried key runs nothing). A node started again
under its id (a restarted worker) does the same for the runs it had claimed before
(`former_self`, listed before it claims anything).
"""

from __future__ import annotations

import collections
import logging
import time
from collections.abc import Callable
from typing import Any, Final, Protocol

import attrs
import msgspec
import trio

from actors import (
    Claim,
    Claims,
    Cluster,
    ClusterError,
    JournalRow,
    RecoveredRun,
    RunRecord,
    StoreError,
    end_lost_in_journal,
    recall_run,
    report_lost,
)

from ..methods import restore_idempotency
from ._wire import RETRY_S, ClaimFinal, ClaimNote, lost_reason, unavailable

__all__ = [
    "FINALS_MAX_BYTES",
    "LOST_RUN_HORIZON_MS",
    "MAX_PENDING_FINALS",
    "ClaimBatch",
    "FinalsBudget",
    "Reaper",
    "claim_final",
    "recall",
]

log = logging.getLogger("clawlane.cluster")

MAX_PENDING_FINALS: Final = 100_000
FINALS_MAX_BYTES: Final = 32 * 1024 * 1024
"""The finals one node stores in Redis within a claim TTL, their bytes all told."""
LOST_RUN_HORIZON_MS: Final = 86_400_000
"""A lost run accepted longer ago than this is not looked for in the journal."""
REAPED_FINAL_MAX_BYTES: Final = 64 * 1024
"""A lost node's run found ended in the journal: its claim's final past this size is
stored without its reply text (a repeated key answers `ok` with no text)."""

_note_decoder = msgspec.json.Decoder(ClaimNote)


class _Router(Protocol):
    """What the reaper needs of the router."""

    cluster: Cluster
    node_id: str
    ttl_s: float
    alive: set[str]

    @property
    def gateway(self) -> Any: ...

    async def owner(self, key: str) -> str: ...

    async def own_actor(self, key: str) -> None: ...


class Reaper:
    def __init__(self, router: _Router) -> None:
        self.router = router
        self.reaped = 0
        self._suspects: set[str] = set()

    async def run(self) -> None:
        """(One node at a time.) A pass every lease TTL, until cancelled."""
        while True:
            await trio.sleep(self.router.ttl_s)
            try:
                await self.reap()
            except ClusterError as exc:
                log.warning("node %s: reaper: %s", self.router.node_id, exc)

    async def reap(self) -> int:
        """One pass: a node seen gone twice in a row has its unfinished claims reported
        interrupted. Returns how many."""
        unfinished = await self.router.cluster.claims.unfinished()
        gone = {node for node in unfinished if node not in self.router.alive}
        suspects, self._suspects = self._suspects, gone
        count = 0
        for node in gone & suspects:
            count += await self._finish_lost(node, unfinished[node])
        return count

    async def former_self(self, keys: list[str]) -> None:
        """The runs this node's id had claimed before it started (in the background)."""
        try:
            await self._finish_lost(self.router.node_id, keys)
        except ClusterError as exc:
            log.warning("node %s: its former runs not reported: %s", self.router.node_id, exc)

    async def _finish_lost(self, node: str, keys: list[str]) -> int:
        claims = self.router.cluster.claims
        for key in keys:
            run_id = key[len("run:") :]
            ended = await self._report_in_session(key, run_id)
            if ended is not None:  # it ended on its node, which could not tell Redis
                data = msgspec.json.encode(claim_final(ended))
                if len(data) > REAPED_FINAL_MAX_BYTES:
                    data = msgspec.json.encode(without_payloads(claim_final(ended)))
                await claims.finish(key, data, owner=node)
                log.warning(
                    "node %s: run %s of node %s, gone, had ended %s: its claim says so",
                    self.router.node_id,
                    run_id,
                    node,
                    ended.status,
                )
                continue
            final = ClaimFinal(wait="error", error=lost_reason(run_id, node))
            await claims.finish(key, msgspec.json.encode(final), owner=node)
            log.warning(
                "node %s: run %s of node %s reported interrupted",
                self.router.node_id,
                run_id,
                node,
            )
            self.reaped += 1
        return len(keys)

    async def _report_in_session(self, key: str, run_id: str) -> RunRecord | None:
        """Report the run interrupted in its session, unless its journal row has ended:
        then that end (the run's record, kept here for `agent.wait`). The journal is read
        once the session's fencing token has moved past the lost node's (this node took
        the session, or another node serves it), so the lost node can no longer end the
        run after the read: it is ended here, or never."""
        router = self.router
        claim = await router.cluster.claims.get(key)
        if claim is None:
            return None
        session = _note_decoder.decode(claim.ack).sessionKey
        since = int(time.time() * 1000) - LOST_RUN_HORIZON_MS
        sup = router.gateway.actors.supervisor
        try:  # taking the session (its fencing token, its row) needs the store too
            if await router.owner(session) == router.node_id:
                await router.own_actor(session)
                if await report_lost(sup, run_id, since_ms=since):
                    return None
                found = await recall_run(sup, run_id)
            else:  # its owner keeps the session; the run's journal row ends here
                log.warning("run %s: its session %s is served elsewhere now", run_id, session)
                found = await recall_run(sup, run_id)
                if isinstance(found, JournalRow) and not await end_lost_in_journal(sup, found):
                    found = await recall_run(sup, run_id)  # ended meanwhile: as it ended
        except StoreError as exc:
            log.warning("run %s: not reported in its session: %s", run_id, exc)
            return None
        return found.record if isinstance(found, RecoveredRun) else None


async def recall(
    gateway: Any, batch: ClaimBatch, run_id: str, finish_claim: Callable[[str], None]
) -> bool:
    """The first claim of `run_id` made while Redis may have forgotten an earlier one
    (`Claim.doubtful`): what this node or the journal knows of the run. True: nothing (the
    claim stands: run it). False: the run is known here now, running or ended (an ended
    one restored from the journal: its record, its cached answer): the local method
    answers the repeat, and the claim gets its final (`finish_claim`). Raises
    `GatewayError` (`UNAVAILABLE`, retryable) for a run the journal has accepted and not
    ended (a node may be running it: the claim is finished refused, so a retry asks
    again), `StoreError` when the journal cannot be read (likewise)."""
    actors = gateway.actors
    try:
        if actors.registry.get(run_id) is None:
            found = await recall_run(actors.supervisor, run_id)
            if found is None:
                return True
            if not isinstance(found, RecoveredRun):
                raise unavailable(
                    f"run {run_id} was accepted and has not ended yet (Redis, which knew "
                    "where it runs, restarted); retry"
                )
            restore_idempotency(gateway, [found])
            log.warning("run %s: its claim was forgotten; answered from the journal", run_id)
    except BaseException:
        batch.finish(f"run:{run_id}", batch.refused)
        raise
    finish_claim(run_id)
    return False


@attrs.define(eq=False)
class _Slot:
    done: trio.Event = attrs.field(factory=trio.Event)
    claim: Claim | None = None
    error: ClusterError | None = None
    abandoned: bool = False


@attrs.define
class FinalsBudget:
    """What the finals this node stores in claims may hold (each lives the claim TTL in
    Redis): at most `max_bytes` handed over within any TTL. A final past it is stored
    without its reply text (`without_payloads`), as the registry drops its oldest finals'
    text past its own bound: a repeated key still answers `ok`, with no text, and never
    runs again. So Redis holds at most this per node, whatever the replies' sizes."""

    ttl_s: float
    max_bytes: int = FINALS_MAX_BYTES
    _kept: collections.deque[tuple[float, int]] = attrs.field(factory=collections.deque)
    _bytes: int = 0

    def admit(self, size: int) -> bool:
        """Whether a final of `size` bytes fits now (counted when it does)."""
        now = trio.current_time()
        kept = self._kept
        while kept and kept[0][0] <= now - self.ttl_s:
            self._bytes -= kept.popleft()[1]
        if self._bytes + size > self.max_bytes:
            return False
        kept.append((now, size))
        self._bytes += size
        return True


def claim_final(record: RunRecord) -> ClaimFinal:
    """How an ended run's claim tells its end (`agent.wait`'s status, the final)."""
    return ClaimFinal(
        wait=record.wait_status(),
        error=record.error if record.status == "error" else None,
        startedAt=record.started_at,
        endedAt=record.ended_at,
        result=record.final if record.status != "error" else None,
    )


def without_payloads(final: ClaimFinal) -> ClaimFinal:
    """`final` with its reply text dropped (`meta.payloadsDropped: true`)."""
    result: dict[str, Any] = final.result if isinstance(final.result, dict) else {}
    meta = result.get("meta")
    meta = (
        {**meta, "payloadsDropped": True} if isinstance(meta, dict) else {"payloadsDropped": True}
    )
    kept = {**result, "payloads": [], "meta": meta}
    return msgspec.structs.replace(final, result=kept)


@attrs.define(eq=False)
class ClaimBatch:
    """This node's idempotency claims and finals, sent together by `run`: every claim
    waiting when it wakes goes in one round trip, and so do the finals. A Redis command
    costs coredis ~250 µs of CPU, more than a whole run of the `local` model: one claim
    and one final per run, each on its own, halved the runs a node completes. Finals are
    kept and retried while Redis is away (at most `MAX_PENDING_FINALS`; past that the
    oldest are dropped, and their claims end at their TTL)."""

    claims: Claims
    owner: str
    refused: bytes
    """The final given to a claim whose caller went away before it was answered."""
    _pending: list[tuple[str, bytes, _Slot]] = attrs.field(factory=list)
    _finals: list[tuple[str, bytes]] = attrs.field(factory=list)
    _wake: trio.Event = attrs.field(factory=trio.Event)
    round_trips: int = 0

    async def claim(self, key: str, ack: bytes) -> Claim:
        """`Claims.claim` (with this node as owner), batched. Raises `ClusterError`."""
        slot = _Slot()
        self._pending.append((key, ack, slot))
        self._wake.set()
        try:
            await slot.done.wait()
        except trio.Cancelled:
            slot.abandoned = True  # a first claim made for nobody is finished as refused
            raise
        if slot.error is not None:
            raise slot.error
        assert slot.claim is not None
        return slot.claim

    def finish(self, key: str, final: bytes) -> None:
        """Queue the final of a claimed key (sent with the next batch)."""
        self._finals.append((key, final))
        del self._finals[:-MAX_PENDING_FINALS]
        self._wake.set()

    async def run(self) -> None:
        """Send what is queued, until cancelled."""
        while True:
            await self._wake.wait()
            self._wake = trio.Event()
            pending, self._pending = self._pending, []
            if pending:
                await self._claim(pending)
            finals, self._finals = self._finals, []
            if finals:
                try:
                    await self.claims.finish_many(finals, owner=self.owner)
                    self.round_trips += 1
                except ClusterError as exc:
                    log.warning("%d finals not stored yet, retrying: %s", len(finals), exc)
                    self._finals[:0] = finals
                    del self._finals[:-MAX_PENDING_FINALS]
                    await trio.sleep(RETRY_S)
                    self._wake.set()

    async def _claim(self, pending: list[tuple[str, bytes, _Slot]]) -> None:
        try:
            got = await self.claims.claim_many([(k, a) for k, a, _ in pending], owner=self.owner)
            self.round_trips += 1
        except ClusterError as exc:
            for _key, _ack, slot in pending:
                slot.error = type(exc)(str(exc))
                slot.done.set()
            return
        for (key, _ack, slot), claim in zip(pending, got, strict=True):
            slot.claim = claim
            slot.done.set()
            if slot.abandoned and claim.first:
                self.finish(key, self.refused)
