"""Durable cron jobs and their run history, behind a small interface (`CronStore`).

`SqliteCronStore` keeps two tables in the gateway's store and goes through the store
actor's writer (`Store.write`: the same group commit, the same worker thread) and readers
(`Store.read`). The SQL is portable (no SQLite-only syntax; `?` placeholders, which the
PostgreSQL backend turns into `%s`), so despite its name it works on either backend
(`actors.store._sqlite`, `actors.store._pg`): with `storage.backend: "postgres"` the jobs live in
PostgreSQL beside the sessions.

- `cron_jobs(id, updated_at, body)`: one row per job, `body` the job as JSON.
- `cron_runs(job_id, run_id, ts, status, delivery_status, body)`: one row per run (upserted:
  a run is written when it ends and again after each webhook attempt), `body` the
  `CronRunLogEntry` as JSON. At most `RUNS_PER_JOB` newest rows per job are kept.

Every method is a checkpoint and raises `StoreError` when the database fails.
"""

from __future__ import annotations

from typing import Any, Final, Protocol

import attrs
import msgspec

from runtime.cron import CronJob, decode_job, encode_job

from .._errors import StoreError
from ..store import SqlConnection, Store

__all__ = ["RUNS_PER_JOB", "CronStore", "RunQuery", "SqliteCronStore"]

RUNS_PER_JOB: Final = 2000
_SCHEMA: Final = (
    """CREATE TABLE IF NOT EXISTS cron_jobs(
        id TEXT PRIMARY KEY,
        updated_at BIGINT NOT NULL,
        body TEXT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS cron_runs(
        job_id TEXT NOT NULL,
        run_id TEXT NOT NULL,
        ts BIGINT NOT NULL,
        status TEXT,
        delivery_status TEXT,
        body TEXT NOT NULL,
        PRIMARY KEY(job_id, run_id)
    )""",
    "CREATE INDEX IF NOT EXISTS cron_runs_ts ON cron_runs(ts)",
)
_UPSERT_JOB: Final = """INSERT INTO cron_jobs(id, updated_at, body) VALUES (?, ?, ?)
ON CONFLICT(id) DO UPDATE SET updated_at = excluded.updated_at, body = excluded.body"""
_UPSERT_RUN: Final = """INSERT INTO cron_runs(job_id, run_id, ts, status, delivery_status, body)
VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT(job_id, run_id) DO UPDATE SET ts = excluded.ts, status = excluded.status,
    delivery_status = excluded.delivery_status, body = excluded.body"""
_PRUNE_RUNS: Final = """DELETE FROM cron_runs WHERE job_id = ? AND run_id NOT IN (
    SELECT run_id FROM cron_runs WHERE job_id = ? ORDER BY ts DESC LIMIT ?)"""


@attrs.frozen
class RunQuery:
    """What `cron.runs` asks for: one job or all, filters, a page."""

    job_id: str | None = None
    run_id: str | None = None
    statuses: tuple[str, ...] = ()
    delivery_statuses: tuple[str, ...] = ()
    query: str | None = None
    descending: bool = True
    limit: int = 50
    offset: int = 0


class CronStore(Protocol):
    """Where jobs and runs live (SQLite, or PostgreSQL with `storage.backend: "postgres"`)."""

    async def open(self) -> None: ...
    async def load_jobs(self) -> list[CronJob]: ...
    async def put_job(self, job: CronJob) -> None: ...
    async def delete_job(self, job_id: str) -> bool: ...
    async def put_run(self, entry: dict[str, Any]) -> None: ...
    async def list_runs(self, query: RunQuery) -> tuple[list[dict[str, Any]], int]: ...


def _create(conn: SqlConnection) -> None:
    for statement in _SCHEMA:
        conn.execute(statement)


class SqliteCronStore:
    """`CronStore` on the gateway's `Store` (its writer thread and readers)."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def open(self) -> None:
        """Create the tables when missing (a durable write)."""
        await self._store.write(_create, what="create the cron tables")

    async def load_jobs(self) -> list[CronJob]:
        rows = await self._store.read(
            lambda c: c.execute("SELECT id, body FROM cron_jobs ORDER BY id").fetchall()
        )
        jobs: list[CronJob] = []
        for job_id, body in rows:
            try:
                jobs.append(decode_job(body.encode() if isinstance(body, str) else body))
            except msgspec.DecodeError as exc:
                raise StoreError(f"corrupt cron job {job_id!r}: {exc}") from exc
        return jobs

    async def put_job(self, job: CronJob) -> None:
        body = encode_job(job).decode()
        await self._store.write(
            lambda c: c.execute(_UPSERT_JOB, (job.id, job.updatedAtMs, body)),
            what=f"store cron job {job.id!r}",
        )

    async def delete_job(self, job_id: str) -> bool:
        """Delete the job (its run history stays, as OpenClaw keeps it)."""

        def delete(c: SqlConnection) -> bool:
            return c.execute("DELETE FROM cron_jobs WHERE id = ?", (job_id,)).rowcount > 0

        return await self._store.write(delete, what=f"delete cron job {job_id!r}")

    async def put_run(self, entry: dict[str, Any]) -> None:
        job_id, run_id = str(entry["jobId"]), str(entry["runId"])
        body = msgspec.json.encode(entry).decode()
        row = (job_id, run_id, int(entry["ts"]), entry.get("status"), entry.get("deliveryStatus"))

        def put(c: SqlConnection) -> None:
            c.execute(_UPSERT_RUN, (*row, body))
            c.execute(_PRUNE_RUNS, (job_id, job_id, RUNS_PER_JOB))

        await self._store.write(put, what=f"store cron run {run_id!r}")

    async def list_runs(self, query: RunQuery) -> tuple[list[dict[str, Any]], int]:
        """A page of entries (newest first unless `descending` is False) and the total."""
        clauses: list[str] = []
        params: list[Any] = []
        if query.job_id is not None:
            clauses.append("job_id = ?")
            params.append(query.job_id)
        if query.run_id is not None:
            clauses.append("run_id = ?")
            params.append(query.run_id)
        for column, values in (
            ("status", query.statuses),
            ("delivery_status", query.delivery_statuses),
        ):
            if values:
                clauses.append(f"{column} IN ({', '.join('?' * len(values))})")
                params.extend(values)
        if query.query:
            clauses.append("LOWER(body) LIKE ?")
            params.append(f"%{query.query.lower()}%")
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        order = "DESC" if query.descending else "ASC"
        page_sql = f"SELECT body FROM cron_runs{where} ORDER BY ts {order}, run_id LIMIT ? OFFSET ?"

        def read(c: SqlConnection) -> tuple[list[str], int]:
            (total,) = c.execute(f"SELECT COUNT(*) FROM cron_runs{where}", params).fetchone()
            bodies = [b for (b,) in c.execute(page_sql, [*params, query.limit, query.offset])]
            return bodies, int(total)

        bodies, total = await self._store.read(read)
        try:
            return [msgspec.json.decode(b) for b in bodies], total
        except msgspec.DecodeError as exc:
            raise StoreError(f"corrupt cron run entry: {exc}") from exc
