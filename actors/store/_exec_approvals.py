"""The host exec approvals document (OpenClaw's `exec-approvals`): the gateway host's exec policy
defaults and each agent's allowlist, `{version: 1, defaults: {security, ask, askFallback,
autoAllowSkills}, agents: {<id>: {..., allowlist: [{pattern, argPattern?, ...}]}}}`.

One row of the store's table `exec_approvals(name, body, hash)` (created when missing, on
either backend: SQLite in the state dir, or PostgreSQL, where every node of a cluster reads
and writes the same row). `hash` is the SHA-256 of the stored body (the JSON text as written),
so a writer that read the document can say what it read (`base_hash`) and a write over a
newer one is refused (`ExecApprovalsChanged`), as OpenClaw's `exec.approvals.set {file,
baseHash}` refuses it. The write is one conditional statement (`UPDATE ... WHERE hash = ?`,
or an insert that does nothing when a row exists), so two nodes writing at once cannot both
win.

- `ExecApprovalsDocument.get()`: `(file, hash)`; `(None, None)` when it was never written
  (OpenClaw's defaults then apply: the config alone).
- `.set(file, base_hash)`: write the whole document; `base_hash` must be the current hash
  (None only while none exists); returns the new hash.
- `.update(change)`: read, change and write again until no one else wrote in between (for
  allow-always entries): at most `_ATTEMPTS` tries.

Every call is a checkpoint and may raise `StoreError`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any, Final

from .._errors import ActorError, StoreError
from ._ops import SqlConnection
from ._store import Store

__all__ = ["ExecApprovalsChanged", "ExecApprovalsDocument", "document_hash", "empty_document"]

_NAME: Final = "gateway"
_ATTEMPTS: Final = 8
_SCHEMA: Final = (
    "CREATE TABLE IF NOT EXISTS exec_approvals("
    "name TEXT PRIMARY KEY, body TEXT NOT NULL, hash TEXT NOT NULL)"
)


class ExecApprovalsChanged(ActorError):
    """The document changed since the writer read it (or its base hash is missing)."""


def document_hash(body: str) -> str:
    return hashlib.sha256(body.encode()).hexdigest()


def empty_document() -> dict[str, Any]:
    """What a host that never stored one has: no overrides."""
    return {"version": 1, "defaults": {}, "agents": {}}


def _create(conn: SqlConnection) -> None:
    conn.execute(_SCHEMA)


def _encode(file: dict[str, Any]) -> str:
    return json.dumps(file, ensure_ascii=False, separators=(",", ":"))


class ExecApprovalsDocument:
    """The gateway's exec approvals document in its `Store` (see the module docstring)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._created = False

    @property
    def where(self) -> str:
        return f"{self._store.path}#exec_approvals"

    async def _ensure(self) -> None:
        if not self._created:
            await self._store.write(_create, what="create the exec_approvals table")
            self._created = True

    async def get(self) -> tuple[dict[str, Any] | None, str | None]:
        """The stored document and its hash, or `(None, None)`. A checkpoint."""
        await self._ensure()

        def read(c: SqlConnection) -> tuple[str, str] | None:
            row = c.execute("SELECT body, hash FROM exec_approvals WHERE name = ?", (_NAME,))
            found = row.fetchone()
            return None if found is None else (str(found[0]), str(found[1]))

        found = await self._store.read(read)
        if found is None:
            return None, None
        try:
            return json.loads(found[0]), found[1]
        except ValueError as exc:
            raise StoreError(f"{self.where}: unreadable exec approvals document: {exc}") from exc

    async def set(self, file: dict[str, Any], base_hash: str | None) -> str:
        """Write `file` over the document whose hash is `base_hash` (None: there is none).
        Raises `ExecApprovalsChanged` when that is not the current one. A checkpoint."""
        await self._ensure()
        body = _encode(file)
        new_hash = document_hash(body)

        def write(c: SqlConnection) -> bool:
            if base_hash is None:
                cursor = c.execute(
                    "INSERT INTO exec_approvals(name, body, hash) VALUES (?, ?, ?) "
                    "ON CONFLICT(name) DO NOTHING",
                    (_NAME, body, new_hash),
                )
            else:
                cursor = c.execute(
                    "UPDATE exec_approvals SET body = ?, hash = ? WHERE name = ? AND hash = ?",
                    (body, new_hash, _NAME, base_hash),
                )
            return cursor.rowcount == 1

        if not await self._store.write(write, what="write the exec approvals document"):
            raise ExecApprovalsChanged(
                "exec approvals changed since last load; re-run exec.approvals.get and retry"
            )
        return new_hash

    async def update(
        self, change: Callable[[dict[str, Any]], dict[str, Any] | None]
    ) -> tuple[dict[str, Any], str] | None:
        """Apply `change` to the current document (a fresh one when none is stored) and write
        it, again on a concurrent write. `change` returns the new document, or None to write
        nothing. Returns what was written and its hash (None: nothing). A checkpoint."""
        for _ in range(_ATTEMPTS):
            file, current = await self.get()
            changed = change(json.loads(json.dumps(file)) if file else empty_document())
            if changed is None:
                return None
            try:
                return changed, await self.set(changed, current)
            except ExecApprovalsChanged:
                continue
        raise ExecApprovalsChanged(f"exec approvals kept changing ({_ATTEMPTS} attempts)")
