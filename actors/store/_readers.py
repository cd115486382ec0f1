"""The store's reader connections (`Readers`): reads run in worker threads on connections of
their own, beside the writer, at most `MAX_READERS` at a time.

A connection is kept for the next read. A kept one that died while idle (a PostgreSQL
connection cut while the database was away) is replaced before it is used; one that fails
and is no longer usable is closed, not kept, and when it was a kept one the read is tried
once more on a fresh connection (reads are idempotent): a blip that is over fails no read.

Errors: `StoreError` (the backend's driver error mapped with `raise ... from`);
`StoreClosedError` when the store closed before the read began.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, TypeVar

import trio

from .._errors import StoreError
from ._ops import StoreBackend

__all__ = ["MAX_READERS", "Readers"]

_T = TypeVar("_T")

MAX_READERS: Final = 4


class _DeadReader(Exception):
    """A read failed and took its reader with it (`StoreError` in `error`)."""

    def __init__(self, error: StoreError) -> None:
        super().__init__(str(error))
        self.error = error


class Readers:
    """The reader connections of one store. `closed()` says whether the store has closed
    (a connection is then closed after its read, not kept); `check_open()` raises
    `StoreClosedError` when it has. `kept` is what the store closes with the backend."""

    def __init__(
        self, backend: StoreBackend, closed: Callable[[], bool], check_open: Callable[[], None]
    ) -> None:
        self._backend = backend
        self._errors = backend.errors
        self._closed = closed
        self._check_open = check_open
        self._slots = trio.Semaphore(MAX_READERS)
        self.kept: list[Any] = []

    async def read(self, query: Callable[[Any], _T]) -> _T:
        """`query(reader)` in a worker thread on a reader of the backend's (see the module
        docstring). A checkpoint. Raises `StoreError`."""
        backend = self._backend
        async with self._slots:
            self._check_open()
            kept = self.kept.pop() if self.kept else None
            if kept is not None and not backend.reader_ok(kept):
                with trio.CancelScope(shield=True):  # died while idle: replaced before use
                    await trio.to_thread.run_sync(backend.close_reader, kept)
                kept = None
            if kept is not None:
                try:
                    return await self._read_on(kept, query)
                except _DeadReader:
                    pass  # it died unnoticed: once more, on a fresh connection
            try:
                return await self._read_on(None, query)
            except _DeadReader as dead:
                raise dead.error from dead.error.__cause__

    async def _read_on(self, conn: Any, query: Callable[[Any], _T]) -> _T:
        """`query` on `conn` (None: a fresh reader), which is kept for the next read unless
        it failed for good. Raises `StoreError`, or `_DeadReader` (carrying it) when the
        reader is no longer usable."""
        backend = self._backend
        keep = True
        try:
            if conn is None:
                conn = await trio.to_thread.run_sync(backend.open_reader)
            return await trio.to_thread.run_sync(query, conn)
        except self._errors as exc:
            keep = conn is not None and backend.reader_ok(conn)
            error = StoreError(f"read from {backend.location} failed: {exc}")
            error.__cause__ = exc
            if not keep:
                raise _DeadReader(error) from exc
            raise error from exc
        finally:
            if conn is not None:
                if self._closed() or not keep:
                    with trio.CancelScope(shield=True):
                        await trio.to_thread.run_sync(backend.close_reader, conn)
                else:
                    self.kept.append(conn)
