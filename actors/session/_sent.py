"""What a run sends besides its reply: each block reply, notice and `message` tool message is a
chat `final` of its own, after the run's buffered delta (`send_message`, `message_sender`)."""

from __future__ import annotations

import time
from collections.abc import Callable

from ..runs import ChatStream

__all__ = ["message_sender", "send_message"]


def send_message(chat: ChatStream, run_id: str, message_id: str, text: str) -> None:
    """A message of run `run_id` (a block reply, the `message` tool): a chat `final` of
    its own under `message_id`, after the run's buffered delta. Not a checkpoint."""
    chat.flush()
    chat.hub.emit_chat(
        run_id,
        "final",
        runId=message_id,
        message={
            "role": "assistant",
            "content": [{"type": "text", "text": text}],
            "timestamp": int(time.time() * 1000),
        },
    )


def message_sender(chat: ChatStream, run_id: str) -> Callable[[str, int], None]:
    """The `message` tool's `send(text, ts)` for run `run_id`. It holds the chat stream and
    the id, not the run: the run's tools hold it, and a run reachable from its own tools is
    a reference cycle per run, freed only by a full collection (the gateway's collector
    runs rarely, `transports.server._startup.GC_THRESHOLDS`) with the run's whole context
    in it."""
    return lambda text, ts: send_message(chat, run_id, f"message-{run_id}-{ts}", text)
