"""Runs as the gateway keeps them: records, states, waiters, events, order.

- `_record`: `RunRecord`, one run from accepted to a while after its end.
- `_registry`: run states, `agent.wait` waiters and the idempotency cache (TTL, bounded).
- `_hub`: the `EventHub`: stamps each run's `seq`, encodes each payload once, keeps a bounded
  replay buffer per run, fans frames out to bounded subscriber outboxes.
- `_chat`: `chat` events derived from a run's `assistant` events.
- `_order`: submission order, fixed when a request is received.
- `_runlog`: a run's log lines (`clawlane.runs`).
- `_webhook`: the signed webhook POST when a run ends, retried with backoff.
- `_stability`: `StabilityRecorder` (the registry's `stability`): runs' ends and exporters'
  health as a bounded ring of diagnostic events (`diagnostics.stability`).
- `_audit`: `AuditRecorder` (the supervisor's `audit`, fed by `EventHub.audit`): the runs'
  and tool calls' lifecycle events into the store's audit log (`audit.list`), through a
  bounded queue and the store's group commit, off the runs' path.

What is promised about runs (with the store's run journal, `actors.store._journal`, and
startup recovery, `actors._recovery`):

- **Order.** A session's runs start in the order their requests (`agent`, `chat.send`,
  `sessions.send`, `sessions.steer`) reached the gateway, on one connection or several, for
  new and existing sessions alike; a stop phrase (`chat.send` "stop") takes effect in its
  place, after the messages sent before it.
- **Acknowledged means stored.** The `agent` ack (`status:"accepted"`) and the `chat.send`
  answer (`status:"started"`) go out only once the run is recorded as accepted (with the
  session's row when that is new). When that cannot be written (a full disk) the request
  gets `UNAVAILABLE` and nothing runs; a request that fails before its run is accepted
  leaves no run behind.
- **A turn that cannot be stored says so.** A run's terminal event waits for its
  transcript entries and session row to commit; if they could not be written, the run ends
  with lifecycle `error` "the turn was not stored: ...", `agent.wait` answers `error`, and
  the failure is logged (at most one line per 10 s). Writes resume by themselves when the
  disk has room again. `status` shows it under `clawlane.durability`: `storeFailedCommits`,
  `storeFailedWrites`, `storeLastError` (+`At`), `storeFailing`, `turnsNotStored`,
  `journalRowsWritten`, `runsEndedAtShutdown`, `submissionsWaiting`, and what the last start
  `recovered` (`interrupted`, `rerun`, `restored`).
- **Restarts.** Runs accepted and not finished when the process stopped are reported at the
  next start (`agent.wait` answers `error`, the session row says `status:"failed"`,
  `abortedLastRun`, the transcript says the run was interrupted, `runs.replay` gives its
  terminal event), or with `gateway.interruptedRuns: "rerun"` run again in their sessions'
  order (a run interrupted twice is reported failed). The idempotency cache (`agent:<key>`,
  `chat:<key>`) comes back for its 5 minutes, so a retried key never runs twice.
- **Bounded memory.** The hub's replay buffers hold at most 64 MiB for the whole gateway
  (the oldest finished runs' frames go first; `runs.replay` then answers `gap: true`); a
  run's `assistant` events carry the cumulative text, coalesced to one per 150 ms past
  4 KiB of it; finished runs' finals (kept 10 minutes for `agent.wait` and repeated keys)
  hold at most 16 MiB of reply text, past which the oldest lose their payloads (a repeat
  then answers `ok` with `meta.payloadsDropped: true`, and still never runs twice). Idle
  sessions' contexts are the supervisor's (`gateway.idleContextsMaxBytes`).
"""

from ._audit import AuditRecorder as AuditRecorder
from ._audit import AuditStatistics as AuditStatistics
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
from ._stability import StabilityRecorder as StabilityRecorder
from ._webhook import RunWebhooks as RunWebhooks
from ._webhook import WebhookAttempt as WebhookAttempt
from ._webhook import WebhookClient as WebhookClient
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
    "AuditRecorder",
    "AuditStatistics",
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
    "StabilityRecorder",
    "SubmissionOrder",
    "Subscriber",
    "Ticket",
    "WebhookAttempt",
    "WebhookClient",
    "WebhookSettings",
    "assistant_message",
    "deliver_webhook",
    "log_run_started",
    "serve_run_webhooks",
]
