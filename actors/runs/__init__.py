"""Runs as the gateway keeps them: records, states, waiters, events, order.

- `_record`: `RunRecord`, one run from accepted to a while after its end.
- `_registry`: run states, `agent.wait` waiters and the idempotency cache (TTL, bounded).
- `_hub`: the `EventHub`: stamps each run's `seq`, encodes each payload once, keeps a bounded
  replay buffer per run, fans frames out to bounded subscriber outboxes.
- `_chat`: `chat` events derived from a run's `assistant` events.
- `_order`: submission order, fixed when a request is received.
- `_runlog`: a run's log lines (`clawlane.runs`).
- `_webhook`: the signed webhook POST when a run ends, retried with backoff.
"""

from ._chat import ChatFlusher as ChatFlusher
from ._chat import ChatStream as ChatStream
from ._chat import assistant_message as assistant_message
from ._hub import READS_CHANGES as READS_CHANGES
from ._hub import READS_RUNS as READS_RUNS
from ._hub import RELAY_CLOSE as RELAY_CLOSE
from ._hub import RELAY_SESSION_MESSAGE as RELAY_SESSION_MESSAGE
from ._hub import RELAY_SESSIONS_CHANGED as RELAY_SESSIONS_CHANGED
from ._hub import EventHub as EventHub
from ._hub import HubStatistics as HubStatistics
from ._hub import Replay as Replay
from ._hub import Subscriber as Subscriber
from ._order import SubmissionOrder as SubmissionOrder
from ._order import Ticket as Ticket
from ._record import RunRecord as RunRecord
from ._registry import DEDUPE_MAX as DEDUPE_MAX
from ._registry import DEDUPE_TTL_S as DEDUPE_TTL_S
from ._registry import CachedResponse as CachedResponse
from ._registry import IdempotencyCache as IdempotencyCache
from ._registry import RunRegistry as RunRegistry
from ._runlog import log_run_started as log_run_started
from ._webhook import RunWebhooks as RunWebhooks
from ._webhook import WebhookAttempt as WebhookAttempt
from ._webhook import WebhookSettings as WebhookSettings
from ._webhook import deliver_webhook as deliver_webhook
from ._webhook import serve_run_webhooks as serve_run_webhooks

__all__ = [
    "DEDUPE_MAX",
    "DEDUPE_TTL_S",
    "READS_CHANGES",
    "READS_RUNS",
    "RELAY_CLOSE",
    "RELAY_SESSIONS_CHANGED",
    "RELAY_SESSION_MESSAGE",
    "CachedResponse",
    "ChatFlusher",
    "ChatStream",
    "EventHub",
    "HubStatistics",
    "IdempotencyCache",
    "Replay",
    "RunRecord",
    "RunRegistry",
    "RunWebhooks",
    "SubmissionOrder",
    "Subscriber",
    "Ticket",
    "WebhookAttempt",
    "WebhookSettings",
    "assistant_message",
    "deliver_webhook",
    "log_run_started",
    "serve_run_webhooks",
]
