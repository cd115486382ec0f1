"""Admitting a run: the one way a run gets onto its session's lane.

Every run starts here: `agent`, `chat.send` / `sessions.send` / `sessions.steer` and the
slash commands that start a run, the OpenAI HTTP API (through `agent`), crash recovery
(a run the journal says was accepted, queued again) and cron. An `Admission` takes one
run through the same steps, in this order:

1. **dedupe**: `repeat()` says whether the idempotency key belongs to an earlier request
   (the caller answers a repeat its own way: it starts nothing); `reserve()` puts the
   key's placeholder in the cache, so duplicates arriving meanwhile wait for this one.
2. **journal**: the run's journal row as accepted, with the session's row when that is
   not durable yet, committed before anything is acknowledged.
3. **order**: the request's place in its session's submission order (its `Ticket`, taken
   when the request was received): the run waits until every earlier request of the
   session has been placed.
4. **register and queue**: `Supervisor.accept_run`, one step: the record registered, its
   event stream opened (with its owner), the run placed on the lane.
5. **answer**: `settle(ack)` gives waiting duplicates the ack; `refuse(exc)` releases the
   key, hands waiting duplicates the error, and ends a run journaled as accepted but never
   queued, so that a restart does not report it.

Two ways through it, with one behaviour:
- `await admit(...)` (a checkpoint): for a request with a task of its own.
- `admit_nowait(..., on_admitted)`: no task and no cancel scope (the `agent` fast path at
  thousands of runs a second): the journal commit is enqueued with a callback, the ticket
  runs the rest when it is due, and `on_admitted(record, error)` is called once. Raises
  `trio.WouldBlock` when the store's queue is full, having done nothing: the caller falls
  back to `admit`.

Refusals are `GatewayError`s, as the wire says them: a store that cannot take the row
(down, or the session's lease moved) and a gateway shutting down are `UNAVAILABLE`
(retryable); a full queue (drop policy `new`) and a run id in flight are
`INVALID_REQUEST`, the latter with `RunInFlight` as its cause.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Final

import attrs
import trio

from runtime.protocol import UNAVAILABLE, GatewayError, internal_error, invalid_request

from ._errors import StoreError
from ._supervisor import RunInFlight, ShuttingDown, Supervisor
from .runs import CachedResponse, RunRecord, Subscriber, Ticket
from .session import LaneFull, RunRequest, SessionActor
from .store import AcceptedRun, JournalRow, WriteGroup, accepted_row

__all__ = ["Admission", "journal_row"]

log = logging.getLogger("clawlane.admission")

CANCELLED_BEFORE_ACCEPTED: Final = "the request was cancelled before its run was accepted"


def journal_row(request: RunRequest, order: int, queue_mode: str | None) -> JournalRow:
    """The run's journal row as accepted: its identity and everything needed to queue it
    again after a restart."""
    return accepted_row(
        request.identity(),
        request=AcceptedRun(
            message=request.message,
            order=order,
            lane=request.lane,
            timeoutS=request.timeout_s,
            modelRef=request.model_ref,
            extraSystemPrompt=request.extra_system_prompt,
            reset=request.reset,
            resetReason=request.reset_reason,
            queueMode=queue_mode,
            debounce=request.debounce,
            origin=request.origin if request.origin != "webchat" else None,
            spawn=request.spawn,
            provenance=request.record.provenance,
            lightContext=request.light_context,
        ),
    )


@attrs.define(eq=False)
class Admission:
    """One run on its way onto its session's lane (see the module's docstring).

    `kind` names its idempotency cache (`agent`, `chat`; a run without a key, such as a
    cron firing, passes `dedupe=False`); `ticket` is its place in its session's order (None:
    no order to keep, as for recovery and cron); `owner` is the connection that started it
    (it receives the run's events whatever it subscribed to)."""

    sup: Supervisor
    kind: str
    run_id: str
    ticket: Ticket | None = None
    owner: Subscriber | None = None
    dedupe: bool = True
    placeholder: CachedResponse | None = None
    request: RunRequest | None = None
    journaled: bool = False
    """The journal has its row as accepted."""
    attempted: bool = False
    """`accept_run` was tried: from there on the run's end (or its refusal) writes its row."""
    cancelled: bool = False
    _writes_row: bool = attrs.field(default=False, init=False)

    @property
    def dedupe_key(self) -> str:
        return f"{self.kind}:{self.run_id}"

    # --- dedupe ---------------------------------------------------------------------------

    def repeat(self) -> CachedResponse | None:
        """The cache entry of an earlier request with this idempotency key (a repeat starts
        no run), or None. Not a checkpoint."""
        if not self.dedupe:
            return None
        return self.sup.registry.dedupe.get(self.dedupe_key)

    def reserve(self) -> None:
        """Reserve the idempotency key: duplicates wait for this request's answer."""
        if self.dedupe and self.placeholder is None:
            self.placeholder = CachedResponse.placeholder()
            self.sup.registry.dedupe.put(self.dedupe_key, self.placeholder)

    def settle(self, ack: Any) -> None:
        """The run was admitted: duplicates get `ack`."""
        if self.placeholder is not None:
            self.placeholder.settle(ack)

    def refuse(self, exc: BaseException | None = None, *, cache_error: bool = True) -> None:
        """The request ends without its run admitted (or failed on the way): the key is
        released, duplicates waiting on it get `exc` (a `GatewayError`, when `cache_error`)
        or are told to retry, and a run journaled as accepted but never queued is journaled
        as ended. Not a checkpoint; idempotent."""
        if self.journaled and not self.attempted and self.request is not None:
            self.attempted = True
            reason = str(exc) if isinstance(exc, GatewayError) else CANCELLED_BEFORE_ACCEPTED
            self.sup.journal_refused(self.request, reason)
        if self.placeholder is not None:
            self.sup.registry.dedupe.discard(self.dedupe_key)
            error = exc if cache_error and isinstance(exc, GatewayError) else None
            self.placeholder.abandon(error)
            self.placeholder = None

    # --- the task path --------------------------------------------------------------------

    async def admit(
        self,
        actor: SessionActor,
        request: RunRequest,
        mode: str | None,
        *,
        writes_row: bool = True,
        journal: bool = True,
        accepted: AcceptedRun | None = None,
    ) -> RunRecord:
        """Journal the run (with the session's row when `writes_row`), wait for the
        session's earlier requests, register and queue it. `accepted` is the journal's
        account of the request when the caller has it already (a run queued again after a
        restart, its attempt counted); `journal=False` writes no journal row (a cron
        firing: the scheduler keeps its own history). A checkpoint. Raises
        `GatewayError`; on any failure or cancellation the caller calls `refuse`."""
        self.request = request
        if journal:
            request.journaled = True
            order = self.ticket.seq if self.ticket is not None else 0
            row = (
                journal_row(request, order, mode)
                if accepted is None
                else accepted_row(request.identity(), request=accepted)
            )
            try:
                await self.sup.store.commit_durable(
                    WriteGroup(run=row, row=actor.row if writes_row else None, fence=actor.fence)
                )
            except StoreError as exc:
                raise GatewayError(
                    UNAVAILABLE, f"the run could not be recorded: {exc}", retryable=True
                ) from exc
            self.journaled = True
            if writes_row:
                actor.row_stored()
        if self.ticket is not None:
            await self.ticket.turn()
        elif not journal:
            await trio.lowlevel.checkpoint()
        self._accept(actor, request, mode)
        return request.record

    # --- the path without a task ----------------------------------------------------------

    def admit_nowait(
        self,
        actor: SessionActor,
        request: RunRequest,
        mode: str | None,
        *,
        writes_row: bool,
        on_admitted: Callable[[RunRecord | None, GatewayError | None], None],
        on_end: Callable[[RunRecord], None] | None = None,
    ) -> None:
        """`admit` without a task: the journal commit is enqueued (reserving the key once
        it is), and when it has committed and the ticket is due the run is accepted;
        `on_admitted(record, None)` or `on_admitted(None, error)` is then called once
        (`(None, None)` after `cancel`), and for an admitted run `on_end(record)` once it
        ends (the run's `on_done`: no task waits for the end either). The ticket is released
        by then. Not a checkpoint. Raises `trio.WouldBlock` (nothing done) when the store's
        queue is full."""
        assert self.ticket is not None
        ticket = self.ticket
        self.request = request

        def committed(failure: StoreError | None) -> None:
            ticket.when_due(
                lambda: self._after_commit(actor, request, mode, failure, on_admitted, on_end)
            )

        self.sup.store.commit_nowait(
            WriteGroup(
                run=journal_row(request, ticket.seq, mode),
                row=actor.row if writes_row else None,
                on_commit=committed,
                fence=actor.fence,
            )
        )
        request.journaled = self.journaled = True
        self._writes_row = writes_row
        self.reserve()

    def cancel(self) -> None:
        """A `cancel` frame before the run was admitted: once the journal commit is done
        the run is refused (journaled as ended). Not a checkpoint."""
        self.cancelled = True

    def _after_commit(
        self,
        actor: SessionActor,
        request: RunRequest,
        mode: str | None,
        failure: StoreError | None,
        on_admitted: Callable[[RunRecord | None, GatewayError | None], None],
        on_end: Callable[[RunRecord], None] | None,
    ) -> None:
        if failure is not None:
            log.error("a run could not be recorded: %s", failure)
            self.journaled = False  # not durable: nothing to end
            error = GatewayError(
                UNAVAILABLE, f"the run could not be recorded: {failure}", retryable=True
            )
            self.refuse(error, cache_error=False)
            on_admitted(None, error)
            return
        if self._writes_row:
            actor.row_stored()
        if self.cancelled:
            self.refuse(None)
            on_admitted(None, None)
            return
        try:
            self._accept(actor, request, mode)
        except GatewayError as exc:
            self.refuse(exc)
            on_admitted(None, exc)
            return
        except Exception as exc:  # a bug: this request fails (its run has ended), nothing else
            log.exception("a run could not be admitted")
            error = internal_error(exc)
            self.refuse(error, cache_error=False)
            on_admitted(None, error)
            return
        record = request.record
        on_admitted(record, None)
        if on_end is not None:
            if record.ended:  # it cannot have ended yet (it is queued); be safe
                on_end(record)
            else:
                record.on_done = [on_end]

    # --- register and queue ---------------------------------------------------------------

    def _accept(self, actor: SessionActor, request: RunRequest, mode: str | None) -> None:
        """`Supervisor.accept_run`, its refusals as `GatewayError` (a refused run's journal
        row is ended; one refused because the id is in flight is that run's). Not a
        checkpoint."""
        self.attempted = True
        sup = self.sup
        try:
            sup.accept_run(actor, request, actor.queue_settings(mode), owner=self.owner)
        except RunInFlight as exc:
            raise invalid_request(str(exc)) from exc
        except ShuttingDown as exc:
            sup.journal_refused(request, str(exc))
            raise GatewayError(UNAVAILABLE, str(exc), retryable=True) from exc
        except LaneFull as exc:
            sup.journal_refused(request, str(exc))
            raise invalid_request(str(exc)) from exc
