"""What a node answers for a run whose node cannot answer for it: the run journal's word.

A node that forwarded a request answers it itself when the node it went to is gone,
restarted, or cannot be reached through Redis (`answer_gone`); and it answers `agent.wait`
itself for a run of a node it takes for lost (`lost_answer`). For `agent.wait` that answer
is the run journal's (PostgreSQL, which every node reaches), never
the node's absence: the run may well have gone on and ended there, and every node must give
one answer for one run. `journal_wait` waits for the run's end in the journal until the
wait's deadline, reading it every `POLL_S` (`actors.recall_run`, which only reads: the run
stays another node's): a run that ended is answered as it ended; one that has not ended by
then is answered `timeout`, as a run still going is (it may be, on a node this one cannot
see). The other methods are refused, retryable (a repeat of a
run's idempotency key never runs it twice).
"""

from __future__ import annotations

from typing import Any, Final

import trio

from actors import RecoveredRun, StoreError, recall_run
from runtime.protocol import UNAVAILABLE, GatewayError

from ._wire import Forward, lost_reason, unavailable

__all__ = [
    "DEFAULT_WAIT_S",
    "POLL_S",
    "answer_gone",
    "journal_answer",
    "journal_wait",
    "lost_answer",
    "lost_replay",
    "wait_deadline",
]

POLL_S: Final = 0.25
"""How often `journal_wait` reads the journal (only while a run's node cannot answer)."""
DEFAULT_WAIT_S: Final = 30.0
"""`agent.wait`'s timeout when the request gives none (as the method's own)."""


def wait_deadline(params: object) -> float:
    """When an `agent.wait` with `params` stops waiting (trio's clock)."""
    timeout_ms = params.get("timeoutMs") if isinstance(params, dict) else None
    wait_s = timeout_ms / 1000 if isinstance(timeout_ms, int | float) else DEFAULT_WAIT_S
    return trio.current_time() + max(0.0, wait_s)


async def journal_answer(gateway: Any, run_id: str) -> dict[str, Any] | None:
    """`agent.wait`'s answer for `run_id` if this node knows it ended or the journal says
    it did (one read), else None. A checkpoint. Raises `StoreError`."""
    actors = gateway.actors
    record = actors.registry.get(run_id)
    if record is not None:  # known here: only an ended one answers
        await trio.lowlevel.checkpoint()
        return record.wait_answer() if record.ended else None
    found = await recall_run(actors.supervisor, run_id, restore=False)
    if not isinstance(found, RecoveredRun):  # (its record is not finished: only read)
        return None
    answer: dict[str, Any] = found.record.wait_answer()
    return answer


async def journal_wait(gateway: Any, run_id: str, deadline: float) -> dict[str, Any]:
    """`agent.wait`'s answer for `run_id` from what this node knows or the journal says,
    waiting for the run's end until `deadline` (see the module docstring). A checkpoint.
    Raises `StoreError` when the journal cannot be read."""
    while True:
        answer = await journal_answer(gateway, run_id)
        if answer is not None:
            return answer
        left = deadline - trio.current_time()
        if left <= 0:
            return {"runId": run_id, "status": "timeout"}
        await trio.sleep(min(POLL_S, left))


async def lost_answer(gateway: Any, run_id: str, node: str) -> dict[str, Any]:
    """`agent.wait` for a run of `node`, which this node takes for lost (its record gone):
    how the run ended if the journal says (it may have gone on there, cut off from Redis
    only), else `error`, interrupted with its node (as the reaper will end it). A
    checkpoint."""
    try:
        answer = await journal_answer(gateway, run_id)
    except StoreError:
        answer = None
    return answer or {"runId": run_id, "status": "error", "error": lost_reason(run_id, node)}


async def answer_gone(gateway: Any, fwd: Forward, reason: str) -> None:
    """The forwarded request's node cannot answer (`reason` says why): an answer here
    instead. `agent.wait`: the journal's (`journal_wait`; `timeout` when the journal cannot
    be read either). `agent` that was acknowledged: `UNAVAILABLE`, run interrupted (its
    key never runs it twice). Anything not answered yet: `UNAVAILABLE`, retryable. A
    checkpoint for `agent.wait` only."""
    if fwd.method == "agent.wait":
        run_id = fwd.run_id or ""
        try:
            answer = await journal_wait(gateway, run_id, fwd.deadline)
        except StoreError:
            answer = {"runId": run_id, "status": "timeout"}
        fwd.conn.respond(fwd.req_id, answer)
    elif fwd.method == "agent" and fwd.answers:
        fwd.conn.respond_error(fwd.req_id, GatewayError(UNAVAILABLE, f"run interrupted: {reason}"))
    elif not fwd.answers:
        fwd.conn.respond_error(fwd.req_id, unavailable(reason))


def lost_replay(run_id: str, params: Any) -> dict[str, Any]:
    """`runs.replay` of a run whose node is gone: its frames went with it (they live in
    their node's memory only), and the run is over (ended there, or interrupted: nothing
    runs it again). Answered as a replay whose buffer no longer reaches back: nothing
    replayed, `gap` (read the transcript, `chat.history`, instead), `ended`."""
    after = params.get("afterSeq", 0) if isinstance(params, dict) else 0
    last = after if isinstance(after, int) and after >= 0 else 0
    return {"runId": run_id, "replayed": 0, "gap": True, "lastSeq": last, "ended": True}
