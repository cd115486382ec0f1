"""One run's lifecycle, sans-IO: what every host of a run does the same way.

A host (the gateway's session actor, the embedded runtime) supplies where events go and
where the transcript is kept; this module decides everything else about a run's life:

1. `RunState.start` — the run starts: `lifecycle` `{phase:"start", startedAt}`.
2. `run_guarded` — the turn runs inside the run's cancel scope; however it ends is recorded
   in a `RunOutcome` (a provider error and its kind, a generation that cannot serve, a
   crash, an abort or timeout caught by the scope, a cancellation from outside: shutdown).
3. `RunState.decide` — exactly one outcome: `error` (a failure that was not an abort),
   `aborted` (an abort, a timeout, shutdown; the reason defaults to `timeout` for the run's
   own scope and `shutdown` for an outer cancellation) or `ok`.
4. `RunState.terminal_event` — exactly one terminal `lifecycle` payload: `end` or `error`.
5. `final_payload` — the final result `{payloads, meta}` as the gateway's `agent` answers it.

Nothing here does I/O or starts a task; `run_guarded` is the one coroutine (it awaits the
host's turn body). Stop reasons (`AbortReason`) are the wire's `stopReason` values.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

import attrs
import msgspec
import trio

from ..llm._types import (
    AssistantMessage,
    InputProvenance,
    Message,
    ProviderError,
    TextContent,
    UserMessage,
)
from ..model._generation import GenerationError
from ..protocol import ClawlaneError, describe_exception
from ..sessions._provenance import marked_prompt
from ..sessions._sessions import SessionRow
from ._compaction import MessageTags
from ._reply import ToolErrorInfo, build_final_payloads
from ._run_notes import SpawnNote, YieldClaim

if TYPE_CHECKING:
    from ..loop._agent import RunProgress
    from ._turnspec import TurnResult

__all__ = [
    "AbortReason",
    "RunOutcome",
    "RunRefusedError",
    "RunState",
    "RunStatus",
    "TrackedRun",
    "ended_row",
    "final_payload",
    "run_guarded",
    "run_messages",
    "run_tags",
]

log = logging.getLogger("clawlane.run")

RunStatus = Literal["queued", "running", "ok", "error", "aborted"]
AbortReason = Literal[
    "rpc", "stop", "timeout", "interrupt", "shutdown", "disconnect", "dropped", "reset", "deleted"
]


class RunRefusedError(ClawlaneError):
    """The host cannot run the turn (a session restarting after repeated crashes): the run
    ends with this message as its error."""


@attrs.define(eq=False)
class RunOutcome:
    """How the turn body ended (filled by `run_guarded`)."""

    error: str | None = None
    error_kind: str | None = None
    """The provider error's kind (`rate_limit`, `timeout`, `context_overflow`, ...)."""
    crashed: bool = False
    """An unexpected exception (logged): the run ends with an `internal error`."""
    cancelled: bool = False
    """The run's scope caught a cancellation (abort, timeout), or shutdown cancelled it."""
    outer_cancel: bool = False
    """A cancellation from outside the run (shutdown): it propagates after the end."""


async def run_guarded(
    scope: trio.CancelScope,
    body: Callable[[], Awaitable[None]],
    outcome: RunOutcome,
    *,
    what: str = "run",
) -> None:
    """Await `body()` inside `scope`, recording how it ended in `outcome`.

    Every failure is caught and recorded except a cancellation from outside, which is
    recorded and re-raised (the caller ends the run in a `finally`). A checkpoint."""
    try:
        with scope:
            await body()
    except ProviderError as exc:
        outcome.error, outcome.error_kind = exc.message, exc.kind
    except (GenerationError, RunRefusedError) as exc:
        outcome.error = str(exc)
    except trio.Cancelled:
        outcome.outer_cancel = True
        raise
    except Exception as exc:
        log.exception("%s crashed", what)
        outcome.crashed = True
        outcome.error = f"internal error: {describe_exception(exc)}"
    finally:
        outcome.cancelled = scope.cancelled_caught or outcome.outer_cancel


@attrs.define(eq=False)
class RunState:
    """One run's state from start to its one end. Mutated by its host only (and `abort`
    by whoever stops it). Not thread-safe; no I/O."""

    run_id: str
    session_key: str
    session_id: str
    agent_id: str
    status: RunStatus = "queued"
    started_at: int | None = None
    ended_at: int | None = None
    error: str | None = None
    error_kind: str | None = None
    aborted: bool = False
    abort_reason: AbortReason | None = None
    generation: int | None = None
    final: dict[str, Any] | None = None
    provenance: InputProvenance | None = None
    """Who asked for the run when no person did (a subagent's completion told to its
    parent): its user message carries it (`run_messages`)."""
    yield_claim: YieldClaim | None = None
    """The children its `sessions_yield` claimed, kept beside the yield (`run_notes`)."""
    spawns: list[SpawnNote] = attrs.field(factory=list)
    """The subagents it spawned (the embedded runtime keeps them beside its messages)."""

    def start(self, now: int) -> dict[str, Any]:
        """The run starts now: its `lifecycle` start payload."""
        self.status = "running"
        self.started_at = now
        return {"phase": "start", "startedAt": now}

    def decide(self, outcome: RunOutcome, now: int) -> RunStatus:
        """Fix the run's one outcome (see the module docstring). Returns the status."""
        if self.started_at is None:
            self.started_at = now
        self.ended_at = now
        if outcome.error is not None and not (self.aborted or outcome.cancelled):
            self.status = "error"
            self.error = outcome.error
            self.error_kind = outcome.error_kind
        elif self.aborted or outcome.cancelled:
            if self.abort_reason is None:
                self.abort_reason = "shutdown" if outcome.outer_cancel else "timeout"
            self.aborted = True
            self.status = "aborted"
        else:
            self.status = "ok"
        return self.status

    def terminal_event(self) -> dict[str, Any]:
        """The one terminal `lifecycle` payload: `error`, or `end` (aborted or not)."""
        if self.status == "error":
            return {
                "phase": "error",
                "error": self.error or "run failed",
                "startedAt": self.started_at,
                "endedAt": self.ended_at,
            }
        data: dict[str, Any] = {
            "phase": "end",
            "startedAt": self.started_at,
            "endedAt": self.ended_at,
            "aborted": self.status == "aborted",
        }
        if self.status == "aborted":
            data["stopReason"] = self.abort_reason
        return data

    def fail(self, message: str, kind: str) -> None:
        """After its end was decided, the run failed after all (its turn was not stored):
        it reports `error` with `message`, and its final says so."""
        self.status = "error"
        self.error = message
        final = dict(self.final or {"payloads": [], "meta": {}})
        final["meta"] = {**final.get("meta", {}), "error": {"kind": kind, "message": message}}
        self.final = final


@attrs.define(eq=False, kw_only=True)
class TrackedRun(RunState):
    """One run from the moment it is asked for to its end: its lifecycle state, the event
    its waiters wait on (`done`, set by its host however it ends) and the scope that stops
    it. The embedded runtime's runs; the gateway's `actors.RunRecord` adds what it keeps."""

    done: trio.Event = attrs.field(factory=trio.Event)
    cancel_scope: trio.CancelScope | None = None

    @property
    def ended(self) -> bool:
        return self.done.is_set()

    def abort(self, reason: AbortReason) -> bool:
        """Ask the run to stop (a run still waiting for its session or lane stops as it
        starts). False if it already ended. Not a checkpoint."""
        if self.done.is_set():
            return False
        if self.abort_reason is None:
            self.abort_reason = reason
        self.aborted = True
        if self.cancel_scope is not None:
            self.cancel_scope.cancel()
        return True


def final_payload(
    state: RunState,
    *,
    text: str,
    progress: RunProgress,
    turn: TurnResult,
    error: str | None,
    tool_failures: Sequence[tuple[str, str, bool]] = (),
    sent_texts: Sequence[str] = (),
) -> dict[str, Any]:
    """The run's final result `{payloads, meta}`; `text` is the cleaned reply text."""
    if turn.block_replies and text:
        # Block streaming already delivered the answer in pieces.
        delivered = "".join(b.text for b in turn.block_replies if not b.is_reasoning)
        if delivered.strip() and text.strip().startswith(delivered.strip()):
            text = text.strip()[len(delivered.strip()) :].strip()
    shaped = build_final_payloads(
        assistant_texts=[text] if text else [],
        reasoning_text=turn.reasoning_text or None,
        reasoning_mode=turn.reasoning_mode,
        tool_summaries=[],
        verbose=False,
        model_error=error if error is not None and not state.aborted else None,
        tool_errors=[
            ToolErrorInfo(tool_name=name, summary=name, error=err, mutating=mutating)
            for name, err, mutating in tool_failures
        ],
        messaging_sent_texts=list(sent_texts),
        messaging_sent_to_origin=bool(sent_texts),
    )
    usage = progress.usage
    meta: dict[str, Any] = {
        "durationMs": (state.ended_at or 0) - (state.started_at or state.ended_at or 0),
        "agentMeta": {
            "sessionId": state.session_id,
            "agentId": state.agent_id,
            "usage": {
                "input": usage.input,
                "output": usage.output,
                "cacheRead": usage.cacheRead,
                "cacheWrite": usage.cacheWrite,
                "total": usage.totalTokens,
            },
        },
        "generation": state.generation,
        "stopReason": state.abort_reason if state.aborted else progress.stop_reason,
    }
    if not state.aborted and progress.yielded is not None:
        meta["stopReason"] = "end_turn"  # OpenClaw's for a turn sessions_yield ended
    if state.aborted:
        meta["aborted"] = True
    elif progress.yielded is not None:  # OpenClaw's: the turn ended with sessions_yield
        meta["yielded"] = True
        if progress.yielded.acknowledgment:
            meta["yieldAcknowledgment"] = progress.yielded.acknowledgment
    if error is not None:
        meta["error"] = {"kind": "provider", "message": error}
    served = turn.attempts.selected or turn.model
    if served is not None:
        meta["agentMeta"]["provider"] = served.provider_id
        meta["agentMeta"]["model"] = served.model_id
    if turn.runtime is not None:
        meta["runtime"] = turn.runtime
    if turn.attempts.items:
        meta["attempts"] = turn.attempts.to_meta()
    if turn.compactions:
        meta["agentMeta"]["compactionCount"] = len(turn.compactions)
    return {"payloads": [msgspec.to_builtins(p) for p in shaped], "meta": meta}


def run_messages(state: RunState, progress: RunProgress, user: UserMessage | None) -> list[Message]:
    """What a run adds to its session's transcript: its user message (with the run's
    `provenance`: `runtime.sessions.marked_prompt`; `persist_run` leaves out one OpenClaw
    keeps no row of), then what the model and the tools said; an aborted run's partial
    answer is kept as an aborted assistant message. Nothing when the run never got as far
    as its user message."""
    if user is None:
        return []
    messages: list[Message] = [marked_prompt(user, state.provenance), *progress.messages]
    if (
        state.aborted
        and progress.text
        and not any(isinstance(m, AssistantMessage) for m in progress.messages)
    ):
        messages.append(
            AssistantMessage(
                content=[TextContent(progress.text)],
                timestamp=state.ended_at or 0,
                stopReason="aborted",
            )
        )
    return messages


def run_tags(
    run_id: str, messages: Sequence[Message], steered: list[str | None]
) -> list[MessageTags]:
    """Each transcript row's idempotency key, as OpenClaw writes them: `<runId>:user` for
    the run's message (`messages[0]`) and, for each message steered into it, the key of the
    request it came from (`steered`, in order; it joined run `run_id`)."""
    tags: list[MessageTags] = []
    for i, message in enumerate(messages):
        if not isinstance(message, UserMessage):
            tags.append(MessageTags(run_id=run_id))
        elif i == 0:
            tags.append(MessageTags(idempotency_key=f"{run_id}:user", run_id=run_id))
        else:
            key = steered.pop(0) if steered else None
            tags.append(
                MessageTags(
                    idempotency_key=f"{key}:user" if key else None,
                    run_id=key,
                    steer_target=run_id if key else None,
                )
            )
    return tags


def ended_row(
    row: SessionRow, state: RunState, progress: RunProgress, turn: TurnResult | None
) -> SessionRow:
    """The session's row after the run: its status, times, token counts and compactions."""
    usage = progress.usage
    compactions = len(turn.compactions) if turn is not None and turn.user_message else 0
    return msgspec.structs.replace(
        row,
        updatedAt=state.ended_at or row.updatedAt,
        status="aborted" if state.aborted else ("failed" if state.status == "error" else "done"),
        startedAt=state.started_at,
        endedAt=state.ended_at,
        abortedLastRun=state.aborted,
        lastRunId=state.run_id,
        inputTokens=row.inputTokens + usage.input,
        outputTokens=row.outputTokens + usage.output,
        totalTokens=row.totalTokens + usage.totalTokens,
        compactionCount=row.compactionCount + compactions,
        memoryFlush=turn.memory_flush if turn and turn.memory_flush else row.memoryFlush,
        contextTokens=(
            turn.context_tokens
            if turn is not None and turn.context_tokens is not None
            else row.contextTokens
        ),
    )
