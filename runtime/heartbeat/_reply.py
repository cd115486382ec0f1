"""A heartbeat's prompt and what its reply means, with OpenClaw 2026.9.6's texts and rules.

- `HEARTBEAT_PROMPT`: OpenClaw's default heartbeat prompt, sent as the run's message (a
  configured `prompt` replaces it, sent verbatim). The workspace's `HEARTBEAT.md` plays the
  part of OpenClaw's heartbeat monitor scratch (what its `doctor --fix` imports `HEARTBEAT.md`
  into): its text is appended as `Heartbeat monitor scratch:`, and a file that is
  effectively empty (`is_effectively_empty`: blank lines, Markdown/HTML comments, headings,
  fence markers, empty list or checklist stubs) skips the run (`empty-heartbeat-file`); no
  file at all runs it, and the model decides.
- `strip_heartbeat_token`: OpenClaw's `stripHeartbeatToken`. `HEARTBEAT_OK` at the start or
  the end of a reply (markup around it and up to 4 trailing non-word characters allowed) is
  an acknowledgment: in a heartbeat, the reply is dropped when what is left is at most
  `ack_max_chars` (300) characters; in the middle it means nothing.
- `classify_reply`: the verdict on a heartbeat's final reply, as OpenClaw's runner:
  `ok-empty` (no reply), `ok-token` (`NO_REPLY`, an acknowledgment, or `heartbeat_respond`
  with `notify: false`), `sent` (an alert: the text that is left, or the tool's
  `notificationText`). clawlane has no channel to send an alert to, so its event is
  OpenClaw's for an alert without a delivery target (`actors.heartbeat`).
- `heartbeat_event`: the `heartbeat` event payload (`ts`, `status`, `reason`, `preview` at
  most 200 characters, `durationMs`, `silent`, `indicatorType`).

Pure.
"""

from __future__ import annotations

import re
from typing import Any, Final

import attrs

__all__ = [
    "HEARTBEAT_PROMPT",
    "HEARTBEAT_RESPONSE_TOOL_PROMPT",
    "HEARTBEAT_TOKEN",
    "HEARTBEAT_TRANSCRIPT_MARKER",
    "ReplyVerdict",
    "StrippedReply",
    "build_prompt",
    "classify_reply",
    "heartbeat_event",
    "indicator_type",
    "is_effectively_empty",
    "strip_heartbeat_token",
]

HEARTBEAT_TOKEN: Final = "HEARTBEAT_OK"
SILENT_TOKEN: Final = "NO_REPLY"
_CONTEXT_PROMPT: Final = (
    "Follow the heartbeat monitor scratch context when provided. Recurring tasks are "
    "automations; create or change their schedules with the automations tool, not heartbeat "
    "scratch. Do not infer or repeat old tasks from prior chats."
)
HEARTBEAT_PROMPT: Final = f"{_CONTEXT_PROMPT} If nothing needs attention, reply {SILENT_TOKEN}."
"""OpenClaw's default heartbeat prompt."""
_TOOL_INSTRUCTIONS: Final = (
    "Use heartbeat_respond to report the wake outcome. Set notify=false when nothing needs "
    "the user's attention. Set notify=true with notificationText only when the user should be "
    "interrupted."
)
_TOOL_FALLBACK: Final = (
    f"If the heartbeat_respond tool is not available in this run, reply {SILENT_TOKEN} when "
    "nothing needs the user's attention; when the user should be interrupted, reply with only "
    "the alert text instead of a prose report."
)
HEARTBEAT_RESPONSE_TOOL_PROMPT: Final = f"{_CONTEXT_PROMPT} {_TOOL_INSTRUCTIONS} {_TOOL_FALLBACK}"
HEARTBEAT_TRANSCRIPT_MARKER: Final = "[OpenClaw heartbeat poll]"
PREVIEW_CHARS: Final = 200
_MESSAGES: Final = {
    "target-none": "Heartbeat delivery is disabled by configuration (target: none).",
    "no-route": (
        "Heartbeat has no delivery route yet. Message your bot once, or set "
        "agents.defaults.heartbeat.target."
    ),
}

_HEADING: Final = re.compile(r"^#+(\s|$)")
_STUB: Final = re.compile(r"^[-*+]\s*(\[[\sXx]?\]\s*)?$")
_FENCE: Final = re.compile(r"^```[A-Za-z0-9_-]*$")
_TAG: Final = re.compile(r"<[^>]*>")


def _strip_html_comments(content: str) -> list[str]:
    lines, in_comment = [], False
    for line in content.split("\n"):
        rest = line
        while in_comment or rest.lstrip().startswith("<!--"):
            search = rest if in_comment else rest.lstrip()
            end = search.find("-->")
            if end == -1:
                in_comment, rest = True, ""
                break
            in_comment = False
            if search is rest:
                rest = rest[end + 3 :]
            else:
                lead = len(rest) - len(search)
                rest = rest[:lead] + search[end + 3 :]
        lines.append(rest)
    return lines


def is_effectively_empty(content: str | None) -> bool:
    """Whether heartbeat scratch (`HEARTBEAT.md`) holds nothing to act on. None (no file)
    is not empty: the heartbeat runs."""
    if content is None:
        return False
    for line in _strip_html_comments(content):
        text = line.strip()
        if not text or _HEADING.match(text) or _STUB.match(text) or _FENCE.match(text):
            continue
        return False
    return True


def build_prompt(configured: str | None, scratch: str | None, *, response_tool: bool) -> str:
    """The heartbeat run's message: the configured or default prompt (with the
    `heartbeat_respond` instructions when the tool is offered), then the scratch."""
    if response_tool:
        prompt = configured or HEARTBEAT_RESPONSE_TOOL_PROMPT
        for extra in (_TOOL_INSTRUCTIONS, _TOOL_FALLBACK):
            if extra not in prompt:
                prompt = f"{prompt}\n\n{extra}"
    else:
        prompt = configured or HEARTBEAT_PROMPT
    directives = (scratch or "").strip()
    if not directives or directives in prompt:
        return prompt
    return f"{prompt}\n\nHeartbeat monitor scratch:\n{directives}"


@attrs.frozen
class StrippedReply:
    should_skip: bool
    text: str
    did_strip: bool


def _strip_edges(raw: str) -> tuple[str, bool]:
    text = raw.strip()
    token = HEARTBEAT_TOKEN
    if not text or token not in text:
        return text, False
    at_end = re.compile(re.escape(token) + r"[^\w]{0,4}$")
    did = False
    changed = True
    while changed:
        changed = False
        nxt = text.strip()
        if nxt.startswith(token):
            text, did, changed = nxt[len(token) :].lstrip(), True, True
            continue
        if at_end.search(nxt):
            idx = nxt.rfind(token)
            before = nxt[:idx].rstrip()
            text = "" if not before else f"{before}{nxt[idx + len(token) :].lstrip()}".rstrip()
            did, changed = True, True
    return " ".join(text.split()), did


def _strip_markup(text: str) -> str:
    text = _TAG.sub(" ", text)
    text = re.sub(r"&nbsp;", " ", text, flags=re.IGNORECASE)
    return re.sub(r"[*`~_]+$", "", re.sub(r"^[*`~_]+", "", text))


def strip_heartbeat_token(
    raw: str | None, *, heartbeat: bool, ack_max_chars: int = 300
) -> StrippedReply:
    """OpenClaw's `stripHeartbeatToken` (see the module docstring)."""
    trimmed = (raw or "").strip()
    if not trimmed:
        return StrippedReply(True, "", False)
    if HEARTBEAT_TOKEN not in trimmed:
        return StrippedReply(False, trimmed, False)
    original = _strip_edges(trimmed)
    normalized = _strip_edges(_strip_markup(trimmed))
    text, did = original if original[1] and original[0] else normalized
    if not did:
        return StrippedReply(False, trimmed, False)
    if not text:
        return StrippedReply(True, "", True)
    rest = text.strip()
    if heartbeat and len(rest) <= max(0, ack_max_chars):
        return StrippedReply(True, "", True)
    return StrippedReply(False, rest, True)


@attrs.frozen
class ReplyVerdict:
    """What a heartbeat's reply comes to: its event status and the text to show (empty for
    an acknowledgment)."""

    status: str  # "ok-empty" | "ok-token" | "sent"
    text: str = ""
    preview: str | None = None


def _is_silent(text: str) -> bool:
    return text.strip() == SILENT_TOKEN


def classify_reply(
    text: str | None, *, ack_max_chars: int, response: dict[str, Any] | None = None
) -> ReplyVerdict:
    """The verdict on a heartbeat's final `text`, or on its `heartbeat_respond` `response`
    (which takes precedence)."""
    if response is not None:
        summary = str(response.get("summary") or "")
        if not response.get("notify"):
            return ReplyVerdict("ok-token", preview=_preview(summary))
        alert = str(response.get("notificationText") or summary).strip()
        return ReplyVerdict("sent", alert, _preview(alert)) if alert else ReplyVerdict("ok-token")
    body = (text or "").strip()
    if not body:
        return ReplyVerdict("ok-empty")
    if _is_silent(body):
        return ReplyVerdict("ok-token")
    stripped = strip_heartbeat_token(body, heartbeat=True, ack_max_chars=ack_max_chars)
    if stripped.should_skip:
        return ReplyVerdict("ok-token")
    return ReplyVerdict("sent", stripped.text, _preview(stripped.text))


def _preview(text: str) -> str | None:
    return text[:PREVIEW_CHARS] if text else None


def indicator_type(status: str) -> str | None:
    """OpenClaw's `resolveIndicatorType`."""
    return {"ok-empty": "ok", "ok-token": "ok", "sent": "alert", "failed": "error"}.get(status)


def heartbeat_event(
    *,
    ts: int,
    status: str,
    duration_ms: int | None = None,
    reason: str | None = None,
    preview: str | None = None,
    silent: bool | None = None,
    indicator: str | None = None,
) -> dict[str, Any]:
    """The `heartbeat` event's payload, as OpenClaw's `emitHeartbeatEvent` enriches it
    (`indicator`: the `indicatorType` when the status's own is not the one; a
    `no-route` or `target-none` skip gets OpenClaw's `message`)."""
    event: dict[str, Any] = {"ts": ts, "status": status}
    for name, value in (
        ("reason", reason),
        ("preview", preview),
        ("durationMs", duration_ms),
        ("silent", silent),
        ("indicatorType", indicator or indicator_type(status)),
        ("message", _MESSAGES.get(reason or "")),
    ):
        if value is not None:
            event[name] = value
    return event
