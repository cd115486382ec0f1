"""Sessions across a cluster's nodes: one owner per session, requests forwarded to it,
events delivered from anywhere.

With `cluster.redis.url` the gateway has a `Router`. Every request that concerns a session
(`SESSION_METHODS`: its runs, its other writes and its reads), a run another node may
hold (`agent.wait`, `runs.replay`) or cron (`cron.*`, served by the node running it) goes
through `Router.handle` instead of straight to the method table:

- **One owner per session** (`_cluster_leases`). A session's lane belongs to the node
  holding the lease `session:<key>` (`actors.Leases`). The first request for a session takes the lease if it
  is free; the node keeps it renewed (all its leases in one round trip, every third of the
  TTL) while it has the session's actor, and gives it up when the actor is reaped idle, so
  the session can move. The session actor carries the lease's fencing token (`Fence`): the
  store refuses its durable writes once a newer owner took the lease over. A node whose
  lease is lost (not renewable before it could expire) aborts that session's runs and
  forgets the actor.
- **Forwarding.** A request for a session another node owns is sent to that node's inbox
  (`_cluster_wire`) after every earlier request of the session received here was placed
  (the reader's ticket, as for local runs), and the next one waits for its first answer:
  runs of a session execute in the order requests were received, across the cluster. The
  owner runs it with a `ForwardedClient` standing for the connection (its role, scopes and
  capabilities) and sends every answer back; a `cancel` goes along. A request forwarded to a
  node that no longer owns the session is forwarded again (at most `MAX_HOPS` times).
- **Idempotency across nodes.** Before accepting a run the owner claims `run:<runId>`
  (`actors.Claims`, listed under its node id until the run ends, when the claim gets the
  final). A key already claimed elsewhere never starts a second run: the request goes to
  the node that holds it (whose cache answers, `in_flight` or the final), or is answered
  from the claim's final, or, the node being gone, as interrupted.
- **Events from anywhere.** Each node's hub hands the frames of its runs to its event feed;
  every node follows the others' feeds and delivers those frames to its connections as if
  the runs were local (`EventHub.deliver_remote`): the owner's per-run `seq`, this node's
  per-connection `seq`. A connection that started a run on another node is that run's
  owner here (`EventHub.expect_remote`).
- **Losing a node.** Requests waiting on a node gone are answered (`UNAVAILABLE`, or
  `agent.wait` `error`); its leases expire; its runs are the reaper's (`_cluster_claims`).

What concerns every node's connections (a device's pairing events, its removal or revoked
token closing its connections) goes to every node as a notice (`tell_all`). An approval or
a question pending on another node is answered there: its resolve, wait and get go to that
node (`("node", id)` targets, `_approvals`, which also keeps every node's progress cards).
Redis failing answers `UNAVAILABLE` (retryable); the router recovers by itself.
"""

from __future__ import annotations

import itertools
import logging
import uuid
from contextlib import nullcontext
from typing import Any, Final

import msgspec
import trio

from actors import (
    READS_CHANGES,
    READS_RUNS,
    RELAY_CLOSE,
    RELAY_SESSION_MESSAGE,
    RELAY_SESSIONS_CHANGED,
    Cluster,
    ClusterError,
    RunRecord,
    StoreError,
    Ticket,
)
from runtime import telemetry
from runtime.protocol import GatewayError, RequestFrame
from runtime.sessions import SessionKeyError

from ._approvals import DESK_METHODS, ClusterApprovals
from ._claims import ClaimBatch, FinalsBudget, Reaper, claim_final, recall, without_payloads
from ._heartbeats import BEAT_METHODS, ClusterHeartbeats, beat_session
from ._leases import SessionLeases
from ._outcomes import answer_gone, lost_answer, lost_replay, wait_deadline
from ._processes import ClusterProcesses
from ._wire import (
    Caller,
    ClaimNote,
    ConnInfo,
    Forward,
    ForwardedClient,
    Outbox,
    RouterHost,
    answer_from_final,
    conn_info,
    decode_batch,
    decode_message,
    error_from,
    events_channel,
    inbox_channel,
    lost_reason,
    started_ms_of,
    unavailable,
)

__all__ = ["MAX_HOPS", "Router", "RouterHost", "Target"]

log = logging.getLogger("clawlane.cluster")

SESSION_METHODS: Final = {
    **dict.fromkeys(("agent", "chat.send", "chat.abort", "chat.inject"), "sessionKey"),
    **dict.fromkeys(("chat.history", "chat.startup", "sessions.branches.list"), "sessionKey"),
    **dict.fromkeys(("sessions.branches.switch", "sessions.rewind", "sessions.fork"), "sessionKey"),
    **dict.fromkeys(("sessions.send", "sessions.steer", "sessions.abort"), "key"),
    **dict.fromkeys(("sessions.reset", "sessions.patch", "sessions.compact"), "key"),
    **dict.fromkeys(("sessions.delete", "sessions.create", "sessions.move"), "key"),
    **dict.fromkeys(("sessions.get", "sessions.describe", "sessions.systemPrompt"), "key"),
    **dict.fromkeys(("progressCard.get", "progressCard.put"), "sessionKey"),
    # the owner's workspace holds what its runs read and wrote
    **dict.fromkeys(("sessions.files.list", "sessions.files.get", "sessions.diff"), "sessionKey"),
}
"""Methods that act on a session, and the param naming it (reads too: the owner's
actor is the fresh one, a copy on another node would go stale)."""
STARTS_RUN: Final = frozenset({"agent", "chat.send", "sessions.send", "sessions.steer"})
RUN_METHODS: Final = frozenset({"agent.wait", "runs.replay", "sessions.abort"})
"""Methods that act on a run (`sessions.abort` when it names only `runId`)."""
MAX_HOPS: Final = 3
FEED_BLOCK_S: Final = 1.0
RETRY_S: Final = 0.5
MAX_RELAYED_RUNS: Final = 100_000
REFUSED: Final = b"refused"
"""A claim's final when its run was not accepted: the key may be tried again."""

Target = tuple[str, str]
"""`("session", key)`, `("run", run id)`, `("job", "cron")` (`cron.*`), `("node", id)` or
`("heartbeat", key)` (`wake`, `system-event`: `_heartbeats`)."""

_note_decoder = msgspec.json.Decoder(ClaimNote)


class Router:
    """This node's part in the cluster's sessions (see the module docstring). `start`
    runs its tasks; `handle` serves a routed request."""

    def __init__(
        self, gateway: RouterHost, cluster: Cluster, *, ttl_s: float, started_ms: int = 0
    ) -> None:
        self.gateway = gateway
        self.cluster = cluster
        self.node_id = cluster.node_id
        self.ttl_s = ttl_s
        self.leases = SessionLeases(gateway, cluster, ttl_s=ttl_s, send=self.send)
        """The sessions this node owns (their leases), and how a session moves here or away."""
        self.started_ms = started_ms
        """When this node's process started (its record's `startedAtMs`): every message it
        sends carries it (`inc`), so other nodes tell its processes apart."""
        self.outbox = Outbox(cluster.channels)
        self.batch = ClaimBatch(cluster.claims, cluster.node_id, REFUSED)
        self.finals_budget = FinalsBudget(cluster.claims.ttl_s)
        self.reaper = Reaper(self.leases)
        self.forwarded = self.served = 0
        self._forwards: dict[str, Forward] = {}
        self._serving: dict[str, trio.CancelScope] = {}
        self._fids = itertools.count(1)
        self._nursery: trio.Nursery | None = None
        self._cursors: dict[str, str] = {}
        self.wanting: dict[str, int] = {}
        """What the other nodes need of this node's runs (`EventHub.interest` there), when
        it is more than the runs they started."""
        self._wanted = 0
        """The highest of `wanting` (read per relayed frame)."""
        self._told = 0
        self._relayed: dict[str, None] = {}
        """Runs here started from another node (in order, bounded)."""
        self._feed_ok_at = 0.0
        """When this node last read the feeds (Redis answered)."""
        self._started: dict[str, int | None] = {}
        """When each live node's process started (its record's `startedAtMs`)."""
        self.approvals: ClusterApprovals | None = None
        """The cluster's approvals (set by `open_node`)."""
        self.beats: ClusterHeartbeats | None = None
        """The node's heartbeats in the cluster (set by `open_node`)."""
        self.processes: ClusterProcesses | None = None  # its background jobs (`open_node`)

    @property
    def alive(self) -> set[str]:
        """The nodes this node believes alive (itself included), kept by `_refresh_nodes`
        and shared with its leases (a session held by a dead node may be taken)."""
        return self.leases.alive

    @alive.setter
    def alive(self, nodes: set[str]) -> None:
        self.leases.alive = nodes

    # --- where a request goes (in the reader: not a checkpoint) ---------------------------

    def target(self, frame: RequestFrame) -> Target | None:
        """What the request concerns, when the router must take it; None otherwise (its
        params are not what the method takes: the method table answers that)."""
        params = frame.params
        if not isinstance(params, dict):
            return None
        if frame.method in DESK_METHODS:  # pending on another node: answered there
            owner = self.approvals.route(frame.method, params) if self.approvals else None
            return ("node", owner) if owner is not None else None
        if frame.method in BEAT_METHODS:  # queued where the session's owner reads it
            beat = beat_session(self.gateway.actors.supervisor, frame.method, params)
            return None if beat is None else ("heartbeat", beat)
        name = SESSION_METHODS.get(frame.method)
        if frame.method == "sessions.create" and params.get("key") is None:
            params["key"] = f"session-{uuid.uuid4()}"  # as the method would name it: routed
        raw = params.get(name) if name else None
        if isinstance(raw, str) or (name == "sessionKey" and frame.method == "agent"):
            agent_id = params.get("agentId")
            if raw is not None and not isinstance(raw, str):
                return None
            if not isinstance(agent_id, str | None):
                return None
            try:
                key = self.gateway.actors.supervisor.resolve_key(raw, agent_id)
            except SessionKeyError:
                return None
            return ("session", key)
        if frame.method in RUN_METHODS:
            run_id = params.get("runId")
            if isinstance(run_id, str) and run_id:
                return ("run", run_id)
        return ("job", "cron") if frame.method.startswith("cron.") else None

    def reserve(self, target: Target | None, method: str) -> Ticket | None:
        """The request's place in its session's order (runs of the session only)."""
        if target is None or target[0] != "session" or method not in STARTS_RUN:
            return None
        return self.gateway.actors.supervisor.order.reserve(target[1])

    # --- serving a routed request -----------------------------------------------------------

    async def handle(
        self,
        conn: Caller,
        frame: RequestFrame,
        scope: trio.CancelScope,
        ticket: Ticket | None,
        target: Target,
        hops: int = 0,
    ) -> None:
        """Serve `frame` here or on the node that owns what it concerns. Never raises but
        `Cancelled`; `ticket` is released by the caller."""
        try:
            if target[0] == "session":
                await self._session_request(conn, frame, scope, ticket, target[1], hops)
            elif target[0] == "job":
                await self._job_request(conn, frame, scope, target[1], hops)
            elif target[0] == "node":
                await self._forward(conn, frame, scope, None, target[1], hops, direct=True)
            elif target[0] == "heartbeat":  # the session's owner, taking it when it has none
                with self.leases.pinned(target[1]):  # until its text is queued here
                    owner = await self.leases.owner(target[1])
                    if owner == self.node_id:
                        await self._local(conn, frame, scope, None)
                    else:
                        await self._forward(conn, frame, scope, None, owner, hops)
            else:
                await self._run_request(conn, frame, scope, target[1], hops)
        except ClusterError as exc:
            conn.respond_error(frame.id, unavailable(f"the cluster cannot serve this now: {exc}"))
        except StoreError as exc:  # taking the session's lease or loading it: an outage
            conn.respond_error(frame.id, unavailable(f"the store is unavailable: {exc}"))
        except GatewayError as exc:
            conn.respond_error(frame.id, exc)

    async def _local(
        self, conn: Caller, frame: RequestFrame, scope: trio.CancelScope, ticket: Ticket | None
    ) -> None:
        await self.gateway.methods.call(conn, frame, scope, ticket)

    async def _session_request(
        self,
        conn: Caller,
        frame: RequestFrame,
        scope: trio.CancelScope,
        ticket: Ticket | None,
        key: str,
        hops: int,
    ) -> None:
        owner = await self.leases.owner(key)
        if owner != self.node_id:
            if hops and ticket is not None:
                # Forwarded here, and the session moved on: pass it on without waiting for
                # this node's order (an earlier request here may be waiting for the node
                # it goes to: waiting would deadlock the two).
                ticket.release()
                ticket = None
            await self._forward(conn, frame, scope, ticket, owner, hops)
            return
        await self.leases.own_actor(key)
        run_id = self._run_id(frame)
        first = False
        if run_id is not None:
            claimed = await self._claim(conn, frame, scope, ticket, run_id, key, hops)
            if claimed is None:
                return  # served elsewhere, or answered from the claim
            first = claimed
        try:
            await self._local(conn, frame, scope, ticket)
        finally:  # also when the request is cancelled: the claim must end with its run
            if first and run_id is not None:
                self._finish_claim(run_id)

    def _run_id(self, frame: RequestFrame) -> str | None:
        if frame.method not in STARTS_RUN:
            return None
        assert isinstance(frame.params, dict)
        run_id = frame.params.get("idempotencyKey")
        return run_id if isinstance(run_id, str) and run_id else None

    async def _claim(
        self,
        conn: Caller,
        frame: RequestFrame,
        scope: trio.CancelScope,
        ticket: Ticket | None,
        run_id: str,
        key: str,
        hops: int,
    ) -> bool | None:
        """Claim the run's key for this node: True when this request is its first claim
        (its final is this node's to store), False for a repeat of a run of this node's
        (its cache answers), None when the request was served elsewhere (another node
        holds the key) or answered from the claim."""
        note = ClaimNote(node=self.node_id, sessionKey=key, method=frame.method)
        claim = await self.batch.claim(f"run:{run_id}", msgspec.json.encode(note))
        if claim.first or claim.final == REFUSED:
            doubt = claim.doubtful  # Redis may have forgotten an earlier claim: the journal says
            return not doubt or await recall(self.gateway, self.batch, run_id, self._finish_claim)
        if claim.final is not None:  # it ended (here or elsewhere): answered from the claim,
            # which outlives this node's bounded idempotency cache
            answer_from_final(conn, frame, run_id, claim.final)
            return None
        first = _note_decoder.decode(claim.ack)
        if first.node == self.node_id:
            return False  # in flight here: the local cache answers the repeat
        if first.node in self.alive:
            await self._forward(conn, frame, scope, ticket, first.node, hops, direct=True)
        else:
            conn.respond_error(frame.id, unavailable(lost_reason(run_id, first.node)))
        return None

    def _finish_claim(self, run_id: str) -> None:
        """Store how the claimed run ends, when it ends (`REFUSED` when it was not
        accepted), with the next batch. Not a checkpoint."""
        record = self.gateway.actors.registry.get(run_id)
        if record is None:
            self.batch.finish(f"run:{run_id}", REFUSED)
        elif record.ended:
            self._store_final(record)
        else:
            record.on_done = [*(record.on_done or []), self._store_final]

    def _store_final(self, record: RunRecord) -> None:
        final = claim_final(record)
        data = msgspec.json.encode(final)
        if not self.finals_budget.admit(len(data)):
            data = msgspec.json.encode(without_payloads(final))
        self.batch.finish(f"run:{record.run_id}", data)

    async def _job_request(
        self, conn: Caller, frame: RequestFrame, scope: trio.CancelScope, job: str, hops: int
    ) -> None:
        """`cron.*`: served by the node running the job (holding the lease `job:<job>`),
        else here (where the method answers `UNAVAILABLE` when nobody runs it)."""
        holder = None
        if not hops and self.gateway.actors.cron is None:
            holder = await self.cluster.leases.holder(f"job:{job}")
        if holder is None or holder.owner == self.node_id or holder.owner not in self.alive:
            await self._local(conn, frame, scope, None)
        else:
            await self._forward(conn, frame, scope, None, holder.owner, hops, direct=True)

    async def _run_request(
        self,
        conn: Caller,
        frame: RequestFrame,
        scope: trio.CancelScope,
        run_id: str,
        hops: int,
    ) -> None:
        gw = self.gateway
        if gw.actors.registry.get(run_id) is not None or gw.actors.hub.is_open(run_id):
            await self._local(conn, frame, scope, None)
            return
        claim = await self.cluster.claims.get(f"run:{run_id}")
        note = None if claim is None else _note_decoder.decode(claim.ack)
        if claim is None or note is None or note.node == self.node_id:
            await self._local(conn, frame, scope, None)
            return
        final = claim.final
        if frame.method == "agent.wait" and final is not None and final != REFUSED:
            answer_from_final(conn, frame, run_id, final)
        elif note.node in self.alive:
            await self._forward(conn, frame, scope, None, note.node, hops, direct=True)
        elif frame.method == "agent.wait":  # its node is lost: the journal's answer first
            conn.respond(frame.id, await lost_answer(gw, run_id, note.node))
        elif frame.method == "runs.replay":
            conn.respond(frame.id, lost_replay(run_id, frame.params))
        else:
            await self._local(conn, frame, scope, None)

    # --- forwarding ---------------------------------------------------------------------------

    def send(self, node: str, message: dict[str, Any]) -> None:
        message["inc"] = self.started_ms
        if not self.outbox.put(inbox_channel(node), message):
            log.warning("node %s: outbox full, a message to %s is dropped", self.node_id, node)

    async def _forward(
        self,
        conn: Caller,
        frame: RequestFrame,
        scope: trio.CancelScope,
        ticket: Ticket | None,
        node: str,
        hops: int,
        *,
        direct: bool = False,
    ) -> None:
        """Send the request to `node` and relay its answers. `direct`: `node` holds the run
        it concerns (its claim): it serves the request itself, whichever node owns the
        session now (its idempotency cache answers a repeat)."""
        if hops >= MAX_HOPS:
            raise unavailable(f"no node took the request after {hops} forwards; retry")
        if ticket is not None:
            await ticket.turn()
        params = frame.params
        if frame.method in STARTS_RUN and isinstance(params, dict):
            if not params.get("idempotencyKey") and frame.method.startswith("sessions."):
                params = {**params, "idempotencyKey": str(uuid.uuid4())}
            run_id = params.get("idempotencyKey")
            if isinstance(run_id, str):
                self.gateway.actors.hub.expect_remote(run_id, conn)
        fid = f"{self.node_id}:{next(self._fids)}"
        fwd = Forward(conn, frame.id, frame.method, node, incarnation=self._started.get(node))
        if isinstance(params, dict) and isinstance(params.get("runId"), str):
            fwd.run_id, fwd.deadline = params["runId"], wait_deadline(params)
        message: dict[str, Any] = {
            "t": "req",
            "fid": fid,
            "from": self.node_id,
            "hops": hops + 1,
            "direct": direct,
            "conn": conn_info(conn),
            "id": frame.id,
            "method": frame.method,
            "params": params,
        }
        if telemetry.STATE.on:  # the owner continues this request's trace
            message["traceparent"] = telemetry.current_traceparent()
        if not self.outbox.put(inbox_channel(node), message):
            raise unavailable("this node's outbox to the cluster is full; retry")
        self._forwards[fid] = fwd
        self.forwarded += 1
        try:
            await self._await_forward(fwd, ticket)
        except trio.Cancelled:
            if scope.cancel_called and not fwd.done:
                self.send(node, {"t": "cancel", "fid": fid})
            raise
        finally:
            self._forwards.pop(fid, None)

    async def _await_forward(self, fwd: Forward, ticket: Ticket | None) -> None:
        """Until the request's `end`: release its ticket at the first answer; answer it
        here when its node is gone or cannot be reached."""
        while True:
            with trio.move_on_after(self.ttl_s):
                await fwd.changed.wait()
            if fwd.answers and ticket is not None:
                ticket.release()  # placed on the owner's lane: the next request may go
            if fwd.done:
                return
            if fwd.node not in self.alive:
                gone = f"node {fwd.node} was lost before the request ended"
            elif fwd.incarnation not in (None, self._started.get(fwd.node)):
                gone = f"node {fwd.node} restarted before the request ended"
            elif trio.current_time() - self._feed_ok_at > self.ttl_s:
                gone = f"node {fwd.node} cannot be reached: Redis is unreachable"
            else:
                continue
            fwd.done = True  # answered here: what its node says from now on is dropped
            await answer_gone(self.gateway, fwd, gone)  # agent.wait: the journal's answer
            return

    # --- messages from other nodes --------------------------------------------------------

    def _on_inbox(self, data: bytes) -> None:
        try:
            message = decode_message(data)
            kind = message["t"]
            if kind == "req":
                self._on_request(message)
                return
            if kind in ("hello", "want"):
                self._incarnation(str(message["from"]), message.get("inc"))
                self._on_want(str(message["from"]), _interest(message.get("on")), kind == "hello")
                return
            if kind == "note":
                takers = (self.beats, self.approvals, self.processes)
                if "release" in message:  # a session another node must run (cron's)
                    assert self._nursery is not None
                    self._nursery.start_soon(self.leases.let_go, str(message["release"]))
                elif not any(taker.on_note(message) for taker in takers if taker is not None):
                    self.gateway.on_note(message)
                return
            fwd = self._forwards.get(str(message.get("fid")))
            if kind == "cancel":
                scope = self._serving.get(str(message["fid"]))
                if scope is not None:
                    scope.cancel()
            elif fwd is not None:
                self._on_answer(fwd, kind, message)
        except (ValueError, KeyError, TypeError, msgspec.ValidationError) as exc:
            log.warning("node %s: unreadable node message dropped: %s", self.node_id, exc)

    def _incarnation(self, node: str, started: object) -> None:
        """`node`'s process is the one that started at `started` (a message from it, or
        its record): forwards sent to a former process of `node` are answered here."""
        if isinstance(started, int) and self._started.get(node) != started:
            self._started[node] = started
            for fwd in list(self._forwards.values()):
                if fwd.node == node:
                    fwd.poke()

    def _on_answer(self, fwd: Forward, kind: str, message: dict[str, Any]) -> None:
        if fwd.done:
            return
        if fwd.incarnation is None and isinstance(message.get("inc"), int):
            fwd.incarnation = message["inc"]  # sent before this node knew its process
        if kind == "res":
            fwd.answers += 1
            if message["ok"]:
                fwd.conn.respond(fwd.req_id, message.get("payload"))
            else:
                payload = message.get("payload", msgspec.UNSET)
                fwd.conn.respond_error(fwd.req_id, error_from(message["error"]), payload=payload)
        elif kind == "ev":
            for frame in message["frames"]:
                fwd.conn.push_event(frame)
        elif kind == "end":
            fwd.done = True
        fwd.poke()

    def _on_request(self, message: dict[str, Any]) -> None:
        src, fid = str(message["from"]), str(message["fid"])
        self._incarnation(src, message.get("inc"))
        if src not in self.alive:
            self.alive.add(src)  # it lives: relay this node's events from now on
        traceparent = message.get("traceparent")
        frame = RequestFrame(
            id=str(message["id"]),
            method=str(message["method"]),
            params=message["params"],
            traceparent=traceparent if isinstance(traceparent, str) else None,
        )
        proxy = ForwardedClient(self.send, src, fid, msgspec.convert(message["conn"], ConnInfo))
        proxy.relay_events = frame.method == "runs.replay"
        admissible = self.gateway.methods.admissible(proxy, frame)
        run_id = self._run_id(frame) if admissible else None
        if run_id is not None:  # its starter is on `src`: this run's frames go to the feed
            self._relayed[run_id] = None
            while len(self._relayed) > MAX_RELAYED_RUNS:
                del self._relayed[next(iter(self._relayed))]
        target = None if message.get("direct") or not admissible else self.target(frame)
        ticket = self.reserve(target, frame.method)
        scope = trio.CancelScope()
        self._serving[fid] = scope
        assert self._nursery is not None
        self.served += 1
        self._nursery.start_soon(
            self._serve, proxy, frame, scope, ticket, target, int(message.get("hops", 1))
        )

    async def _serve(
        self,
        proxy: ForwardedClient,
        frame: RequestFrame,
        scope: trio.CancelScope,
        ticket: Ticket | None,
        target: Target | None,
        hops: int,
    ) -> None:
        span = forwarded_span(frame, proxy.node) if telemetry.STATE.on else None
        try:
            with scope, telemetry.current(span) if span is not None else nullcontext():
                if target is None:
                    await self._local(proxy, frame, scope, ticket)
                else:
                    await self.handle(proxy, frame, scope, ticket, target, hops)
                params = frame.params if isinstance(frame.params, dict) else {}
                run_id = params.get("runId")
                if proxy.relay_events and isinstance(run_id, str):
                    record = self.gateway.actors.registry.get(run_id)
                    if record is not None:
                        await record.done.wait()  # the live frames go on until the end
        finally:
            if span is not None:
                span.end()
            if ticket is not None:
                ticket.release()
            self._serving.pop(proxy.fid, None)
            self.send(proxy.node, {"t": "end", "fid": proxy.fid})

    def _on_events(self, data: bytes) -> None:
        hub = self.gateway.actors.hub
        try:
            batch = decode_batch(data)
        except (ValueError, msgspec.ValidationError) as exc:
            log.warning("node %s: unreadable event batch dropped: %s", self.node_id, exc)
            return
        for kind, run_id, key, frame, public in batch:
            hub.deliver_remote(kind, run_id, key, frame, public)

    # --- the node's tasks -----------------------------------------------------------------------

    async def start(self, nursery: trio.Nursery) -> None:
        """Read where this node's inbox ends (nothing sent after is missed), learn the live
        nodes, and start the tasks: the outbox, the feeds, the leases, the reaper's turn."""
        self._nursery = nursery
        inbox = inbox_channel(self.node_id)
        self._cursors[inbox] = await self.cluster.channels.tail(inbox)
        self._feed_ok_at = trio.current_time()
        hub = self.gateway.actors.hub
        self._told = hub.interest
        # The hello goes out before anything else this node tells the others (the notices
        # `_refresh_nodes` sends to the nodes it finds): a node that gets a hello forgets
        # what this node's former process told it, so what this one tells must come after.
        records = await self.cluster.nodes.all()
        for node in set(records) - {self.node_id}:
            self.send(node, {"t": "hello", "from": self.node_id, "on": self._told})
        await self._refresh_nodes(records)
        hub.relay = self._relay
        hub.on_interest = self._tell_interest
        self.gateway.actors.supervisor.session_gate = self.leases.take_session
        nursery.start_soon(self.outbox.run)
        nursery.start_soon(self.batch.run)
        nursery.start_soon(self._run_feeds)
        nursery.start_soon(self.leases.run_leases)
        # Runs this node id claimed in a former life (a worker started again, a node
        # restarted with its `cluster.nodeId`) are not running here: interrupted. Listed
        # now, before this node claims anything; reported in the background.
        former = (await self.cluster.claims.unfinished()).get(self.node_id, [])
        if former:
            nursery.start_soon(self.reaper.former_self, former)

    def _relay(self, kind: int, run_id: str, key: str, frame: bytes, public: bytes | None) -> None:
        """A frame of this node's for the feed: when another node reads every run (its
        `wanting`), or the run was started from another node; a `sessions.changed` or a
        `session.message` when another node has a session-list subscriber."""
        if kind in (RELAY_SESSIONS_CHANGED, RELAY_SESSION_MESSAGE):
            wanted = self._wanted >= READS_CHANGES
        elif kind == RELAY_CLOSE:
            wanted = self._relayed.pop(run_id, 0) is None or self._wanted >= READS_RUNS
        else:
            wanted = self._wanted >= READS_RUNS or run_id in self._relayed
        if wanted:
            self.outbox.frame(events_channel(self.node_id), kind, run_id, key, frame, public)

    # --- what the other nodes need of this node's runs ----------------------------------------

    def _on_want(self, node: str, interest: int, hello: bool) -> None:
        self.alive.add(node)
        if interest:
            self.wanting[node] = interest
        else:
            self.wanting.pop(node, None)
        self._set_wanted()
        if hello:  # a new node: tell it what this one needs
            self.send(node, {"t": "want", "from": self.node_id, "on": self._told})
            self.gateway.on_node(node, "hello")

    def _set_wanted(self) -> None:
        self._wanted = max(self.wanting.values(), default=0)
        self.gateway.actors.hub.remote_interest = self._wanted

    def _tell_interest(self) -> None:
        """(The hub, when a connection here starts reading more.) Tell the other nodes at
        once if this node now needs more of their runs; a drop is told at the next
        refresh."""
        if self.gateway.actors.hub.interest > self._told:
            self._tell(self.gateway.actors.hub.interest)

    def _tell(self, interest: int) -> None:
        self._told = interest
        self._to_all({"t": "want", "from": self.node_id, "on": interest})

    def tell(self, node: str, note: dict[str, Any]) -> None:
        """Send one node a notice (as `tell_all`)."""
        self.send(node, {**note, "t": "note", "from": self.node_id})

    def tell_all(self, note: dict[str, Any]) -> None:
        """Send every other node a notice (`RouterHost.on_note` there): what happened here
        that their connections must see (a device's pairing events, its removal)."""
        self._to_all({**note, "t": "note", "from": self.node_id})

    def _to_all(self, message: dict[str, Any]) -> None:
        for node in self.alive - {self.node_id}:
            self.send(node, message)

    async def _refresh_nodes(self, records: dict[str, bytes] | None = None) -> None:
        """Learn the live nodes from their records (`records`: read just now), and what
        joined or went since the last time."""
        if records is None:
            records = await self.cluster.nodes.all()
        alive = set(records) | {self.node_id}
        for node, record in records.items():
            self._incarnation(node, started_ms_of(record))
        joined, gone = alive - self.alive, self.alive - alive
        self.alive = alive
        for node in joined:
            log.info("node %s: node %s joined", self.node_id, node)
            self.gateway.on_node(node, "joined")
        for node in gone:
            log.warning("node %s: node %s is gone", self.node_id, node)
            self.gateway.on_node(node, "gone")
        for node in alive - {self.node_id}:
            channel = events_channel(node)
            if channel not in self._cursors:
                self._cursors[channel] = await self.cluster.channels.tail(channel)
        for channel in [c for c in self._cursors if c.startswith("events:")]:
            if channel[len("events:") :] not in alive:
                del self._cursors[channel]
        for fwd in list(self._forwards.values()):
            if fwd.node not in alive:
                fwd.poke()
        self.wanting = {n: v for n, v in self.wanting.items() if n in alive}
        self._set_wanted()
        if self._told != self.gateway.actors.hub.interest:
            self._tell(self.gateway.actors.hub.interest)

    async def _run_feeds(self) -> None:
        """Follow this node's inbox and the other nodes' event feeds until cancelled."""
        inbox = inbox_channel(self.node_id)
        refresh_at = trio.current_time() + self.ttl_s / 3
        while True:
            try:
                if trio.current_time() >= refresh_at:
                    refresh_at = trio.current_time() + self.ttl_s / 3
                    await self._refresh_nodes()
                messages = await self.cluster.channels.receive(
                    self._cursors, timeout_s=min(FEED_BLOCK_S, self.ttl_s / 3)
                )
                self._feed_ok_at = trio.current_time()
            except ClusterError as exc:
                log.warning("node %s: cluster feeds not read, retrying: %s", self.node_id, exc)
                await trio.sleep(RETRY_S)
                continue
            for message in messages:
                self._cursors[message.channel] = message.cursor
                if message.channel == inbox:
                    self._on_inbox(message.data)
                else:
                    self._on_events(message.data)

    def view(self) -> dict[str, Any]:
        """The router's part of the `cluster` block in `status`."""
        return {
            "sessionsOwned": len(self.leases.held),
            "forwarded": self.forwarded,
            "served": self.served,
            "forwardsInFlight": len(self._forwards),
            "leasesLost": self.leases.leases_lost,
            "leasesRenewedLate": self.leases.leases_late,
            "runsReaped": self.reaper.reaped,
            "outboxBytes": self.outbox.queued_bytes,
            "eventFramesDropped": self.outbox.dropped_frames,
            "liveNodes": sorted(self.alive),
            "nodesReadingAll": sorted(n for n, v in self.wanting.items() if v >= READS_RUNS),
        }


def _interest(value: object) -> int:
    """A `want` message's interest (`True` as `READS_RUNS`: what a node that knew one
    level sent)."""
    if value is True:
        return READS_RUNS
    return value if isinstance(value, int) and READS_CHANGES <= value <= READS_RUNS else 0


def forwarded_span(frame: RequestFrame, node: str) -> telemetry.Span:
    """The span of a request another node forwarded here (telemetry on): the child of the
    forwarding node's RPC span (the message's `traceparent`), so one trace spans both."""
    return telemetry.start_span(
        "openclaw.gateway.rpc",
        {
            "openclaw.gateway.rpc.method": frame.method,
            "rpc.method": frame.method,
            "clawlane.cluster.forwarded_from": node,
        },
        traceparent=frame.traceparent,
        server=True,
    )
