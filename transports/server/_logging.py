"""The gateway process's logging: levels, the text and JSON line formats, one handler.

`configure_logging(level, fmt)` sends every `clawlane.*` record at `level` or above to
stderr, one line each (buffered: WARNING and above at once, the rest within 0.2 s); other libraries' records (httpx logs every request at INFO) only from
WARNING, unless the level is `debug`.

- `text`: `2026-12-01T21:40:00.123Z INFO  clawlane.runs: run ended runId=r1 status=ok ...`
- `json`: one object a line: `{"ts": "...Z", "level": "info", "logger": "clawlane.runs",
  "msg": "run ended", "runId": "r1", "status": "ok", ...}`; a `runtime.logs._oplog.LogEvent`'s
  fields become keys (a field named like a reserved key gets a `_` suffix), a traceback is
  `exc`; a line logged inside a span (with `diagnostics.otel` on) has its `traceId` and
  `spanId`.

`LOG_LEVELS` and `LOG_FORMATS` are the only accepted values (`--log-level`, `--log-format`,
`$CLAWLANE_LOG_LEVEL`, `$CLAWLANE_LOG_FORMAT`).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from typing import Any, Final, TextIO

import msgspec

from runtime import telemetry
from runtime.logs import LogEvent

__all__ = [
    "DEFAULT_LOG_FORMAT",
    "DEFAULT_LOG_LEVEL",
    "LOG_FORMATS",
    "LOG_LEVELS",
    "JsonFormatter",
    "TextFormatter",
    "configure_logging",
]

LOG_LEVELS: Final = ("debug", "info", "warning", "error", "critical")
LOG_FORMATS: Final = ("text", "json")
DEFAULT_LOG_LEVEL: Final = "info"
DEFAULT_LOG_FORMAT: Final = "text"
FLUSH_INTERVAL_S: Final = 0.2
_RESERVED: Final = frozenset({"ts", "level", "logger", "msg", "exc", "traceId", "spanId"})
_json: Final = msgspec.json.Encoder()


_second: list[Any] = [-1, ""]  # the last second formatted, and its text (one per process)


def _timestamp(created: float) -> str:
    seconds = int(created)
    if seconds != _second[0]:
        _second[:] = [seconds, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))]
    return f"{_second[1]}.{int((created - seconds) * 1000):03d}Z"


class TextFormatter(logging.Formatter):
    """`<UTC time> <LEVEL> <logger>: <message>` (+ the traceback on the next lines)."""

    def format(self, record: logging.LogRecord) -> str:
        line = (
            f"{_timestamp(record.created)} {record.levelname:<7} {record.name}: "
            f"{record.getMessage()}"
        )
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        elif record.exc_text:
            line += "\n" + record.exc_text
        return line


class JsonFormatter(logging.Formatter):
    """One JSON object a line (see the module doc)."""

    def format(self, record: logging.LogRecord) -> str:
        msg = record.msg
        data: dict[str, Any] = {
            "ts": _timestamp(record.created),
            "level": record.levelname.lower(),
            "logger": record.name,
        }
        if isinstance(msg, LogEvent) and not record.args:
            data["msg"] = msg.event
            for key, value in msg.fields.items():
                if value is not None:
                    data[f"{key}_" if key in _RESERVED else key] = _plain(value)
        else:
            data["msg"] = record.getMessage()
        if record.exc_info:
            data["exc"] = self.formatException(record.exc_info)
        if telemetry.STATE.on and (ids := telemetry.current_ids()) is not None:
            data["traceId"], data["spanId"] = ids  # logged inside a span (diagnostics.otel)
        return _json.encode(data).decode()


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return str(value)


class _Handler(logging.StreamHandler[TextIO]):
    """One line a record into a block-buffered stream, flushed at once for WARNING and
    above and otherwise within `FLUSH_INTERVAL_S` (by a small daemon thread): the run lines
    are on the hot path, and a write system call for each line (what `sys.stderr`, line
    buffered, does) cost the gateway a tenth of its throughput. A failed write (a closed
    pipe) never raises into a task."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__(stream)
        self._dirty = False
        self._last_flush = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._flusher, name="clawlane-log-flush", daemon=True
        )
        self._thread.start()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.stream.write(self.format(record) + "\n")
            if record.levelno >= logging.WARNING:
                self.flush()
            else:
                self._dirty = True
        except Exception:
            self.handleError(record)

    def flush(self) -> None:
        self._dirty = False
        super().flush()

    def _flusher(self) -> None:
        while not self._stop.wait(FLUSH_INTERVAL_S):
            if self._dirty:
                try:
                    self.flush()
                except Exception:
                    pass

    def close(self) -> None:
        self._stop.set()
        try:
            self.flush()
        finally:
            super().close()

    def handleError(self, record: logging.LogRecord) -> None:
        pass


def _stderr_buffered() -> TextIO:
    """fd 2 with a 64 KiB buffer (a duplicate: `sys.stderr` stays as it is)."""
    try:
        fd = os.dup(sys.stderr.fileno())
    except (AttributeError, OSError, ValueError):
        return sys.stderr  # no real stderr (embedded): use what there is
    return open(fd, "w", buffering=1 << 16, encoding="utf-8", errors="backslashreplace")


_installed: logging.Handler | None = None


def configure_logging(
    level: str = DEFAULT_LOG_LEVEL, fmt: str = DEFAULT_LOG_FORMAT, *, stream: TextIO | None = None
) -> logging.Handler:
    """Install the process's one log handler (replacing an earlier one of ours). `level`
    and `fmt` must be in `LOG_LEVELS` / `LOG_FORMATS` (`ValueError` otherwise)."""
    global _installed
    if level not in LOG_LEVELS:
        raise ValueError(f"unknown log level {level!r} (choose from {', '.join(LOG_LEVELS)})")
    if fmt not in LOG_FORMATS:
        raise ValueError(f"unknown log format {fmt!r} (choose from {', '.join(LOG_FORMATS)})")
    numeric = logging.getLevelName(level.upper())
    # The logging HOWTO's "Optimization": our formats show neither the caller's file and
    # line nor thread and process names, so the records need not collect them (about a
    # quarter of a record's cost; the run lines are on the hot path).
    logging._srcfile = None
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    handler = _Handler(stream if stream is not None else _stderr_buffered())
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    if _installed is not None:
        root.removeHandler(_installed)
        _installed.close()
    root.addHandler(handler)
    _installed = handler
    root.setLevel(numeric if numeric == logging.DEBUG else max(numeric, logging.WARNING))
    logging.getLogger("clawlane").setLevel(numeric)
    return handler
