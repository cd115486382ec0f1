"""The cluster primitives of `actors.cluster._primitives` on Redis (7+), through coredis, which runs
natively under trio (it is built on anyio). One client per node; every call is one round
trip (the compound steps are Lua scripts, so each is atomic). Renewing, taking back and
releasing leases go `RENEW_CHUNK` leases a script, their keys packed into one argument (a
standalone Redis; Redis Cluster would need the keys declared and hash-tagged).

Keys, under the configured prefix `P` (`cluster.redis.keyPrefix`):
- `P lease:<key>` = `<token>|<owner>` with a PX expiry; `P fence:<key>` the last token,
  expiring a day after it was set (`_FENCE_TTL_MS`). A token is the server's clock in µs,
  or the key's last token + 1 when that is larger, so a key whose fence expired still gets
  a larger token unless the clock went back more than a day (and the store's own fences,
  `session_fences`, refuse an older one); without the expiry every session key ever used
  stayed in Redis. `reacquire` of a key whose fence expired takes it (nobody took it in a
  day).
- `P idem:<key>` a hash {a: ack, f: final} with a PX expiry; `P claims-since` when the
  claims' memory began (ms; set as a node starts, or by the first claim in an empty
  Redis): within a claim's TTL of it, and after a node started, a key that node finds
  unclaimed may have been forgotten (`Claim.doubtful`).
- `P run:<run id>` a stream, entry id `<seq>-0`, fields {f: frame, t: 1 if terminal};
  trimmed with `MAXLEN ~`; expires `ended_ttl_s` after its terminal frame (and
  `idle_ttl_s` after any frame, for runs whose node died).
- `P generation` = `<number>:<data>`, announced on the pub/sub channel `P generation`.
- `P node:<id>` a node's heartbeat record with a PX expiry; `P nodes` the set of node ids
  (an id whose record has expired is removed when the records are read).
- `P owned:<node>` the set of idempotency keys a node claimed and has not finished;
  `P owners` the set of node ids that have such a set.
- `P chan:<name>` a channel (a stream, entry ids chosen by Redis, one field `d`), trimmed
  at each send to the messages of the last `retention_s` (`XTRIM MINID`, by the server's
  clock: entry ids are its milliseconds) and with `MAXLEN ~`, expiring `ttl_s` after its
  last send.

Errors: a connection that cannot be made or a reply that does not come is
`ClusterUnavailable` (the client reconnects by itself on the next call: a dropped connection
or a restarted Redis is retried once transparently, a Redis that is down fails each call
fast); any other Redis error is `ClusterError`. `open_redis_cluster` fails with one line
naming the URL (without its password) when Redis cannot be reached at start.
"""

from __future__ import annotations

import logging
import re
import urllib.parse
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterator,
    Mapping,
    Sequence,
)
from contextlib import asynccontextmanager, contextmanager
from typing import Any, Final

import coredis
import coredis.exceptions
import msgspec
import trio

from ._local import Cluster
from ._primitives import (
    DEFAULT_LEASE_TTL_S,
    ChannelMessage,
    Channels,
    Claim,
    Claims,
    ClusterError,
    ClusterUnavailable,
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
    "RedisChannels",
    "RedisClaims",
    "RedisGenerations",
    "RedisLeases",
    "RedisNodeRecords",
    "RedisRunStreams",
    "RedisSubscription",
    "open_redis_cluster",
    "redact_url",
]

log = logging.getLogger("clawlane.cluster")

Client = coredis.Redis[bytes]

CONNECT_TIMEOUT_S: Final = 2.0
REPLY_TIMEOUT_S: Final = 10.0
FOLLOW_BLOCK_MS: Final = 2_000
CONTROL_CONNECTIONS: Final = 8
"""Connections of the client the leases and the heartbeat use."""
GENERATION_POLL_S: Final = 5.0
"""A subscriber also reads the version key this often: a publish sent while its pub/sub
connection was being re-made is not lost."""

_UNAVAILABLE: Final = (
    coredis.exceptions.ConnectionError,
    coredis.exceptions.BusyLoadingError,
    TimeoutError,
    OSError,
)

_FENCE_TTL_MS: Final = 86_400_000
_ACQUIRE: Final = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local t = redis.call('TIME')
local token = tonumber(redis.call('GET', KEYS[2]) or '0') + 1
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
if now > token then token = now end
local text = string.format('%d', token)
redis.call('SET', KEYS[2], text, 'PX', ARGV[3])
redis.call('SET', KEYS[1], text .. '|' .. ARGV[1], 'PX', ARGV[2])
return token
"""
_REACQUIRE_MANY: Final = """
local items = cmsgpack.unpack(ARGV[4])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local out = {}
for i = 1, #items, 2 do
  local lease = ARGV[1] .. 'lease:' .. items[i]
  local fence = ARGV[1] .. 'fence:' .. items[i]
  local last = redis.call('GET', fence)
  if redis.call('EXISTS', lease) == 1 or (last and last ~= items[i + 1]) then
    out[#out + 1] = '0'
  else
    local token = tonumber(items[i + 1]) + 1
    if now > token then token = now end
    local text = string.format('%d', token)
    redis.call('SET', fence, text, 'PX', ARGV[5])
    redis.call('SET', lease, text .. '|' .. ARGV[2], 'PX', ARGV[3])
    out[#out + 1] = text
  end
end
return table.concat(out, ',')
"""
"""Take lapsed leases back (`Leases.reacquire`) a chunk at a time, packed as
`_KEEP_OR_RELEASE`'s are: ARGV the prefix, the owner, the TTL, the MessagePack array of
key, token pairs, the fence TTL; the new tokens (0: not taken) back as one comma-separated string. A node that
finds all its leases lapsed (Redis restarted empty) takes them back in a few calls."""
_APPEND: Final = """
local id = redis.pcall('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], ARGV[2] .. '-0',
  'f', ARGV[3], 't', ARGV[4])
if type(id) == 'table' and id.err then
  if string.find(id.err, 'equal or smaller', 1, true) then return 0 end
  return id
end
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 1
"""
_PUBLISH: Final = """
local cur = redis.call('GET', KEYS[1])
local n = 0
if cur then n = tonumber(string.match(cur, '^(%d+):')) end
if ARGV[2] ~= '' and tonumber(ARGV[2]) ~= n then return false end
local value = tostring(n + 1) .. ':' .. ARGV[1]
redis.call('SET', KEYS[1], value)
redis.call('PUBLISH', ARGV[3], value)
return n + 1
"""
_CLAIMS_SINCE: Final = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('SET', KEYS[1], now, 'NX')
return now
"""
"""The claims' memory begins now unless it has begun (`P claims-since`); the server's clock
in ms (what a node started at: `RedisClaims.begin`)."""
_CLAIM_MANY: Final = """
local n = (#ARGV - 3) / 2
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local since = redis.call('GET', KEYS[3])
if not since then
  since = now
  redis.call('SET', KEYS[3], now)
end
since = tonumber(since)
local doubt = 0
if now - since < tonumber(ARGV[1]) and since > tonumber(ARGV[3]) then doubt = 1 end
local out = {}
local listed = false
for i = 1, n do
  local key = KEYS[i + 3]
  if redis.call('HSETNX', key, 'a', ARGV[i + 3]) == 0 then
    out[i] = redis.call('HMGET', key, 'a', 'f')
  else
    redis.call('PEXPIRE', key, ARGV[1])
    if ARGV[2] ~= '' then
      redis.call('SADD', KEYS[1], ARGV[n + i + 3])
      listed = true
    end
    out[i] = 1
  end
end
if listed then redis.call('SADD', KEYS[2], ARGV[2]) end
return {doubt, out}
"""
"""Claim each key not claimed yet (a claim's hash always has its ack `a`: `HSETNX` is the
test and the write), list it under its owner, and the owner once among the owners; a key
claimed already answers its ack and final. Three commands a claim. And whether the claims
may have been forgotten (`Claim.doubtful`): `P claims-since` holds when Redis's memory of
them began (the server's clock in ms: set by a node as it starts, or by the first claim
after Redis started empty); they may, when that is less than a claim's TTL ago and after
this node started (`ARGV[3]`: before, the journal it read as it started covered the runs
ended until then)."""
_FINISH_MANY: Final = """
local n = (#ARGV - 2) / 2
local out = {}
for i = 1, n do
  local key = KEYS[i + 1]
  if ARGV[2] ~= '' then redis.call('SREM', KEYS[1], ARGV[n + i + 2]) end
  if redis.call('PEXPIRE', key, ARGV[1]) == 0 then
    out[i] = 0
  else
    redis.call('HSET', key, 'f', ARGV[i + 2])
    out[i] = 1
  end
end
return out
"""
"""Store each final in its claim, if the claim is still there (`PEXPIRE` is the test and
the renewal: an expired claim is not made again), and unlist it. Three commands a final."""
_KEEP_OR_RELEASE: Final = """
local pairs = cmsgpack.unpack(ARGV[1])
local out = {}
for i = 1, #pairs, 2 do
  local key = pairs[i]
  if redis.call('GET', key) == pairs[i + 1] then
    if ARGV[2] then redis.call('PEXPIRE', key, ARGV[2]) else redis.call('DEL', key) end
    out[#out + 1] = '1'
  else
    out[#out + 1] = '0'
  end
end
return table.concat(out)
"""
"""Renew (with a TTL, ARGV[2]) or release (without) the leases still held as they were: a
chunk of leases as one MessagePack array of key, value pairs (ARGV[1]), their results back
as one string of `1`/`0`. One argument and one reply in all, where a key and a value per
lease as arguments and an integer per lease in the reply cost the node's event loop
~3-4.5 µs a lease in the client (measured: 100,000 held leases stalled the loop ~390 ms
and took ~450 ms of its CPU at every renewal, every third of the TTL)."""
RENEW_CHUNK: Final = 2000
"""Leases renewed per script call: each call keeps Redis busy ~1-2 ms, so other nodes'
calls never wait long behind one node's renewals, and the event loop gets a checkpoint
between chunks."""
_UNFINISHED: Final = """
local out = {}
for _, owner in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local keys = redis.call('SMEMBERS', ARGV[1] .. owner)
  if #keys == 0 then
    redis.call('SREM', KEYS[1], owner)
  else
    table.insert(out, owner)
    table.insert(out, keys)
  end
end
return out
"""
_SEND: Final = """
for i = 4, #ARGV do
  redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 'd', ARGV[i])
end
local now = redis.call('TIME')
local oldest = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000) - tonumber(ARGV[3])
redis.call('XTRIM', KEYS[1], 'MINID', oldest)
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return #ARGV - 3
"""
_BEAT: Final = """
local current = redis.call('GET', KEYS[1])
if current then
  local instance = string.sub(current, 1, #ARGV[2])
  if instance ~= ARGV[2] and instance ~= ARGV[3] then
    return current
  end
end
redis.call('SET', KEYS[1], ARGV[2] .. ARGV[1], 'PX', ARGV[4])
redis.call('SADD', KEYS[2], ARGV[5])
return false
"""
_FORGET: Final = """
local current = redis.call('GET', KEYS[1])
if current and string.sub(current, 1, #ARGV[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('SREM', KEYS[2], ARGV[2])
end
return 0
"""
_NODES: Final = """
local out = {}
for _, id in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local record = redis.call('GET', ARGV[1] .. id)
  if record then
    table.insert(out, id)
    table.insert(out, record)
  else
    redis.call('SREM', KEYS[1], id)
  end
end
return out
"""
_msgpack: Final = msgspec.msgpack.Encoder()
_ONE: Final = ord("1")


@contextmanager
def _mapped(what: str) -> Iterator[None]:
    """Redis's errors as the cluster's, naming the operation. The driver's exception is
    stripped of its traceback and chain first: its frames hold coredis's half-made
    connections, which a logged or kept error would otherwise keep alive."""
    try:
        yield
    except _UNAVAILABLE as exc:
        _strip(exc)
        raise ClusterUnavailable(
            f"Redis unavailable ({what}): {exc or type(exc).__name__}"
        ) from None
    except coredis.exceptions.RedisError as exc:
        _strip(exc)
        raise ClusterError(f"Redis error ({what}): {exc}") from None


def _strip(exc: BaseException) -> None:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        following = current.__cause__ or current.__context__
        current.__traceback__ = None
        current.__cause__ = current.__context__ = None
        current = following


@asynccontextmanager
async def _unwrapped(group_owner: Any) -> AsyncIterator[Any]:
    """coredis's client and pub/sub contexts run a task group, which wraps what the body
    raises in an ExceptionGroup; a single exception is given back as itself."""
    try:
        async with group_owner as value:
            yield value
    except BaseExceptionGroup as group:
        if len(group.exceptions) == 1:
            raise group.exceptions[0] from None
        raise


def redact_url(url: str) -> str:
    """`url` without its password (for messages)."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    netloc = re.sub(r":[^:@]*@", ":***@", parts.netloc, count=1)
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


class RedisLeases(Leases):
    def __init__(
        self, client: Client, *, prefix: str, owner: str, ttl_s: float = DEFAULT_LEASE_TTL_S
    ) -> None:
        super().__init__(owner=owner, ttl_s=ttl_s)
        self._client = client
        self._prefix = prefix
        self._acquire = client.register_script(_ACQUIRE)
        self._keep_or_release = client.register_script(_KEEP_OR_RELEASE)
        self._reacquire_many = client.register_script(_REACQUIRE_MANY)

    def _key(self, key: str) -> str:
        return f"{self._prefix}lease:{key}"

    @staticmethod
    def _value(lease: Lease) -> str:
        return f"{lease.token}|{lease.owner}"

    async def acquire(self, key: str) -> Lease | None:
        keys = [self._key(key), f"{self._prefix}fence:{key}"]
        with _mapped("lease acquire"):
            args = (self.owner, int(self.ttl_s * 1000), _FENCE_TTL_MS)
            token: Any = await self._acquire(keys=keys, args=args)
        assert isinstance(token, int)
        return Lease(key, token, self.owner) if token else None

    async def reacquire(self, lease: Lease) -> Lease | None:
        [again] = await self.reacquire_many([lease])
        return again

    async def reacquire_many(self, leases: Sequence[Lease]) -> list[Lease | None]:
        """In chunks of `RENEW_CHUNK` leases, one script call each (`_REACQUIRE_MANY`)."""
        ttl_ms = int(self.ttl_s * 1000)
        taken: list[Lease | None] = []
        for start in range(0, len(leases), RENEW_CHUNK):
            chunk = leases[start : start + RENEW_CHUNK]
            packed: list[str] = []
            for lease in chunk:
                packed += (lease.key, str(lease.token))
            args = (self._prefix, self.owner, ttl_ms, _msgpack.encode(packed), _FENCE_TTL_MS)
            with _mapped("lease reacquire"):
                reply: Any = await self._reacquire_many(keys=[], args=args)
            tokens = bytes(reply).split(b",")
            taken += [
                Lease(lease.key, int(token), self.owner) if token != b"0" else None
                for lease, token in zip(chunk, tokens, strict=True)
            ]
        return taken

    async def renew(self, lease: Lease) -> bool:
        [renewed] = await self.renew_many([lease])
        return renewed

    async def release(self, lease: Lease) -> bool:
        [released] = await self.release_many([lease])
        return released

    async def fence(self, key: str) -> int | None:
        lease = await self.holder(key)
        return None if lease is None else lease.token

    async def holder(self, key: str) -> Lease | None:
        with _mapped("lease holder"):
            value = await self._client.get(self._key(key))
        if value is None:
            return None
        token, owner = value.decode().split("|", 1)
        return Lease(key, int(token), owner)

    async def renew_many(self, leases: Sequence[Lease]) -> list[bool]:
        """In chunks of `RENEW_CHUNK` leases, one script call each (see `_KEEP_OR_RELEASE`)."""
        ttl_ms = int(self.ttl_s * 1000)
        return await self._each_chunk(
            "lease renew", leases, lambda packed: self._keep_or_release(args=[packed, ttl_ms])
        )

    async def release_many(self, leases: Sequence[Lease]) -> list[bool]:
        """In chunks of `RENEW_CHUNK` leases, one script call each (`_KEEP_OR_RELEASE`)."""
        return await self._each_chunk(
            "lease release", leases, lambda packed: self._keep_or_release(args=[packed])
        )

    async def _each_chunk(
        self, what: str, leases: Sequence[Lease], call: Callable[[bytes], Awaitable[Any]]
    ) -> list[bool]:
        """`call` with each chunk of `leases` packed (key, value pairs); a `1`/`0` each."""
        results: list[bool] = []
        for start in range(0, len(leases), RENEW_CHUNK):
            packed: list[str] = []
            for lease in leases[start : start + RENEW_CHUNK]:
                packed += (self._key(lease.key), self._value(lease))
            with _mapped(what):
                reply = await call(_msgpack.encode(packed))
            results += [c == _ONE for c in bytes(reply)]
        return results


class RedisClaims(Claims):
    def __init__(self, client: Client, *, prefix: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._client = client
        self._prefix = prefix
        self._unfinished = client.register_script(_UNFINISHED)
        self._claim_many = client.register_script(_CLAIM_MANY)
        self._since = client.register_script(_CLAIMS_SINCE)
        self.started_ms = 0
        """When this node started, on Redis's clock (`begin`)."""
        self._finish_many = client.register_script(_FINISH_MANY)

    def _key(self, key: str) -> str:
        return f"{self._prefix}idem:{key}"

    async def begin(self) -> None:
        """As the node starts: the claims' memory begins now unless it has begun, and
        this node's start is noted (`started_ms`)."""
        with _mapped("idempotency claims"):
            now: Any = await self._since(keys=[f"{self._prefix}claims-since"], args=[])
        self.started_ms = int(now)

    def _owned(self, owner: str | None) -> str:
        return f"{self._prefix}owned:{owner or ''}"

    async def claim(self, key: str, ack: bytes, *, owner: str | None = None) -> Claim:
        [claim] = await self.claim_many([(key, ack)], owner=owner)
        return claim

    async def finish(self, key: str, final: bytes, *, owner: str | None = None) -> bool:
        [done] = await self.finish_many([(key, final)], owner=owner)
        return done

    async def claim_many(
        self, items: Sequence[tuple[str, bytes]], *, owner: str | None = None
    ) -> list[Claim]:
        if not items:
            return []
        owners, since = f"{self._prefix}owners", f"{self._prefix}claims-since"
        keys = [self._owned(owner), owners, since, *(self._key(k) for k, _ in items)]
        args: list[int | str | bytes] = [int(self.ttl_s * 1000), owner or "", self.started_ms]
        args += [ack for _, ack in items] + [key for key, _ in items]
        with _mapped("idempotency claim"):
            got: Any = await self._claim_many(keys=keys, args=args)
        doubt, reply = got
        doubtful = doubt == 1
        claims = []
        for (_key, ack), got in zip(items, reply, strict=True):
            if got == 1:
                claims.append(Claim(True, ack, doubtful=doubtful))
            else:
                final = None if got[1] is None else bytes(got[1])
                claims.append(Claim(False, bytes(got[0] or b""), final, doubtful))
        return claims

    async def finish_many(
        self, items: Sequence[tuple[str, bytes]], *, owner: str | None = None
    ) -> list[bool]:
        if not items:
            return []
        keys = [self._owned(owner), *(self._key(k) for k, _ in items)]
        args: list[int | str | bytes] = [int(self.ttl_s * 1000), owner or ""]
        args += [final for _, final in items] + [key for key, _ in items]
        with _mapped("idempotency finish"):
            reply: Any = await self._finish_many(keys=keys, args=args)
        return [bool(x) for x in reply]

    async def unfinished(self) -> dict[str, list[str]]:
        with _mapped("idempotency owners"):
            reply: Any = await self._unfinished(
                keys=[f"{self._prefix}owners"], args=[f"{self._prefix}owned:"]
            )
        flat = list(reply)
        return {
            bytes(flat[i]).decode(): sorted(bytes(k).decode() for k in flat[i + 1])
            for i in range(0, len(flat), 2)
        }

    async def get(self, key: str) -> Claim | None:
        with _mapped("idempotency get"):
            ack, final = await self._client.hmget(self._key(key), ["a", "f"])
        return None if ack is None else Claim(False, ack, final)


def _entry(entry: Any) -> StreamEntry:
    fields = entry.field_values
    seq = int(entry.identifier.split(b"-", 1)[0])
    return StreamEntry(seq, bytes(fields[b"f"]), fields.get(b"t") == b"1")


class RedisRunStreams(RunStreams):
    def __init__(self, client: Client, *, prefix: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._client = client
        self._prefix = prefix
        self._append = client.register_script(_APPEND)

    def _key(self, run_id: str) -> str:
        return f"{self._prefix}run:{run_id}"

    async def append(self, run_id: str, seq: int, frame: bytes, *, terminal: bool = False) -> bool:
        if seq < 1:
            raise ValueError("seq starts at 1")
        ttl = self.ended_ttl_s if terminal else self.idle_ttl_s
        args: list[int | bytes] = [self.maxlen, seq, frame, int(terminal), int(ttl * 1000)]
        with _mapped("stream append"):
            return bool(await self._append(keys=[self._key(run_id)], args=args))

    async def read(self, run_id: str, after_seq: int = 0, *, limit: int = 1_000) -> StreamRead:
        with _mapped("stream read"):
            raw = await self._client.xrange(self._key(run_id), f"{after_seq + 1}-0", "+", limit)
        entries = tuple(_entry(e) for e in raw)
        gap = bool(entries) and entries[0].seq != after_seq + 1
        return StreamRead(entries, gap=gap, ended=bool(entries) and entries[-1].terminal)

    async def follow(self, run_id: str, after_seq: int = 0) -> AsyncGenerator[StreamEntry, None]:
        key = self._key(run_id)
        last = after_seq
        while True:
            with _mapped("stream follow"):
                reply: Any = await self._client.xread(
                    {key: f"{last}-0"}, count=1_000, block=FOLLOW_BLOCK_MS
                )
            for raw in (reply or {}).get(key.encode(), ()):
                entry = _entry(raw)
                if entry.seq != last + 1:
                    raise StreamGap(f"run {run_id!r} stream no longer has seq {last + 1}")
                yield entry
                last = entry.seq
                if entry.terminal:
                    return


class RedisChannels(Channels):
    def __init__(self, client: Client, *, prefix: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._client = client
        self._prefix = prefix
        self._send = client.register_script(_SEND)

    def _key(self, channel: str) -> str:
        return f"{self._prefix}chan:{channel}"

    async def send(self, channel: str, messages: Sequence[bytes]) -> None:
        if not messages:
            return
        ttl, retention = int(self.ttl_s * 1000), int(self.retention_s * 1000)
        args: list[int | bytes] = [self.maxlen, ttl, retention, *messages]
        with _mapped("channel send"):
            await self._send(keys=[self._key(channel)], args=args)

    async def tail(self, channel: str) -> str:
        with _mapped("channel tail"):
            newest = await self._client.xrevrange(self._key(channel), "+", "-", 1)
        if not newest:
            return self.START
        ident: Any = newest[0].identifier
        return ident.decode() if isinstance(ident, bytes) else str(ident)

    async def receive(
        self, cursors: Mapping[str, str], *, timeout_s: float, limit: int = 1_000
    ) -> list[ChannelMessage]:
        if not cursors:
            await trio.sleep(timeout_s)
            return []
        streams = {self._key(name): cursor for name, cursor in cursors.items()}
        block = max(1, int(timeout_s * 1000)) if timeout_s > 0 else None
        with _mapped("channel receive"):
            reply: Any = await self._client.xread(streams, count=limit, block=block)
        cut = len(self._prefix) + len("chan:")
        out: list[ChannelMessage] = []
        for key, entries in (reply or {}).items():
            name = bytes(key).decode()[cut:]
            for entry in entries:
                cursor = bytes(entry.identifier).decode()
                out.append(ChannelMessage(name, cursor, bytes(entry.field_values[b"d"])))
        return out


def _version(raw: bytes) -> Version:
    number, _, data = raw.partition(b":")
    return Version(int(number), data)


class RedisSubscription:
    """The versions a `RedisGenerations.subscribe` block receives: the current one first,
    then each newer one (`__anext__` waits; `ClusterUnavailable` while Redis is away,
    after which iterating again resumes)."""

    def __init__(self, generations: RedisGenerations, pubsub: Any) -> None:
        self._generations = generations
        self._pubsub = pubsub
        self.seen = 0

    def __aiter__(self) -> RedisSubscription:
        return self

    async def __anext__(self) -> Version:
        while True:
            current = await self._generations.current()
            if current is not None and current.number > self.seen:
                self.seen = current.number
                return current
            message = await self._pubsub.get_message(True, GENERATION_POLL_S)
            if message is not None and message.get("type") == "message":
                version = _version(message["data"])
                if version.number > self.seen:
                    self.seen = version.number
                    return version


class RedisGenerations(Generations):
    def __init__(self, client: Client, *, prefix: str) -> None:
        self._client = client
        self._key = f"{prefix}generation"
        self._publish = client.register_script(_PUBLISH)

    async def current(self) -> Version | None:
        with _mapped("generation read"):
            raw = await self._client.get(self._key)
        return None if raw is None else _version(raw)

    async def publish(self, data: bytes, *, after: int | None = None) -> Version | None:
        args: list[str | bytes | int] = [data, "" if after is None else after, self._key]
        with _mapped("generation publish"):
            number: Any = await self._publish(keys=[self._key], args=args)
        return None if number is None else Version(int(number), data)

    @asynccontextmanager
    async def subscribe(self) -> AsyncIterator[AsyncIterator[Version]]:
        pubsub = self._client.pubsub(channels=[self._key], ignore_subscribe_messages=True)
        with _mapped("generation subscribe"):
            async with _unwrapped(pubsub) as subscribed:
                yield RedisSubscription(self, subscribed)


class RedisNodeRecords(NodeRecords):
    def __init__(self, client: Client, *, prefix: str, node_id: str) -> None:
        super().__init__(node_id=node_id)
        self._client = client
        self._prefix = prefix
        self._nodes = client.register_script(_NODES)
        self._beat = client.register_script(_BEAT)
        self._forget = client.register_script(_FORGET)

    async def beat(self, record: bytes, *, ttl_s: float, over: str | None = None) -> None:
        ttl_ms = max(1, int(ttl_s * 1000))
        args: list[str | bytes | int] = [record, self.instance, over or "", ttl_ms, self.node_id]
        with _mapped("node heartbeat"):
            current: Any = await self._beat(keys=self._keys(), args=args)
        if current is not None:
            raise NodeIdInUse(bytes(current)[self.INSTANCE_CHARS :])

    async def holder(self) -> tuple[str, bytes] | None:
        with _mapped("node record"):
            value = await self._client.get(self._keys()[0])
        if value is None:
            return None
        raw = bytes(value)
        return raw[: self.INSTANCE_CHARS].decode(errors="replace"), raw[self.INSTANCE_CHARS :]

    async def forget(self) -> None:
        with _mapped("node forget"):
            await self._forget(keys=self._keys(), args=[self.instance, self.node_id])

    def _keys(self) -> list[str]:
        return [f"{self._prefix}node:{self.node_id}", f"{self._prefix}nodes"]

    async def all(self) -> dict[str, bytes]:
        with _mapped("node records"):
            reply: Any = await self._nodes(
                keys=[f"{self._prefix}nodes"], args=[f"{self._prefix}node:"]
            )
        flat = [bytes(item) for item in reply]
        cut = self.INSTANCE_CHARS
        return {flat[i].decode(): flat[i + 1][cut:] for i in range(0, len(flat), 2)}


@asynccontextmanager
async def open_redis_cluster(
    url: str,
    *,
    node_id: str,
    prefix: str = "clawlane:",
    lease_ttl_s: float = DEFAULT_LEASE_TTL_S,
    connect_timeout_s: float = CONNECT_TIMEOUT_S,
) -> AsyncIterator[Cluster]:
    """Two clients on `url` and the primitives over them; closed on exit. The leases and
    the heartbeat have a client of their own (`CONTROL_CONNECTIONS` connections), so that
    their renewals never wait behind a burst of claims and channel traffic for one of the
    main client's connections. Raises `ClusterUnavailable` with one line naming the URL
    when Redis cannot be reached (or does not answer PING within `connect_timeout_s`)."""

    def client_for(role: str, **kwargs: Any) -> Client:
        made: Client = coredis.Redis.from_url(
            url,
            decode_responses=False,
            connect_timeout=connect_timeout_s,
            stream_timeout=REPLY_TIMEOUT_S,
            client_name=f"clawlane:{node_id}:{role}",
            **kwargs,
        )
        return made

    client = client_for("main")
    control = client_for("control", max_connections=CONTROL_CONNECTIONS)
    async with _unwrapped(client), _unwrapped(control):
        try:
            with trio.fail_after(connect_timeout_s):
                await client.ping()
        except (*_UNAVAILABLE, coredis.exceptions.RedisError, trio.TooSlowError) as exc:
            reason = str(exc) or type(exc).__name__
            raise ClusterUnavailable(f"cannot reach Redis at {redact_url(url)}: {reason}") from None
        claims = RedisClaims(client, prefix=prefix)
        await claims.begin()
        yield Cluster(
            node_id=node_id,
            leases=RedisLeases(control, prefix=prefix, owner=node_id, ttl_s=lease_ttl_s),
            claims=claims,
            streams=RedisRunStreams(client, prefix=prefix),
            generations=RedisGenerations(client, prefix=prefix),
            nodes=RedisNodeRecords(control, prefix=prefix, node_id=node_id),
            channels=RedisChannels(client, prefix=prefix),
            backend="redis",
        )
