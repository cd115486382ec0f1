"""The store's databases for tests: the same test on SQLite (a file in `tmp_path`) and on
a real PostgreSQL (its own schema, created for the test and dropped after it), and a way to
run SQL of our own beside the store.

PostgreSQL: `CLAWLANE_TEST_POSTGRES` (default `postgresql://postgres@127.0.0.1:5432/test`);
the PostgreSQL tests skip, saying why, only when that server cannot be reached (under CI
they fail: `tests._needs`).
"""

from __future__ import annotations

import os
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import psycopg
import psycopg.conninfo
import pytest

from actors import PostgresBackend, SqliteBackend, StoreBackend
from tests._needs import missing

PG_URL: Final = os.environ.get(
    "CLAWLANE_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test"
)


class Db:
    """One database of one test: `backend()` opens it again (a fresh backend each time),
    `query(sql, params)` runs SQL with `?` placeholders on a connection of our own (blocking:
    call it in a worker thread)."""

    def __init__(self, kind: str, path: Path | None = None, url: str | None = None) -> None:
        self.kind = kind
        self.path = path
        self.url = url

    def backend(self) -> StoreBackend:
        if self.path is not None:
            return SqliteBackend(self.path)
        assert self.url is not None
        return PostgresBackend(self.url)

    def query(self, sql: str, params: tuple[object, ...] = ()) -> list[tuple[Any, ...]]:
        if self.path is not None:
            conn = sqlite3.connect(self.path)
            try:
                with conn:
                    return conn.execute(sql, params).fetchall()
            finally:
                conn.close()
        assert self.url is not None
        with psycopg.connect(self.url, autocommit=True) as pg:
            cur = pg.execute(sql.replace("?", "%s"), params)
            return cur.fetchall() if cur.description else []


def terminate_connections(url: str) -> int:
    """Cut every server connection opened with `url` (its `application_name`), as a
    PostgreSQL restart would; how many were cut. Blocking."""
    name = psycopg.conninfo.conninfo_to_dict(url)["application_name"]
    with psycopg.connect(PG_URL, autocommit=True) as admin:
        found = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE application_name = %s AND pid <> pg_backend_pid()",
            (name,),
        ).fetchall()
    return len(found)


def _one_line(exc: BaseException) -> str:
    return "; ".join(p.strip() for p in str(exc).splitlines() if p.strip())


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A URL whose connections see only a schema of this test's own (dropped after it)."""
    try:
        admin = psycopg.connect(PG_URL, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as exc:
        missing("PostgreSQL", f"cannot be reached at {PG_URL}: {_one_line(exc)}")
    schema = f"clawlane_test_{uuid.uuid4().hex[:12]}"
    with admin:
        admin.execute(f'CREATE SCHEMA "{schema}"')
        sep = "&" if "?" in PG_URL else "?"
        try:
            yield f"{PG_URL}{sep}options=-csearch_path%3D{schema}&application_name={schema}"
        finally:
            admin.execute(f'DROP SCHEMA "{schema}" CASCADE')


@pytest.fixture
def pg_database_url() -> Iterator[str]:
    """A URL of a database of this test's own (dropped after it), for what another
    database's sessions must not touch: a snapshot held open in the shared database (another
    test run's, a benchmark's) holds back the pruning of dead rows there, not here."""
    try:
        admin = psycopg.connect(PG_URL, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as exc:
        missing("PostgreSQL", f"cannot be reached at {PG_URL}: {_one_line(exc)}")
    name = f"clawlane_test_{uuid.uuid4().hex[:12]}"
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield psycopg.conninfo.make_conninfo(PG_URL, dbname=name, application_name=name)
        finally:
            admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Db:
    """The test's database, on each backend in turn."""
    if request.param == "sqlite":
        return Db("sqlite", path=tmp_path / "s.db")
    return Db("postgres", url=request.getfixturevalue("pg_url"))
