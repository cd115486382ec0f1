"""Where `exec` applies the exec policy before a command starts (`guard_exec`), and what it
asks of its host for that (`ExecApprover`).

The order: the config's policy for the agent (`ExecPolicy`, `requested_policy`) tightened by
the host approvals document (`ExecApprover.document`, `effective_policy`) and by the call's own
`ask` (it can only harden); then the command's verdict (`decide`):

- allowed: the command runs;
- refused: a tool error the model sees, saying why (nothing ran);
- asked: the host raises an exec approval (`ExecApprover.ask`: the gateway's
  `exec.approval.requested` to its operators) and waits. `allow-once` runs the command once;
  `allow-always` runs it and adds the command's allowlist entries to the document
  (`ExecApprover.allow_always`; not for inline eval or an unresolved executable); `deny` is a
  tool error. A cron job's run may instead be let go by a standing grant, or its allow-always
  mint one (`ExecAnswer.granted`: no allowlist entry then). No decision (the approval timed
  out, or no operator could answer it at all) is settled by `askFallback` (`fallback`); with
  the default `deny` that is a refusal, "Headless runs cannot wait for interactive exec
  approval" when no one could be asked. Without an approver (the embedded runtime) an ask is
  settled so at once.

Under `mode: auto` (`ExecPolicy.auto_review`) an ask on an allowlist miss goes first to the
auto-reviewer (`ExecReviewer`, `_exec_review`): its allow runs the command once, its deny is
a tool error with its rationale, its ask (or a command it may not judge) goes on to the human
approval with the rationale as the request's `warningText`.

Nothing runs before an allow. Cancelled while waiting (the run aborted), the approver cancels
the approval and the cancellation goes on: the command never starts.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Protocol, get_args

import attrs
import trio

from ._exec_command import CommandAnalysis, analyze_command
from ._exec_policy import (
    Ask,
    ExecPolicy,
    ExecVerdict,
    allow_always_entries,
    allowlist_of,
    decide,
    document_policy,
    effective_policy,
    fallback,
)
from ._exec_review import (
    DENIAL_GUIDANCE,
    ESCALATE_AFTER,
    SKIPPED,
    DenialStreaks,
    Review,
    ReviewInput,
    review_input,
    reviewable,
)
from ._tool import ToolContext

__all__ = [
    "DEFAULT_EXEC_APPROVAL_TIMEOUT_MS",
    "ExecAnswer",
    "ExecApprover",
    "ExecAsk",
    "ExecReviewer",
    "guard_exec",
]

DEFAULT_EXEC_APPROVAL_TIMEOUT_MS: Final = 1_800_000
_ASK_RANK: Final = {"off": 0, "on-miss": 1, "always": 2}


@attrs.frozen
class ExecAsk:
    """An exec approval to raise: OpenClaw's request record fields."""

    command: str
    cwd: str
    agent_id: str
    session_key: str
    run_id: str
    security: str
    ask: str
    resolved_path: str | None
    reason: str
    allow_always: bool
    """Whether allow-always is offered (not for what it could not persist)."""
    timeout_ms: int = DEFAULT_EXEC_APPROVAL_TIMEOUT_MS
    env: Mapping[str, str] | None = None
    """The call's env overrides (a standing grant binds their hash)."""
    warning: str | None = None
    """What the auto-reviewer said, shown with the request (`warningText`)."""

    def record(self) -> dict[str, Any]:
        """The `request` of `exec.approval.requested` (OpenClaw's keys)."""
        return {
            "warningText": self.warning,
            "command": self.command,
            "cwd": self.cwd,
            "host": "gateway",
            "security": self.security,
            "ask": self.ask,
            "agentId": self.agent_id,
            "resolvedPath": self.resolved_path,
            "sessionKey": self.session_key,
            "runId": self.run_id,
            "allowedDecisions": (
                ["allow-once", "allow-always", "deny"]
                if self.allow_always
                else ["allow-once", "deny"]
            ),
        }


@attrs.frozen
class ExecAnswer:
    """How an exec approval ended: the decision (None: none made) and why
    (`user`, `timeout`, `no-route`, `run-aborted`)."""

    decision: str | None
    reason: str
    approval_id: str | None = None
    granted: bool = False
    """A standing grant let it go, or its allow-always minted one (for a cron job's run):
    no allowlist entry is added then."""


class ExecReviewer(Protocol):
    """The auto-reviewer (`_exec_review.ModelReviewer`)."""

    @property
    def streaks(self) -> DenialStreaks: ...

    async def review(self, request: ReviewInput) -> Review:
        """The verdict on one command. A checkpoint; never raises but `Cancelled`."""
        ...


class ExecApprover(Protocol):
    """The host's side of the exec policy (the gateway's `actors.approvals.ExecApprovals`)."""

    async def document(self) -> Mapping[str, Any] | None:
        """The host approvals document (None: none stored). A checkpoint."""
        ...

    async def ask(self, request: ExecAsk) -> ExecAnswer:
        """Raise an exec approval and wait for its end (at once `no-route` when no operator
        could answer). A checkpoint; cancelled, the approval is cancelled too."""
        ...

    async def allow_always(self, agent_id: str, entries: Sequence[dict[str, Any]]) -> None:
        """Add `entries` to the agent's allowlist in the document. A checkpoint."""
        ...


def _harden(policy: ExecPolicy, call_ask: str | None) -> ExecPolicy:
    """The call's own `ask` (OpenClaw's exec parameter) can only make it ask more."""
    for ask in get_args(Ask):
        if ask == call_ask and _ASK_RANK[ask] > _ASK_RANK[policy.ask]:
            return attrs.evolve(policy, ask=ask)
    return policy


async def guard_exec(
    policy: ExecPolicy,
    approver: ExecApprover | None,
    command: str | Sequence[str],
    *,
    cwd: Path,
    path: str | None,
    ctx: ToolContext,
    call_ask: str | None = None,
    env: Mapping[str, str] | None = None,
    reviewer: ExecReviewer | None = None,
) -> str | None:
    """Apply the exec policy to `command` (see the module docstring): None when it may run,
    else the refusal for the model. A checkpoint; cancellable (nothing then runs)."""
    document = await approver.document() if approver is not None else None
    effective = _harden(effective_policy(policy, document_policy(document, ctx.agent_id)), call_ask)
    if effective.security == "full" and effective.ask == "off" and not effective.strict_inline_eval:
        return None  # nothing to bind or ask
    analysis = await trio.to_thread.run_sync(lambda: analyze_command(command, cwd=cwd, path=path))
    allowlist = allowlist_of(document, ctx.agent_id)
    verdict = decide(effective, analysis, allowlist)
    if verdict.action == "allow":
        return None
    if verdict.action == "deny":
        return verdict.reason
    warning = None
    answered = None
    if reviewer is not None and effective.auto_review and effective.ask == "on-miss":
        answered = functools.partial(reviewer.streaks.reset, ctx.session_key)
        request = review_input(analysis, cwd=str(cwd), env=env, reason=verdict.reason)
        refusal, warning = await _auto_review(reviewer, analysis, request, ctx.session_key)
        if refusal is not None:
            return refusal or None  # "": the reviewer allowed it once
    return await _ask(
        effective,
        approver,
        analysis,
        verdict,
        cwd=cwd,
        ctx=ctx,
        env=env,
        warning=warning,
        answered=answered,
    )


async def _auto_review(
    reviewer: ExecReviewer, analysis: CommandAnalysis, request: ReviewInput, session: str
) -> tuple[str | None, str | None]:
    """The reviewer's verdict as (`""`: allowed once, a refusal, or None: ask a human with
    the second item as the warning)."""
    if not reviewable(analysis):
        await trio.lowlevel.checkpoint()
        return None, SKIPPED
    review = await reviewer.review(request)
    if review.decision == "allow-once":
        reviewer.streaks.reset(session)
        return "", None
    if review.decision == "deny":
        if reviewer.streaks.denied(session) < ESCALATE_AFTER:
            return (
                f"exec denied by the auto-reviewer (risk {review.risk}): {review.rationale}. "
                f"{DENIAL_GUIDANCE}"
            ), None
        return None, f"{ESCALATE_AFTER} consecutive reviewer denials: {review.rationale}"
    return None, f"exec reviewer asked for a human (risk {review.risk}): {review.rationale}"


async def _ask(
    policy: ExecPolicy,
    approver: ExecApprover | None,
    analysis: CommandAnalysis,
    verdict: ExecVerdict,
    *,
    cwd: Path,
    ctx: ToolContext,
    env: Mapping[str, str] | None,
    warning: str | None = None,
    answered: Callable[[], None] | None = None,
) -> str | None:
    """Raise the approval and settle what it ends as (`answered`: called when a human
    decided)."""
    if approver is None:
        settled = fallback(policy, analysis, verdict, "no-route")
        return None if settled.action == "allow" else settled.reason
    entries = allow_always_entries(analysis)
    request = ExecAsk(
        command=analysis.text,
        cwd=str(cwd),
        agent_id=ctx.agent_id,
        session_key=ctx.session_key,
        run_id=ctx.run_id,
        security=policy.security,
        ask=policy.ask,
        resolved_path=analysis.segments[0].resolved if analysis.segments else None,
        reason=verdict.reason,
        allow_always=bool(entries),
        env=dict(env) if env else None,
        warning=warning,
    )
    answer = await approver.ask(request)
    if answered is not None and answer.reason == "user":
        answered()
    if answer.decision in ("allow-once", "allow-always"):
        if answer.decision == "allow-always" and entries and not answer.granted:
            await approver.allow_always(ctx.agent_id, entries)
        return None
    if answer.decision == "deny":
        return f"exec denied: the operator denied the command (approval {answer.approval_id})"
    if answer.reason == "run-aborted":
        return "exec cancelled: the run ended while the command waited for approval"
    settled = fallback(policy, analysis, verdict, answer.reason)
    return None if settled.action == "allow" else settled.reason
