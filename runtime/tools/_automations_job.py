"""The `job` argument of `automations`: OpenClaw 2026.9.6's typed job schema, and the recent
chat lines `contextMessages` adds to a reminder's text.

`JOB_SCHEMA` is what OpenClaw's cron tool offers for `job` (`createCronToolSchema` in
`cron-tool-*.mjs`, for an agent's session with cron triggers on: no `agentId`, since the
calling agent owns the job), word for word. It describes the job a model writes; the
`cron.add` / `cron.update` methods check it (`runtime.cron`), and refuse what clawlane's
scheduler does not run (`stream` schedules, `script` payloads, `pacing`, `trigger`).

`reminder_context` is OpenClaw's `buildReminderContextLines` (`cron-tool-context.ts`): the
session's newest `contextMessages` (at most 10) messages, those of the user and the assistant
with text, each one line `- User: ...` / `- Assistant: ...` (whitespace collapsed, cut to 220
UTF-16 units with `...`), as many as fit in 700 units; `with_context` puts them under
`Recent context:` after a `systemEvent`'s text, in place of any such block it had.

`infer_name` is OpenClaw's `inferCronJobName`, the name a job made without one gets.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Final

__all__ = ["CONTEXT_MARKER", "JOB_SCHEMA", "context_lines", "infer_name", "with_context"]

JOB_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "Job name"},
        "declarationKey": {
            "type": "string",
            "description": "Idempotent declaration key (add only).",
            "minLength": 1,
            "maxLength": 200,
        },
        "displayName": {
            "anyOf": [{"type": "string", "maxLength": 200}, {"type": "null"}],
            "description": "Human-readable label; null clears it",
        },
        "owner": {
            "type": "object",
            "properties": {"agentId": {"type": "string"}, "sessionKey": {"type": "string"}},
            "additionalProperties": False,
        },
        "schedule": {
            "type": "object",
            "properties": {
                "kind": {
                    "enum": ["at", "every", "cron", "stream"],
                    "type": "string",
                    "description": "Schedule kind",
                },
                "at": {"type": "string", "description": "ISO-8601 time (kind=at)"},
                "everyMs": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "Interval ms (kind=every)",
                    "maximum": 8640000000000000,
                },
                "anchorMs": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "Start anchor ms (kind=every)",
                    "maximum": 8640000000000000,
                },
                "expr": {
                    "type": "string",
                    "description": 'Cron wall-time expr; never UTC-convert. Missing tz=Gateway local. Example "0 18 * * *", "Asia/Shanghai".',
                },
                "tz": {
                    "type": "string",
                    "description": 'IANA timezone for wall-clock fields; missing=Gateway host local timezone. Example "Asia/Shanghai".',
                },
                "staggerMs": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "Jitter ms (kind=cron)",
                    "maximum": 8640000000000000,
                },
                "command": {
                    "anyOf": [
                        {
                            "type": "array",
                            "items": {"type": "string", "minLength": 1},
                            "minItems": 1,
                        }
                    ],
                    "description": "Supervised source argv (kind=stream; disabled when cron.triggers.enabled=false)",
                },
                "cwd": {"type": "string", "description": "Working directory (kind=stream)"},
                "mode": {"enum": ["line", "match"], "type": "string"},
                "match": {"type": "string", "description": "Regex source (stream match mode)"},
                "batchMs": {"type": "integer", "minimum": 0},
                "maxBatchBytes": {"type": "integer", "minimum": 0},
            },
            "additionalProperties": True,
        },
        "pacing": {
            "anyOf": [
                {
                    "type": "object",
                    "properties": {
                        "min": {"type": "string", "description": "Minimum dynamic delay"},
                        "max": {"type": "string", "description": "Maximum dynamic delay"},
                    },
                    "additionalProperties": False,
                    "description": "Dynamic-cadence bounds; at least one of min or max is required",
                },
                {"type": "null"},
            ]
        },
        "trigger": {
            "anyOf": [
                {
                    "type": "object",
                    "required": ["script"],
                    "properties": {
                        "script": {"type": "string", "minLength": 1, "maxLength": 65536},
                        "once": {"type": "boolean"},
                    },
                    "additionalProperties": False,
                },
                {"type": "null"},
            ]
        },
        "sessionTarget": {
            "type": "string",
            "description": "main | isolated | current (agentTurn default) | session:<id>",
        },
        "wakeMode": {
            "enum": ["now", "next-heartbeat"],
            "type": "string",
            "description": "Wake timing",
        },
        "payload": {
            "type": "object",
            "properties": {
                "kind": {
                    "enum": ["systemEvent", "agentTurn", "script"],
                    "type": "string",
                    "description": "Payload kind",
                },
                "text": {"type": "string", "description": "systemEvent text"},
                "message": {"type": "string", "description": "agentTurn prompt"},
                "script": {"type": "string", "description": "Headless code-mode script"},
                "model": {
                    "anyOf": [{"type": "string"}, {"type": "null"}],
                    "description": "Model override, or null to clear",
                },
                "thinking": {"type": "string", "description": "Thinking override"},
                "timeoutSeconds": {
                    "anyOf": [{"type": "number", "minimum": 0}, {"type": "null"}],
                    "description": "Timeout seconds; null restores the default on update (omission preserves it)",
                },
                "toolBudget": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "Maximum script tool calls",
                },
                "lightContext": {
                    "type": "boolean",
                    "description": "Lightweight bootstrap context (skip full workspace context)",
                },
                "allowUnsafeExternalContent": {
                    "type": "boolean",
                    "description": "Allow untrusted external content in prompt",
                },
                "fallbacks": {
                    "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}],
                    "description": "Fallback models, or null to clear",
                },
                "toolsAllow": {
                    "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}],
                    "description": "Allowed tool ids, or null to clear",
                },
            },
            "additionalProperties": True,
        },
        "delivery": {
            "type": "object",
            "properties": {
                "mode": {
                    "enum": ["none", "announce", "webhook"],
                    "type": "string",
                    "description": "Delivery mode",
                },
                "channel": {
                    "anyOf": [{"type": "string"}, {"type": "null"}],
                    "description": "Delivery channel, or null to clear",
                },
                "to": {
                    "anyOf": [{"type": "string"}, {"type": "null"}],
                    "description": "Delivery target, or null to clear",
                },
                "threadId": {
                    "anyOf": [{"type": "string"}, {"type": "number"}, {"type": "null"}],
                    "description": "Thread/topic id",
                },
                "bestEffort": {
                    "type": "boolean",
                    "description": "Omitted/false requires requested delivery for successful completion; true lets successful execution complete and delete a one-shot despite failed/unknown delivery. Intentional silence succeeds in either mode.",
                },
                "accountId": {
                    "anyOf": [{"type": "string"}, {"type": "null"}],
                    "description": "Delivery account, or null to clear",
                },
                "failureDestination": {
                    "anyOf": [
                        {
                            "type": "object",
                            "properties": {
                                "channel": {
                                    "anyOf": [{"type": "string"}, {"type": "null"}],
                                    "description": "Failure delivery channel, or null to clear",
                                },
                                "to": {
                                    "anyOf": [{"type": "string"}, {"type": "null"}],
                                    "description": "Failure delivery target, or null to clear",
                                },
                                "accountId": {
                                    "anyOf": [{"type": "string"}, {"type": "null"}],
                                    "description": "Failure delivery account, or null to clear",
                                },
                                "mode": {
                                    "anyOf": [
                                        {"type": "string", "const": "announce"},
                                        {"type": "string", "const": "webhook"},
                                        {"type": "null"},
                                    ]
                                },
                            },
                            "additionalProperties": True,
                        },
                        {"type": "null"},
                    ],
                    "description": "Failure-alert route override; required-delivery failures bypass after but share the execution-alert cooldown; null clears.",
                },
                "completionDestination": {
                    "anyOf": [
                        {
                            "type": "object",
                            "required": ["mode", "to"],
                            "properties": {
                                "mode": {"type": "string", "const": "webhook"},
                                "to": {
                                    "type": "string",
                                    "minLength": 1,
                                    "description": "Completion webhook target; only valid with delivery.mode=announce",
                                },
                            },
                            "additionalProperties": True,
                        },
                        {"type": "null"},
                    ],
                    "description": "Completion webhook; requires delivery.mode=announce; null clears.",
                },
            },
            "additionalProperties": True,
        },
        "description": {"type": "string", "description": "Human description"},
        "enabled": {"type": "boolean"},
        "deleteAfterRun": {
            "type": "boolean",
            "description": "Delete one-shot after successful completion: delivery confirmed, not requested, intentionally silent, or explicitly bestEffort. Failed/unknown required delivery retains it disabled.",
        },
        "sessionKey": {
            "anyOf": [{"type": "string"}, {"type": "null"}],
            "description": "Explicit session key, or null to clear it",
        },
        "failureAlert": {
            "type": "object",
            "properties": {
                "after": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "Consecutive execution failures before alert; delivery failures bypass this threshold",
                },
                "channel": {"type": "string", "description": "Alert channel"},
                "to": {"type": "string", "description": "Alert target"},
                "cooldownMs": {"type": "integer", "minimum": 0, "description": "Alert cooldown ms"},
                "includeSkipped": {"type": "boolean", "description": "Count skipped runs."},
                "mode": {"enum": ["announce", "webhook"], "type": "string"},
                "accountId": {"type": "string"},
            },
            "additionalProperties": True,
            "description": "Failure alert policy/route override. Route-backed jobs default to after=2 for execution failures and cooldownMs=3600000 for all failure alerts; false disables execution/delivery alerts but not the auto-disable safety notice.",
        },
    },
    "additionalProperties": True,
    "description": 'Job fields. action="add": full job. action="update": partial patch — only supplied fields change; null clears.',
}

CONTEXT_MARKER: Final = "\n\nRecent context:\n"
CONTEXT_MESSAGES_MAX: Final = 10
_LINE_MAX: Final = 220
_TOTAL_MAX: Final = 700
_SPACE = re.compile(r"\s+")


def context_lines(messages: Iterable[Any], count: int) -> list[str]:
    """The lines of the newest `count` (0-10) of `messages` (a session's history, oldest
    first, as `chat.history` gives them) that are the user's or the assistant's with text."""
    count = min(CONTEXT_MESSAGES_MAX, max(0, count))
    recent = [t for t in map(_message_text, messages) if t is not None][-count:] if count else []
    lines: list[str] = []
    total = 0
    for role, text in recent:
        line = f"- {'User' if role == 'user' else 'Assistant'}: {_cut(text, _LINE_MAX)}"
        total += _units(line)
        if total > _TOTAL_MAX:
            break
        lines.append(line)
    return lines


def with_context(text: str, lines: list[str]) -> str:
    """`text` with `lines` under `Recent context:` (replacing a block it already had)."""
    index = text.find(CONTEXT_MARKER)
    base = text if index == -1 else text[:index].strip()
    return f"{base}{CONTEXT_MARKER}{chr(10).join(lines)}"


def _message_text(message: Any) -> tuple[str, str] | None:
    """OpenClaw's `extractTextFromChatContent` of a user or assistant message: its text
    blocks joined, whitespace collapsed; None for other roles or no text."""
    if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
        return None
    content = message.get("content")
    if isinstance(content, str):
        chunks = [content]
    elif isinstance(content, list):
        chunks = [
            b["text"]
            for b in content
            if isinstance(b, dict)
            and b.get("type") == "text"
            and isinstance(b.get("text"), str)
            and b["text"].strip()
        ]
    else:
        return None
    text = _SPACE.sub(" ", " ".join(chunks)).strip()
    return (str(message["role"]), text) if text else None


def infer_name(job: dict[str, Any]) -> str:
    """OpenClaw's `inferCronJobName`: the first non-blank line of the payload's text (a
    `systemEvent`'s `text`, an `agentTurn`'s `message`) cut to 60 UTF-16 units with `…`, else
    one from the schedule (`Cron: <expr>`, `Every: <ms>ms`, `One-shot`), else `Automation`."""
    payload = job.get("payload")
    payload = payload if isinstance(payload, dict) else {}
    kind = payload.get("kind")
    text = payload.get("text") if kind == "systemEvent" else None
    text = payload.get("message") if kind == "agentTurn" else text
    argv = payload.get("argv") if kind == "command" else None
    if isinstance(argv, list):
        text = " ".join("" if a is None else str(a) for a in argv)
    lines = text.split("\n") if isinstance(text, str) else []
    first = next((line.strip() for line in lines if line.strip()), "")
    if first:
        return _cut(first, 60, "…")
    schedule = job.get("schedule")
    schedule = schedule if isinstance(schedule, dict) else {}
    every = schedule.get("everyMs")
    if schedule.get("kind") == "cron" and isinstance(schedule.get("expr"), str):
        return f"Cron: {_cut(schedule['expr'], 52, '…')}"
    if schedule.get("kind") == "every" and _number(every):
        shown = int(every) if isinstance(every, float) and every.is_integer() else every
        return f"Every: {shown}ms"
    if schedule.get("kind") == "at":
        return "One-shot"
    return "Automation"


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _units(text: str) -> int:
    """Length in UTF-16 code units (JavaScript's `length`)."""
    return len(text.encode("utf-16-le")) // 2


def _cut(text: str, limit: int, marker: str = "...") -> str:
    """OpenClaw's `truncateWithMarker(text, limit, {marker, reserve: marker's length,
    trimEnd})`: at most `limit - reserve` UTF-16 units (a surrogate pair is never split), then
    `marker`."""
    if _units(text) <= limit:
        return text
    out, used, keep = [], 0, limit - _units(marker)
    for char in text:
        size = 2 if ord(char) > 0xFFFF else 1
        if used + size > keep:
            break
        out.append(char)
        used += size
    return "".join(out).rstrip() + marker
