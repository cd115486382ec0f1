"""The EventHub: stamps each run's events, encodes each payload once, fans frames out.

Per run it keeps two sequence spaces so that nobody sees a phantom gap: `seq` counts every
event for connections that receive the `tool` stream of that run (they advertised the
`tool-events` capability and watch the run), and a public `seq` counts the events without the
`tool` stream for everybody else. Each payload is encoded at most once per space and the
same bytes go to every subscriber of that space; the per-connection frame `seq` is spliced in
by each connection's writer.

Who receives what: like OpenClaw, `agent` and `chat` events go to every connection with read
access, except connections that advertised `session-scoped-events`: those get only the runs
they started and the sessions they watch (`sessions.messages.subscribe`).

Delivery never blocks: `Subscriber.push_event` is synchronous. A subscriber whose outbox is
over its bound closes itself ("slow consumer"); it never slows a run or another subscriber.
In a cluster the hub also hands each frame of its own runs to `relay` (the
node's event feed, read by the other nodes), and `deliver_remote` routes the frames of
other nodes' runs to this node's connections as if the runs were local: same bytes, the
owner's per-run `seq`, the per-connection `seq` spliced in here. `expect_remote` names the
connection that started a run another node executes (its owner on this node).

A bounded replay buffer per run lets a reconnecting client catch up (`replay`): at most
`REPLAY_PER_RUN` frames a run, for the active runs and the last `RETAINED_FINISHED_RUNS`
finished ones, and at most `replay_max_bytes` for the whole gateway (default
`REPLAY_MAX_BYTES`). Past that byte bound the oldest frames go first: those of the runs that
finished longest ago, then those of the oldest active runs; a replay that no longer reaches
back answers `gap=True`.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable, Iterable
from typing import Any, Final, Protocol

import attrs
import msgspec

from runtime.protocol import encode_event

from .._metrics import FIRST_EVENT_BUCKETS, Histogram

REPLAY_PER_RUN: Final = 512
RETAINED_FINISHED_RUNS: Final = 256
REPLAY_MAX_BYTES: Final = 64 * 1024 * 1024
_FRAME_OVERHEAD: Final = 96  # a kept frame's tuple, ints and bytes headers, roughly


class Subscriber(Protocol):
    """A connection as the hub sees it."""

    @property
    def conn_id(self) -> str: ...

    @property
    def wants_tool_events(self) -> bool: ...

    def push_event(self, frame: bytes) -> None:
        """Queue an encoded event frame (without `seq`). Never blocks, never raises."""
        ...


class AgentEventPayload(msgspec.Struct, frozen=True, omit_defaults=True):
    runId: str
    seq: int
    stream: str
    ts: int
    data: dict[str, Any]
    sessionKey: str
    sessionId: str | None = None
    agentId: str | None = None
    isHeartbeat: bool | None = None


RELAY_AGENT: Final = 0
RELAY_CHAT: Final = 1
RELAY_CLOSE: Final = 2
RELAY_SESSION_MESSAGE: Final = 3
RELAY_SESSIONS_CHANGED: Final = 4
READS_CHANGES: Final = 1
"""`EventHub.interest`: the session list's changes and every session's messages."""
READS_RUNS: Final = 2
"""`EventHub.interest`: that, and every run's frames."""
MAX_REMOTE_RUNS: Final = 100_000
"""Remote runs with an owner here, at most (the oldest go first if their ends never come)."""

Relay = Callable[[int, str, str, bytes, "bytes | None"], None]
"""`(kind, run id, session key, frame, public frame or None)`: one frame for other nodes."""
Audit = Callable[
    [str, int, int, str, dict[str, Any], "str | None", "str | None", "str | None"], None
]
"""`(run id, seq, ts, stream, data, agent id, session key, session id)`: a `lifecycle` or
`tool` event for the audit log (`actors.runs._audit.AuditRecorder.record`)."""

_Frames = tuple[int, int, bytes, bytes | None]
"""A replayable event: (seq, public seq or 0 for a tool event, frame, public frame or None)."""


@attrs.define(eq=False, slots=True)
class _RunStream:
    run_id: str
    session_key: str
    session_id: str | None
    agent_id: str | None
    owners: set[Subscriber] = attrs.field(factory=set)
    seq_all: int = 0
    seq_public: int = 0
    replay: collections.deque[_Frames] = attrs.field(
        factory=lambda: collections.deque(maxlen=REPLAY_PER_RUN)
    )
    ended: bool = False
    opened_ms: int = 0
    replay_bytes: int = 0
    heartbeat: bool | None = None


@attrs.frozen
class HubStatistics:
    connections: int
    broadcast_subscribers: int
    active_runs: int
    retained_runs: int
    events_emitted: int
    frames_delivered: int
    encodes: int
    replay_bytes: int = 0
    """What the replay buffers hold, all runs together (bounded by `replay_max_bytes`)."""
    remote_runs: int = 0
    """Runs of other nodes whose frames connections here wait for (`expect_remote`)."""


@attrs.frozen
class Replay:
    """Frames after a given seq, or `gap=True` when the buffer no longer reaches back."""

    frames: list[bytes]
    gap: bool
    last_seq: int
    ended: bool


_time = time.time


class EventHub:
    """Owns the run streams and the routing table. Used from one trio thread only."""

    def __init__(self, *, replay_max_bytes: int = REPLAY_MAX_BYTES) -> None:
        self.replay_max_bytes = replay_max_bytes
        self._replay_bytes = 0
        self._trimmable: collections.deque[_RunStream] = collections.deque()
        """Finished runs whose replay buffers hold frames, in the order they finished."""
        self._holding: collections.OrderedDict[str, _RunStream] = collections.OrderedDict()
        """Active runs whose replay buffers hold frames, in the order they got their first
        (again, after a trim emptied them): where `_trim_replay` takes from after the
        finished runs, each step O(1) however many runs are active."""
        self._attached: dict[str, Subscriber] = {}
        self._broadcast: set[Subscriber] = set()
        self._watchers: dict[str, set[Subscriber]] = {}
        self._runs: dict[str, _RunStream] = {}
        self._changes: set[Subscriber] = set()
        self._finished: collections.OrderedDict[str, _RunStream] = collections.OrderedDict()
        self._events = 0
        self._delivered = 0
        self._encodes = 0
        self.first_event = Histogram(FIRST_EVENT_BUCKETS)
        """Acceptance to first output event, per run (`/metrics`)."""
        self.relay: Relay | None = None
        """Where this node's frames go for the other nodes (cluster mode), else None."""
        self.audit: Audit | None = None
        """Where the runs' `lifecycle` and `tool` events go for the audit log, else None."""
        self.remote_interest = 0
        """What the other nodes need (cluster mode, kept by the router; the highest of
        their `interest`): build `session.message` (`READS_RUNS`) and `sessions.changed`
        (`READS_CHANGES` or more) for them."""
        self.on_interest: Callable[[], None] | None = None
        """Called when a connection here starts reading every run, watching a session or
        the session list (the router tells the other nodes)."""
        self._remote: dict[str, set[Subscriber]] = {}

    # --- connections ----------------------------------------------------------------------

    def attach(self, sub: Subscriber, *, scoped: bool, can_read: bool) -> None:
        """Register a connection. Unscoped readers receive every run's events."""
        self._attached[sub.conn_id] = sub
        if can_read and not scoped:
            self._broadcast.add(sub)
            self._interest()

    @property
    def interest(self) -> int:
        """What the connections here need of other nodes beyond the runs they started:
        `READS_RUNS` (a connection reads every run or watches a session: the runs' frames
        and `session.message`), `READS_CHANGES` (`sessions.changed` and `session.message`:
        a session-list subscriber with session-scoped events) or 0."""
        if self._broadcast or self._watchers:
            return READS_RUNS
        return READS_CHANGES if self._changes else 0

    def _interest(self) -> None:
        if self.on_interest is not None:
            self.on_interest()

    def detach(self, sub: Subscriber) -> None:
        """Forget a connection everywhere (its subscriptions end with it)."""
        self._attached.pop(sub.conn_id, None)
        self._broadcast.discard(sub)
        self._changes.discard(sub)
        for key in [k for k, subs in self._watchers.items() if sub in subs]:
            subs = self._watchers[key]
            subs.discard(sub)
            if not subs:
                del self._watchers[key]
        for rs in self._runs.values():
            rs.owners.discard(sub)
        emptied = []
        for run_id, owners in self._remote.items():
            owners.discard(sub)
            if not owners:
                emptied.append(run_id)
        for run_id in emptied:  # nobody here waits for that run's frames any more
            del self._remote[run_id]

    def watch_session(self, sub: Subscriber, session_key: str) -> None:
        self._watchers.setdefault(session_key, set()).add(sub)
        self._interest()

    def unwatch_session(self, sub: Subscriber, session_key: str) -> bool:
        subs = self._watchers.get(session_key)
        if not subs or sub not in subs:
            return False
        subs.discard(sub)
        if not subs:
            del self._watchers[session_key]
        return True

    def session_watchers(self, session_key: str) -> set[Subscriber]:
        return self._watchers.get(session_key, set())

    def may_be_watched(self, session_key: str) -> bool:
        """Whether `session.message` for the session may reach anyone: its watchers or a
        session-list subscriber here, or, in a cluster, on another node (build the payload
        only then)."""
        return bool(
            self._changes or session_key in self._watchers or self.remote_interest >= READS_CHANGES
        )

    def _message_readers(self, session_key: str) -> set[Subscriber]:
        """Who receives a session's `session.message`: its watchers
        (`sessions.messages.subscribe`) and, as OpenClaw 2026.9 sends them, the session-list
        subscribers (`sessions.subscribe`: the terminal UI shows a line another client sent
        from these)."""
        watchers = self._watchers.get(session_key)
        if not watchers:
            return self._changes
        return watchers | self._changes if self._changes else watchers

    def subscribe_changes(self, sub: Subscriber) -> None:
        """`sessions.subscribe`: receive `sessions.changed` and every `session.message`."""
        self._changes.add(sub)
        self._interest()

    def unsubscribe_changes(self, sub: Subscriber) -> bool:
        if sub in self._changes:
            self._changes.discard(sub)
            return True
        return False

    @property
    def has_change_subscribers(self) -> bool:
        """Whether anyone may receive `sessions.changed` (build the payload only then): a
        subscriber here, or, in a cluster, on another node."""
        return bool(self._changes) or self.remote_interest >= READS_CHANGES

    def sessions_changed(self, payload: dict[str, Any]) -> None:
        """Deliver one `sessions.changed` event to its subscribers (encoded once), and to
        the other nodes' in a cluster."""
        if not self._changes and self.relay is None:
            return
        frame = encode_event("sessions.changed", payload)
        self._encodes += 1
        for sub in list(self._changes):
            sub.push_event(frame)
        self._delivered += len(self._changes)
        if self.relay is not None:
            self.relay(RELAY_SESSIONS_CHANGED, "", "", frame, None)

    def session_message(self, session_key: str, payload: dict[str, Any]) -> None:
        """Deliver one `session.message` event to its readers (`_message_readers`)."""
        readers = self._message_readers(session_key)
        if not readers and self.relay is None:
            return
        frame = encode_event("session.message", payload)
        self._encodes += 1
        if readers:
            for sub in list(readers):
                sub.push_event(frame)
            self._delivered += len(readers)
        if self.relay is not None:
            self.relay(RELAY_SESSION_MESSAGE, "", session_key, frame, None)

    # --- runs -----------------------------------------------------------------------------

    def open_run(
        self,
        run_id: str,
        session_key: str,
        *,
        owner: Subscriber | None = None,
        session_id: str | None = None,
        agent_id: str | None = None,
    ) -> None:
        """Start a run's stream (idempotent). `owner` is the connection that started it."""
        rs = self._runs.get(run_id)
        if rs is None:
            rs = self._finished.pop(run_id, None)
            if rs is None:
                rs = _RunStream(run_id, session_key, session_id, agent_id)
                rs.opened_ms = int(_time() * 1000)
            self._runs[run_id] = rs
            if rs.replay:
                self._holding[run_id] = rs
        rs.session_id = session_id or rs.session_id
        rs.agent_id = agent_id or rs.agent_id
        if owner is not None:
            rs.owners.add(owner)

    def mark_heartbeat(self, run_id: str) -> None:
        """Run `run_id` is a heartbeat: its agent events carry `isHeartbeat: true` (as
        OpenClaw's). Before its first event."""
        rs = self._runs.get(run_id)
        if rs is not None:
            rs.heartbeat = True

    def add_owner(self, run_id: str, owner: Subscriber) -> None:
        rs = self._runs.get(run_id)
        if rs is not None:
            rs.owners.add(owner)

    def close_run(self, run_id: str) -> None:
        """The run ended: keep its replay buffer for a while, drop its routing."""
        rs = self._runs.pop(run_id, None)
        if rs is None:
            return
        self._holding.pop(run_id, None)
        if self.relay is not None:
            self.relay(RELAY_CLOSE, run_id, rs.session_key, b"", None)
        rs.ended = True
        rs.owners.clear()
        self._finished[run_id] = rs
        while len(self._finished) > RETAINED_FINISHED_RUNS:
            _, old = self._finished.popitem(last=False)
            self._replay_bytes -= old.replay_bytes
            old.replay_bytes = 0
            old.replay.clear()
        if rs.replay:
            self._trimmable.append(rs)
        while self._trimmable and not self._trimmable[0].replay:
            self._trimmable.popleft()

    def _forget_oldest(self, rs: _RunStream) -> None:
        _, _, full_frame, public_frame = rs.replay.popleft()
        size = len(full_frame) + _FRAME_OVERHEAD
        if public_frame is not None and public_frame is not full_frame:
            size += len(public_frame)
        rs.replay_bytes -= size
        self._replay_bytes -= size

    def _trim_replay(self) -> None:
        """Drop the oldest frames until the buffers fit `replay_max_bytes`: those of the runs
        that finished longest ago first, then the active runs' in the order they came to
        hold frames (the newest frames of the newest run go last). Not a checkpoint."""
        limit = self.replay_max_bytes
        trimmable = self._trimmable
        while trimmable and self._replay_bytes > limit:
            rs = trimmable[0]
            while rs.replay and self._replay_bytes > limit:
                self._forget_oldest(rs)
            if not rs.replay:
                trimmable.popleft()
        holding = self._holding
        while holding and self._replay_bytes > limit:
            rs = next(iter(holding.values()))
            while rs.replay and self._replay_bytes > limit:
                self._forget_oldest(rs)
            if not rs.replay:
                del holding[rs.run_id]

    def is_open(self, run_id: str) -> bool:
        """Whether the run's stream is open (`emit_agent` may be called)."""
        return run_id in self._runs

    def last_seq(self, run_id: str) -> int:
        rs = self._runs.get(run_id) or self._finished.get(run_id)
        return rs.seq_public if rs else 0

    def emit_agent(self, run_id: str, stream: str, data: dict[str, Any]) -> int:
        """Stamp, encode once per seq space and deliver one `agent` event. Returns its seq."""
        rs = self._runs[run_id]
        rs.seq_all += 1
        is_tool = stream == "tool"
        if not is_tool:
            rs.seq_public += 1
        ts = int(_time() * 1000)
        if rs.seq_all == 2 and stream != "lifecycle":
            # The run's first output (after lifecycle start): time since it was accepted.
            self.first_event.observe((ts - rs.opened_ms) / 1000)
        full = AgentEventPayload(
            runId=run_id,
            seq=rs.seq_all,
            stream=stream,
            ts=ts,
            data=data,
            sessionKey=rs.session_key,
            sessionId=rs.session_id,
            agentId=rs.agent_id,
            isHeartbeat=rs.heartbeat,
        )
        full_frame = encode_event("agent", full)
        if is_tool:
            public_frame = None
        elif rs.seq_public == rs.seq_all:
            public_frame = full_frame  # no tool event so far: both spaces number alike
        else:
            public_frame = encode_event("agent", msgspec.structs.replace(full, seq=rs.seq_public))
        self._encodes += 1 if public_frame is full_frame or public_frame is None else 2
        # The replay buffer holds the frames (bytes and ints: nothing the GC has to walk, at
        # thousands of streaming runs).
        size = len(full_frame) + _FRAME_OVERHEAD
        if public_frame is not None and public_frame is not full_frame:
            size += len(public_frame)
        if len(rs.replay) == REPLAY_PER_RUN:
            self._forget_oldest(rs)  # the deque would drop it
        elif not rs.replay:
            self._holding[run_id] = rs
        rs.replay.append((rs.seq_all, 0 if is_tool else rs.seq_public, full_frame, public_frame))
        rs.replay_bytes += size
        self._replay_bytes += size
        if self._replay_bytes > self.replay_max_bytes:
            self._trim_replay()
        self._events += 1
        if self.audit is not None and (is_tool or stream == "lifecycle"):
            self.audit(
                run_id, rs.seq_all, ts, stream, data, rs.agent_id, rs.session_key, rs.session_id
            )
        if self.relay is not None:
            self.relay(RELAY_AGENT, run_id, rs.session_key, full_frame, public_frame)
        self._fan_out(rs.owners, rs.session_key, full_frame, public_frame)
        return rs.seq_all

    def _fan_out(
        self, owners: set[Subscriber], session_key: str, full: bytes, public: bytes | None
    ) -> None:
        """One agent frame (`public` None: a tool event) to the run's owners, the session's
        watchers (the full frame to those receiving tool events) and the readers."""
        watchers = self._watchers.get(session_key)
        watch = owners | watchers if watchers else owners
        delivered = 0
        for sub in watch:
            if public is full or sub.wants_tool_events:
                sub.push_event(full)
                delivered += 1
            elif public is not None:
                sub.push_event(public)
                delivered += 1
        if public is not None:
            for sub in self._broadcast:
                if sub not in watch:
                    sub.push_event(public)
                    delivered += 1
        self._delivered += delivered

    # --- runs of other nodes (cluster mode) -----------------------------------------------

    def expect_remote(self, run_id: str, owner: Subscriber) -> None:
        """`owner` (a connection of this node) started run `run_id`, which another node
        executes: it receives the run's frames as its owner."""
        self._remote.setdefault(run_id, set()).add(owner)
        while len(self._remote) > MAX_REMOTE_RUNS:
            del self._remote[next(iter(self._remote))]

    def deliver_remote(
        self, kind: int, run_id: str, session_key: str, frame: bytes, public: bytes | None
    ) -> None:
        """A frame another node's hub relayed: delivered here as that hub delivers it."""
        if kind == RELAY_AGENT:
            self._events += 1
            self._fan_out(self._remote.get(run_id, set()), session_key, frame, public)
        elif kind == RELAY_CHAT:
            self._fan_out(self._remote.get(run_id, set()), session_key, frame, frame)
        elif kind == RELAY_CLOSE:
            self._remote.pop(run_id, None)
        elif kind == RELAY_SESSION_MESSAGE:
            for sub in list(self._message_readers(session_key)):
                sub.push_event(frame)
        elif kind == RELAY_SESSIONS_CHANGED:
            for sub in list(self._changes):
                sub.push_event(frame)

    def emit_chat(self, run_id: str, state: str, **fields: Any) -> None:
        """Deliver one `chat` event; its `seq` is the run's current public seq."""
        self.emit_chat_fields(run_id, state, fields)

    def emit_chat_fields(self, run_id: str, state: str, fields: dict[str, Any]) -> None:
        """`emit_chat` with the fields as a dict (a chat delta of every run: no keyword
        packing). The payload's keys: runId, sessionKey, seq, state, agentId, `fields`."""
        rs = self._runs.get(run_id)
        if rs is None:
            return
        payload: dict[str, Any] = {
            "runId": run_id,
            "sessionKey": rs.session_key,
            "seq": rs.seq_public,
            "state": state,
        }
        if rs.agent_id:
            payload["agentId"] = rs.agent_id
        payload.update(fields)
        frame = encode_event("chat", payload)
        self._encodes += 1
        if self.relay is not None:
            self.relay(RELAY_CHAT, run_id, rs.session_key, frame, frame)
        self._fan_out(rs.owners, rs.session_key, frame, frame)

    def has_readers(self) -> bool:
        """Whether any connection receives every run's events (unscoped readers)."""
        return bool(self._broadcast)

    def broadcast(self, event: str, payload: Any, *, readers_only: bool = False) -> None:
        """Send a server event (tick, shutdown, ...) to every attached connection."""
        frame = encode_event(event, payload)
        self._encodes += 1
        targets = self._broadcast if readers_only else self._attached.values()
        for sub in list(targets):
            sub.push_event(frame)
            self._delivered += 1

    def send_to(self, subs: Iterable[Subscriber], event: str, payload: Any) -> None:
        frame = encode_event(event, payload)
        self._encodes += 1
        for sub in subs:
            sub.push_event(frame)
            self._delivered += 1

    def replay(self, run_id: str, after_seq: int, *, full: bool) -> Replay | None:
        """The run's frames after `after_seq` in the caller's seq space, or None if unknown."""
        rs = self._runs.get(run_id) or self._finished.get(run_id)
        if rs is None:
            return None
        last = rs.seq_all if full else rs.seq_public
        if after_seq >= last:
            return Replay([], False, last, rs.ended)
        # (seq, frame) in the caller's space: a tool event has no public seq nor frame
        kept = [
            (seq_all, full_frame) if full else (seq_public, public_frame)
            for seq_all, seq_public, full_frame, public_frame in rs.replay
            if full or public_frame is not None
        ]
        gap = not kept or kept[0][0] > after_seq + 1
        frames = [frame for seq, frame in kept if seq > after_seq and frame is not None]
        return Replay(frames, gap, last, rs.ended)

    def statistics(self) -> HubStatistics:
        return HubStatistics(
            connections=len(self._attached),
            broadcast_subscribers=len(self._broadcast),
            active_runs=len(self._runs),
            retained_runs=len(self._finished),
            events_emitted=self._events,
            frames_delivered=self._delivered,
            encodes=self._encodes,
            replay_bytes=self._replay_bytes,
            remote_runs=len(self._remote),
        )
