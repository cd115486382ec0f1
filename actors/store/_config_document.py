"""The cluster's config as one document (`ConfigDocument`): with `cluster.redis.url` and
`storage.backend: "postgres"`, the config every node runs is the row `gateway/config` of
`shared_documents` (`_documents.PostgresDocument`), not each node's file.

The body is a `ConfigRecord`: the config text as an operator wrote it (JSON5, `${VAR}`
unexpanded: each node expands its own environment), when it was written (`writtenAtMs`, the
writer's clock), by which node and why (`config.patch`, `file`, `seed`). Its hash for
`config.get` and the `baseHash` of writes is the text's (`runtime.model.hash_config_raw`),
so every node answers the same hash for the same document. The text holds what the file
held, secrets included, as the pairing document holds device tokens: the database is the
cluster's trust boundary (Redis carries only redacted configs and version numbers).

A write is a compare-and-set: `locked()` takes the row lock (`SELECT ... FOR UPDATE`) and
reads the record; the caller checks its base hash against it, validates and builds, then
`Held.write_sync` replaces it; leaving the block commits (or rolls back when nothing was
written). Two nodes writing at once wait for each other, and the second one's base hash no
longer matches. Reads (`read`, `current`) take no lock and run on a connection of their own,
so `config.get` never waits for a write in progress.

Every call is a checkpoint that runs psycopg in a worker thread (`Held.write_sync` blocks:
call it from the thread doing the build). Errors: `StoreError` naming the document (the
server cannot be reached, the lock was not had within `LOCK_TIMEOUT_MS`, a body that does not
decode); cancellation while a call runs waits for it (psycopg calls are not interruptible),
and a held lock is always released.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Final, TypeVar

import attrs
import msgspec
import psycopg
import trio

from runtime.devices import DocumentVersion

from .._errors import StoreError
from ._documents import CONFIG_DOCUMENT, LOCK_TIMEOUT_MS, PostgresDocument

__all__ = ["ConfigDocument", "ConfigRecord", "Held", "StoredConfig"]

_T = TypeVar("_T")


def _one_line(exc: BaseException) -> str:
    return "; ".join(part.strip() for part in str(exc).splitlines() if part.strip())


class ConfigRecord(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The document's body."""

    text: str
    writtenAtMs: int
    origin: str
    reason: str


_ENCODER: Final = msgspec.json.Encoder()
_DECODER: Final = msgspec.json.Decoder(ConfigRecord)


@attrs.frozen
class StoredConfig:
    """The record and the row's version (1 up at each write)."""

    record: ConfigRecord
    version: int


class Held:
    """The row lock, held for one compare-and-set (`ConfigDocument.locked`)."""

    def __init__(self, document: ConfigDocument, stored: StoredConfig | None) -> None:
        self._document = document
        self.stored = stored
        """What the document held when the lock was taken (None: no document yet)."""

    def write_sync(self, record: ConfigRecord) -> int:
        """Replace the record (committed when the `locked` block ends); the new version.
        Blocking: call it in a worker thread. Raises `StoreError`."""
        document = self._document
        version = document._call(lambda: document._writer.write_locked(_ENCODER.encode(record)))
        assert version is not None
        return version[0]


class ConfigDocument:
    """The config document on the PostgreSQL server of `url` (`storage.postgres.url`). No
    I/O until used; `close` (blocking) closes its connections."""

    def __init__(
        self, url: str, name: str = CONFIG_DOCUMENT, *, lock_timeout_ms: int = LOCK_TIMEOUT_MS
    ) -> None:
        self._writer = PostgresDocument(url, name, lock_timeout_ms=lock_timeout_ms)
        self._reader = PostgresDocument(url, name, lock_timeout_ms=lock_timeout_ms)
        self._read_lock = threading.Lock()  # one reader connection, many callers
        self._write_lock = trio.Lock()

    @property
    def where(self) -> str:
        return self._writer.where

    def _call(self, fn: Callable[[], _T]) -> _T:
        try:
            return fn()
        except (psycopg.Error, msgspec.DecodeError) as exc:
            raise StoreError(f"the config document {self.where}: {_one_line(exc)}") from exc

    def _stored(self, body: bytes | None, version: DocumentVersion) -> StoredConfig | None:
        if body is None or version is None:
            return None
        return StoredConfig(_DECODER.decode(body), version[0])

    def read_sync(self) -> StoredConfig | None:
        """The record now (None: no document yet), without the lock. Blocking."""
        with self._read_lock:
            return self._call(lambda: self._stored(*self._reader.read()))

    async def read(self) -> StoredConfig | None:
        """`read_sync` in a worker thread."""
        return await trio.to_thread.run_sync(self.read_sync)

    async def current(self) -> int | None:
        """The document's version now (None: none yet). One indexed query."""

        def version() -> int | None:
            with self._read_lock:
                found = self._call(self._reader.current)
            return None if found is None else found[0]

        return await trio.to_thread.run_sync(version)

    @asynccontextmanager
    async def locked(self) -> AsyncIterator[Held]:
        """Hold the row lock for a compare-and-set: yields the record as it is now; what
        `Held.write_sync` wrote is committed when the block ends without an error, rolled
        back otherwise. Raises `StoreError` when the lock cannot be had."""
        async with self._write_lock:
            writer = self._writer
            commit = False
            try:
                body, version = await trio.to_thread.run_sync(
                    lambda: self._call(lambda: writer.lock_and_read(None))
                )
                yield Held(self, self._stored(body, version))
                commit = True
            finally:
                with trio.CancelScope(shield=True):
                    await trio.to_thread.run_sync(
                        lambda: self._call(lambda: writer.release(commit=commit))
                    )

    def close(self) -> None:
        """Close both connections. Blocking."""
        self._writer.close()
        self._reader.close()
