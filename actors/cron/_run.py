"""One cron firing: its run on the `cron` global lane, and the run-history entry it leaves.

Where a job's payload runs (OpenClaw's execution styles):

- `isolated`: a fresh session per run, `agent:<agent>:cron:<jobId>:run:<uuid>`;
- `session:<id>`: the named session (`agent:<agent>:<id>`), its history carried over runs;
- `current` (a job created with a `sessionKey`): that session;
- `main` + `systemEvent`: the agent's main session, as OpenClaw's: the text is queued as a
  system event of that session (`runtime.heartbeat.SystemEventQueue`, context
  `cron:<jobId>`) and a heartbeat wake (`actors.heartbeat`, source `cron`, reason
  `cron:<jobId>`) tells it (`Heartbeats.deliver_event`: in a cluster on the node that owns
  the session, which keeps it: the session does not move to this node). `wakeMode: "now"`
  wakes at once (`immediate`) and the firing waits for that heartbeat: `ok` once it ran (or
  handed off to a later retry: a cron run in progress, or past 2 minutes), else
  `skipped`/`error` with the heartbeat's reason and the event taken back. `next-heartbeat`
  wakes as an `event`, which waits for the agent's next due heartbeat (an agent without a
  cadence runs none: the session's next turn reads the event); the firing is `ok` at once.
  Without heartbeats (no `open_heartbeats`) the event waits for the session's next turn
  either way.

Every agent turn goes through the session's own lane and then the `cron` global lane (cap
`cron.maxConcurrentRuns`, default 1), like any run: lifecycle and chat events, transcript,
`agent.wait`. Timeout: the payload's `timeoutSeconds` (0: none), else the scheduler's 60-min
watchdog (OpenClaw's). The LLM idle watchdog follows the seed's rule for cron runs: none
unless `agents.defaults.llm.idleTimeoutSeconds` or `agents.defaults.timeoutSeconds` is set.
"""

from __future__ import annotations

import hashlib
import json
import logging
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

import msgspec
import trio

from runtime.agent import normalize_think_level
from runtime.cron import CronJob, FiringOutcome
from runtime.loop import now_ms
from runtime.model import GenerationError, ModelRuntimeGeneration
from runtime.protocol import CronAddParamsPayloadAgentTurn, GatewayError, describe_exception
from runtime.sessions import DEFAULT_MAIN_KEY, SessionKeyError

from .._admission import Admission
from .._errors import StoreError
from ..approvals import CronRunSource, ExecApprovals
from ..cluster import ClusterError
from ..runs import RunRecord
from ..session import RunRequest

if TYPE_CHECKING:
    from .._supervisor import Supervisor

__all__ = ["SCHEDULER_WATCHDOG_S", "execute", "job_revision", "void_grants"]

log = logging.getLogger("clawlane.cron")

SCHEDULER_WATCHDOG_S: Final = 3600.0


def job_revision(job: CronJob) -> str:
    """The job's definition, hashed: what it runs and when, without its state, its times or
    whether it is enabled (a standing grant is bound to it: pausing and resuming keeps it)."""
    definition = msgspec.to_builtins(job)
    for key in ("state", "updatedAtMs", "createdAtMs", "enabled"):
        definition.pop(key, None)
    text = json.dumps(definition, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def _register_cron_run(
    sup: Supervisor,
    job: CronJob,
    agent_id: str,
    run_id: str,
    lookup: Callable[[str], CronJob | None] | None,
) -> Callable[[], None]:
    """Tell the exec approvals `run_id` is `job`'s (standing grants: only for a run in an
    isolated session, as OpenClaw registers only those); returns what forgets it."""
    approvals = sup.services.exec_approver
    if not isinstance(approvals, ExecApprovals) or job.sessionTarget != "isolated":
        return lambda: None

    def current() -> str | None:
        found = lookup(job.id) if lookup is not None else job
        return None if found is None else job_revision(found)

    source = CronRunSource(agent_id, job.id, job.name, job_revision(job), current)
    return approvals.cron_runs.register(run_id, source)


async def void_grants(sup: Supervisor, old: CronJob, new: CronJob) -> None:
    """`new` replaces `old`: when its definition changed, the standing grants minted for
    the job never match again. A checkpoint; a store failure is logged (a grant is still
    checked against the job's definition at each use)."""
    approvals = sup.services.exec_approver
    grants = approvals.grants if isinstance(approvals, ExecApprovals) else None
    if grants is None or job_revision(old) == job_revision(new):
        await trio.lowlevel.checkpoint()
        return
    try:
        await grants.job_changed(new.id)
    except StoreError as exc:
        log.warning("cron job %s: its standing grants were not voided: %s", new.id, exc)


def _session_key(sup: Supervisor, job: CronJob, agent_id: str) -> str:
    target = job.sessionTarget
    if target == "isolated":
        return f"agent:{agent_id}:cron:{job.id.lower()}:run:{uuid.uuid4()}"
    if target == "main":
        return f"agent:{agent_id}:{DEFAULT_MAIN_KEY}"
    if target.startswith("session:"):
        return sup.resolve_key(target[8:], agent_id)
    return sup.resolve_key(job.sessionKey, agent_id)  # current


def _turn_options(
    gen: ModelRuntimeGeneration, job: CronJob, agent_id: str
) -> tuple[str, str | None, float | None]:
    """The turn's message, model and timeout from the job's payload. Raises
    `GenerationError` (an unknown `payload.model`)."""
    payload = job.payload
    if not isinstance(payload, CronAddParamsPayloadAgentTurn):
        return payload.text, None, SCHEDULER_WATCHDOG_S  # a system event: no turn of its own
    model_ref: str | None = None
    timeout_s: float | None = SCHEDULER_WATCHDOG_S
    if isinstance(payload.model, str) and payload.model.strip():
        model_ref = payload.model.strip()
        try:
            gen.resolve(model_ref, agent_id=agent_id)
        except GenerationError as exc:
            raise GenerationError(f"payload.model: {exc}") from exc
    if isinstance(payload.timeoutSeconds, float | int):
        timeout_s = float(payload.timeoutSeconds) or None
    return payload.message, model_ref, timeout_s


async def _system_event(
    sup: Supervisor, job: CronJob, agent_id: str, key: str, text: str, outcome: FiringOutcome
) -> None:
    """A main-session `systemEvent` firing (see the module docstring). A checkpoint."""
    context = f"cron:{job.id}"
    outcome.summary = text
    beats = sup.heartbeats
    if beats is None:  # no heartbeat tells it: the session's next turn reads it
        if sup.session_gate is not None:
            await sup.session_gate(key)  # in a cluster: the session moves to this node
        actor = await sup.session(key, agent_id)
        outcome.session_id = (await actor.save_row(updatedAt=now_ms())).sessionId
        sup.services.system_events.enqueue(key, text, context_key=context)
        outcome.status = "ok"
        return
    delivered = await beats.deliver_event(
        agent_id, key, text, context_key=context, wait=job.wakeMode == "now"
    )
    outcome.session_id = delivered.session_id
    result = delivered.wake
    if result is None or result.status == "ran" or result.handed_off:
        outcome.status = "ok"
        return
    outcome.status = "skipped" if result.status == "skipped" else "error"
    outcome.error = result.reason


async def execute(
    sup: Supervisor,
    job: CronJob,
    clock: Callable[[], int] = now_ms,
    lookup: Callable[[str], CronJob | None] | None = None,
) -> FiringOutcome:
    """Run `job`'s payload to its end (times from `clock`, the scheduler's; `lookup` reads
    a job as the scheduler has it now, for the standing grants). Never raises but
    `Cancelled`. A checkpoint."""
    started = clock()
    outcome = FiringOutcome(status="error", started_at=started, ended_at=started)
    gen = sup.generation
    try:
        spec = gen.agent(job.agentId)
        key = _session_key(sup, job, spec.id)
        outcome.session_key = key
        payload = job.payload
        message, model_ref, timeout_s = _turn_options(gen, job, spec.id)
        if not isinstance(payload, CronAddParamsPayloadAgentTurn):
            await _system_event(sup, job, spec.id, key, payload.text, outcome)
            return outcome
        if sup.session_gate is not None:
            await sup.session_gate(key)  # in a cluster: the session moves to this node
        actor = await sup.session(key, spec.id)
        assert actor.row is not None
        thinking = getattr(payload, "thinking", None)
        level = normalize_think_level(thinking) if isinstance(thinking, str) else None
        row = await actor.save_row(
            updatedAt=now_ms(), **({"thinkingLevel": level} if level else {})
        )
        outcome.session_id = row.sessionId
        cap = gen.config.cron.maxConcurrentRuns
        lane = sup.lane_for("cron")
        if lane.slots.total_tokens != cap:
            lane.slots.total_tokens = cap
        record = RunRecord(
            run_id=str(uuid.uuid4()),
            session_key=key,
            session_id=row.sessionId,
            agent_id=spec.id,
            accepted_at=now_ms(),
        )
        outcome.agent_run_id = record.run_id
        request = RunRequest(
            lane="cron", record=record, message=message, timeout_s=timeout_s, model_ref=model_ref
        )
        # Registered, streamed and queued, or refused / ended (no phantom run); no
        # journal row and no idempotency key: the scheduler keeps the firing's history.
        admission = Admission(sup, kind="agent", run_id=record.run_id, dedupe=False)
        forget = _register_cron_run(sup, job, spec.id, record.run_id, lookup)
        try:
            await admission.admit(actor, request, "followup", writes_row=False, journal=False)
            try:
                await record.done.wait()
            except BaseException:
                record.abort("shutdown")
                raise
        finally:
            forget()
        outcome.take_run(record, timeout_s)
    except (GenerationError, SessionKeyError, GatewayError, ClusterError) as exc:
        outcome.error = str(exc)
    except Exception as exc:  # a bug: this firing fails, the scheduler carries on
        log.exception("cron job %s crashed", job.id)
        outcome.error = f"internal error: {describe_exception(exc)}"
    finally:
        outcome.ended_at = clock()
    return outcome
