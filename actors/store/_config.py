"""The store the config asks for: `storage.backend` (`sqlite`, the default: the state dir's
`clawlane.sqlite`; `postgres`: `storage.postgres.url`), opened as `actors.store._store.Store`;
and the documents beside it, the state dir's files or with `postgres` the cluster's
documents in that database: the device pairing store (`open_pairing`) and the Control UI's
user preferences (`open_prefs`); and in a cluster on PostgreSQL the cluster's config
(`open_config_document`); and where the agents' memory indexes live (`memory_indexes`).

The backend is chosen at start (a config reload does not move the data). Errors: a
`StoreError` from `open_store_backend` when the database cannot be opened, in one line
naming the file or server (a PostgreSQL server that cannot be reached, an unsupported
schema); a `PairingStoreError` from `open_pairing` when the pairing store cannot be read
(a `UserPrefsError` from `open_prefs`);
`storage.backend` and `storage.postgres.url` themselves are checked when the config is
parsed (`runtime.model.ConfigError` naming the key).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal

import trio

from runtime.devices import PairingStore, open_pairing_store
from runtime.model import Config
from runtime.users import UserPrefs, open_user_prefs

from .._errors import StoreError
from ._ops import StoreBackend
from ._sqlite import SqliteBackend
from ._store import DEFAULT_BATCH_MAX, DEFAULT_QUEUE_MAX, Store, open_store

# `_pg` and `_documents` (psycopg, with its libpq and asyncio) are imported where the config
# names PostgreSQL, not here: the embedded default (SQLite) does not load them.
if TYPE_CHECKING:
    from ._config_document import ConfigDocument
    from ._documents import PostgresDocument
    from ._memory import PostgresMemoryIndexes

__all__ = [
    "SQLITE_FILENAME",
    "memory_indexes",
    "open_config_document",
    "open_pairing",
    "open_prefs",
    "open_store_backend",
    "store_backend",
]

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
    from ._pg import PostgresBackend

    return PostgresBackend(url)


def memory_indexes(store: Store) -> PostgresMemoryIndexes | None:
    """Where a gateway on `store` keeps its agents' memory indexes: with PostgreSQL, in that
    database (`_memory.PostgresMemoryIndexes`, on connections like the store's readers, for
    `runtime.memory.MemoryService.use_indexes`); with SQLite None (the state dir's files,
    the service's default). No I/O."""
    backend = store.backend
    if type(backend).__name__ != "PostgresBackend":
        return None
    from ._memory import PostgresMemoryIndexes

    return PostgresMemoryIndexes(backend.open_reader, backend.location)


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
    async with _cluster_document(config, "pairing") as document:
        yield await open_pairing_store(state_dir, document)


@asynccontextmanager
async def open_prefs(config: Config, state_dir: Path) -> AsyncIterator[UserPrefs]:
    """The Control UI's user preferences for `config.storage`: the state dir's
    `users/prefs.json`, or with `postgres` the document `users/prefs` in that database
    (every node shares it; a file kept from before the gateway joined a cluster is not
    taken in). Open it after the store. A checkpoint; raises `UserPrefsError` in one line
    naming the file or the document."""
    async with _cluster_document(config, "prefs") as document:
        yield await open_user_prefs(state_dir, document)


@asynccontextmanager
async def open_config_document(config: Config) -> AsyncIterator[ConfigDocument | None]:
    """The cluster's config document (`_config_document`) when the gateway is a node of a
    cluster (`cluster.redis.url`) on PostgreSQL, closed at the end; otherwise None (the
    config is the node's file). No I/O until used."""
    url = config.storage.postgres.url
    if config.cluster.redis.url is None or config.storage.backend != "postgres" or not url:
        yield None
        return
    from ._config_document import ConfigDocument

    document = ConfigDocument(url)
    try:
        yield document
    finally:
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(document.close)


@asynccontextmanager
async def _cluster_document(
    config: Config, which: Literal["pairing", "prefs"]
) -> AsyncIterator[PostgresDocument | None]:
    """With `storage.backend: "postgres"`, the document `which` in that database, closed
    at the end; otherwise None (the state dir's file)."""
    url = config.storage.postgres.url
    if config.storage.backend != "postgres" or not url:
        yield None
        return
    from ._documents import PAIRING_DOCUMENT, PREFS_DOCUMENT, PostgresDocument

    document = PostgresDocument(url, PAIRING_DOCUMENT if which == "pairing" else PREFS_DOCUMENT)
    try:
        yield document
    finally:
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(document.close)
