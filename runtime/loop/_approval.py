"""Asking an operator before a tool call runs: what a plugin's `requireApproval` becomes.

A `before_tool_call` hook may answer `requireApproval` (OpenClaw's plugin approvals): the
call is paused and nothing runs until an operator allows it. The run asks its host's
`ApprovalGate`: the gateway's pending-approval registry (`actors.approvals`), which sends
`plugin.approval.requested` to the operators who may answer and waits for
`plugin.approval.resolve`. A host without one (the embedded runtime) has no one to ask, and
such a call is refused.

What the call becomes:

- `allow-once` or `allow-always` (when the request offered it): the tool runs, with the
  params the hooks settled on. `allow-always` is passed to the plugin's `onResolution`; it
  persists nothing by itself, as in OpenClaw.
- `deny`: a tool error result the model sees, saying the decision is final; the run goes on.
- no decision before `timeoutMs` (default 120 s, at most 600 s): a tool error (the plugin's
  `timeoutReason` when it gave one). The deprecated `timeoutBehavior: "allow"` is ignored with
  a warning, as OpenClaw 2026.9 does: an unanswered approval never lets a call run.
- no operator connection that could answer (none holds `operator.approvals`), a runtime
  without a gate, a cron run (no one watches it): refused at once, a tool error.
- the run aborted (chat.abort, agent abort, its timeout, shutdown) while waiting: the gate
  cancels the approval (`plugin.approval.resolved` says so) and the cancellation goes on.

The request itself is checked as `plugin.approval.request` params are (title at most 80
characters, description at most 512, ...): one that fails is refused without asking; a
`scope` that does not fit the schema is left out, as OpenClaw leaves it out.

Nothing here does I/O; `notify_resolution` is a checkpoint only for an async callback.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Mapping
from typing import Any, Final, Literal, Protocol, get_args

import attrs
import msgspec
import trio

from ..protocol import PluginApprovalRequestParams

__all__ = [
    "APPROVAL_DECISIONS",
    "DEFAULT_APPROVAL_TIMEOUT_MS",
    "MAX_APPROVAL_TIMEOUT_MS",
    "NO_APPROVER",
    "UNATTENDED",
    "ApprovalDecision",
    "ApprovalGate",
    "ApprovalOutcome",
    "TerminalReason",
    "allowed_decisions",
    "approval_params",
    "approval_timeout_ms",
    "notify_resolution",
    "refusal",
    "resolution_of",
    "warn_timeout_behavior",
]

log = logging.getLogger("clawlane.tools")

ApprovalDecision = Literal["allow-once", "allow-always", "deny"]
APPROVAL_DECISIONS: Final[tuple[ApprovalDecision, ...]] = get_args(ApprovalDecision)
TerminalReason = Literal["user", "timeout", "no-route", "run-aborted"]
"""Why an approval ended (OpenClaw's `ApprovalTerminalReason` words): an operator answered,
its deadline passed, no one could answer it, the run that asked ended."""

DEFAULT_APPROVAL_TIMEOUT_MS: Final = 120_000
MAX_APPROVAL_TIMEOUT_MS: Final = 600_000
_CALLBACK_TIMEOUT_S: Final = 5.0
_ALLOWED: Final = frozenset({"allow-once", "allow-always"})


@attrs.frozen
class ApprovalOutcome:
    """How an approval ended: the operator's `decision` (None when none was made) and why."""

    decision: ApprovalDecision | None
    reason: TerminalReason
    approval_id: str | None = None

    @property
    def allowed(self) -> bool:
        return self.decision in _ALLOWED


class ApprovalGate(Protocol):
    """Where a run asks an operator (the gateway's `actors.approvals.PluginApprovals`)."""

    async def request(self, params: PluginApprovalRequestParams, *, run_id: str) -> ApprovalOutcome:
        """Raise the approval and wait for its end: an operator's answer, its deadline
        (`params.timeoutMs`), or at once when no operator could answer (`no-route`). A
        checkpoint. Cancelled (the run aborted): the approval is cancelled (`run-aborted`,
        the operators are told) and the cancellation propagates."""
        ...


def approval_timeout_ms(value: object) -> int:
    """OpenClaw's bounds: a positive number of ms (floored), at most 10 minutes; anything
    else is the 2-minute default."""
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        if value != value or value == float("inf"):  # NaN, inf
            return DEFAULT_APPROVAL_TIMEOUT_MS
        return min(int(value), MAX_APPROVAL_TIMEOUT_MS) or 1
    return DEFAULT_APPROVAL_TIMEOUT_MS


def allowed_decisions(value: object) -> tuple[ApprovalDecision, ...]:
    """The decisions a request offers: the known ones it names, in order and once each (all
    three when it names none), and `deny` always, so that a reviewer can fail it closed."""
    named: list[ApprovalDecision] = []
    if isinstance(value, list | tuple):
        for item in value:
            for decision in APPROVAL_DECISIONS:
                if item == decision and decision not in named:
                    named.append(decision)
    if not named:
        return APPROVAL_DECISIONS
    return (*named, "deny") if "deny" not in named else tuple(named)


def approval_params(
    approval: Mapping[str, Any],
    *,
    tool_name: str,
    tool_call_id: str,
    agent_id: str,
    session_key: str,
) -> PluginApprovalRequestParams:
    """A hook's `requireApproval` (with its `pluginId`) as `plugin.approval.request` params
    for this call. Raises `msgspec.ValidationError` when they are not valid params."""
    fields: dict[str, Any] = {
        "title": approval.get("title"),
        "description": approval.get("description"),
        "pluginId": approval.get("pluginId") or None,
        "severity": approval.get("severity"),
        "scope": approval.get("scope"),
        "allowedDecisions": list(allowed_decisions(approval.get("allowedDecisions"))),
        "timeoutMs": approval_timeout_ms(approval.get("timeoutMs")),
        "toolName": tool_name,
        "toolCallId": tool_call_id,
        "agentId": agent_id,
        "sessionKey": session_key,
    }
    try:
        return msgspec.convert(fields, PluginApprovalRequestParams)
    except msgspec.ValidationError:
        if fields["scope"] is None:
            raise
    fields["scope"] = None  # display-only: a scope that does not fit is left out
    return msgspec.convert(fields, PluginApprovalRequestParams)


_warned_timeout_allow: set[str] = set()


def warn_timeout_behavior(approval: Mapping[str, Any]) -> None:
    """Log once per plugin that `timeoutBehavior: "allow"` is ignored."""
    if approval.get("timeoutBehavior") != "allow":
        return
    plugin = str(approval.get("pluginId") or "unknown-plugin")
    if plugin not in _warned_timeout_allow:
        _warned_timeout_allow.add(plugin)
        log.warning(
            "plugin %r sets requireApproval.timeoutBehavior 'allow', which is ignored: an"
            " approval that times out refuses the tool call",
            plugin,
        )


def refusal(outcome: ApprovalOutcome, approval: Mapping[str, Any]) -> str:
    """The tool error the model sees for an approval that did not allow the call."""
    if outcome.decision == "deny":
        return (
            "tool call denied by the operator; the tool did not run. The decision is final:"
            " do not call it again or ask for approval again (a new call would ask anew)."
        )
    if outcome.reason == "no-route":
        return (
            "tool call not approved: no operator can approve it now (no connection holds"
            " operator.approvals); the tool did not run."
        )
    reason = approval.get("timeoutReason")
    if isinstance(reason, str) and reason.strip():
        return reason
    return (
        "tool call not approved: the approval request expired without a decision; the tool"
        " did not run."
    )


NO_APPROVER: Final = (
    "tool call not approved: a plugin requires an operator's approval and no approver is"
    " available in this runtime; the tool did not run."
)
UNATTENDED: Final = (
    "tool call not approved: a plugin requires an operator's approval and {trigger} runs have"
    " no operator to ask; the tool did not run."
)


def resolution_of(outcome: ApprovalOutcome) -> str:
    """What the plugin's `onResolution` is told (OpenClaw's words)."""
    if outcome.decision is not None:
        return outcome.decision
    return "cancelled" if outcome.reason in ("no-route", "run-aborted") else "timeout"


async def notify_resolution(callback: object, resolution: str) -> None:
    """Tell the plugin's `onResolution` (when it gave one) how its approval ended. An async
    callback is awaited for at most 5 s; errors are logged, never raised. A checkpoint only
    when the callback is async."""
    if not callable(callback):
        return
    try:
        result = callback(resolution)
        if inspect.isawaitable(result):
            with trio.move_on_after(_CALLBACK_TIMEOUT_S):
                await result
    except Exception as exc:
        log.warning("plugin onResolution callback failed: %s", exc)
