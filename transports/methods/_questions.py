"""The question methods (scope `operator.questions`; `operator.admin` satisfies it), on the
gateway's `actors.Questions`: what OpenClaw's TUI and Control UI call to show an agent's
`ask_user` question and send the operator's answer back to the waiting run.

- `question.request` (`QuestionRequestParams`): a client raises a question; the answer is
  `{id, expiresAtMs}` at once (the question stays pending until answered, cancelled or
  `timeoutMs` passes, default 900 s). Shape errors as OpenClaw's (`duplicate question id`,
  one option only, secret questions, ...) and `question '<id>' already exists`
  (`details.reason: QUESTION_ID_IN_USE`) are `INVALID_REQUEST`. A `sessionKey` is resolved
  to its canonical key.
- `question.waitAnswer` (`{id, timeoutMs?, includeResolutionId?}`): waits for the end (or
  `timeoutMs`: then `{status: "pending"}`) and answers `QuestionWaitAnswerResult`.
- `question.resolve`: `{id, answers: {answers: {<questionId>: [values]}}, resolvedBy?,
  resolutionId?}` answers (`{status: "answered", answers}`, canonical), `{id, cancel: true}`
  declines (`{status: "cancelled"}`); the first wins, later ones are
  `question '<id>' is already <status>` (`QUESTION_ALREADY_TERMINAL`); an answer that does
  not fit is `QUESTION_INVALID_ANSWER`.
- `question.get` (`{id}`): `{question: QuestionRecord}`; `question.list`: the pending ones,
  `{questions: [...]}`, oldest first.

Unknown ids (or ended more than 15 s ago) are `question '<id>' was not found`
(`details.reason: QUESTION_NOT_FOUND`), as OpenClaw answers; a question whose run ended is
cancelled (`resolvedBy: requester-inactive`), so answering it is `question '<id>' is already
cancelled` until then.

In a cluster `question.list` lists every node's pending questions, and the router sends
`question.resolve`, `question.waitAnswer` and `question.get` for a question of another node
to that node (`transports.cluster`), whose answer is the one given here.
"""

from __future__ import annotations

from typing import Annotated, Any, Final

import msgspec
import trio

from actors import QuestionError, QuestionsFull
from runtime.protocol import (
    INVALID_REQUEST,
    UNAVAILABLE,
    GatewayError,
    QuestionGetParams,
    QuestionListParams,
    QuestionRequestParams,
    QuestionWaitAnswerParams,
    decode_params,
    invalid_request,
    opt,
)
from runtime.tools import question_shape_error

from ._context import Call, MethodTable
from ._submit import key_of

__all__ = ["register"]

DEFAULT_TIMEOUT_MS: Final = 900_000
MAX_TIMEOUT_MS: Final = 2_147_483_647
_QID: Final = "^[a-z][a-z0-9_]*$"


class _Answers(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    answers: dict[Annotated[str, msgspec.Meta(pattern=_QID)], list[str]]


class _ResolveAnswer(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    id: Annotated[str, msgspec.Meta(min_length=1)]
    answers: _Answers
    secretStoreAllowedHosts: list[str] | None = None
    resolvedBy: Annotated[str, msgspec.Meta(min_length=1)] | None = None
    resolutionId: Annotated[str, msgspec.Meta(min_length=1, max_length=128)] | None = None


class _ResolveCancel(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    id: Annotated[str, msgspec.Meta(min_length=1)]
    cancel: bool
    resolvedBy: Annotated[str, msgspec.Meta(min_length=1)] | None = None


def register(methods: MethodTable) -> None:
    methods.advertise("question.requested", "question.resolved")
    methods.add("question.request", question_request, QuestionRequestParams)
    methods.add("question.waitAnswer", question_wait, QuestionWaitAnswerParams)
    methods.add("question.resolve", question_resolve, None)
    methods.add("question.get", question_get, QuestionGetParams)
    methods.add("question.list", question_list, QuestionListParams)


def _refused(exc: QuestionError) -> GatewayError:
    return GatewayError(INVALID_REQUEST, str(exc), details={"reason": exc.reason})


def _not_found(question_id: str) -> GatewayError:
    return _refused(QuestionError("QUESTION_NOT_FOUND", f"question '{question_id}' was not found"))


async def question_request(call: Call, params: QuestionRequestParams) -> dict[str, Any]:
    questions = msgspec.to_builtins(params.questions)
    error = question_shape_error(questions)
    if error is not None:
        raise invalid_request(error)
    raw_key = opt(params.sessionKey)
    agent_id = opt(params.agentId)
    session_key = key_of(call, raw_key, agent_id) if raw_key else None
    if session_key is not None and agent_id is None and session_key.startswith("agent:"):
        agent_id = session_key.split(":")[1]
    try:
        question = call.gateway.actors.questions.open(
            questions,
            timeout_ms=min(opt(params.timeoutMs) or DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS),
            question_id=opt(params.id),
            agent_id=agent_id,
            session_key=session_key,
            run_id=opt(params.runId),
        )
    except QuestionError as exc:
        raise _refused(exc) from exc
    except QuestionsFull as exc:
        raise GatewayError(UNAVAILABLE, str(exc), retryable=True) from exc
    await trio.lowlevel.checkpoint()
    return {"id": question.id, "expiresAtMs": question.expires_at_ms}


async def question_wait(call: Call, params: QuestionWaitAnswerParams) -> dict[str, Any]:
    questions = call.gateway.actors.questions
    question = questions.get(params.id)
    if question is None:
        raise _not_found(params.id)
    timeout_ms = opt(params.timeoutMs)
    if timeout_ms is None:
        await questions.settle(question)
    else:
        with trio.move_on_at(min(question.deadline, trio.current_time() + timeout_ms / 1000)):
            await question.done.wait()
        if question.deadline <= trio.current_time():
            await questions.settle(question)  # its deadline passed: it expires now
    return question.wait_result(include_resolution_id=opt(params.includeResolutionId) is True)


async def question_resolve(call: Call, params: Any) -> dict[str, Any]:
    is_cancel = isinstance(params, dict) and "cancel" in params
    questions = call.gateway.actors.questions
    try:
        if is_cancel:
            cancel = decode_params("question.resolve", params, _ResolveCancel)
            if cancel.cancel is not True:
                raise invalid_request("invalid question.resolve params: cancel must be true")
            questions.cancel(cancel.id, resolved_by=cancel.resolvedBy)
            await trio.lowlevel.checkpoint()
            return {"status": "cancelled"}
        answer = decode_params("question.resolve", params, _ResolveAnswer)
        if answer.secretStoreAllowedHosts is not None:
            raise invalid_request("Secret store allowed hosts require a store-bound question.")
        canonical = questions.resolve(
            answer.id,
            answer.answers.answers,
            resolved_by=answer.resolvedBy,
            resolution_id=answer.resolutionId,
        )
    except QuestionError as exc:
        raise _refused(exc) from exc
    await trio.lowlevel.checkpoint()
    return {"status": "answered", "answers": {"answers": canonical}}


async def question_get(call: Call, params: QuestionGetParams) -> dict[str, Any]:
    question = call.gateway.actors.questions.get(params.id)
    if question is None:
        raise _not_found(params.id)
    await trio.lowlevel.checkpoint()
    return {"question": question.record()}


async def question_list(call: Call, params: QuestionListParams) -> dict[str, Any]:
    await trio.lowlevel.checkpoint()
    return {"questions": call.gateway.actors.questions.records()}
