"""The embedded runtime's desks: where `ask_user` asks, where `progress_card` keeps the
session's card, and what the `gateway` tool reads, in memory and in-process.

- `EmbeddedQuestions` (`runtime.tools.QuestionDesk`): a run's question is reported through
  that run's events as the gateway's `question.requested` (stream `question.requested`,
  data: the question record `{id, questions, agentId, sessionKey, runId, createdAtMs,
  expiresAtMs, status}`) and waits for `answer(id, answers)` (checked as the gateway checks
  an operator's: `runtime.tools.canonical_answers`) or its deadline; however it ends,
  `question.resolved` (`{id, status, answers?}`) follows. An aborted run cancels its
  question. Ended questions are forgotten.
- `EmbeddedCards` (`runtime.tools.CardDesk`): one card per session, replaced whole by each
  write (`{sessionKey, revision, updatedAt, markdown?, steps?}`, the revision counting every
  write, clears included), read with `get`; each write is reported through the events of
  the session's running turn as `progressCard.changed` (`{sessionKey, revision}`, revision
  null when cleared). At most `MAX_CARDS` sessions' cards; the one written longest ago goes first.
- `EmbeddedConfigReader` (`runtime.tools.ConfigReader`): the runtime's current config as
  `config.get` shows it (no file: `path` null, `exists` false; `config` redacted; `hash` of
  the config) and the config schema (`runtime.model.lookup_config_schema`). The `gateway`
  tool writes nothing (as OpenClaw's); `EmbeddedRuntime.publish` is how a config changes.
- `NoScheduler` (`runtime.tools.AutomationsHost`): a runtime not open as `async with` has
  no scheduler (its jobs would run as the runtime's tasks: `_embedded_cron`), so
  `automations` (alias `cron`) is offered and every action is a tool error saying so.

Everything runs in the trio thread; only `ask` and the schema lookup are checkpoints.
"""

from __future__ import annotations

import collections
import functools
import time
import uuid
from collections.abc import Callable
from typing import Any, Final, Literal

import attrs
import trio

from ..model import (
    ConfigForm,
    config_form_schema,
    config_to_builtins,
    lookup_config_schema,
    redact_config,
)
from ..model._config import Config, config_hash
from ..tools import AskOutcome, ToolContext, ToolError, canonical_answers

__all__ = [
    "MAX_CARDS",
    "EmbeddedCards",
    "EmbeddedConfigReader",
    "EmbeddedQuestions",
    "NoScheduler",
    "QuestionNotPending",
    "RunEmitter",
]

MAX_CARDS: Final = 10_000
QUESTION_REQUESTED: Final = "question.requested"
QUESTION_RESOLVED: Final = "question.resolved"
CARD_CHANGED: Final = "progressCard.changed"

RunEmitter = Callable[[str, str, dict[str, Any]], None]
"""Reports an event through the events of the session's running turn: `(session_key,
stream, data)`; with no turn going on there, nothing is reported."""


def _wall_ms() -> int:
    return int(time.time() * 1000)


class QuestionNotPending(KeyError):
    """No such question is pending (never asked, or already ended)."""


@attrs.define(eq=False)
class _Question:
    id: str
    questions: list[dict[str, Any]]
    agent_id: str
    session_key: str
    run_id: str
    created_at_ms: int
    expires_at_ms: int
    status: Literal["pending", "answered", "cancelled", "expired"] = "pending"
    answers: dict[str, list[str]] | None = None
    done: trio.Event = attrs.field(factory=trio.Event)

    def record(self) -> dict[str, Any]:
        """The gateway's `QuestionRecord`."""
        out: dict[str, Any] = {
            "id": self.id,
            "questions": self.questions,
            "agentId": self.agent_id,
            "sessionKey": self.session_key,
            "runId": self.run_id,
            "createdAtMs": self.created_at_ms,
            "expiresAtMs": self.expires_at_ms,
            "status": self.status,
        }
        if self.status == "answered":
            out["answers"] = {"answers": self.answers or {}}
        return out


class EmbeddedQuestions:
    """The questions the runs of an embedded runtime ask (see the module docstring)."""

    def __init__(self, emit: RunEmitter) -> None:
        self._emit = emit
        self._pending: dict[str, _Question] = {}

    def pending(self) -> list[dict[str, Any]]:
        """The pending questions' records, oldest first."""
        return [q.record() for q in self._pending.values()]

    def pending_for_session(self, session_key: str) -> bool:
        return any(q.session_key == session_key for q in self._pending.values())

    async def ask(
        self,
        questions: list[dict[str, Any]],
        *,
        agent_id: str,
        session_key: str,
        run_id: str,
        timeout_ms: int,
    ) -> AskOutcome:
        """Report the question through the run's events and wait for its answer, at most
        `timeout_ms` (then it expires). A checkpoint; cancelled (the run aborted), it ends
        `cancelled` and the cancellation propagates."""
        now = _wall_ms()
        question = _Question(
            f"ask_{uuid.uuid4().hex}",
            questions,
            agent_id,
            session_key,
            run_id,
            now,
            now + timeout_ms,
        )
        self._pending[question.id] = question
        self._emit(session_key, QUESTION_REQUESTED, question.record())
        try:
            with trio.move_on_after(timeout_ms / 1000):
                await question.done.wait()
        except trio.Cancelled:
            self._end(question, "cancelled")
            raise
        self._end(question, "expired")  # nothing when it ended already
        if question.status == "answered":
            return AskOutcome("answered", question.answers)
        return AskOutcome("expired")

    def answer(self, question_id: str, answers: dict[str, list[str]]) -> dict[str, list[str]]:
        """Answer a pending question (`{<questionId>: [values]}`); returns the answers in
        canonical form. Raises `QuestionNotPending`, `runtime.tools.InvalidAnswerError`.
        Not a checkpoint."""
        question = self._pending.get(question_id)
        if question is None:
            raise QuestionNotPending(question_id)
        question.answers = canonical_answers(question.questions, answers)
        self._end(question, "answered")
        return question.answers

    def cancel(self, question_id: str) -> None:
        """Cancel a pending question (its run reads `no_answer`). Raises
        `QuestionNotPending`."""
        question = self._pending.get(question_id)
        if question is None:
            raise QuestionNotPending(question_id)
        self._end(question, "cancelled")

    def _end(
        self, question: _Question, status: Literal["answered", "cancelled", "expired"]
    ) -> None:
        if question.status != "pending":
            return
        question.status = status
        self._pending.pop(question.id, None)
        question.done.set()
        resolved: dict[str, Any] = {"id": question.id, "status": status}
        if status == "answered":
            resolved["answers"] = {"answers": question.answers}
        self._emit(question.session_key, QUESTION_RESOLVED, resolved)


class EmbeddedCards:
    """The sessions' progress cards of an embedded runtime (see the module docstring)."""

    def __init__(self, emit: RunEmitter) -> None:
        self._emit = emit
        self._slots: collections.OrderedDict[str, tuple[int, dict[str, Any] | None]] = (
            collections.OrderedDict()
        )

    def get(self, session_key: str) -> dict[str, Any] | None:
        """The card of `session_key`, or None."""
        slot = self._slots.get(session_key)
        return None if slot is None else slot[1]

    def put(
        self,
        session_key: str,
        card: dict[str, Any],
        *,
        agent_id: str | None = None,
        expected_revision: int | None = None,
    ) -> dict[str, Any] | None:
        """Replace the card (`{markdown?, steps?}`; empty clears it); the card now stored,
        or None. With `expected_revision` (a clear only) nothing changes unless the card is
        at that revision with every step completed."""
        revision, stored = self._slots.get(session_key, (0, None))
        if not card and expected_revision is not None:
            steps = (stored or {}).get("steps") or []
            if revision != expected_revision or any(s["status"] != "completed" for s in steps):
                return stored
        revision += 1
        if card:
            stored = {"sessionKey": session_key, "revision": revision, "updatedAt": _wall_ms()}
            stored |= card
        else:
            stored = None
        self._slots[session_key] = (revision, stored)
        self._slots.move_to_end(session_key)
        while len(self._slots) > MAX_CARDS:
            self._slots.popitem(last=False)
        changed = {"sessionKey": session_key, "revision": revision if stored else None}
        self._emit(session_key, CARD_CHANGED, changed)
        return stored


@functools.cache
def _form() -> ConfigForm:
    return config_form_schema()


class EmbeddedConfigReader:
    """`runtime.tools.ConfigReader` over the runtime's current config (`config()`)."""

    def __init__(self, config: Callable[[], Config]) -> None:
        self._config = config

    async def config_snapshot(self) -> dict[str, Any]:
        """What `config.get` would show of the runtime's config (redacted). A checkpoint."""
        await trio.lowlevel.checkpoint()
        config = self._config()
        shown = redact_config(config_to_builtins(config))
        return {
            "path": None,
            "exists": False,
            "hash": config_hash(config),
            "valid": True,
            "issues": [],
            "warnings": [],
            "legacyIssues": [],
            "config": shown,
        }

    async def schema_lookup(self, path: str) -> dict[str, Any] | None:
        """The schema's node at `path`, or None. A checkpoint (the schema is built in a
        worker thread the first time)."""
        return lookup_config_schema(await trio.to_thread.run_sync(_form), path)


NO_SCHEDULER: Final = (
    "automations are not available in the embedded runtime unless it is open as "
    "`async with` (its jobs run as the runtime's tasks); durable jobs are the gateway's "
    "(run clawlane gateway)"
)


class NoScheduler:
    """`runtime.tools.AutomationsHost` of a runtime without a scheduler: every call is a
    tool error naming why (see the module docstring)."""

    async def call(self, ctx: ToolContext, method: str, params: dict[str, Any]) -> dict[str, Any]:
        await trio.lowlevel.checkpoint()
        raise ToolError(NO_SCHEDULER)
