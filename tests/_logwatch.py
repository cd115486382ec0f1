"""A logging handler for tests: keeps every record and lets a trio task wait for one."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import trio

from runtime.logs._oplog import LogEvent


class LogWatch(logging.Handler):
    """Records of the `clawlane` loggers at DEBUG and above, in order."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self._changed = trio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        self._changed.set()
        self._changed = trio.Event()

    def events(self, name: str) -> list[dict[str, Any]]:
        """The fields of every `LogEvent` called `name` (with `_level` and `_logger`)."""
        out = []
        for r in self.records:
            if isinstance(r.msg, LogEvent) and r.msg.event == name:
                out.append({**r.msg.fields, "_level": r.levelname, "_logger": r.name})
        return out

    async def wait_for(self, predicate: Callable[[LogWatch], bool]) -> None:
        """Wait until `predicate(self)` holds. A checkpoint."""
        while not predicate(self):
            await self._changed.wait()


@contextmanager
def watch_logs(level: int = logging.DEBUG) -> Iterator[LogWatch]:
    watch = LogWatch()
    logger = logging.getLogger("clawlane")
    old = logger.level
    logger.addHandler(watch)
    logger.setLevel(level)
    try:
        yield watch
    finally:
        logger.removeHandler(watch)
        logger.setLevel(old)
