"""Heartbeats: periodic agent turns in an agent's main session, as OpenClaw 2026.9.6 runs them.

- `_runner`: `Heartbeats` (`open_heartbeats`, then `Supervisor.heartbeats`): the schedule
  (`agents.defaults.heartbeat.every`, per agent `agents.list[].heartbeat`), wakes
  (`request_wake`, `wake_now`, `wake_and_wait`: paced, retried while busy, as OpenClaw's),
  one heartbeat (`run_heartbeat`: its skips, its message, its run marked `heartbeat`, the
  verdict on its reply), `enqueue` a system event for a session's next turn, on/off
  (`set_enabled`), the `heartbeat` event to every connection and the last one
  (`last_event`).
- `_wakes`: `PendingWakes`, the wakes waiting per target in OpenClaw's slots (the
  cadence's tick, any other wake), merged when requested together.
- `_delivery`: a cron job's system event queued in its session and the heartbeat it wakes
  (`Heartbeats.deliver_event`).
- `_peers`: `HeartbeatPeers`, what the heartbeats ask of a cluster's other nodes.

What a heartbeat is, without I/O (settings, prompt, `HEARTBEAT_OK`, system events,
`heartbeat_respond`): `runtime.heartbeat`. The methods: `transports.methods._heartbeat`.
"""

from ._runner import RESCAN_S as RESCAN_S
from ._runner import Heartbeats as Heartbeats
from ._runner import open_heartbeats as open_heartbeats

__all__ = ["RESCAN_S", "Heartbeats", "open_heartbeats"]
