"""The questions the gateway holds for its operators to answer: each pending until an
operator answers or cancels it, its deadline passes, or the run that asked it ends.

`Questions` is the `runtime.tools.QuestionDesk` the gateway gives its runs (`ask_user`
waits in `ask`) and what the `question.*` methods read and change (`open`, `resolve`,
`cancel`, `wait`, `get`, `pending`).

Who is told: the operator connections whose scopes satisfy `operator.questions`
(`operator.admin` satisfies every operator scope) get `question.requested` (the record) when
one is raised and `question.resolved` (`{id, status, answers?}`) when it ends, however it
ended; both go to this gateway's connections and, in a cluster, to the other nodes' (`peers`:
`actors.approvals.DeskPeers`, the node's `transports.cluster` side, which tells them, lists this
node's pending ones there and forwards their answers here; `records` lists the other nodes'
pending ones too). A question with no operator connected stays pending (an operator who
connects later finds it with `question.list`), as OpenClaw's.

How one ends (`QuestionStatus`): `answered` (the first valid answer wins; a later one is
`QUESTION_ALREADY_TERMINAL`), `cancelled` (an operator's `question.resolve {cancel: true}`,
or the asking run ended: `resolvedBy: "requester-inactive"`, as OpenClaw cancels a question
whose run is gone, so answering it is `question '<id>' is already cancelled` for 15 s, then
not found), `expired` (its `timeoutMs` passed). Answers are checked as
OpenClaw checks them: every question answered, no empty value, one value unless
`multiSelect`, a value that is not an option only when the question allows free text
(`isOther`); values matching an option (spaces aside) take the option's label.

Bounds: at most `MAX_PENDING` pending (more: `QuestionsFull`); ended ones are kept 15 s
(OpenClaw's grace for a late `waitAnswer` or `get`), then forgotten. Deadlines are kept by
`run`, a task of the gateway's nursery, and by whoever waits.

Everything runs in the trio thread; which calls are checkpoints is said on each.
"""

from __future__ import annotations

import collections
import math
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Final, Literal

import attrs
import trio

from runtime.tools import AskOutcome, InvalidAnswerError, canonical_answers

from .._errors import ActorError
from ..approvals import Approver, DeskPeers
from ..runs import EventHub

__all__ = [
    "MAX_PENDING",
    "QUESTIONS_SCOPE",
    "Question",
    "QuestionError",
    "QuestionStatistics",
    "Questions",
    "QuestionsFull",
]

QUESTIONS_SCOPE: Final = "operator.questions"
REQUESTED: Final = "question.requested"
RESOLVED: Final = "question.resolved"
MAX_PENDING: Final = 1024
KIND: Final = "question"
REQUESTER_INACTIVE: Final = "requester-inactive"
ENDED_GRACE_S: Final = 15.0

QuestionStatus = Literal["pending", "answered", "cancelled", "expired"]


class QuestionError(ActorError):
    """A question call refused: `reason` is OpenClaw's code (`QUESTION_NOT_FOUND`,
    `QUESTION_ALREADY_TERMINAL`, `QUESTION_ID_IN_USE`, `QUESTION_INVALID_ANSWER`)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class QuestionsFull(ActorError):
    """`MAX_PENDING` questions are pending already."""


def _wall_ms() -> int:
    return int(time.time() * 1000)


@attrs.define(eq=False)
class Question:
    """One question record and how it ended."""

    id: str
    questions: list[dict[str, Any]]
    agent_id: str | None
    session_key: str | None
    run_id: str | None
    created_at_ms: int
    expires_at_ms: int
    deadline: float
    """When it expires, on trio's clock."""
    status: QuestionStatus = "pending"
    answers: dict[str, list[str]] | None = None
    resolved_by: str | None = None
    resolution_id: str | None = None
    from_run: bool = False
    ended_at: float = 0.0
    done: trio.Event = attrs.field(factory=trio.Event)

    @property
    def pending(self) -> bool:
        return self.status == "pending"

    def record(self) -> dict[str, Any]:
        """The `QuestionRecord`: `question.requested`, `question.get`, `question.list`."""
        out: dict[str, Any] = {"id": self.id, "questions": self.questions}
        for key, value in (
            ("agentId", self.agent_id),
            ("sessionKey", self.session_key),
            ("runId", self.run_id),
        ):
            if value:
                out[key] = value
        out |= {
            "createdAtMs": self.created_at_ms,
            "expiresAtMs": self.expires_at_ms,
            "status": self.status,
        }
        if self.status == "answered":
            out["answers"] = {"answers": self.answers or {}}
        if self.resolved_by:
            out["resolvedBy"] = self.resolved_by
        return out

    def view(self) -> dict[str, Any]:
        """The record, as a cluster's other nodes are told it (`actors.approvals.DeskPeers`)."""
        return self.record()

    def wait_result(self, *, include_resolution_id: bool = False) -> dict[str, Any]:
        """The `QuestionWaitAnswerResult`."""
        if self.status != "answered":
            return {"status": self.status}
        out: dict[str, Any] = {"status": "answered", "answers": {"answers": self.answers or {}}}
        if include_resolution_id and self.resolution_id:
            out["resolutionId"] = self.resolution_id
        return out

    def resolved_event(self) -> dict[str, Any]:
        """The `question.resolved` payload."""
        if self.status == "answered":
            return {"id": self.id, "status": "answered", "answers": {"answers": self.answers}}
        return {"id": self.id, "status": self.status}


@attrs.frozen
class QuestionStatistics:
    pending: int
    raised: int
    answered: int
    cancelled: int
    expired: int


class Questions:
    """The pending and recently ended questions of one gateway (see the module docstring).
    `connections`: the gateway's, by id, read when a question is raised or ends."""

    def __init__(
        self,
        hub: EventHub,
        connections: Mapping[str, Approver],
        *,
        now_ms: Callable[[], int] = _wall_ms,
    ) -> None:
        self._hub = hub
        self._connections = connections
        self._now_ms = now_ms
        self._pending: dict[str, Question] = {}
        self._ended: collections.OrderedDict[str, Question] = collections.OrderedDict()
        self._changed = trio.Event()
        self._counts: collections.Counter[str] = collections.Counter()
        self.peers: DeskPeers | None = None
        """The other nodes of the cluster (None: this gateway alone)."""

    def operators(self) -> list[Approver]:
        """The connections told of questions. Not a checkpoint."""
        return [
            c
            for c in self._connections.values()
            if c.role == "operator" and c.has_scope(QUESTIONS_SCOPE)
        ]

    # --- raising ---------------------------------------------------------------------------

    def open(
        self,
        questions: list[dict[str, Any]],
        *,
        timeout_ms: int,
        question_id: str | None = None,
        agent_id: str | None = None,
        session_key: str | None = None,
        run_id: str | None = None,
        from_run: bool = False,
    ) -> Question:
        """Raise a question (shape already checked) and tell the operators. Raises
        `QuestionError` (`QUESTION_ID_IN_USE`), `QuestionsFull`. Not a checkpoint."""
        if question_id is not None and (
            self.get(question_id) is not None or self._elsewhere(question_id)
        ):
            raise QuestionError("QUESTION_ID_IN_USE", f"question '{question_id}' already exists")
        if len(self._pending) >= MAX_PENDING:
            raise QuestionsFull(f"{MAX_PENDING} questions are pending already")
        now = self._now_ms()
        question = Question(
            id=question_id or str(uuid.uuid4()),
            questions=questions,
            agent_id=agent_id,
            session_key=session_key,
            run_id=run_id,
            created_at_ms=now,
            expires_at_ms=now + timeout_ms,
            deadline=trio.current_time() + timeout_ms / 1000,
            from_run=from_run,
        )
        self._pending[question.id] = question
        self._counts["raised"] += 1
        targets = self.operators()
        if targets:
            self._hub.send_to(targets, REQUESTED, question.record())
        if self.peers is not None:
            self.peers.raised(KIND, question.view())
        self._changed.set()
        return question

    def _elsewhere(self, question_id: str) -> bool:
        """Whether a question `question_id` is pending on another node of the cluster."""
        if self.peers is None:
            return False
        return any(v.get("id") == question_id for v in self.peers.pending_elsewhere(KIND))

    def pending_for_session(self, session_key: str) -> bool:
        """`runtime.tools.QuestionDesk`: a run of `session_key` has a question pending."""
        return any(q.from_run and q.session_key == session_key for q in self._pending.values())

    async def ask(
        self,
        questions: list[dict[str, Any]],
        *,
        agent_id: str,
        session_key: str,
        run_id: str,
        timeout_ms: int,
    ) -> AskOutcome:
        """`runtime.tools.QuestionDesk`: raise a run's question and wait for its end (at most
        to its deadline). A checkpoint; cancelled (the run aborted), it ends `cancelled` (the
        operators are told) and the cancellation propagates. Raises `QuestionsFull`."""
        question = self.open(
            questions,
            timeout_ms=timeout_ms,
            question_id=f"ask_{uuid.uuid4().hex}",
            agent_id=agent_id,
            session_key=session_key,
            run_id=run_id,
            from_run=True,
        )
        try:
            await self.settle(question)
        except trio.Cancelled:
            self._end(question, "cancelled", REQUESTER_INACTIVE)
            raise
        if question.status == "answered":
            return AskOutcome("answered", question.answers)
        return AskOutcome("cancelled" if question.status == "cancelled" else "expired")

    # --- waiting ---------------------------------------------------------------------------

    async def settle(self, question: Question) -> Question:
        """Wait for `question` to end, at most to its deadline (it then expires). A
        checkpoint; cancelled, the question is left as it is."""
        with trio.move_on_at(question.deadline):
            await question.done.wait()
        self._end(question, "expired")  # nothing when it ended already
        return question

    async def wait(self, question: Question, timeout_s: float | None = None) -> Question:
        """Wait for `question` to end, or `timeout_s` (then it may still be pending). A
        checkpoint; cancellable."""
        with trio.move_on_after(math.inf if timeout_s is None else timeout_s):
            await question.done.wait()
        return question

    # --- answering ---------------------------------------------------------------------------

    def resolve(
        self,
        question_id: str,
        answers: dict[str, list[str]],
        *,
        resolved_by: str | None = None,
        resolution_id: str | None = None,
    ) -> dict[str, list[str]]:
        """An operator's answers; returns them canonical. Raises `QuestionError`
        (not found, already ended, an invalid answer). Not a checkpoint."""
        question = self._require_pending(question_id)
        try:
            canonical = canonical_answers(question.questions, answers)
        except InvalidAnswerError as exc:
            raise QuestionError("QUESTION_INVALID_ANSWER", str(exc)) from exc
        question.answers = canonical
        question.resolution_id = resolution_id
        self._end(question, "answered", resolved_by)
        return canonical

    def cancel(self, question_id: str, *, resolved_by: str | None = None) -> None:
        """An operator declines the whole prompt. Raises `QuestionError`. Not a checkpoint."""
        self._end(self._require_pending(question_id), "cancelled", resolved_by)

    def _require_pending(self, question_id: str) -> Question:
        question = self.get(question_id)
        if question is None:
            raise QuestionError("QUESTION_NOT_FOUND", f"question '{question_id}' was not found")
        if not question.pending:
            raise QuestionError(
                "QUESTION_ALREADY_TERMINAL",
                f"question '{question_id}' is already {question.status}",
            )
        return question

    def _end(
        self, question: Question, status: QuestionStatus, resolved_by: str | None = None
    ) -> None:
        """End a pending question (nothing when it ended already) and tell the operators."""
        if not question.pending:
            return
        question.status = status
        question.resolved_by = resolved_by
        question.ended_at = trio.current_time()
        self._pending.pop(question.id, None)
        self._ended[question.id] = question
        self._counts[status] += 1
        question.done.set()
        targets = self.operators()
        if targets:
            self._hub.send_to(targets, RESOLVED, question.resolved_event())
        if self.peers is not None:
            self.peers.ended(KIND, question.id, question.resolved_event())
        self._changed.set()

    # --- reading -----------------------------------------------------------------------------

    def get(self, question_id: str) -> Question | None:
        """A pending question, or one that ended in the last 15 s (a pending one past its
        deadline expires here). Not a checkpoint."""
        question = self._pending.get(question_id)
        if question is not None:
            if question.deadline <= trio.current_time():
                self._end(question, "expired")
            return question
        question = self._ended.get(question_id)
        if question is not None and question.ended_at < trio.current_time() - ENDED_GRACE_S:
            return None
        return question

    def pending(self) -> list[Question]:
        """The pending questions, oldest first. Not a checkpoint."""
        now = trio.current_time()
        for question in [q for q in self._pending.values() if q.deadline <= now]:
            self._end(question, "expired")
        return sorted(self._pending.values(), key=lambda q: (q.created_at_ms, q.id))

    def records(self) -> list[dict[str, Any]]:
        """The records of the pending questions, this gateway's and (in a cluster) the
        other nodes', oldest first. Not a checkpoint."""
        views = [q.record() for q in self.pending()]
        if self.peers is not None:
            views += self.peers.pending_elsewhere(KIND)
        return sorted(views, key=lambda v: (v.get("createdAtMs", 0), str(v.get("id"))))

    def notify(self, event: str, payload: dict[str, Any]) -> None:
        """Send another node's question event to this gateway's operators. Not a
        checkpoint."""
        targets = self.operators()
        if targets:
            self._hub.send_to(targets, event, payload)

    def statistics(self) -> QuestionStatistics:
        c = self._counts
        return QuestionStatistics(
            pending=len(self._pending),
            raised=c["raised"],
            answered=c["answered"],
            cancelled=c["cancelled"],
            expired=c["expired"],
        )

    # --- deadlines -----------------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Expire the questions whose deadline passed and forget those ended more than 15 s
        ago, for the gateway's lifetime. Never returns; cancel it to stop."""
        task_status.started()
        while True:
            self._changed = trio.Event()
            deadline = min((q.deadline for q in self._pending.values()), default=math.inf)
            if self._ended:
                oldest = next(iter(self._ended.values()))
                deadline = min(deadline, oldest.ended_at + ENDED_GRACE_S)
            with trio.move_on_at(deadline):
                await self._changed.wait()
            now = trio.current_time()
            for question in [q for q in self._pending.values() if q.deadline <= now]:
                self._end(question, "expired")
            ended = self._ended
            while ended and next(iter(ended.values())).ended_at + ENDED_GRACE_S <= now:
                ended.popitem(last=False)
