"""What gateway nodes share: the coordination primitives of a cluster, as small interfaces.

- `Leases`: one owner per key at a time (a session's lane, a single-owner job), with an
  expiry, renewal while held, and a fencing token per acquisition: tokens of one key only
  grow, so a durable write carrying an older token than the store has seen is refused
  (the store's check comes with the PostgreSQL backend). `Leases.hold` keeps a lease renewed
  in a nursery the caller owns and says when it is lost; `run_single_owner` runs a job on
  the one node holding its lease.
- `Claims`: an idempotency key claimed once across nodes, with the accepted ack and later
  the final; a second claimer gets what the first stored.
- `RunStreams`: a run's event frames in order of their per-run `seq` (from 1, no gaps),
  bounded, readable from a seq by any node and followed until the terminal frame.
- `Generations`: a config version number and its payload, published to every subscriber.
- `NodeRecords`: each node's heartbeat record (its id, when it started, its load), kept
  with an expiry and renewed while the node lives; a node that stops renewing drops out.
- `Channels`: bounded append-only channels of opaque messages between nodes: each node's
  inbox (requests forwarded to it, answers to its own) and each node's event feed (its
  runs' frames, for the clients of the other nodes). Readers follow them from a cursor.

Two implementations: `actors.cluster._local` (one process, the default: what a single
gateway uses) and `actors.cluster._redis` (Redis, several nodes). The contract tests in
`tests/actors/cluster/test_primitives.py` run against both. The gateway's cluster layer
(`transports.cluster._route`) is what uses them.

Errors (under `ActorError`):

    ClusterError
    ├── ClusterUnavailable (Redis cannot be reached or did not answer in time: retryable)
    ├── LeaseBusy (`hold`: another owner holds the key)
    ├── LeaseLost (`hold`: the lease expired or was taken while held)
    └── StreamGap (`follow`: the stream no longer reaches back to the seq asked for)
"""

from __future__ import annotations

import abc
import logging
import secrets
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Final

import attrs
import trio

from .._errors import ActorError

__all__ = [
    "DEFAULT_CLAIM_TTL_S",
    "DEFAULT_LEASE_TTL_S",
    "DEFAULT_STREAM_MAXLEN",
    "DEFAULT_STREAM_TTL_S",
    "ChannelMessage",
    "Channels",
    "Claim",
    "Claims",
    "ClusterError",
    "ClusterUnavailable",
    "Generations",
    "HeldLease",
    "Lease",
    "LeaseBusy",
    "LeaseLost",
    "Leases",
    "NodeRecords",
    "RunStreams",
    "StreamEntry",
    "StreamGap",
    "StreamRead",
    "Version",
    "run_single_owner",
]

log = logging.getLogger("clawlane.cluster")

DEFAULT_LEASE_TTL_S: Final = 5.0
DEFAULT_CLAIM_TTL_S: Final = 300.0
"""An idempotency key is remembered 5 minutes after its claim, and again after its final."""
DEFAULT_STREAM_MAXLEN: Final = 10_000
"""Frames kept per run stream (Redis trims approximately: a little more may stay)."""
DEFAULT_STREAM_TTL_S: Final = 600.0
"""How long a run's stream stays after its terminal frame (and after its last frame, for
runs whose node died before the end: `DEFAULT_STREAM_IDLE_TTL_S`)."""
DEFAULT_STREAM_IDLE_TTL_S: Final = 86_400.0
DEFAULT_CHANNEL_MAXLEN: Final = 100_000
"""Messages kept per channel at most (approximately, as for run streams)."""
DEFAULT_CHANNEL_RETENTION_S: Final = 15.0
"""How long a channel keeps a message: what its readers have not read by then is trimmed.
Channels carry what nodes say to each other now (requests, answers, event frames), read
within a second by a live node; one that has not read for three lease TTLs has lost its
sessions anyway. With it the memory a channel takes is what its senders send in this
time, whatever the count bound (which alone let 100,000 messages of up to megabytes each
stay: a soak with `--workers 2` grew Redis by 300 MiB a minute)."""
DEFAULT_CHANNEL_TTL_S: Final = 600.0
"""A channel nobody sends to for this long goes away (a node id not used again)."""
RENEW_FRACTION: Final = 3
"""A held lease is renewed every `ttl / RENEW_FRACTION`."""
SAFETY_FRACTION: Final = 10
"""A holder counts its lease lost `ttl / SAFETY_FRACTION` before it could expire in Redis
(measured from when the last successful renewal was sent), so it stops before another node
can take over, as long as the clocks run at about the same rate."""


class ClusterError(ActorError):
    """A cluster primitive failed."""


class ClusterUnavailable(ClusterError):
    """The coordination service cannot be reached, or did not answer in time. Retryable:
    the same call succeeds once it is back (the client reconnects by itself)."""


class LeaseBusy(ClusterError):
    """`hold`: another owner holds the lease."""


class LeaseLost(ClusterError):
    """`hold`: the lease was lost while held (expired, taken, or not renewable in time)."""


class StreamGap(ClusterError):
    """`follow`: the stream was trimmed (or expired) past the seq asked for."""


class NodeIdInUse(ClusterError):
    """`NodeRecords.beat`: the stored record of this node id is another process's."""

    def __init__(self, record: bytes) -> None:
        super().__init__("the node id's record belongs to another process")
        self.record = record


@attrs.frozen
class Lease:
    """One acquisition of `key` by `owner`. `token` is its fencing token: larger than every
    earlier acquisition's of the same key (a microsecond clock floor keeps that true even
    when the counter itself was lost, e.g. a Redis restart without persistence)."""

    key: str
    token: int
    owner: str


@attrs.define(eq=False)
class HeldLease:
    """What `Leases.hold` gives the holder. `lost` is set when the lease is lost; `deadline`
    (trio clock) is when the holder must consider it lost without a further renewal."""

    lease: Lease
    deadline: float
    lost: trio.Event = attrs.field(factory=trio.Event)
    renewals: int = 0
    _body: trio.CancelScope = attrs.field(factory=trio.CancelScope)

    @property
    def token(self) -> int:
        return self.lease.token


@attrs.frozen
class Claim:
    """`first`: this caller claimed the key (and stored `ack`); otherwise `ack` and `final`
    are what the first claimer stored (`final` None while its run is not finished)."""

    first: bool
    ack: bytes
    final: bytes | None = None
    doubtful: bool = attrs.field(default=False, eq=False)
    """The claims' memory is younger than a claim's TTL (Redis restarted empty, or the
    cluster is new): a key found unclaimed may have been claimed and forgotten, so its
    run may have been accepted already; the caller asks the durable journal first."""


@attrs.frozen
class StreamEntry:
    seq: int
    frame: bytes
    terminal: bool = False


@attrs.frozen
class StreamRead:
    """Frames after a seq. `gap`: the stream no longer reaches back to the seq after the one
    asked for. `ended`: the terminal frame is among `entries`."""

    entries: tuple[StreamEntry, ...]
    gap: bool
    ended: bool

    @property
    def last_seq(self) -> int | None:
        return self.entries[-1].seq if self.entries else None


@attrs.frozen
class Version:
    """A published config version: `number` grows by one per publish; `data` is the
    publisher's (e.g. the config's hash)."""

    number: int
    data: bytes


class Leases(abc.ABC):
    """Leases with expiry and fencing tokens. Every method is a checkpoint; each Redis call
    raises `ClusterUnavailable` when Redis cannot answer. Cancelling a call leaves the lease
    as Redis has it (an acquisition whose reply was lost simply expires)."""

    def __init__(self, *, owner: str, ttl_s: float = DEFAULT_LEASE_TTL_S) -> None:
        if ttl_s <= 0:
            raise ValueError("ttl_s must be positive")
        self.owner = owner
        self.ttl_s = ttl_s

    @abc.abstractmethod
    async def acquire(self, key: str) -> Lease | None:
        """The lease, with a new fencing token, or None when another acquisition holds it."""

    @abc.abstractmethod
    async def renew(self, lease: Lease) -> bool:
        """Extend `lease` to a full TTL from now; False if it is no longer this lease."""

    @abc.abstractmethod
    async def release(self, lease: Lease) -> bool:
        """Give `lease` up; False if it was no longer this lease (nothing is removed)."""

    @abc.abstractmethod
    async def fence(self, key: str) -> int | None:
        """The fencing token of the current holder of `key`, None when nobody holds it."""

    @abc.abstractmethod
    async def holder(self, key: str) -> Lease | None:
        """The current acquisition of `key` (its token and owner), None when nobody holds it."""

    @abc.abstractmethod
    async def reacquire(self, lease: Lease) -> Lease | None:
        """Take `lease`'s key again, with a new token, if its lease expired and nobody
        acquired it since (its fencing token is still `lease`'s): what a holder whose
        renewal came too late does, keeping what it holds in memory. None otherwise."""

    async def renew_many(self, leases: Sequence[Lease]) -> list[bool]:
        """`renew` for each of `leases` (a backend does it in one round trip)."""
        return [await self.renew(lease) for lease in leases]

    async def reacquire_many(self, leases: Sequence[Lease]) -> list[Lease | None]:
        """`reacquire` for each of `leases` (a backend does it in a few round trips)."""
        return [await self.reacquire(lease) for lease in leases]

    async def release_many(self, leases: Sequence[Lease]) -> list[bool]:
        """`release` for each of `leases` (a backend does it in a few round trips)."""
        return [await self.release(lease) for lease in leases]

    @asynccontextmanager
    async def hold(
        self, nursery: trio.Nursery, key: str, *, cancel_on_loss: bool = True
    ) -> AsyncIterator[HeldLease]:
        """Acquire `key` (`LeaseBusy` if held elsewhere) and keep it renewed by a task in
        `nursery` until the block exits, then release it. When the lease is lost, `lost` is
        set and, with `cancel_on_loss`, the block is cancelled and `LeaseLost` raised from
        it. A renewal that fails for want of Redis is retried until the deadline."""
        sent = trio.current_time()
        lease = await self.acquire(key)
        if lease is None:
            raise LeaseBusy(f"lease {key!r} is held by another owner")
        held = HeldLease(lease, deadline=sent + self.ttl_s * (1 - 1 / SAFETY_FRACTION))
        keeper = trio.CancelScope()
        nursery.start_soon(self._keep, held, keeper, cancel_on_loss)
        try:
            with held._body:
                yield held
        finally:
            keeper.cancel()
            with trio.CancelScope(shield=True), trio.move_on_after(self.ttl_s / 2):
                try:
                    await self.release(lease)
                except ClusterUnavailable as exc:
                    log.warning("lease %r not released (it expires by itself): %s", key, exc)
        if held._body.cancelled_caught and held.lost.is_set():
            raise LeaseLost(f"lease {key!r} was lost while held")

    async def _keep(self, held: HeldLease, keeper: trio.CancelScope, cancel: bool) -> None:
        with keeper:
            await self._renew_until_lost(held)
            held.lost.set()
            log.warning("lease %r (token %d) lost", held.lease.key, held.token)
            if cancel:
                held._body.cancel()

    async def _renew_until_lost(self, held: HeldLease) -> None:
        """Returns when the lease is lost: refused by Redis, or past its deadline."""
        margin = self.ttl_s / SAFETY_FRACTION
        every = self.ttl_s / RENEW_FRACTION
        next_renew = trio.current_time() + every
        while True:
            await trio.sleep_until(min(next_renew, held.deadline))
            if trio.current_time() >= held.deadline:
                return
            sent = trio.current_time()
            ok: bool | None = None
            with trio.move_on_after(held.deadline - sent):
                try:
                    ok = await self.renew(held.lease)
                except ClusterUnavailable as exc:
                    log.info("lease %r not renewed, retrying: %s", held.lease.key, exc)
            if ok is False:
                return
            if ok:
                held.renewals += 1
                held.deadline = sent + self.ttl_s - margin
                next_renew = sent + every
            else:
                next_renew = trio.current_time() + margin / 2


async def run_single_owner(
    leases: Leases, name: str, job: Callable[[], Awaitable[None]], *, retry_s: float | None = None
) -> None:
    """Run `job` on the one node holding the lease `job:<name>`: try to take it every
    `retry_s` (default: half the lease TTL); while held, run `job`; when the lease is lost
    the job is cancelled and the loop tries again. Returns when `job` returns (the lease is
    released). Runs until cancelled otherwise."""
    wait = leases.ttl_s / 2 if retry_s is None else retry_s
    while True:
        async with trio.open_nursery() as nursery:
            try:
                async with leases.hold(nursery, f"job:{name}"):
                    await job()
                    return
            except (LeaseBusy, LeaseLost, ClusterUnavailable) as exc:
                log.debug("job %r not run here: %s", name, exc)
        await trio.sleep(wait)


class Claims(abc.ABC):
    """Idempotency keys claimed once across nodes. Checkpoints; `ClusterUnavailable`."""

    def __init__(self, *, ttl_s: float = DEFAULT_CLAIM_TTL_S) -> None:
        self.ttl_s = ttl_s

    @abc.abstractmethod
    async def claim(self, key: str, ack: bytes, *, owner: str | None = None) -> Claim:
        """Claim `key` storing `ack`, or get what the first claimer stored. With `owner`
        (a node id), a first claim is also listed under that owner until it is finished
        (`unfinished`): what another node reports failed when the owner dies."""

    @abc.abstractmethod
    async def finish(self, key: str, final: bytes, *, owner: str | None = None) -> bool:
        """Store the final for a claimed key (its TTL starts again) and take it off
        `owner`'s list; False if the claim has expired (nothing is stored)."""

    @abc.abstractmethod
    async def unfinished(self) -> dict[str, list[str]]:
        """The keys claimed with an owner and not finished yet, by owner."""

    async def claim_many(
        self, items: Sequence[tuple[str, bytes]], *, owner: str | None = None
    ) -> list[Claim]:
        """`claim` for each `(key, ack)`, in order (a backend does it in one round trip)."""
        return [await self.claim(key, ack, owner=owner) for key, ack in items]

    async def finish_many(
        self, items: Sequence[tuple[str, bytes]], *, owner: str | None = None
    ) -> list[bool]:
        """`finish` for each `(key, final)`, in order (one round trip on a backend)."""
        return [await self.finish(key, final, owner=owner) for key, final in items]

    @abc.abstractmethod
    async def get(self, key: str) -> Claim | None:
        """What is stored for `key` (as a non-first `Claim`), None when nothing is."""


class RunStreams(abc.ABC):
    """Per-run event streams. Seqs start at 1 and grow by one; the writer is the run's one
    owner. Checkpoints; `ClusterUnavailable`."""

    def __init__(
        self,
        *,
        maxlen: int = DEFAULT_STREAM_MAXLEN,
        ended_ttl_s: float = DEFAULT_STREAM_TTL_S,
        idle_ttl_s: float = DEFAULT_STREAM_IDLE_TTL_S,
    ) -> None:
        self.maxlen = maxlen
        self.ended_ttl_s = ended_ttl_s
        self.idle_ttl_s = idle_ttl_s

    @abc.abstractmethod
    async def append(self, run_id: str, seq: int, frame: bytes, *, terminal: bool = False) -> bool:
        """Append frame `seq` (>= 1); False (nothing written) when the stream already has it
        or a later one, so a retried append is harmless. A terminal frame ends the stream,
        which then expires after `ended_ttl_s`."""

    @abc.abstractmethod
    async def read(self, run_id: str, after_seq: int = 0, *, limit: int = 1_000) -> StreamRead:
        """Up to `limit` frames after `after_seq`, without waiting."""

    @abc.abstractmethod
    def follow(self, run_id: str, after_seq: int = 0) -> AsyncGenerator[StreamEntry, None]:
        """Every frame after `after_seq`, waiting for new ones, ending after the terminal
        frame; `StreamGap` when the stream no longer reaches back. Close it with
        `contextlib.aclosing` when leaving early. Cancellation ends the wait."""


class Generations(abc.ABC):
    """The cluster's config version and its publication. Checkpoints; `ClusterUnavailable`."""

    @abc.abstractmethod
    async def current(self) -> Version | None:
        """The latest published version, None before the first publish."""

    @abc.abstractmethod
    async def publish(self, data: bytes, *, after: int | None = None) -> Version | None:
        """Publish `data` as the next version and tell every subscriber. With `after`, only
        if the current number is `after` (0: nothing published yet); None otherwise."""

    @abc.abstractmethod
    def subscribe(self) -> AbstractAsyncContextManager[AsyncIterator[Version]]:
        """`async with generations.subscribe() as versions: async for version in versions`:
        the current version (if any), then each newer one. A slow subscriber skips to the
        newest (versions are replaced whole, never merged). Subscribed when the block is
        entered: no publish after that is missed."""


class NodeRecords(abc.ABC):
    """The nodes' heartbeat records. Each handle has a random `instance`, stored with its
    record: a record is replaced only by the handle that stored it (or by one taking over
    a dead process's, named by its instance), so two processes under one node id cannot
    both beat: the second gets `NodeIdInUse`. Checkpoints; `ClusterUnavailable`."""

    INSTANCE_CHARS: Final = 16

    def __init__(self, *, node_id: str) -> None:
        self.node_id = node_id
        self.instance = secrets.token_hex(self.INSTANCE_CHARS // 2)

    @abc.abstractmethod
    async def beat(self, record: bytes, *, ttl_s: float, over: str | None = None) -> None:
        """Store this node's `record`, expiring `ttl_s` from now unless beaten again, when
        the record stored now is absent, this handle's, or instance `over`'s (a dead
        process's, taken over at start). Raises `NodeIdInUse` otherwise."""

    @abc.abstractmethod
    async def holder(self) -> tuple[str, bytes] | None:
        """The instance and record stored now under this node id, if any."""

    @abc.abstractmethod
    async def forget(self) -> None:
        """Remove this node's record if it is this handle's (a node leaving cleanly)."""

    @abc.abstractmethod
    async def all(self) -> dict[str, bytes]:
        """Every live node's record, by node id."""


@attrs.frozen
class ChannelMessage:
    """One message of a channel; `cursor` is where a reader resumes after it."""

    channel: str
    cursor: str
    data: bytes


class Channels(abc.ABC):
    """Bounded append-only channels of opaque messages (Redis streams). Nothing is
    acknowledged or removed but by trimming (at each send, the messages older than
    `retention_s`, and past about `maxlen` a channel) and expiry (`ttl_s` after the last
    send): a reader follows a channel from a cursor, and a reader that falls further behind
    misses what was trimmed. Messages of one `send` stay together and in order.
    Checkpoints; `ClusterUnavailable`."""

    START: Final = "0-0"
    """The cursor before the first message."""

    def __init__(
        self,
        *,
        maxlen: int = DEFAULT_CHANNEL_MAXLEN,
        ttl_s: float = DEFAULT_CHANNEL_TTL_S,
        retention_s: float = DEFAULT_CHANNEL_RETENTION_S,
    ) -> None:
        self.maxlen = maxlen
        self.ttl_s = ttl_s
        self.retention_s = retention_s

    @abc.abstractmethod
    async def send(self, channel: str, messages: Sequence[bytes]) -> None:
        """Append `messages` to `channel` in one step."""

    @abc.abstractmethod
    async def tail(self, channel: str) -> str:
        """A cursor after the channel's newest message (`START` when it has none)."""

    @abc.abstractmethod
    async def receive(
        self, cursors: Mapping[str, str], *, timeout_s: float, limit: int = 1_000
    ) -> list[ChannelMessage]:
        """Messages after each channel's cursor (at most `limit` a channel), in order per
        channel, waiting up to `timeout_s` for the first one ([] when none came)."""
