"""Documents the gateways of a cluster share through PostgreSQL (`PostgresDocument`): the
device pairing store's `runtime.devices.SharedDocument` when `storage.backend` is
`postgres`, so a device paired through one node is known to every node, on any machine;
the Control UI's preferences; the cluster's config (`_config_document`).

One row per document in `shared_documents(name, version, body)` (the store's migration 3,
`actors.store._pg`), on the store's server and schema (the same `storage.postgres.url`, its
`options=-csearch_path=...` included). The lock is the row's: `lock_and_read` opens a
transaction, makes sure the row exists (inserted empty, version 0, `ON CONFLICT DO
NOTHING`: two nodes creating it wait for each other) and reads it `FOR UPDATE`;
`write_locked` writes the body with the version one up; `release` commits (rolls back when
nothing was written, so an empty row is never left behind). The version is the row's
counter, so `current` is one indexed one-row query.

psycopg 3, blocking, on a connection of the document's own (autocommit between the
transactions), called from the pairing store's worker threads one at a time. A connection
found cut when a call begins (it sat idle while the server restarted or the connection was
terminated) is replaced at once; one cut during a call fails that call (a write's outcome
is then unknown: the store reads the document whole at its next sync) and is replaced at
the next. A row lock held elsewhere for longer than `LOCK_TIMEOUT_MS` (a node stopped
mid-write) fails the wait rather than hanging a connect; a transaction of ours left idle
twice that long is ended by the server. Errors: `psycopg.Error` (the pairing store reports
it as `PairingStoreError`, in one line naming the document).
"""

from __future__ import annotations

import contextlib
from typing import Any, Final

import psycopg

from runtime.devices import DocumentVersion

from ._pg import server_location

__all__ = [
    "CONFIG_DOCUMENT",
    "LOCK_TIMEOUT_MS",
    "PAIRING_DOCUMENT",
    "PREFS_DOCUMENT",
    "PostgresDocument",
]

CONFIG_DOCUMENT: Final = "gateway/config"
PAIRING_DOCUMENT: Final = "devices/pairing"
PREFS_DOCUMENT: Final = "users/prefs"
LOCK_TIMEOUT_MS: Final = 5_000
_CONNECT_TIMEOUT_S: Final = 5

_SETTINGS: Final = """
SELECT set_config('lock_timeout', %s, false),
       set_config('idle_in_transaction_session_timeout', %s, false)
"""
_CURRENT: Final = "SELECT version FROM shared_documents WHERE name = %s"
_READ: Final = "SELECT version, body FROM shared_documents WHERE name = %s"
_ENSURE: Final = """
INSERT INTO shared_documents(name, version, body) VALUES (%s, 0, '')
ON CONFLICT(name) DO NOTHING
"""
_LOCK: Final = """
SELECT version, CASE WHEN version = %s THEN NULL ELSE body END
FROM shared_documents WHERE name = %s FOR UPDATE
"""
_WRITE: Final = """
UPDATE shared_documents SET version = version + 1, body = %s WHERE name = %s
RETURNING version
"""


def _version(found: Any) -> DocumentVersion:
    """A row's version as the document's (an absent row, or the empty one `lock_and_read`
    inserts: None)."""
    return None if found is None or found[0] == 0 else (int(found[0]),)


class PostgresDocument:
    """The document `name` on the PostgreSQL server of `url` (a libpq URL or conninfo, as
    `storage.postgres.url`). A `runtime.devices.SharedDocument`; no I/O until used. Raises
    `StoreError` here when `url` is not a PostgreSQL URL."""

    errors: Final = (psycopg.Error,)

    def __init__(
        self, url: str, name: str = PAIRING_DOCUMENT, *, lock_timeout_ms: int = LOCK_TIMEOUT_MS
    ) -> None:
        self._url = url
        self.name = name
        self._timeouts = (str(lock_timeout_ms), str(2 * lock_timeout_ms))
        self._where = f"{name} in {server_location(url)}"
        self._conn: psycopg.Connection[Any] | None = None
        self._held: psycopg.Connection[Any] | None = None  # in the locking transaction
        self._written = False

    @property
    def where(self) -> str:
        return self._where

    def _connection(self) -> psycopg.Connection[Any]:
        conn = self._conn
        if conn is not None and not conn.closed and not conn.broken:
            return conn
        self.close()
        conn = psycopg.connect(self._url, autocommit=True, connect_timeout=_CONNECT_TIMEOUT_S)
        try:
            conn.execute(_SETTINGS, self._timeouts)
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        return conn

    def _first(
        self, sql: str, params: tuple[object, ...] = ()
    ) -> tuple[psycopg.Connection[Any], psycopg.Cursor[Any]]:
        """Run the first statement of a call; a connection found cut while it sat idle (the
        server restarted, the connection was terminated) is replaced, once, so that a call
        fails only when the server cannot be reached now."""
        conn = self._connection()
        try:
            return conn, conn.execute(sql, params)
        except psycopg.OperationalError:
            if not conn.broken:
                raise
        conn = self._connection()
        return conn, conn.execute(sql, params)

    def current(self) -> DocumentVersion:
        _, cursor = self._first(_CURRENT, (self.name,))
        return _version(cursor.fetchone())

    def read(self) -> tuple[bytes | None, DocumentVersion]:
        """The body and version now, without the lock (None, None: no document yet)."""
        _, cursor = self._first(_READ, (self.name,))
        found = cursor.fetchone()
        version = _version(found)
        if found is None or version is None:
            return None, None
        return bytes(found[1]), version

    def lock_and_read(self, known: DocumentVersion) -> tuple[bytes | None, DocumentVersion]:
        self._written = False
        conn, _ = self._first("BEGIN")
        self._held = conn
        conn.execute(_ENSURE, (self.name,))
        found = conn.execute(_LOCK, (known[0] if known else -1, self.name)).fetchone()
        version = _version(found)
        if found is None or version is None or found[1] is None:
            return None, version
        return bytes(found[1]), version

    def write_locked(self, data: bytes) -> DocumentVersion:
        conn = self._held
        assert conn is not None, "write_locked without lock_and_read"
        found = conn.execute(_WRITE, (data, self.name)).fetchone()
        self._written = True
        return _version(found)

    def release(self, *, commit: bool = True) -> None:
        """End the locking transaction: commit what was written (`commit` False: roll it
        back, the caller failed after writing)."""
        conn, self._held = self._held, None
        if conn is None or conn.closed or conn.broken:
            return  # not held, or the transaction ended with its connection
        conn.execute("COMMIT" if self._written and commit else "ROLLBACK")

    def close(self) -> None:
        """Close the connection (the next call opens another). Blocking."""
        conn, self._conn, self._held = self._conn, None, None
        if conn is not None:
            with contextlib.suppress(psycopg.Error):  # nothing of ours is pending on it
                conn.close()
