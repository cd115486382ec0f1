"""The typed settings of `agents.defaults` that the agent loop reads: compaction and block
streaming (OpenClaw's keys). Decoded once, with the rest of the config (`runtime.model.
_config`), so a bad value stops the gateway with the key's path; the agent floor adds the
behaviour (`runtime.agent._compaction`, `runtime.agent._chunking`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, Final, Literal, Self

import msgspec

__all__ = [
    "DEFAULT_IDLE_MS",
    "DEFAULT_KEEP_RECENT_TOKENS",
    "DEFAULT_MAX_CHARS",
    "DEFAULT_MIN_CHARS",
    "DEFAULT_RESERVE_TOKENS",
    "DEFAULT_RESERVE_TOKENS_FLOOR",
    "BlockStreamingChunk",
    "BlockStreamingCoalesce",
    "BreakPreference",
    "CompactionSettings",
    "MemoryFlushSettings",
]

DEFAULT_RESERVE_TOKENS: Final = 16_384
DEFAULT_RESERVE_TOKENS_FLOOR: Final = 20_000
DEFAULT_KEEP_RECENT_TOKENS: Final = 20_000

DEFAULT_MIN_CHARS: Final = 800
DEFAULT_MAX_CHARS: Final = 1200
DEFAULT_IDLE_MS: Final = 1000

BreakPreference = Literal["paragraph", "newline", "sentence"]

_Positive = Annotated[int, msgspec.Meta(ge=1)]
_NonNegative = Annotated[int, msgspec.Meta(ge=0)]


_BYTE_SIZE_PATTERN: Final = r"^\s*(\d+(?:\.\d+)?)\s*([bB]|[kKmMgG][bB]?)?\s*$"
_BYTE_SIZE: Final = re.compile(_BYTE_SIZE_PATTERN)
_ByteSize = Annotated[
    str,
    msgspec.Meta(pattern=_BYTE_SIZE_PATTERN, description="a size such as 512kb, 2mb or 1gb"),
]
_BYTE_UNITS: Final = {"b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


class MemoryFlushSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """`agents.defaults.compaction.memoryFlush` (OpenClaw's keys): the silent turn before a
    compaction that asks the agent to save what matters to its memory files
    (`runtime.agent._memoryflush`). `softThresholdTokens`: how far below the compaction
    threshold it starts; `forceFlushTranscriptBytes` (bytes, or a size such as `"2mb"`; 0
    off): flush once the context's text reaches it; `model`: an exact `provider/model` for
    the flush turn only."""

    enabled: bool = True
    model: str | None = None
    softThresholdTokens: Annotated[int, msgspec.Meta(ge=0)] = 4000
    forceFlushTranscriptBytes: _NonNegative | _ByteSize = 2 * 1024 * 1024

    def force_bytes(self) -> int | None:
        """`forceFlushTranscriptBytes` in bytes (None: not a size)."""
        raw = self.forceFlushTranscriptBytes
        if isinstance(raw, int):
            return raw
        m = _BYTE_SIZE.match(raw)
        if m is None:
            return None
        unit = (m[2] or "b")[0].lower()
        return int(float(m[1]) * _BYTE_UNITS[unit])


class CompactionSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """`agents.defaults.compaction` (OpenClaw's keys). `notifyUser` (off by default, as
    OpenClaw's): brief context-maintenance notices to the user; clawlane sends the one for a
    memory flush given up after its failures (`runtime.agent._memoryflush`)."""

    enabled: bool = True
    reserveTokens: int = msgspec.field(default=DEFAULT_RESERVE_TOKENS)
    reserveTokensFloor: int = msgspec.field(default=DEFAULT_RESERVE_TOKENS_FLOOR)
    keepRecentTokens: int = msgspec.field(default=DEFAULT_KEEP_RECENT_TOKENS)
    memoryFlush: MemoryFlushSettings = msgspec.field(default_factory=MemoryFlushSettings)
    notifyUser: bool = False

    @classmethod
    def from_agent_defaults(cls, defaults: Mapping[str, Any]) -> Self:
        """Read `defaults["compaction"]` (absent: the defaults). Raises `msgspec.ValidationError`
        naming the bad key."""
        raw = defaults.get("compaction")
        return cls() if raw is None else msgspec.convert(raw, cls)


class BlockStreamingChunk(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """`agents.defaults.blockStreamingChunk`."""

    minChars: _Positive = DEFAULT_MIN_CHARS
    maxChars: _Positive = DEFAULT_MAX_CHARS
    breakPreference: BreakPreference = "paragraph"


class BlockStreamingCoalesce(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """`agents.defaults.blockStreamingCoalesce`; unset sizes follow the chunk settings and the
    channel's text limit."""

    minChars: _Positive | None = None
    maxChars: _Positive | None = None
    idleMs: _NonNegative = DEFAULT_IDLE_MS
