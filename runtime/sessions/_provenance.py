"""A subagent's completion in its parent's transcript, as OpenClaw 2026.9.6 keeps and shows it.

A child's result reaches its parent as a user message no person wrote, marked with OpenClaw's
input provenance (`InputProvenance`: `kind: "inter_session"`, `sourceSessionKey` the child's
session, `sourceChannel: "internal"`, `sourceTool`), `completion_provenance`:

- a child's own announce (`subagent_announce`): a run whose prompt the model reads but the
  transcript does not keep (OpenClaw's `shouldSuppressAgentPromptPersistence` for a
  subagent's task completion: `prompt_kept` is false, `persist_run` writes the run's other
  messages); steered into a run of the parent's that is going on, it is kept in its place;
- the continuation that tells settled children together (`subagent_settle`): its prompt is
  kept, with `display: false`.

`marked_prompt` gives a run's user message its provenance; `hidden_in_display` is OpenClaw's
display rule for such rows: a message whose `display` is false, or a user message whose
provenance is a completion report, is shown by no history (`chat.history`,
`sessions_history`, `session.message`, so neither the Control UI nor the TUI), while the
model's context keeps it. Pure functions.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from ..llm._types import InputProvenance, UserMessage

__all__ = [
    "SUBAGENT_ANNOUNCE",
    "SUBAGENT_SETTLE",
    "completion_provenance",
    "hidden_in_display",
    "marked_prompt",
    "prompt_kept",
]

SUBAGENT_ANNOUNCE: Final = "subagent_announce"
SUBAGENT_SETTLE: Final = "subagent_settle"
_COMPLETION_REPORTS: Final = frozenset({SUBAGENT_ANNOUNCE, SUBAGENT_SETTLE})


def completion_provenance(source_tool: str, source_key: str) -> InputProvenance:
    """OpenClaw's provenance of a completion `source_tool` routed from session `source_key`."""
    return InputProvenance(
        kind="inter_session",
        sourceSessionKey=source_key,
        sourceChannel="internal",
        sourceTool=source_tool,
    )


def _completion_report(provenance: InputProvenance | None) -> bool:
    return (
        provenance is not None
        and provenance.kind == "inter_session"
        and (provenance.sourceTool or "").lower() in _COMPLETION_REPORTS
    )


def marked_prompt(user: UserMessage, provenance: InputProvenance | None) -> UserMessage:
    """A run's user message with the run's `provenance` (a completion report's is not
    displayed); unchanged without one."""
    if provenance is None:
        return user
    display = False if _completion_report(provenance) else user.display
    return msgspec.structs.replace(user, provenance=provenance, display=display)


def prompt_kept(user: UserMessage) -> bool:
    """Whether a run's user message is written to its transcript: not a child's own
    announce (the model read it; OpenClaw keeps no row of it)."""
    provenance = user.provenance
    return not (
        provenance is not None
        and provenance.kind == "inter_session"
        and provenance.sourceTool == SUBAGENT_ANNOUNCE
    )


def hidden_in_display(message: Any) -> bool:
    """Whether a transcript message is left out of what histories show (see the module
    docstring)."""
    if getattr(message, "display", True) is False:
        return True
    return isinstance(message, UserMessage) and _completion_report(message.provenance)
