"""Token estimates: characters / 4, the way compaction (and the `local` model) size a request.

Provider usage is only known after a turn; these estimates decide before one whether the
context fits. One image counts as ~1,200 tokens, as pi estimates it. Pure; never blocks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import msgspec

from ._types import (
    ImageContent,
    Message,
    TextContent,
    ThinkingContent,
    ToolCallContent,
    ToolSpec,
)

__all__ = [
    "IMAGE_CHARS",
    "estimate_context_tokens",
    "estimate_message_tokens",
    "estimate_text_tokens",
    "estimate_tools_tokens",
]

IMAGE_CHARS: Final = 4_800
_encoder: Final = msgspec.json.Encoder()
_TOOLS_TOKENS_MAX: Final = 64
_tools_tokens: dict[tuple[int, ...], tuple[tuple[ToolSpec, ...], int]] = {}


def estimate_text_tokens(text: str) -> int:
    """Characters / 4, rounded up."""
    return (len(text) + 3) // 4


def _content_chars(content: str | Sequence[Any]) -> int:
    if isinstance(content, str):
        return len(content)
    chars = 0
    for part in content:
        if isinstance(part, TextContent):
            chars += len(part.text)
        elif isinstance(part, ThinkingContent):
            chars += len(part.thinking)
        elif isinstance(part, ToolCallContent):
            chars += len(part.name) + len(_encoder.encode(part.arguments))
        elif isinstance(part, ImageContent):
            chars += IMAGE_CHARS
    return chars


def estimate_message_tokens(message: Message) -> int:
    """One message's size: its text, reasoning, tool call arguments (JSON) and images."""
    return (_content_chars(message.content) + 3) // 4


def estimate_tools_tokens(tools: Sequence[ToolSpec]) -> int:
    """The tool schemas' size (their JSON / 4). Remembered per set of spec objects (runs
    share them: `tool_spec` caches each tool's), so a run does not encode them again."""
    if not tools:
        return 0
    key = tuple(map(id, tools))
    known = _tools_tokens.get(key)
    if known is not None:
        return known[1]
    tokens = (len(_encoder.encode(list(tools))) + 3) // 4
    if len(_tools_tokens) >= _TOOLS_TOKENS_MAX:
        _tools_tokens.clear()
    # The entry holds the specs themselves, so their ids cannot be reused while it lives.
    _tools_tokens[key] = (tuple(tools), tokens)
    return tokens


def estimate_context_tokens(
    system_prompt: str, messages: Sequence[Message], tools: Sequence[ToolSpec] = ()
) -> int:
    """A request's size: system prompt + every message + the tool schemas (JSON)."""
    total = estimate_text_tokens(system_prompt)
    total += sum(estimate_message_tokens(m) for m in messages)
    return total + estimate_tools_tokens(tools)
