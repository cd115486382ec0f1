"""What the approvals keep in the store: the ended approvals of the last 30 days
(`approval.history`, OpenClaw's `operator_approvals` rows) and the standing grants for
scheduled runs (`exec.approval.grants.*`, OpenClaw's `operator_approval_standing_grants`).

Two tables of their own, created when missing on either backend (SQLite in the state dir,
or PostgreSQL, where every node of a cluster reads and writes the same rows), so no
migration is needed:

- `approval_records(id, kind, ended_at_ms, body)`: one row per ended approval, `body` the
  JSON of `ApprovalRecord` (its request, times, decision, how it ended, who answered).
  Written by `record_nowait` in the store's next group commit (never blocks: a full write
  channel raises `trio.WouldBlock`, the caller counts it); rows older than 30 days are
  pruned as new ones are written.
- `exec_grants(grant_id, minted_by, agent_id, cron_job_id, job_revision, binding,
  created_at_ms, expires_at_ms, revoked_at_ms, revoked_by, last_used_at_ms, use_count)`:
  one row per grant. `mint` replaces the grants of the same (agent, job, binding) and prunes
  the expired ones, as OpenClaw's mint does; `consume` counts a use only while the grant is
  neither revoked nor expired (one conditional `UPDATE`, so a revocation on another node
  wins); `revoke` is idempotent (`revoked`, `already-revoked`, `not-found`); `void_job`
  marks a job's grants as minted for a definition it no longer has (it was edited), so an
  edit made back cannot revive them.

Every async call is a checkpoint and may raise `StoreError`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any, Final, Literal

import attrs

from .._errors import StoreError
from ._ops import SqlConnection, WriteGroup
from ._store import Store

__all__ = ["HISTORY_TTL_MS", "ApprovalRecords", "GrantRow", "RevokeOutcome"]

HISTORY_TTL_MS: Final = 30 * 86_400_000
_SCHEMA: Final = (
    """CREATE TABLE IF NOT EXISTS approval_records(
        id TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        ended_at_ms BIGINT NOT NULL,
        body TEXT NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS approval_records_ended ON approval_records(ended_at_ms)",
    """CREATE TABLE IF NOT EXISTS exec_grants(
        grant_id TEXT PRIMARY KEY,
        minted_by TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        cron_job_id TEXT NOT NULL,
        job_revision TEXT NOT NULL,
        binding TEXT NOT NULL,
        created_at_ms BIGINT NOT NULL,
        expires_at_ms BIGINT,
        revoked_at_ms BIGINT,
        revoked_by TEXT,
        last_used_at_ms BIGINT,
        use_count BIGINT NOT NULL DEFAULT 0
    )""",
    "CREATE INDEX IF NOT EXISTS exec_grants_binding ON exec_grants(agent_id, cron_job_id)",
)
_UPSERT_RECORD: Final = """INSERT INTO approval_records(id, kind, ended_at_ms, body)
VALUES (?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET kind = excluded.kind,
    ended_at_ms = excluded.ended_at_ms, body = excluded.body"""
_GRANT_COLUMNS: Final = (
    "grant_id, minted_by, agent_id, cron_job_id, job_revision, binding, created_at_ms, "
    "expires_at_ms, revoked_at_ms, revoked_by, last_used_at_ms, use_count"
)
RevokeOutcome = Literal["revoked", "already-revoked", "not-found"]


@attrs.frozen
class GrantRow:
    """One standing grant as stored."""

    grant_id: str
    minted_by: str
    agent_id: str
    cron_job_id: str
    job_revision: str
    binding: str
    created_at_ms: int
    expires_at_ms: int | None
    revoked_at_ms: int | None
    revoked_by: str | None
    last_used_at_ms: int | None
    use_count: int

    @classmethod
    def of(cls, row: Any) -> GrantRow:
        (gid, minted, agent, job, revision, binding, created, expires, revoked, by, used, n) = row
        return cls(
            str(gid),
            str(minted),
            str(agent),
            str(job),
            str(revision),
            str(binding),
            int(created),
            None if expires is None else int(expires),
            None if revoked is None else int(revoked),
            None if by is None else str(by),
            None if used is None else int(used),
            int(n),
        )


def _create(conn: SqlConnection) -> None:
    for statement in _SCHEMA:
        conn.execute(statement)


def _decode(body: Any) -> dict[str, Any]:
    try:
        found = json.loads(body)
    except ValueError as exc:
        raise StoreError(f"unreadable approval record: {exc}") from exc
    if not isinstance(found, dict):
        raise StoreError("unreadable approval record: not an object")
    return found


class ApprovalRecords:
    """The approvals' rows in a `Store` (see the module docstring)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._created = False

    async def open(self) -> None:
        """Create the tables when missing (a durable write). A checkpoint."""
        if not self._created:
            await self._store.write(_create, what="create the approval tables")
            self._created = True

    # --- ended approvals ------------------------------------------------------------------

    def record_nowait(
        self,
        record: dict[str, Any],
        *,
        on_commit: Callable[[StoreError | None], None] | None = None,
    ) -> None:
        """Store an ended approval (`record`: its `id`, `kind`, `endedAtMs` and the rest) in
        the next group commit, pruning those past 30 days. Raises `trio.WouldBlock` when the
        store's channel is full. Not a checkpoint."""
        body = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
        row = (str(record["id"]), str(record["kind"]), int(record["endedAtMs"]), body)
        horizon = row[2] - HISTORY_TTL_MS
        created = self._created

        def write(c: SqlConnection) -> None:
            if not created:
                _create(c)
            c.execute(_UPSERT_RECORD, row)
            c.execute("DELETE FROM approval_records WHERE ended_at_ms < ?", (horizon,))

        self._store.commit_nowait(WriteGroup(calls=(write,), on_commit=on_commit))

    async def history(
        self, *, kind: str | None, since_ms: int, offset: int, limit: int
    ) -> list[dict[str, Any]]:
        """The records that ended at or after `since_ms` (of `kind`, or every kind), newest
        first, from `offset`, at most `limit`. A checkpoint."""
        await self.open()
        where = "ended_at_ms >= ?" + (" AND kind = ?" if kind is not None else "")
        params: list[Any] = [since_ms] + ([kind] if kind is not None else [])
        sql = (
            f"SELECT body FROM approval_records WHERE {where} "
            "ORDER BY ended_at_ms DESC, id DESC LIMIT ? OFFSET ?"
        )
        rows = await self._store.read(lambda c: c.execute(sql, [*params, limit, offset]).fetchall())
        return [_decode(body) for (body,) in rows]

    async def find(self, approval_id: str) -> dict[str, Any] | None:
        """The record of `approval_id`, or None. A checkpoint."""
        await self.open()
        found = await self._store.read(
            lambda c: c.execute(
                "SELECT body FROM approval_records WHERE id = ?", (approval_id,)
            ).fetchone()
        )
        return None if found is None else _decode(found[0])

    # --- standing grants ------------------------------------------------------------------

    async def mint(
        self,
        *,
        minted_by: str,
        agent_id: str,
        cron_job_id: str,
        job_revision: str,
        binding: str,
        now_ms: int,
        expires_at_ms: int | None,
    ) -> str:
        """A new grant for (agent, job, binding), replacing the earlier ones; the expired
        grants are pruned. Returns its id. A checkpoint."""
        await self.open()
        grant_id = str(uuid.uuid4())

        def write(c: SqlConnection) -> None:
            c.execute(
                "DELETE FROM exec_grants WHERE expires_at_ms IS NOT NULL AND expires_at_ms <= ?",
                (now_ms,),
            )
            c.execute(
                "DELETE FROM exec_grants WHERE agent_id = ? AND cron_job_id = ? AND binding = ?",
                (agent_id, cron_job_id, binding),
            )
            c.execute(
                f"INSERT INTO exec_grants({_GRANT_COLUMNS}) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, NULL, 0)",
                (
                    grant_id,
                    minted_by,
                    agent_id,
                    cron_job_id,
                    job_revision,
                    binding,
                    now_ms,
                    expires_at_ms,
                ),
            )

        await self._store.write(write, what="mint a standing grant")
        return grant_id

    async def lookup(self, agent_id: str, cron_job_id: str, binding: str) -> GrantRow | None:
        """The newest grant for (agent, job, binding), whatever its state. A checkpoint."""
        await self.open()
        sql = (
            f"SELECT {_GRANT_COLUMNS} FROM exec_grants "
            "WHERE agent_id = ? AND cron_job_id = ? AND binding = ? "
            "ORDER BY created_at_ms DESC, grant_id DESC LIMIT 1"
        )
        found = await self._store.read(
            lambda c: c.execute(sql, (agent_id, cron_job_id, binding)).fetchone()
        )
        return None if found is None else GrantRow.of(found)

    async def consume(self, grant_id: str, now_ms: int) -> bool:
        """Count one use of `grant_id` if it is neither revoked nor expired now. A
        checkpoint."""
        await self.open()

        def write(c: SqlConnection) -> bool:
            cursor = c.execute(
                "UPDATE exec_grants SET use_count = use_count + 1, last_used_at_ms = ? "
                "WHERE grant_id = ? AND revoked_at_ms IS NULL "
                "AND (expires_at_ms IS NULL OR expires_at_ms > ?)",
                (now_ms, grant_id, now_ms),
            )
            return cursor.rowcount == 1

        return await self._store.write(write, what="use a standing grant")

    async def void_job(self, cron_job_id: str) -> None:
        """Make `cron_job_id`'s grants match no definition of the job again (it was
        edited). A checkpoint."""
        await self.open()
        await self._store.write(
            lambda c: c.execute(
                "UPDATE exec_grants SET job_revision = ? || job_revision "
                "WHERE cron_job_id = ? AND job_revision NOT LIKE ?",
                ("void:", cron_job_id, "void:%"),
            ),
            what="void a job's standing grants",
        )

    async def grants(self, limit: int) -> list[GrantRow]:
        """Every grant (revoked and expired ones too), newest first. A checkpoint."""
        await self.open()
        sql = (
            f"SELECT {_GRANT_COLUMNS} FROM exec_grants "
            "ORDER BY created_at_ms DESC, grant_id DESC LIMIT ?"
        )
        rows = await self._store.read(lambda c: c.execute(sql, (limit,)).fetchall())
        return [GrantRow.of(row) for row in rows]

    async def revoke(self, grant_id: str, *, revoked_by: str, now_ms: int) -> RevokeOutcome:
        """Revoke `grant_id` (a second revoke keeps the first's time and name). A
        checkpoint."""
        await self.open()

        def write(c: SqlConnection) -> RevokeOutcome:
            cursor = c.execute(
                "UPDATE exec_grants SET revoked_at_ms = ?, revoked_by = ? "
                "WHERE grant_id = ? AND revoked_at_ms IS NULL",
                (now_ms, revoked_by, grant_id),
            )
            if cursor.rowcount == 1:
                return "revoked"
            found = c.execute(
                "SELECT 1 FROM exec_grants WHERE grant_id = ?", (grant_id,)
            ).fetchone()
            return "not-found" if found is None else "already-revoked"

        return await self._store.write(write, what="revoke a standing grant")
