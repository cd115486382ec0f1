"""Approvals the gateway holds for its operators to answer: the plugin approvals
(`PluginApprovals`, `_plugin`), raised by a run whose plugin's `before_tool_call` hook asked
for one (`requireApproval`) or by a client's `plugin.approval.request`, and answered with
`plugin.approval.resolve`; and the exec approvals (`ExecApprovals`, `_exec`: the same
registry for the `exec` kind), raised when the exec policy asks before a command
(`runtime.tools.guard_exec`) or by `exec.approval.request`, which also read the host approvals
document (`ApprovalsDocument`, the store's) and add allow-always entries to it.

- `PluginApprovals`: the registry, and the runs' `runtime.loop.ApprovalGate`: `open` raises
  one and tells the operators holding `operator.approvals` (`plugin.approval.requested`);
  `settle` / `wait` wait for its end; `resolve` is an operator's answer (first wins); `get`,
  `pending`; `run` is the task that expires the approvals no one waits on; `statistics()`.
- `PluginApproval`: one approval and its wire views (`view`, `answer`, `wait_answer`).
- `Approver`: a connection as the approvals see it.

- `StandingGrants` (`_grants`): the standing grants for cron runs' execs (`CronRuns`:
  which runs are a cron job's, `CronRunSource`), kept in the store (`GrantStore`).
- `ApprovalPeers`: a cluster's other nodes (`transports.cluster`): approvals raised on one
  node reach every node's operators and are answered through any of them (`DeskPeers`:
  what the questions use of them too).
- Ended approvals are written to the store as they end (`ApprovalRecordStore`:
  `stored_history`, `lookup`), so `approval.history` holds 30 days across restarts.

How one ends, who is told, what the events carry, and the bounds: `_plugin`'s docstring.
A run's side (what a refused call becomes for the model): `runtime.loop._approval`.

Errors (under `ActorError`): `ApprovalNotFound` (unknown, or ended more than 10 minutes
ago), `ApprovalAlreadyResolved` (ended otherwise than by this decision),
`DecisionNotOffered` (the request did not offer it), `ApprovalsFull` (too many pending).
"""

from ._exec import ApprovalsDocument as ApprovalsDocument
from ._exec import ExecApprovals as ExecApprovals
from ._exec import exec_request_record as exec_request_record
from ._grants import CronRuns as CronRuns
from ._grants import CronRunSource as CronRunSource
from ._grants import GrantStore as GrantStore
from ._grants import StandingGrants as StandingGrants
from ._grants import grant_binding as grant_binding
from ._plugin import APPROVALS_SCOPE as APPROVALS_SCOPE
from ._plugin import HISTORY_TTL_MS as HISTORY_TTL_MS
from ._plugin import MAX_ENDED as MAX_ENDED
from ._plugin import MAX_PENDING as MAX_PENDING
from ._plugin import ApprovalAlreadyResolved as ApprovalAlreadyResolved
from ._plugin import ApprovalNotFound as ApprovalNotFound
from ._plugin import ApprovalPeers as ApprovalPeers
from ._plugin import ApprovalRecordStore as ApprovalRecordStore
from ._plugin import ApprovalsFull as ApprovalsFull
from ._plugin import ApprovalStatistics as ApprovalStatistics
from ._plugin import Approver as Approver
from ._plugin import DecisionNotOffered as DecisionNotOffered
from ._plugin import DeskPeers as DeskPeers
from ._plugin import PluginApproval as PluginApproval
from ._plugin import PluginApprovals as PluginApprovals

__all__ = [
    "APPROVALS_SCOPE",
    "HISTORY_TTL_MS",
    "MAX_ENDED",
    "MAX_PENDING",
    "ApprovalAlreadyResolved",
    "ApprovalNotFound",
    "ApprovalPeers",
    "ApprovalRecordStore",
    "ApprovalStatistics",
    "ApprovalsDocument",
    "ApprovalsFull",
    "Approver",
    "CronRunSource",
    "CronRuns",
    "DecisionNotOffered",
    "DeskPeers",
    "ExecApprovals",
    "GrantStore",
    "PluginApproval",
    "PluginApprovals",
    "StandingGrants",
    "exec_request_record",
    "grant_binding",
]
