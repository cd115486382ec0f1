"""Routing across the gateway nodes of one cluster (`cluster.redis.url` set).

The primitives (leases, claims, channels, shared documents) live in `actors.cluster`; this
folder is what a node does with them on the edge:
- `_wire`: what nodes say to each other (forwarded requests, answers, events) and where it goes.
- `_leases`: which node owns a session's lane, renewed while the node lives, moved when it dies.
- `_claims`: idempotency claims, sent in batches, and what a duplicate on another node gets.
- `_route`: `Router`, one owner per session; a request for a session owned elsewhere is
  forwarded to its owner and its answers and events come back (`Target`).
- `_node`: `open_node`, the gateway as a node: hello, node records, the router, presence.
- `_heartbeats`: heartbeats run on the node owning their session; `wake`, `system-event`
  and a cron job's system event queue where that node reads them; the `heartbeat` event and
  `set-heartbeats` on every node (`_heartbeat_setting`: stored in PostgreSQL, so a node that
  starts later follows it).
- `_processes`: background jobs (`exec`, `process`) stay on the node running them; `process`
  reaches them from any node, a job of a node gone is reported lost, a job's end goes to
  its session's owner (`_job_records`: every node's jobs in PostgreSQL, so a node that
  starts later learns those of a node gone before it).
- `_presence`: OpenClaw's presence (`system-presence`, the `presence` event, the snapshot in
  `hello-ok`): the clients and gateways connected here and on the nodes this one knows.

Without cluster config none of this is imported: the embedded gateway has no router.

What a cluster promises (gateways sharing `cluster.redis.url` and `storage.backend:
"postgres"`; clients may connect to any node and see the same sessions):

- **Nodes.** Each has an id (`cluster.nodeId`, default `<hostname>-<pid>-<random>`) and a
  heartbeat record listed by `status` and `health` under `clawlane.cluster`. A gateway
  started under the id of a node that lives (a config with `nodeId` copied to a second
  machine) stops at start with one line naming the key, exit 2, and so does a node that
  finds its id taken while it ran. Redis or PostgreSQL unreachable at start: one line, exit
  4; lost while running: what needs them answers `UNAVAILABLE` (retryable) until they are
  back.
- **One owner per session** (`_leases`), with a fencing token per acquisition that the store
  checks (`session_fences`; the fences of sessions deleted more than a day ago are pruned
  behind a horizon), so a node that lost a lease (paused, partitioned) cannot write over the
  new owner. A lease renewed late is taken again if nobody took it meanwhile; otherwise its
  runs are aborted and its actor forgotten.
- **Forwarding** (`_route`): every method that acts on one session (its runs, its other
  writes, its reads: the owner's copy is the fresh one) and the OpenAI HTTP API's
  completions go to the owner, in the order they were received, each waiting for the
  previous one's first answer; so a session's runs execute one at a time, in order, across
  the cluster.
- **Events from anywhere.** A run's frames are kept in its node's memory (bounded, as on one
  process), not in a Redis stream per run (at 1,000 runs/s that would be gigabytes of Redis:
  `RunStreams` stays unused), so `runs.replay` of a run whose node is gone answers
  `gap: true, ended: true` (read `chat.history`), and `agent.wait` its `error`.
- **Generations**: announced through Redis with secrets redacted (each node puts back its
  own); a node whose build fails keeps its generation and says so in
  `clawlane.cluster.generation.failed`.
- **Single-owner work**: cron, the config file watch and the reaper, each on one node at a
  time, taken over within the lease TTL when that node goes. A cron firing runs in a session
  this node owns: one another node holds is asked back (a firing that waited 30 s fails
  naming the node), but for a `systemEvent` job's text, which is queued and told on the
  node owning its session (`_heartbeats`). An `agent` run's webhook is delivered by the
  node running it. The node running cron fires the heartbeats' ticks, each once, and sends
  each to the node owning its session, which runs it there (`_heartbeats`): a heartbeat
  does not move its session.
- **Shared state**: device pairing, the Control UI's preferences and `set-heartbeats` are
  documents in PostgreSQL (`actors.store._documents`; the first node seeds pairing from
  its state dir's `devices/pairing.json`), so a device approved through one node connects
  to all; pairing events, a removed device or a revoked token reach every node; presence
  lists every node and its UI clients (`_presence`).
- **Background jobs** (`_processes`): a job runs on the node whose run started it; `process`
  lists and acts on the session's jobs on every node, a job of a node gone or restarted is
  listed ended `failed` (`exitReason` `node-lost`, its line naming the node) by every node,
  one started later too, and a job's end wakes its session on the node owning it; job ids
  (OpenClaw's slugs) are unique across the nodes; abort, delete and reset reach every node.
- **Losing a node** (`_claims`): its leases and record expire within `cluster.leaseTtlMs`,
  other nodes take its sessions, requests waiting on it are answered, and the reaper reports
  its accepted, unfinished runs failed (their claims get an `error` final, their transcripts
  say the run was interrupted). Nothing runs twice.

What it costs, and where it stops scaling (measured on one 2-core machine; the figures move
by machine):

- Redis per run: the claim of `run:<id>` and its final, batched with every other claim
  waiting on the node (0.04-0.12 calls per short run, 0.4-0.9 per paced run; a call costs
  the node ~250-350 µs of CPU through coredis under trio, which is why everything is
  batched). Besides runs: one renewal script round per node every third of the TTL for all
  its leases (100,000 held leases: ~200 ms, the event loop never waiting more than a few ms),
  and the heartbeats. Event feeds carry a node's frames only when another node reads every
  run (an unscoped reader) or the run was started from another node.
- Redis memory is bounded by time and bytes: a claim lives 5 minutes (~200 B plus its final;
  a node's finals hold at most 32 MiB of reply text per claim TTL), a node channel its last
  15 s of messages, a lease its TTL, a fence key a day.
- PostgreSQL per run: the journal's two rows, the session row, the transcript entries (6-9
  rows) in one group commit shared with the other runs ending then, ~50-100 µs of its CPU;
  every statement reads by key through the primary key, so this holds at any number of
  sessions. 100,000 runs/s would be ~0.8 M row writes/s: more than one primary, and the
  store takes one URL (splitting sessions across databases is not built).
- The limit is the event feeds: a node with an unscoped reader (OpenClaw's UIs are) follows
  every other node's feed and decodes every frame, so if following a remote run costs a
  fraction f of serving one, N such nodes deliver N·C/(1 + (N − 1)·f), never above C/f
  (20-50 nodes' worth at f = 2-5 %), and Redis egress grows as N × the cluster's event
  bytes. With scoped clients only (`session-scoped-events`) nothing goes to the feeds but the
  runs started from another node; many unscoped readers on many nodes would need per-session
  interest (not built). Redis Cluster would need hash tags for the multi-key scripts (not
  built).
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
