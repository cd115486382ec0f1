"""The rows a run adds to its session's transcript beside its messages, as OpenClaw writes them.

A run's messages (its user message, the model's turns, the tools' results) become message
entries (`_compaction.persist_run`). Some of what a run leaves is no message of the
conversation and is written beside them, at the place it happened (`RunNote`):

- `sessions_yield`'s private context: when a tool ended the turn (`RunProgress.yielded`), the
  call's `message` (default `Turn yielded.`) and OpenClaw's context line, as a hidden custom
  message (`custom_message` `openclaw.sessions_yield`, `display: false`) after the run's
  messages. The model reads it on the session's next turn, as a user message; no history
  shows it (`chat.history`, `sessions_history`, `session.message`, the Control UI).
- the children that yield claimed (`YieldClaim`, when the run's host knew them: the gateway's
  `TaskBook.on_claim`), as a custom entry (`clawlane.yield-batch`, never in the model's
  context, in no history) after the yield's context: a restart reads them back
  (`yield_claims`) and still tells them together in one continuation;
- each call made through Tool Search's `tool_call` (`RunProgress.nested`): OpenClaw's nested
  tool activity row (`runtime.sessions.nested_tool_message`: displayed, never in the model's
  context) before the `tool_call`'s result, tagged with the run and the idempotency key
  `<scopeId>:<toolCallId>` (one scope id per run), so `chat.history` shows the target's call
  and result where OpenClaw's clients expect them.

`run_notes` gives them for a run; both hosts (the gateway's session actor, the embedded
runtime) pass them to `persist_run` and grow the session's context by `added_context` of what
was written, so the context they keep in memory is the one `build_context` reads back from
the store. Pure functions.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Iterable, Sequence
from typing import Final

import attrs

from ..llm._types import Message
from ..loop._agent import NestedCall, RunProgress
from ..sessions._nested_tool import nested_tool_message
from ..sessions._sessions import (
    CustomEntry,
    CustomMessageEntry,
    MessageEntry,
    TranscriptBuilder,
    TranscriptEntry,
)
from ._compaction import RunNote

__all__ = [
    "YIELD_BATCH_TYPE",
    "YIELD_CONTEXT",
    "YIELD_CONTEXT_TYPE",
    "YieldClaim",
    "nested_activity",
    "run_notes",
    "yield_claims",
    "yield_context",
]

YIELD_CONTEXT_TYPE: Final = "openclaw.sessions_yield"
YIELD_BATCH_TYPE: Final = "clawlane.yield-batch"
YIELD_CONTEXT: Final = (
    "[Context: The previous turn ended intentionally via sessions_yield while waiting for a "
    "follow-up event.]"
)


@attrs.frozen
class YieldClaim:
    """The children (their run ids) a run's `sessions_yield` claimed, told together in one
    continuation (`_yield_batch`), and which of its session's yields it was."""

    generation: int
    children: tuple[str, ...]


def run_notes(
    progress: RunProgress,
    messages: Sequence[Message],
    run_id: str,
    claim: YieldClaim | None = None,
) -> list[RunNote]:
    """The rows run `run_id` adds beside `messages` (its `run_messages`, user message first),
    each placed by the index of the message it comes before; none when the run wrote no
    message (it never got as far as its user message). `claim`: what its yield claimed."""
    if not messages or not (progress.nested or progress.yielded is not None):
        return []  # the common run (a random scope id costs a system call)
    notes: list[RunNote] = []
    scope = str(uuid.uuid4())
    for order, (position, call) in enumerate(progress.nested):
        note = functools.partial(nested_activity, call, run_id=run_id, scope=scope, order=order)
        notes.append((position + 1, note))  # after the user message, before the call's result
    if progress.yielded is not None:
        notes.append((len(messages), functools.partial(yield_context, progress.yielded.message)))
        if claim is not None:
            notes.append((len(messages), functools.partial(_claimed, claim, run_id)))
    return notes


def _claimed(claim: YieldClaim, run_id: str, builder: TranscriptBuilder) -> CustomEntry:
    data = {"runId": run_id, "generation": claim.generation, "children": list(claim.children)}
    return builder.add_custom(YIELD_BATCH_TYPE, data)


def yield_claims(entries: Iterable[TranscriptEntry]) -> dict[str, tuple[str, YieldClaim]]:
    """What the yields of a transcript claimed: for each child's run id, the run that yielded
    and its claim."""
    found: dict[str, tuple[str, YieldClaim]] = {}
    for entry in entries:
        if not isinstance(entry, CustomEntry) or entry.customType != YIELD_BATCH_TYPE:
            continue
        data = entry.data if isinstance(entry.data, dict) else {}
        children = tuple(str(c) for c in data.get("children") or ())
        claim = YieldClaim(int(data.get("generation") or 0), children)
        for child in children:
            found[child] = (str(data.get("runId")), claim)
    return found


def nested_activity(
    call: NestedCall, builder: TranscriptBuilder, *, run_id: str, scope: str, order: int
) -> MessageEntry:
    """The display row of a call made through `tool_call`, chained onto `builder` (after the
    entry it follows: the assistant turn that called `tool_call`, or the result before)."""
    message = nested_tool_message(
        run_id=run_id,
        scope_id=scope,
        after_entry_id=builder.leaf_id,
        start_order=order,
        parent_tool_call_id=call.parent_tool_call_id,
        tool_call_id=call.tool_call_id,
        tool_name=call.tool_name,
        input=call.input,
        result=call.result,
        is_error=call.is_error,
        started_at=call.started_at,
        ended_at=call.ended_at,
    )
    key = f"{scope}:{call.tool_call_id}"
    return builder.add_message(message, idempotency_key=key, run_id=run_id)


def yield_context(message: str, builder: TranscriptBuilder) -> CustomMessageEntry:
    """`sessions_yield`'s private context for the session's next turn, chained onto
    `builder`: OpenClaw's hidden custom message."""
    return builder.add_custom_message(
        YIELD_CONTEXT_TYPE,
        f"{message}\n\n{YIELD_CONTEXT}",
        display=False,
        details={"source": "sessions_yield", "message": message},
    )
