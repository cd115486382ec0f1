"""The store the config asks for: `storage.backend` (`sqlite`, the default: the state dir's
`clawlane.sqlite`; `postgres`: `storage.postgres.url`), opened as `actors._store.Store`.

The backend is chosen at start (a config reload does not move the data). Errors: a
`StoreError` from `open_store_backend` when the database cannot be opened, in one line
naming the file or server (a PostgreSQL server that cannot be reached, an unsupported
schema); `storage.backend` and `storage.postgres.url` themselves are checked when the
config is parsed (`runtime.model.ConfigError` naming the key).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Final

from runtime.model import Config

from ._errors import StoreError
from ._pg import PostgresBackend
from ._sqlite import SqliteBackend
from ._store import DEFAULT_BATCH_MAX, DEFAULT_QUEUE_MAX, Store, open_store
from ._store_ops import StoreBackend

__all__ = ["SQLITE_FILENAME", "open_store_backend", "store_backend"]

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
