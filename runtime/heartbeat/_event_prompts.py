"""The message of a heartbeat that a background command's completion or a cron job's system
event woke, with OpenClaw 2026.9.6's texts (its `heartbeat-events-filter`).

- `is_exec_completion_event`: an `Exec completed|failed (<id>, code N|signal S) :: <tail>`
  event (what `exec` queues when a backgrounded job ends by itself), or `Exec finished ...`.
- `is_cron_system_event`: any other event that is not heartbeat noise.
- `build_exec_event_prompt`: the completions, then what to do with them: relay the output
  (`deliver_to_user`), or handle it internally; a failure without captured output is told
  as such; at most 8,000 characters of events.
- `build_cron_event_prompt`: the reminder's text, then relay it or handle it internally.

Pure.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from ._reply import HEARTBEAT_TOKEN, SILENT_TOKEN, strip_heartbeat_token

__all__ = [
    "build_cron_event_prompt",
    "build_exec_event_prompt",
    "is_cron_system_event",
    "is_exec_completion_event",
]

_MAX_EXEC_CHARS: Final = 8000
_STRUCTURED: Final = re.compile(
    r"^exec (completed|failed) \(([a-z0-9_-]{1,64}), (code -?\d+|signal [^)]+)\)"
    r"(?: :: ([\s\S]*))?$",
    re.IGNORECASE,
)
_FINISHED: Final = re.compile(r"^exec finished(?::|\s*\()")


def is_exec_completion_event(text: str) -> bool:
    trimmed = text.lstrip()
    return bool(_FINISHED.match(trimmed.lower()) or _STRUCTURED.match(trimmed))


def _is_noise(text: str) -> bool:
    lower = text.strip().lower()
    if not lower:
        return False
    if strip_heartbeat_token(text, heartbeat=True, ack_max_chars=0).should_skip:
        return True
    token = HEARTBEAT_TOKEN.lower()
    if lower.startswith(token) and not re.match(r"[a-z0-9_]", lower[len(token) : len(token) + 1]):
        return True
    return "heartbeat poll" in lower or "heartbeat wake" in lower


def is_cron_system_event(text: str) -> bool:
    return bool(text.strip()) and not _is_noise(text) and not is_exec_completion_event(text)


def _exec_lines(events: Sequence[str]) -> tuple[str, bool]:
    """The events as the prompt tells them, and whether a failure had no output."""
    lines: list[str] = []
    missing = False
    for event in events:
        trimmed = event.strip()
        match = _STRUCTURED.match(trimmed)
        if match is None:
            if trimmed:
                lines.append(trimmed)
            continue
        action, job, result, output = match.groups()
        succeeded = action.lower() == "completed" and result.lower() == "code 0"
        if (output or "").strip():
            lines.append(trimmed)
        elif not succeeded:
            missing = True
            lines.append(f"Exec {action} ({job}, {result}) without captured stdout/stderr.")
    return "\n".join(lines).strip(), missing


def build_exec_event_prompt(events: Sequence[str], *, deliver_to_user: bool = True) -> str:
    """OpenClaw's `buildExecEventPrompt` (without the `heartbeat_respond` variant)."""
    text, missing = _exec_lines(events)
    if len(text) > _MAX_EXEC_CHARS:
        text = f"{text[:_MAX_EXEC_CHARS]}\n\n[truncated]"
    if not text:
        return (
            "An async command completion event was triggered, but no command output was "
            f"found. Reply {SILENT_TOKEN} only. Do not mention, summarize, or reuse output from "
            "any earlier run."
        )
    if not deliver_to_user:
        return (
            "An async command completion event was triggered, but user delivery is disabled "
            f"for this run. Handle the result internally and reply {SILENT_TOKEN} only. Do not "
            "mention, summarize, or reuse command output."
        )
    if missing:
        return (
            "An async command you ran earlier completed without captured stdout/stderr. The "
            f"completion details are:\n\n{text}\n\nTell the user the command completed without "
            "captured output and include the exit status or signal. Do not ask the user to "
            "provide missing logs, and do not try to retrieve logs from an exec/session id."
        )
    return (
        "An async command you ran earlier has completed. The command completion details "
        f"are:\n\n{text}\n\nPlease relay the command output to the user in a helpful way. If "
        "the command succeeded, share the relevant output. If it failed, explain what went wrong."
    )


def build_cron_event_prompt(events: Sequence[str], *, deliver_to_user: bool = True) -> str:
    """OpenClaw's `buildCronEventPrompt` (without the `heartbeat_respond` variant)."""
    text = "\n".join(events).strip()
    if not text:
        tail = (
            f"Reply {SILENT_TOKEN}."
            if deliver_to_user
            else f"Handle this internally and reply {SILENT_TOKEN} when nothing needs "
            "user-facing follow-up."
        )
        return f"A scheduled cron event was triggered, but no event content was found. {tail}"
    head = f"A scheduled reminder has been triggered. The reminder content is:\n\n{text}\n\n"
    if not deliver_to_user:
        return (
            f"{head}Handle this reminder internally. Do not relay it to the user unless "
            "explicitly requested."
        )
    return f"{head}Please relay this reminder to the user in a helpful and friendly way."
