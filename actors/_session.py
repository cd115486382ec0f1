"""The SessionActor: one per session key, owning its serialized run lane.

At most one run of a session executes at a time, in submission order; later messages wait
as follow-ups (the other queue modes come with the session-lanes work). An actor has a task
only while it has work: `Supervisor.submit` starts its drain task, which exits when the
queue is empty, so an idle session costs one small object.

Each run: wait for a global lane slot (cancellable: an abort while queued ends the run at
once), fork stores from the generation current at that moment and keep them to the end,
emit lifecycle `start`, run the attempt loop, and emit exactly one terminal lifecycle event
(`end` or `error`) whatever happens: provider error, crash, timeout, abort, shutdown.
"""

from __future__ import annotations

import collections
import logging
import time
from typing import TYPE_CHECKING, Any

import attrs
import msgspec
import trio

from runtime._agent import RunProgress, now_ms
from runtime._generation import GenerationError, ModelRuntimeGeneration
from runtime._reply import ToolErrorInfo, build_final_payloads
from runtime._sessions import (
    SessionRow,
    TranscriptBuilder,
    TranscriptEntry,
    build_context,
    new_session_id,
    new_session_row,
)
from runtime._toolrunner import RunTools
from runtime._turn import TurnResult, TurnSpec, run_turn
from runtime.llm._types import AssistantMessage, Message, ProviderError, TextContent, UserMessage

from ._chat import ChatStream, assistant_message
from ._hub import Subscriber
from ._registry import RunRecord

if TYPE_CHECKING:
    from ._supervisor import Supervisor

log = logging.getLogger("clawlane.session")


@attrs.define(eq=False)
class RunRequest:
    """A run waiting in a session's lane."""

    record: RunRecord
    message: str
    timeout_s: float | None = None
    model_ref: str | None = None
    extra_system_prompt: str | None = None
    owner: Subscriber | None = None
    reset: bool = False


@attrs.define(eq=False)
class SessionActor:
    key: str
    agent_id: str
    supervisor: Supervisor
    row: SessionRow | None = None
    loaded: trio.Event = attrs.field(factory=trio.Event)
    queue: collections.deque[RunRequest] = attrs.field(factory=collections.deque)
    running: RunRequest | None = None
    draining: bool = False
    last_active: float = attrs.field(factory=time.monotonic)
    crashes: collections.deque[float] = attrs.field(factory=collections.deque)
    failed_until: float = float("-inf")
    _history: list[Message] | None = None
    _builder: TranscriptBuilder | None = None

    @property
    def busy(self) -> bool:
        return self.draining or bool(self.queue) or self.running is not None

    # --- loading --------------------------------------------------------------------------

    async def load(self) -> None:
        """Load the persisted row, or create one. Called once by the supervisor."""
        try:
            row = await self.supervisor.store.get_session(self.key)
            if row is None:
                row = new_session_row(self.key, now_ms=now_ms())
                if row.agentId != self.agent_id:
                    row = msgspec.structs.replace(row, agentId=self.agent_id)
            self.row = row
        finally:
            self.loaded.set()

    async def _transcript(self) -> tuple[list[Message], TranscriptBuilder]:
        if self._history is None or self._builder is None:
            assert self.row is not None
            entries: list[TranscriptEntry] = await self.supervisor.store.load_entries(
                self.row.sessionId
            )
            self._history = build_context(entries)
            self._builder = TranscriptBuilder.from_entries(entries)
        return self._history, self._builder

    def _model_override(self) -> str | None:
        row = self.row
        if row is None or not row.modelOverride:
            return None
        if "/" in row.modelOverride or not row.providerOverride:
            return row.modelOverride
        return f"{row.providerOverride}/{row.modelOverride}"

    def reset_session(self) -> SessionRow:
        """Give the session a fresh id (a new, empty transcript)."""
        assert self.row is not None
        t = now_ms()
        self.row = msgspec.structs.replace(
            new_session_row(self.key, now_ms=t, session_id=new_session_id()),
            agentId=self.row.agentId,
            createdAt=self.row.createdAt,
            label=self.row.label,
        )
        self._history = []
        self._builder = TranscriptBuilder()
        return self.row

    # --- the lane -------------------------------------------------------------------------

    async def drain(self) -> None:
        """Run queued requests in order until the queue is empty."""
        while self.queue:
            req = self.queue.popleft()
            self.running = req
            try:
                await self._execute(req)
            finally:
                self.running = None
                self.last_active = time.monotonic()

    async def _execute(self, req: RunRequest) -> None:
        sup = self.supervisor
        rec = req.record
        hub = sup.hub
        chat = ChatStream(hub, rec.run_id, flusher=sup.chat_flusher)
        progress = RunProgress()
        scope = trio.CancelScope()
        rec.cancel_scope = scope
        if rec.aborted:
            scope.cancel()
        error: str | None = None
        error_kind: str | None = None
        terminal = False
        turn = TurnResult()
        run_tools: RunTools | None = None

        def emit(stream: str, data: dict[str, Any]) -> None:
            if stream == "tool" and data.get("phase") == "start":
                chat.flush()
            hub.emit_agent(rec.run_id, stream, data)
            if stream == "assistant":
                chat.on_assistant(progress.text)

        def finish_terminal(outer_cancel: bool) -> None:
            nonlocal terminal
            if terminal:
                return
            terminal = True
            ended = now_ms()
            if rec.started_at is None:
                rec.started_at = ended
                hub.emit_agent(rec.run_id, "lifecycle", {"phase": "start", "startedAt": ended})
            rec.ended_at = ended
            aborted = rec.aborted or scope.cancelled_caught or outer_cancel
            if error is not None and not aborted:
                rec.status = "error"
                rec.error = error
                hub.emit_agent(
                    rec.run_id,
                    "lifecycle",
                    {
                        "phase": "error",
                        "error": error,
                        "startedAt": rec.started_at,
                        "endedAt": ended,
                    },
                )
                chat.close("error", errorMessage=error, errorKind=_chat_error_kind(error_kind))
            elif aborted:
                if rec.abort_reason is None:
                    rec.abort_reason = "shutdown" if outer_cancel else "timeout"
                rec.aborted = True
                rec.status = "aborted"
                hub.emit_agent(
                    rec.run_id,
                    "lifecycle",
                    {
                        "phase": "end",
                        "startedAt": rec.started_at,
                        "endedAt": ended,
                        "aborted": True,
                        "stopReason": rec.abort_reason,
                    },
                )
                fields: dict[str, Any] = {"stopReason": rec.abort_reason}
                if chat.text:
                    fields["message"] = assistant_message(chat.text, ended)
                chat.close("aborted", **fields)
            else:
                rec.status = "ok"
                hub.emit_agent(
                    rec.run_id,
                    "lifecycle",
                    {
                        "phase": "end",
                        "startedAt": rec.started_at,
                        "endedAt": ended,
                        "aborted": False,
                    },
                )
                text = chat.final_text()
                fields = {"stopReason": progress.stop_reason}
                if text:
                    fields["message"] = assistant_message(text, ended)
                chat.close("final", **fields)
            try:
                rec.final = self._final_payload(rec, progress, chat.final_text(), error, run_tools)
                self._record_end(rec, progress, turn.user_message)
            finally:
                # Whatever failed above (it is a crash of this actor, contained by the
                # supervisor), the run has its terminal event and its waiters wake.
                sup.registry.finish(rec)
                hub.close_run(rec.run_id)

        outer_cancel = False
        try:
            with scope:
                if trio.current_time() < self.failed_until:
                    raise _SessionFailed("session is restarting after repeated crashes")
                async with sup.lane:
                    generation: ModelRuntimeGeneration = sup.generation
                    stores = generation.fork_stores()
                    rec.generation = stores.generation
                    if req.timeout_s:
                        scope.deadline = trio.current_time() + req.timeout_s
                    if req.reset:
                        self.reset_session()
                        assert self.row is not None
                        rec.session_id = self.row.sessionId
                        hub.open_run(rec.run_id, self.key, session_id=rec.session_id)
                        sup.store_put_session(self.row)
                    rec.status = "running"
                    rec.started_at = now_ms()
                    hub.emit_agent(
                        rec.run_id, "lifecycle", {"phase": "start", "startedAt": rec.started_at}
                    )
                    history, _ = await self._transcript()
                    agent = generation.agent(self.agent_id)
                    workspace = await sup.workspace_for(agent.id, agent.workspace)
                    tools = run_tools = sup.run_tools(self, rec, workspace, chat)
                    spec = TurnSpec(
                        run_id=rec.run_id,
                        session_key=self.key,
                        session_id=rec.session_id,
                        agent_id=agent.id,
                        message=req.message,
                        history=list(history),
                        generation=generation,
                        stores=stores,
                        model_ref=req.model_ref or self._model_override() or agent.primary,
                        extra_system_prompt=req.extra_system_prompt,
                        workspace_dir=str(workspace),
                        tools=tools,
                        hooks=sup.hooks,
                        idle_timeout=sup.idle_timeout(),
                    )
                    await run_turn(spec, emit, progress, turn)
        except ProviderError as exc:
            error, error_kind = exc.message, exc.kind
        except GenerationError as exc:
            error = str(exc)
        except _SessionFailed as exc:
            error = str(exc)
        except trio.Cancelled:
            outer_cancel = True
            raise
        except Exception as exc:
            log.exception("run %s on %s crashed", rec.run_id, self.key)
            error = f"internal error: {type(exc).__name__}: {exc}"
        finally:
            finish_terminal(outer_cancel)

    def _final_payload(
        self,
        rec: RunRecord,
        progress: RunProgress,
        text: str,
        error: str | None,
        tools: RunTools | None,
    ) -> dict[str, Any]:
        shaped = build_final_payloads(
            assistant_texts=[text] if text else [],
            reasoning_text=None,
            reasoning_mode="off",
            tool_summaries=[],
            verbose=False,
            model_error=error if error is not None and not rec.aborted else None,
            tool_errors=[
                ToolErrorInfo(tool_name=name, summary=name, error=err, mutating=mutating)
                for name, err, mutating in (tools.failures if tools else [])
            ],
            messaging_sent_texts=tools.sent_texts if tools else [],
            messaging_sent_to_origin=bool(tools and tools.sent_texts),
        )
        payloads = [msgspec.to_builtins(p) for p in shaped]
        meta: dict[str, Any] = {
            "durationMs": (rec.ended_at or 0) - (rec.started_at or rec.ended_at or 0),
            "agentMeta": {
                "sessionId": rec.session_id,
                "agentId": rec.agent_id,
                "usage": {
                    "input": progress.usage.input,
                    "output": progress.usage.output,
                    "cacheRead": progress.usage.cacheRead,
                    "cacheWrite": progress.usage.cacheWrite,
                    "total": progress.usage.totalTokens,
                },
            },
            "generation": rec.generation,
            "stopReason": rec.abort_reason if rec.aborted else progress.stop_reason,
        }
        if rec.aborted:
            meta["aborted"] = True
        if error is not None:
            meta["error"] = {"kind": "provider", "message": error}
        return {"payloads": payloads, "meta": meta}

    def _record_end(self, rec: RunRecord, progress: RunProgress, user: UserMessage | None) -> None:
        """Persist the run's messages and the row (enqueued; the store commits in batches)."""
        sup = self.supervisor
        if self.row is None:
            return
        messages: list[Message] = []
        if user is not None:
            messages.append(user)
            messages.extend(progress.messages)
            if (
                rec.aborted
                and progress.text
                and not any(isinstance(m, AssistantMessage) for m in progress.messages)
            ):
                messages.append(
                    AssistantMessage(
                        content=[TextContent(progress.text)],
                        timestamp=rec.ended_at or now_ms(),
                        stopReason="aborted",
                    )
                )
        if messages and self._builder is not None and self._history is not None:
            entries = [self._builder.add_message(m) for m in messages]
            self._history.extend(messages)
            sup.store_append(self.row.sessionId, entries)
        usage = progress.usage
        self.row = msgspec.structs.replace(
            self.row,
            updatedAt=rec.ended_at or now_ms(),
            status="aborted" if rec.aborted else ("failed" if rec.status == "error" else "done"),
            startedAt=rec.started_at,
            endedAt=rec.ended_at,
            abortedLastRun=rec.aborted,
            lastRunId=rec.run_id,
            inputTokens=self.row.inputTokens + usage.input,
            outputTokens=self.row.outputTokens + usage.output,
            totalTokens=self.row.totalTokens + usage.totalTokens,
        )
        sup.store_put_session(self.row)


class _SessionFailed(Exception):
    pass


def _chat_error_kind(kind: str | None) -> str:
    return {
        "rate_limit": "rate_limit",
        "timeout": "timeout",
        "context_overflow": "context_length",
    }.get(kind or "", "unknown")
