"""The store the config asks for: `storage.backend` (`sqlite`, the default: the state dir's
`clawlane.sqlite`; `postgres`: `storage.postgres.url`), opened as `actors._store.Store`;
and the device pairing store beside it (`open_pairing`: the state dir's pairing file, or
with `postgres` the cluster's pairing document in that database).

The backend is chosen at start (a config reload does not move the data). Errors: a
`StoreError` from `open_store_backend` when the database cannot be opened, in one line
naming the file or server (a PostgreSQL server that cannot be reached, an unsupported
schema); a `PairingStoreError` from `open_pairing` when the pairing store cannot be read;
`storage.backend` and `storage.postgres.url` themselves are checked when the config is
parsed (`runtime.model.ConfigError` naming the key).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Final

import trio

from runtime.devices import PairingStore, open_pairing_store
from runtime.model import Config

from ._errors import StoreError
from ._pg import PostgresBackend
from ._pg_docs import PostgresDocument
from ._sqlite import SqliteBackend
from ._store import DEFAULT_BATCH_MAX, DEFAULT_QUEUE_MAX, Store, open_store
from ._store_ops import StoreBackend

__all__ = ["SQLITE_FILENAME", "open_pairing", "open_store_backend", "store_backend"]

SQLITE_FILENAME: Final = "clawlane.sqlite"


def store_backend(config: Config, state_dir: Path) -> StoreBackend:
    """The backend `config.storage` names (no I/O). Raises `StoreError` naming the key
    when `storage.postgres.url` is missing or not a PostgreSQL URL."""
    storage = config.storage
    if storage.backend == "sqlite":
        return SqliteBackend(state_dir / SQLITE_FILENAME)
    url = storage.postgres.url
    if not url:
        raise StoreError('storage.postgres.url is required with storage.backend "postgres"')
    return PostgresBackend(url)


@asynccontextmanager
async def open_store_backend(
    config: Config,
    state_dir: Path,
    *,
    batch_max: int = DEFAULT_BATCH_MAX,
    queue_max: int = DEFAULT_QUEUE_MAX,
) -> AsyncIterator[Store]:
    """`open_store` on the configured backend (see `store_backend`). A checkpoint; raises
    `StoreError` in one line when the database cannot be opened or reached."""
    backend = store_backend(config, state_dir)
    async with open_store(backend=backend, batch_max=batch_max, queue_max=queue_max) as store:
        yield store


@asynccontextmanager
async def open_pairing(config: Config, state_dir: Path) -> AsyncIterator[PairingStore]:
    """The device pairing store for `config.storage`: the state dir's `devices/pairing.json`
    (SQLite: the processes on this state dir share it), or with `postgres` the document
    `devices/pairing` in that database (every node of the cluster shares it), seeded from
    the state dir's file when it does not exist yet, so that approvals made before the
    gateway joined a cluster are kept (the first node to start seeds it; other nodes' files
    are not read). Open it after the store (whose migrations make its table). A checkpoint;
    raises `PairingStoreError` in one line naming the file or the document."""
    url = config.storage.postgres.url
    if config.storage.backend != "postgres" or not url:
        yield await open_pairing_store(state_dir)
        return
    document = PostgresDocument(url)
    try:
        yield await open_pairing_store(state_dir, document)
    finally:
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(document.close)
