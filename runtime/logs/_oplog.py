"""Operator log lines: an event name and its fields, rendered only when a handler wants them.

Every layer logs what an operator needs to follow the gateway (connections, runs, provider
retries and fallbacks, generation publishes) through `log_event`:

    log_event(log, logging.INFO, "run ended", runId=rid, status="ok", durationMs=12)

The record's message is a `LogEvent`: `str()` of it is the logfmt line
`run ended runId=... status=ok durationMs=12` (values with spaces or quotes are quoted, None
fields are left out), so any formatter shows the fields; the JSON formatter of
`transports.server._logging` writes them as keys of the line's object instead. Nothing is built
when the logger is not enabled for the level (one `isEnabledFor` check); callers on the hot
path check `isEnabledFor` themselves before they gather the fields.
"""

from __future__ import annotations

import logging
import re
from typing import Any, Final

__all__ = ["LogEvent", "format_value", "log_event"]

_MAX_VALUE_CHARS: Final = 300


_NEEDS_QUOTES: Final = re.compile(r'[\s"=\\]')


def format_value(value: Any) -> str:
    """A field value as logfmt writes it: bare when it is one word, else double-quoted."""
    kind = type(value)
    if kind is int:
        return str(value)
    if kind is str:
        text: str = value
    elif kind is bool:
        return "true" if value else "false"
    elif kind is float:
        return f"{value:.1f}" if abs(value) < 1e15 else repr(value)
    else:
        text = str(value)
    if len(text) > _MAX_VALUE_CHARS:
        text = text[: _MAX_VALUE_CHARS - 3] + "..."
    if text and _NEEDS_QUOTES.search(text) is None:
        return text
    escaped = (
        text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    )
    return f'"{escaped}"'


class LogEvent:
    """A log message: `event` (a short phrase, "run ended") and its `fields`."""

    __slots__ = ("_text", "event", "fields")

    def __init__(self, event: str, fields: dict[str, Any]) -> None:
        self.event = event
        self.fields = fields
        self._text: str | None = None

    def __str__(self) -> str:
        """Rendered once (every handler asks: the console, the `logs.tail` ring)."""
        text = self._text
        if text is None:
            parts = [self.event]
            for key, value in self.fields.items():
                kind = type(value)
                if kind is int:  # most fields: ids' counts, durations, tokens
                    parts.append(f"{key}={value}")
                elif value is not None:
                    parts.append(f"{key}={format_value(value)}")
            text = self._text = " ".join(parts)
        return text

    def __repr__(self) -> str:
        return f"LogEvent({self.event!r}, {self.fields!r})"


def log_event(
    logger: logging.Logger,
    level: int,
    event: str,
    /,
    *,
    exc_info: BaseException | bool | None = None,
    **fields: Any,
) -> None:
    """Log `event` with `fields` at `level`, when `logger` is enabled for it. Not a
    checkpoint; never raises for a field's value (`str()` happens when formatting)."""
    if logger.isEnabledFor(level):
        logger.log(level, LogEvent(event, fields), exc_info=exc_info, stacklevel=2)
