"""`sessions.preview` (operator.read): the last few messages of each of up to 64 sessions,
as OpenClaw's Control UI shows them in its session list and hover cards.

`{keys, limit?, maxChars?}` answers `{ts, previews: [{key, status, items: [{role, text}]}]}`:
for each key in order, `status` `ok` (its last `limit` user and assistant messages of the
active branch, default 12, each cut to `maxChars` characters, default 240, at most 800, with
`...`), `empty` (a session with nothing to show) or `missing` (no such session). Read from
the store without waking the sessions' actors; silent replies (`NO_REPLY`) and messages
without text are left out, as OpenClaw leaves them out. A key that is not a session key is
`INVALID_REQUEST`.
"""

from __future__ import annotations

import time
from typing import Any, Final

from runtime.agent import is_silent_reply
from runtime.llm import AssistantMessage, UserMessage
from runtime.protocol import SessionsPreviewParams
from runtime.sessions import branch_messages, message_text

from ._context import Call, MethodTable
from ._submit import key_of

__all__ = ["register"]

KEYS_MAX: Final = 64
LIMIT_DEFAULT: Final = 12
CHARS_DEFAULT: Final = 240
CHARS_MAX: Final = 800


def register(methods: MethodTable) -> None:
    methods.add("sessions.preview", sessions_preview, SessionsPreviewParams)


def _cut(text: str, max_chars: int) -> str:
    limit = min(CHARS_MAX, max(20, max_chars))
    return text if len(text) <= limit else text[: limit - 3] + "..."


async def sessions_preview(call: Call, params: SessionsPreviewParams) -> dict[str, Any]:
    store = call.gateway.actors.supervisor.store
    limit = params.limit if isinstance(params.limit, int) else LIMIT_DEFAULT
    max_chars = params.maxChars if isinstance(params.maxChars, int) else CHARS_DEFAULT
    keys = [k.strip() for k in params.keys if k.strip()][:KEYS_MAX]
    resolved = [(raw, key_of(call, raw)) for raw in keys]  # a bad key fails the request first
    previews: list[dict[str, Any]] = []
    for raw, key in resolved:
        row = await store.get_session(key)
        if row is None:
            previews.append({"key": raw, "status": "missing", "items": []})
            continue
        items: list[dict[str, str]] = []
        for entry in reversed(branch_messages(await store.load_entries(row.sessionId))):
            if len(items) >= limit:
                break
            message = entry.message
            if not isinstance(message, UserMessage | AssistantMessage):
                continue
            text = message_text(message)
            if not text or (isinstance(message, AssistantMessage) and is_silent_reply(text)):
                continue
            role = "user" if isinstance(message, UserMessage) else "assistant"
            items.append({"role": role, "text": _cut(text, max_chars)})
        items.reverse()
        previews.append({"key": raw, "status": "ok" if items else "empty", "items": items})
    return {"ts": int(time.time() * 1000), "previews": previews}
