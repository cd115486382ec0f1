"""The attempt loop and the tools of one run.

- `_agent`: `run_agent`, model turns and tool dispatch until the model stops (`RunProgress`
  keeps what a run cut short had; `SteerInbox` takes messages steered into a running run;
  `provider_clean` says when a context needs no repair for a provider).
- `_toolrunner`: `RunTools`, the run's tools: the agent's policy, the plugins'
  `before_tool_call` / `after_tool_call` / `tool_result_persist` hooks around each call.
- `_searchcall`: Tool Search in a run (OpenClaw's default, `tools.toolSearch`): a
  `tool_call` runs its target as a nested call of its own through `RunTools.call` (policy,
  hooks, approvals, exec policy), its `tool` events named for the real tool with
  `parentToolCallId`; a deferred tool called by name is refused (mode `tools`) or run
  (mode `directory`); `call_directly` runs an operator's call (`tools.invoke`) by name.
- `_approval`: a call a plugin's `before_tool_call` wants approved (`requireApproval`) waits
  for an operator through the host's `ApprovalGate` (the gateway's `actors.approvals`) and
  runs only when allowed; denied, expired, unanswerable (no operator connection holds
  `operator.approvals`; no gate, as in the embedded runtime; a cron run) it is a tool error
  the model sees and the run goes on; an abort while it waits cancels the approval.
  `ApprovalOutcome`, the decisions (`APPROVAL_DECISIONS`: allow-once, allow-always, deny) and
  OpenClaw's bounds (`approval_timeout_ms`, `allowed_decisions`) are shared with the gate.
"""

from ._agent import RunProgress as RunProgress
from ._agent import SteerInbox as SteerInbox
from ._agent import now_ms as now_ms
from ._agent import provider_clean as provider_clean
from ._approval import APPROVAL_DECISIONS as APPROVAL_DECISIONS
from ._approval import ApprovalDecision as ApprovalDecision
from ._approval import ApprovalGate as ApprovalGate
from ._approval import ApprovalOutcome as ApprovalOutcome
from ._approval import TerminalReason as TerminalReason
from ._approval import allowed_decisions as allowed_decisions
from ._approval import approval_timeout_ms as approval_timeout_ms
from ._searchcall import call_directly as call_directly
from ._toolrunner import RunTools as RunTools

__all__ = [
    "APPROVAL_DECISIONS",
    "ApprovalDecision",
    "ApprovalGate",
    "ApprovalOutcome",
    "RunProgress",
    "RunTools",
    "SteerInbox",
    "TerminalReason",
    "allowed_decisions",
    "approval_timeout_ms",
    "call_directly",
    "now_ms",
    "provider_clean",
]
