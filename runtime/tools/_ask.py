"""`ask_user`: the agent asks its operators one to three structured questions and waits.

The tool knows nothing of connections: the host hands it a `QuestionDesk` (the gateway's
registry of questions, `actors.QuestionDesk`), which shows the question to the operators and
returns how it ended. OpenClaw's contract, as its docs and tool state it:

- arguments: `questions` (1-3), each `{id, header, question, options (2-4 {label,
  description?}), multiSelect?}`, and `timeoutSeconds` (an integer, default 900, clamped to
  30-3600); the wire form adds `isOther: true` (a free-text answer is always allowed), trims
  the texts and cuts `header` to 12 characters; ids must be distinct, option labels distinct
  and at most 64 characters;
- one question pending per session at a time (a second one is a tool error); only the
  sessions a person talks to ask: a subagent's session (`agent:<id>:subagent:<uuid>`) or a
  scheduled job's own session (`agent:<id>:cron:...`, which nobody watches) gets a tool error
  saying so, as OpenClaw offers it to the main session only;
- answered: `{status: "answered", answers: {answers: {<id>: [values]}}}`, its text one line
  per question (`header: values`) and then that JSON; expired or cancelled:
  `{status: "no_answer"}`, and the model is told to proceed with its best judgment;
- an aborted run cancels its question (the operators see it end `cancelled`).
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Final, Literal, Protocol

import attrs
import msgspec

from ._errors import ToolError
from ._tool import ToolContext, ToolResult, text_result

__all__ = [
    "AskOutcome",
    "AskUserParams",
    "AskUserTool",
    "InvalidAnswerError",
    "QuestionDesk",
    "QuestionShapeError",
    "canonical_answers",
    "question_shape_error",
]

MIN_TIMEOUT_S: Final = 30
MAX_TIMEOUT_S: Final = 3600
DEFAULT_TIMEOUT_S: Final = 900
HEADER_CHARS: Final = 12
LABEL_CHARS: Final = 64


class QuestionShapeError(ToolError, ValueError):
    """Questions that do not follow OpenClaw's shape rules (the message says which)."""


class InvalidAnswerError(ValueError):
    """Answers that do not answer the questions (the message names the question and why:
    OpenClaw's `QUESTION_INVALID_ANSWER`)."""


def canonical_answers(
    questions: list[dict[str, Any]], answers: dict[str, list[str]]
) -> dict[str, list[str]]:
    """`answers` checked against `questions` (wire form) as OpenClaw checks them, in
    canonical form: every question answered, no empty value, one value unless
    `multiSelect`, a value that is not an option only when the question allows free text
    (`isOther`); values matching an option (spaces aside) take the option's label. Raises
    `InvalidAnswerError`. Pure."""

    def invalid(qid: str, why: str) -> InvalidAnswerError:
        return InvalidAnswerError(f"question '{qid}' {why}")

    by_id = {q["questionId"]: q for q in questions}
    for qid in answers:
        if qid not in by_id:
            raise invalid(qid, "is not part of this request")
    canonical: dict[str, list[str]] = {}
    for q in questions:
        qid = q["questionId"]
        values = answers.get(qid)
        if not values:
            raise invalid(qid, "requires an answer")
        if any(not v.strip() for v in values):
            raise invalid(qid, "contains an empty answer")
        if not q.get("multiSelect") and len(values) > 1:
            raise invalid(qid, "does not allow multiple answers")
        labels = [o["label"] for o in q["options"]]
        out = [next((lb for lb in labels if lb.strip() == v.strip()), v.strip()) for v in values]
        if labels and not q.get("isOther") and any(v not in labels for v in out):
            raise invalid(qid, "contains an unknown option")
        canonical[qid] = out
    return canonical


@attrs.frozen
class AskOutcome:
    """How a question ended: `answered` (with `answers`, `{<questionId>: [values]}`),
    `expired` or `cancelled`."""

    status: Literal["answered", "expired", "cancelled"]
    answers: dict[str, list[str]] | None = None


class QuestionDesk(Protocol):
    """Where a run's questions go: the host's registry of questions."""

    def pending_for_session(self, session_key: str) -> bool:
        """Whether a question raised by a run of `session_key` is still pending."""
        ...

    async def ask(
        self,
        questions: list[dict[str, Any]],
        *,
        agent_id: str,
        session_key: str,
        run_id: str,
        timeout_ms: int,
    ) -> AskOutcome:
        """Show `questions` (wire form, `QuestionRequestQuestion`) to the operators and wait
        for the end. A checkpoint; cancelled (the run aborted), the question ends
        `cancelled` and the cancellation propagates."""
        ...


class AskUserOption(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    label: Annotated[str, msgspec.Meta(min_length=1)]
    description: str | None = None


class AskUserQuestion(msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename="camel"):
    id: Annotated[
        str,
        msgspec.Meta(pattern="^[a-z][a-z0-9_]*$", description="Unique snake_case answer key."),
    ]
    header: Annotated[
        str,
        msgspec.Meta(
            min_length=1,
            description="Short chip label; longer input is truncated to 12 characters.",
        ),
    ]
    question: Annotated[
        str,
        msgspec.Meta(
            min_length=1,
            description="Single-sentence question only. Put all selectable choices in options.",
        ),
    ]
    options: Annotated[
        list[AskUserOption],
        msgspec.Meta(
            min_length=2,
            max_length=4,
            description=(
                "Every selectable choice. Put the recommended choice first; do not repeat "
                "choices only in the question text."
            ),
        ),
    ]
    multi_select: Annotated[
        bool | None,
        msgspec.Meta(description="True only when the user may choose several options at once."),
    ] = None


class AskUserParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename="camel"):
    questions: Annotated[list[AskUserQuestion], msgspec.Meta(min_length=1, max_length=3)]
    timeout_seconds: Annotated[
        int | None,
        msgspec.Meta(
            description=(
                "Maximum human wait in seconds; default 900, clamped 30-3600. Earlier run "
                "cancellation or overall run timeout still applies."
            )
        ),
    ] = None


def question_shape_error(questions: list[dict[str, Any]]) -> str | None:
    """What breaks OpenClaw's shape rules in `questions` (wire form), or None: a repeated
    question id, exactly one option, a secret question, an option label repeated (case and
    spaces aside), a `url` that is not an absolute http(s) URL without credentials."""
    ids: set[str] = set()
    for q in questions:
        qid = q["questionId"]
        if qid in ids:
            return f"duplicate question id '{qid}'"
        ids.add(qid)
        url = q.get("url")
        if url is not None and not _plain_http_url(url):
            return f"question '{qid}' requires an absolute HTTP(S) URL without credentials"
        if len(q["options"]) == 1:
            return f"question '{qid}' must have either no options or 2 to 4 options"
        if q.get("isSecret") or q.get("secretStore") is not None:
            return f"question '{qid}': secret questions are not supported yet"
        labels: set[str] = set()
        for option in q["options"]:
            label = option["label"].strip().lower()
            if label in labels:
                return f"question '{qid}' has duplicate option label '{option['label']}'"
            labels.add(label)
    return None


def _plain_http_url(url: str) -> bool:
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname) and not parts.username


def _wire_questions(args: AskUserParams) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for q in args.questions:
        options: list[dict[str, Any]] = []
        for option in q.options:
            label = option.label.strip()
            if not label or len(label) > LABEL_CHARS:
                raise QuestionShapeError(
                    "ask_user questions exceed the model-facing display contract"
                )
            item: dict[str, Any] = {"label": label}
            if option.description and option.description.strip():
                item["description"] = option.description.strip()
            options.append(item)
        header = q.header.strip()[:HEADER_CHARS]
        text = q.question.strip()
        if not header or not text:
            raise QuestionShapeError("ask_user questions exceed the model-facing display contract")
        wire: dict[str, Any] = {
            "questionId": q.id.strip(),
            "header": header,
            "question": text,
            "options": options,
        }
        if q.multi_select is True:
            wire["multiSelect"] = True
        wire["isOther"] = True
        out.append(wire)
    error = question_shape_error(out)
    if error is not None:
        raise QuestionShapeError(error)
    return out


def _timeout_s(raw: int | None) -> int:
    return min(MAX_TIMEOUT_S, max(MIN_TIMEOUT_S, DEFAULT_TIMEOUT_S if raw is None else raw))


def _answered(questions: list[dict[str, Any]], answers: dict[str, list[str]]) -> ToolResult:
    payload = {"status": "answered", "answers": {"answers": answers}}
    lines = [
        f"{q['header']}: {', '.join(answers.get(q['questionId'], [])) or '(no answer)'}"
        for q in questions
    ]
    text = "\n".join(lines) + "\n\n" + json.dumps(payload, indent=2, ensure_ascii=False)
    return text_result(text, details=payload)


def _no_answer(status: str) -> ToolResult:
    payload = {"status": "no_answer"}
    head = (
        "The question was cancelled; proceed with best judgment."
        if status == "cancelled"
        else "No answer arrived; proceed with best judgment."
    )
    return text_result(f"{head}\n\n{json.dumps(payload, indent=2)}", details=payload)


class AskUserTool:
    """`ask_user` (see the module docstring), asking through the host's `desk`."""

    name = "ask_user"
    description = (
        "Ask the user and wait for an answer. Use only when blocked on a decision that belongs "
        "to the user (not to confirm your plan or ask whether to proceed). Ask one question "
        "per call unless several answers must come together. Put every choice in options, the "
        "recommended one first with '(Recommended)' after its label; do not add an 'Other' "
        "option (free text is always allowed). After no_answer, continue with best judgment."
    )
    params = AskUserParams
    mutating = False

    def __init__(self, desk: QuestionDesk) -> None:
        self._desk = desk

    async def run(self, args: AskUserParams, ctx: ToolContext) -> ToolResult:
        """Wait for the operators' answer (a checkpoint; up to the timeout). A bad question
        or a question already pending for the session raises `ToolError` (an error result);
        cancelled, the question is cancelled and the cancellation propagates."""
        if ":subagent:" in ctx.session_key or ":cron:" in ctx.session_key:
            raise ToolError(
                "ask_user is available only in the main session; a subagent or a scheduled "
                "job has nobody to answer it (decide, or report the question in the result)"
            )
        questions = _wire_questions(args)
        if self._desk.pending_for_session(ctx.session_key):
            raise ToolError(
                "ask_user already has a pending question for this session; wait for it to "
                "resolve before asking another"
            )
        outcome = await self._desk.ask(
            questions,
            agent_id=ctx.agent_id,
            session_key=ctx.session_key,
            run_id=ctx.run_id,
            timeout_ms=_timeout_s(args.timeout_seconds) * 1000,
        )
        if outcome.status == "answered" and outcome.answers is not None:
            return _answered(questions, outcome.answers)
        return _no_answer(outcome.status)
