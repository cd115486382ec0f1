"""The cluster's config as one document (`ConfigDocument`) on a real PostgreSQL (a schema of
the test's own): a write happens under the row lock and is committed when its block ends,
or rolled back when the block fails; another node reads the committed record without
waiting for a write in progress, and cannot take the lock while it is held; a server that
cannot be reached is a `StoreError` naming the document; without a cluster on PostgreSQL
there is no document."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import pytest
import trio

from actors import PostgresBackend, StoreError, open_store
from actors.store import ConfigDocument, ConfigRecord, open_config_document
from tests.actors._databases import Db, pg_url
from tests.conftest import local_config

__all__ = ["pg_url"]  # the fixture, used by name

TIMEOUT = 30


def record(text: str, origin: str = "node-a", reason: str = "config.patch") -> ConfigRecord:
    return ConfigRecord(text=text, writtenAtMs=1_800_000_000_000, origin=origin, reason=reason)


@asynccontextmanager
async def documents(url: str, *, lock_timeout_ms: int = 5_000) -> AsyncIterator[ConfigDocument]:
    """A node's document (the store's migrations applied first, as the gateway does)."""
    async with open_store(backend=PostgresBackend(url)):
        pass
    document = ConfigDocument(url, lock_timeout_ms=lock_timeout_ms)
    try:
        yield document
    finally:
        await trio.to_thread.run_sync(document.close)


async def write(
    document: ConfigDocument, text: str, *, then: Callable[[], None] = lambda: None
) -> int:
    """One compare-and-set that writes `text` (the build thread writes it, as the
    Publisher's does); `then` runs before the block ends (it may raise)."""
    async with document.locked() as held:
        version = await trio.to_thread.run_sync(held.write_sync, record(text))
        then()
    return version


async def test_a_write_is_committed_when_its_block_ends_and_read_by_every_node(
    pg_url: str,
) -> None:
    with trio.fail_after(TIMEOUT):
        async with documents(pg_url) as one, documents(pg_url) as two:
            assert await one.read() is None and await two.current() is None
            async with one.locked() as held:
                assert held.stored is None  # nothing yet: the node seeds it
                assert await trio.to_thread.run_sync(held.write_sync, record("{a: 1}")) == 1
            stored = await two.read()
            assert stored is not None and stored.version == 1
            assert stored.record == record("{a: 1}")
            assert await two.current() == 1
            assert await write(two, "{a: 2}") == 2
            async with one.locked() as held:  # the next writer starts from the last write
                assert held.stored is not None and held.stored.version == 2
                assert held.stored.record.text == "{a: 2}"
            rows = await trio.to_thread.run_sync(
                Db("postgres", url=pg_url).query,
                "SELECT name, version FROM shared_documents ORDER BY name",
            )
            assert rows == [("gateway/config", 2)]  # a lock without a write changes nothing


async def test_a_write_in_progress_holds_the_lock_and_is_not_seen_until_committed(
    pg_url: str,
) -> None:
    """While node A holds the lock (written, not yet committed): node B's reads answer at
    once with the committed record, and B's own compare-and-set cannot take the lock (it
    fails after the lock timeout, naming the document); once A's block ends B sees A's
    write and its next compare-and-set starts from it."""
    with trio.fail_after(TIMEOUT):
        async with (
            documents(pg_url) as a,
            documents(pg_url, lock_timeout_ms=200) as b,
        ):
            await write(a, "{v: 1}")
            async with a.locked() as held:
                await trio.to_thread.run_sync(held.write_sync, record("{v: 2}"))
                stored = await b.read()
                assert stored is not None and (stored.version, stored.record.text) == (1, "{v: 1}")
                with pytest.raises(StoreError) as info:
                    async with b.locked():
                        pass
                message = str(info.value)
                assert "\n" not in message and "lock timeout" in message
                assert message.startswith("the config document gateway/config in ")
            stored = await b.read()
            assert stored is not None and (stored.version, stored.record.text) == (2, "{v: 2}")
            assert await write(b, "{v: 3}") == 3


async def test_a_block_that_fails_after_writing_rolls_the_write_back(pg_url: str) -> None:
    def fail() -> None:
        raise RuntimeError("the build failed after the write")

    with trio.fail_after(TIMEOUT):
        async with documents(pg_url) as document:
            await write(document, "{v: 1}")
            with pytest.raises(RuntimeError):
                await write(document, "{v: 2}", then=fail)
            stored = await document.read()
            assert stored is not None and (stored.version, stored.record.text) == (1, "{v: 1}")
            assert await write(document, "{v: 3}") == 2  # the lock was released


async def test_an_unreachable_server_is_a_store_error_naming_the_document() -> None:
    document = ConfigDocument("postgresql://nobody@127.0.0.1:1/x")
    with trio.fail_after(TIMEOUT):
        with pytest.raises(StoreError) as info:
            await document.read()
        with pytest.raises(StoreError):
            async with document.locked():
                pass
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("the config document gateway/config in postgresql://127.0.0.1:1/x: ")


async def test_only_a_cluster_on_postgresql_has_the_document(pg_url: str) -> None:
    """Without `cluster.redis.url`, or on SQLite, the config is the node's file as before."""
    postgres = {"backend": "postgres", "postgres": {"url": pg_url}}
    cluster = {"redis": {"url": "redis://127.0.0.1:6379/0"}}
    for config, expected in (
        (local_config(), False),
        (local_config(storage=postgres), False),
        (local_config(cluster=cluster), False),
        (local_config(storage=postgres, cluster=cluster), True),
    ):
        async with open_config_document(config) as document:
            assert (document is not None) is expected
