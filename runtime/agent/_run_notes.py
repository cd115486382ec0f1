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
  and result where OpenClaw's clients expect them;
- the subagents the run spawned (`SpawnNote`, `clawlane.subagent-spawn`: the child, its task,
  how its end is told), the children whose end it told (`clawlane.subagent-told`: the id of
  each announce or settle run it was, or took in steered; one cut off by a shutdown tells
  nothing) and, for a subagent's own run, how it ended (`clawlane.subagent-end`), all
  custom entries, never in the model's context: the embedded runtime opened again on its
  store reads them back (`spawn_notes`, `told_notes`, `run_ends`) to tell a parent what it
  was not told before it closed (`_embedded_recovery`);

`run_notes` gives them for a run; both hosts (the gateway's session actor, the embedded
runtime) pass them to `persist_run` and grow the session's context by `added_context` of what
was written, so the context they keep in memory is the one `build_context` reads back from
the store. Pure functions.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Iterable, Sequence
from typing import Any, Final

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
    "RUN_END_TYPE",
    "SPAWN_TYPE",
    "TOLD_TYPE",
    "YIELD_BATCH_TYPE",
    "YIELD_CONTEXT",
    "YIELD_CONTEXT_TYPE",
    "SpawnNote",
    "YieldClaim",
    "nested_activity",
    "run_ends",
    "run_notes",
    "spawn_notes",
    "told_notes",
    "yield_claims",
    "yield_context",
]

YIELD_CONTEXT_TYPE: Final = "openclaw.sessions_yield"
YIELD_BATCH_TYPE: Final = "clawlane.yield-batch"
SPAWN_TYPE: Final = "clawlane.subagent-spawn"
TOLD_TYPE: Final = "clawlane.subagent-told"
RUN_END_TYPE: Final = "clawlane.subagent-end"
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


@attrs.frozen(kw_only=True)
class SpawnNote:
    """A subagent a run spawned (`sessions_spawn`), as its parent's transcript keeps it."""

    run_id: str
    """The child's task id (its first run's id)."""
    child_key: str
    parent_agent: str
    label: str | None = None
    task: str = ""
    announce: bool = True
    cleanup: str | None = None
    completion_target: str | None = None
    requester_session: str | None = None
    attachments_dir: str | None = None
    created_at: int = 0


def run_notes(
    progress: RunProgress,
    messages: Sequence[Message],
    run_id: str,
    claim: YieldClaim | None = None,
    *,
    spawns: Sequence[SpawnNote] = (),
    told: Sequence[str] = (),
    ended: dict[str, Any] | None = None,
) -> list[RunNote]:
    """The rows run `run_id` adds beside `messages` (its `run_messages`, user message first),
    each placed by the index of the message it comes before; none when the run wrote no
    message (it never got as far as its user message). `claim`: what its yield claimed;
    `spawns`: the subagents it spawned; `told`: the announce and settle runs whose telling
    it carried; `ended`: a subagent run's end (`RUN_END_TYPE`'s data)."""
    if not messages:
        return []  # it never got as far as its user message
    notes = _nested_and_yield(progress, messages, run_id, claim)
    end = len(messages)
    notes += [(end, functools.partial(_spawned, s, run_id)) for s in spawns]
    if told:
        notes.append((end, functools.partial(_custom, TOLD_TYPE, {"runs": list(told)})))
    if ended is not None:
        notes.append((end, functools.partial(_custom, RUN_END_TYPE, ended)))
    return notes


def _nested_and_yield(
    progress: RunProgress, messages: Sequence[Message], run_id: str, claim: YieldClaim | None
) -> list[RunNote]:
    if not (progress.nested or progress.yielded is not None):
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


def _custom(kind: str, data: Any, builder: TranscriptBuilder) -> CustomEntry:
    return builder.add_custom(kind, data)


def _spawned(note: SpawnNote, run_id: str, builder: TranscriptBuilder) -> CustomEntry:
    data = {"requesterRun": run_id, **attrs.asdict(note)}
    return builder.add_custom(SPAWN_TYPE, data)


def _customs(entries: Iterable[TranscriptEntry], kind: str) -> list[dict[str, Any]]:
    return [
        entry.data
        for entry in entries
        if isinstance(entry, CustomEntry)
        and entry.customType == kind
        and isinstance(entry.data, dict)
    ]


def spawn_notes(entries: Iterable[TranscriptEntry]) -> list[tuple[str, SpawnNote]]:
    """The subagents a transcript's runs spawned, in order: each with the run that spawned
    it."""
    fields = {f.name for f in attrs.fields(SpawnNote)}
    found = []
    for data in _customs(entries, SPAWN_TYPE):
        try:
            note = SpawnNote(**{k: v for k, v in data.items() if k in fields})
        except TypeError:
            continue  # not a note of this version's
        found.append((str(data.get("requesterRun")), note))
    return found


def told_notes(entries: Iterable[TranscriptEntry]) -> set[str]:
    """The announce and settle runs whose telling a transcript's runs carried."""
    return {str(run) for data in _customs(entries, TOLD_TYPE) for run in data.get("runs") or ()}


def run_ends(entries: Iterable[TranscriptEntry]) -> list[dict[str, Any]]:
    """How a subagent session's runs ended, in order (`RUN_END_TYPE`'s data)."""
    return _customs(entries, RUN_END_TYPE)


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
