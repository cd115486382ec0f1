"""The rows a run adds to its session's transcript beside its messages, as OpenClaw writes them.

A run's messages (its user message, the model's turns, the tools' results) become message
entries (`_compaction.persist_run`). Some of what a run leaves is no message of the
conversation and is written beside them, at the place it happened (`RunNote`):

- `sessions_yield`'s private context: when a tool ended the turn (`RunProgress.yielded`), the
  call's `message` (default `Turn yielded.`) and OpenClaw's context line, as a hidden custom
  message (`custom_message` `openclaw.sessions_yield`, `display: false`) after the run's
  messages. The model reads it on the session's next turn, as a user message; no history
  shows it (`chat.history`, `sessions_history`, `session.message`, the Control UI).

`run_notes` gives them for a run; both hosts (the gateway's session actor, the embedded
runtime) pass them to `persist_run` and grow the session's context by `added_context` of what
was written, so the context they keep in memory is the one `build_context` reads back from
the store. Pure functions.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Final

from ..llm._types import Message
from ..loop._agent import RunProgress
from ..sessions._sessions import CustomMessageEntry, TranscriptBuilder
from ._compaction import RunNote

__all__ = ["YIELD_CONTEXT", "YIELD_CONTEXT_TYPE", "run_notes", "yield_context"]

YIELD_CONTEXT_TYPE: Final = "openclaw.sessions_yield"
YIELD_CONTEXT: Final = (
    "[Context: The previous turn ended intentionally via sessions_yield while waiting for a "
    "follow-up event.]"
)


def run_notes(progress: RunProgress, messages: Sequence[Message]) -> list[RunNote]:
    """The rows a run adds beside `messages` (its `run_messages`, user message first), each
    placed by the index of the message it comes before; none when the run wrote no
    message (it never got as far as its user message)."""
    if not messages:
        return []
    notes: list[RunNote] = []
    if progress.yielded is not None:
        notes.append((len(messages), functools.partial(yield_context, progress.yielded.message)))
    return notes


def yield_context(message: str, builder: TranscriptBuilder) -> CustomMessageEntry:
    """`sessions_yield`'s private context for the session's next turn, chained onto
    `builder`: OpenClaw's hidden custom message."""
    return builder.add_custom_message(
        YIELD_CONTEXT_TYPE,
        f"{message}\n\n{YIELD_CONTEXT}",
        display=False,
        details={"source": "sessions_yield", "message": message},
    )
