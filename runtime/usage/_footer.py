"""The per-response usage footer (`/usage off|tokens|full`) and the `/usage cost` summary, in
OpenClaw's words.

The mode of a reply: the session's own (`responseUsage`: `off` is a choice too), else the
config's `messages.responseUsage` (one mode, or a map by channel with a `default`), else
`off`. `/usage` with no argument steps off → tokens → full → off from the mode in effect.
`tokens` appends `Usage: 1.2k in / 30 out` (with `· cache 4k cached / 1k new` when there
were cache reads or writes); `full` adds the run's estimated cost (`· est $0.0042`) when every
call of the run has a price. A run that reported no tokens gets no footer.
"""

from __future__ import annotations

import decimal
from collections.abc import Iterable, Mapping
from typing import Final, Literal

from ..llm import AssistantMessage, Message
from ._pricing import PriceTable, call_cost

__all__ = [
    "RESET_WORDS",
    "UsageMode",
    "effective_usage_mode",
    "format_token_count",
    "format_usd",
    "next_usage_mode",
    "normalize_usage_mode",
    "usage_footer",
]

UsageMode = Literal["off", "tokens", "full"]
RESET_WORDS: Final = frozenset({"default", "inherit", "inherited", "clear", "reset", "unpin"})
_OFF: Final = frozenset({"off", "false", "no", "0", "disable", "disabled"})
_TOKENS: Final = frozenset(
    {"on", "true", "yes", "1", "enable", "enabled", "tokens", "token", "tok", "minimal", "min"}
)
_FULL: Final = frozenset({"full", "session"})


def normalize_usage_mode(raw: str | None) -> UsageMode | None:
    """`raw` as a mode (OpenClaw's spellings: `on` is `tokens`), None when it is none."""
    key = (raw or "").strip().lower()
    if key in _OFF:
        return "off"
    if key in _TOKENS:
        return "tokens"
    if key in _FULL:
        return "full"
    return None


def effective_usage_mode(
    session: str | None, configured: str | Mapping[str, str] | None, channel: str | None
) -> UsageMode:
    """The session's mode, else the configured default (for `channel`), else off."""
    own = normalize_usage_mode(session)
    if own is not None:
        return own
    if isinstance(configured, Mapping):
        configured = (configured.get(channel) if channel else None) or configured.get("default")
    return normalize_usage_mode(configured) or "off"


def next_usage_mode(current: UsageMode) -> UsageMode:
    """What `/usage` with no argument switches to."""
    following: dict[UsageMode, UsageMode] = {"off": "tokens", "tokens": "full", "full": "off"}
    return following[current]


def _fixed(value: float, digits: int) -> str:
    """JavaScript's `toFixed`: the exact binary value, a tie rounded up."""
    step = decimal.Decimal(1).scaleb(-digits)
    return str(decimal.Decimal(value).quantize(step, rounding=decimal.ROUND_HALF_UP))


def format_token_count(n: float) -> str:
    """OpenClaw's compact count: 950, 1.3k, 12k, 1.5m."""
    n = max(0.0, float(n))
    if n < 1000:
        return _fixed(n, 0)
    if n < 1_000_000:
        thousands = _fixed(n / 1000, 1 if n < 10_000 else 0)
        if float(thousands) < 1000:
            return f"{thousands}k"
    return f"{_fixed(n / 1_000_000, 1)}m"


def format_usd(value: float | None) -> str | None:
    if value is None:
        return None
    return f"${_fixed(value, 2)}" if value >= 0.01 else f"${_fixed(value, 4)}"


def usage_footer(mode: UsageMode, messages: Iterable[Message], prices: PriceTable) -> str | None:
    """The footer of a run whose transcript lines are `messages` (its model calls are the
    assistant messages), None when off or nothing was reported."""
    if mode == "off":
        return None
    calls = [m for m in messages if isinstance(m, AssistantMessage) and (m.provider or m.model)]
    inp = sum(m.usage.input for m in calls)
    out = sum(m.usage.output for m in calls)
    read = sum(m.usage.cacheRead for m in calls)
    write = sum(m.usage.cacheWrite for m in calls)
    if not (inp or out or read or write):
        return None
    line = f"Usage: {format_token_count(inp)} in / {format_token_count(out)} out"
    if read or write:
        line += f" · cache {format_token_count(read)} cached / {format_token_count(write)} new"
    if mode == "full":
        costs = [call_cost(m.usage, prices.get(m.provider, m.model)) for m in calls]
        if all(c is not None for c in costs):
            line += f" · est {format_usd(sum(c.total for c in costs if c is not None))}"
    return line
