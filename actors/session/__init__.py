"""A session actor and its serialized lane.

- `_actor`: `SessionActor`, one per session key: at most one run at a time, in order; it
  forks stores from the generation current when a run starts and keeps them to its end.
- `_lane`: the queue of pending turns and OpenClaw's queue modes (`steer`, `followup`,
  `collect`, `interrupt`) with debounce, cap and drop.
- `_request`: `RunRequest`, a run on its way through the lane.
- `_ending`: how a run ends: its outcome, its writes, then one terminal event (`end_unrun`:
  a request that never ran).
- `_sent`: what a run sends besides its reply (block replies, notices, the `message` tool).
- `_services`: `SessionServices`, what a session actor uses, handed to it when spawned.
- `_global_lane`: the gateway-wide lanes (`agents.defaults.maxConcurrent`, cron's).
"""

from ._actor import SessionActor as SessionActor
from ._actor import SessionBusy as SessionBusy
from ._ending import end_unrun as end_unrun
from ._global_lane import GlobalLane as GlobalLane
from ._lane import LaneFull as LaneFull
from ._lane import QueueSettings as QueueSettings
from ._lane import normalize_drop as normalize_drop
from ._lane import normalize_mode as normalize_mode
from ._request import QueueMode as QueueMode
from ._request import RunRequest as RunRequest
from ._services import SessionCounters as SessionCounters
from ._services import SessionServices as SessionServices

__all__ = [
    "GlobalLane",
    "LaneFull",
    "QueueMode",
    "QueueSettings",
    "RunRequest",
    "SessionActor",
    "SessionBusy",
    "SessionCounters",
    "SessionServices",
    "end_unrun",
    "normalize_drop",
    "normalize_mode",
]
