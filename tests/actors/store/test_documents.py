"""The device pairing store shared by a cluster through PostgreSQL (`PostgresDocument`), on
a real server (a schema of the test's own): stores on one document, as gateways on
different machines have them, see and keep each other's changes; the document is seeded
once from a node's pairing file; a server that cannot be reached, or a lock another node
holds too long, is one clear line (`PairingStoreError`); a connection cut while idle is
replaced."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
import trio

from actors import PostgresBackend, PostgresDocument, open_pairing, open_store
from actors.store._documents import LOCK_TIMEOUT_MS
from runtime.devices import PairingStore, PairingStoreError
from runtime.devices._pairing import Approved, PairingInput
from tests.actors._databases import Db, pg_url, terminate_connections
from tests.conftest import local_config

__all__ = ["pg_url"]  # the fixture, used by name

NOW = 1_800_000_000_000
TIMEOUT = 30
READ = ["operator.read"]


def pair(store: PairingStore, device: str) -> None:
    """Ask for `device` and approve it (as `device.pair.approve` does)."""
    request = store.request(
        PairingInput(
            device_id=device, public_key=f"key-{device}", role="operator", scopes=READ, silent=False
        ),
        now=NOW,
    ).request
    done = store.approve(request.requestId, caller_scopes=READ, approved_via="owner", now=NOW)
    assert isinstance(done, Approved)


def token(store: PairingStore, device: str) -> str:
    found = store.paired(device)
    assert found is not None and found.tokens is not None
    return found.tokens["operator"].token


async def migrated(url: str) -> None:
    """The store's migrations applied (as the gateway opens the store before pairing)."""
    async with open_store(backend=PostgresBackend(url)):
        pass


class Docs:
    """The test's stores on the document, each with a connection of its own (closed after
    the test)."""

    def __init__(self) -> None:
        self.documents: list[PostgresDocument] = []

    async def open(self, url: str, *, lock_timeout_ms: int = LOCK_TIMEOUT_MS) -> PairingStore:
        document = PostgresDocument(url, lock_timeout_ms=lock_timeout_ms)
        self.documents.append(document)
        return await trio.to_thread.run_sync(PairingStore.open, document)


@pytest.fixture
def docs() -> Iterator[Docs]:
    opened = Docs()
    try:
        yield opened
    finally:
        for document in opened.documents:
            document.close()


def devices(store: PairingStore) -> list[str]:
    return sorted(d.deviceId for d in store.records(now=NOW)[1])


async def test_stores_on_one_document_see_and_keep_each_others_changes(
    pg_url: str, docs: Docs
) -> None:
    """Two gateways (two stores, a connection each): a device approved through one verifies
    its token on the other after `refresh`; changes made on both before either writes all
    survive, also when both write at once; a removal on one is seen by the other."""
    with trio.fail_after(TIMEOUT):
        await migrated(pg_url)
        one, two = await docs.open(pg_url), await docs.open(pg_url)
        pair(one, "d1")
        await one.flush()
        assert two.paired("d1") is None
        await two.refresh()
        assert two.paired("d1") == one.paired("d1")
        check = two.verify_token("d1", token(one, "d1"), role="operator", scopes=READ, now=NOW)
        assert check is None
        writes = two.writes
        await two.refresh()  # nothing changed: one query, nothing written
        assert two.writes == writes
        # both change the records before either writes, and both write at once
        pair(one, "d2")
        pair(two, "d3")
        assert two.remove("d1") is not None
        async with trio.open_nursery() as nursery:
            nursery.start_soon(one.flush)
            nursery.start_soon(two.flush)
        third = await docs.open(pg_url)  # a node started now
        assert devices(third) == ["d2", "d3"]
        await one.refresh()
        await two.refresh()
        assert devices(one) == devices(two) == ["d2", "d3"]
        assert one.paired("d1") is None and two.paired("d2") == one.paired("d2")
        rows = await trio.to_thread.run_sync(
            Db("postgres", url=pg_url).query, "SELECT name, version FROM shared_documents"
        )
        assert rows == [("devices/pairing", 3)]  # one row: three writes


async def test_the_document_is_seeded_once_from_a_nodes_pairing_file(
    pg_url: str, tmp_path: Path
) -> None:
    """Upgrading to a cluster keeps the approvals: the first node to open the document
    writes its pairing file's records into it; a node opening it later keeps the document
    (its own file is not read); without PostgreSQL the file is the store, as before."""
    first, later = tmp_path / "first", tmp_path / "later"
    with trio.fail_after(TIMEOUT):
        for state_dir, device in ((first, "old"), (later, "other")):
            local = PairingStore.empty(state_dir)  # the file of a gateway before the cluster
            pair(local, device)
            await local.flush()
        await migrated(pg_url)
        config = local_config(storage={"backend": "postgres", "postgres": {"url": pg_url}})
        async with open_pairing(config, first) as seeded:
            assert devices(seeded) == ["old"]
            assert seeded.paired("old") == PairingStore.load(
                first / "devices" / "pairing.json"
            ).paired("old")
            pair(seeded, "new")
            await seeded.flush()
        async with open_pairing(config, later) as node:
            assert devices(node) == ["new", "old"]
        on_file = json.loads((later / "devices" / "pairing.json").read_text())
        assert list(on_file["paired"]) == ["other"]  # left as it was
        async with open_pairing(local_config(), later) as embedded:
            assert devices(embedded) == ["other"]


async def test_an_unreachable_server_is_one_clear_line() -> None:
    """As the gateway's start would see it (exit 2 naming the document)."""
    with trio.fail_after(TIMEOUT):
        with pytest.raises(PairingStoreError) as info:
            await Docs().open("postgresql://nobody@127.0.0.1:1/x")
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(
        "cannot read the pairing store devices/pairing in postgresql://127.0.0.1:1/x: "
    )


async def test_a_connection_cut_while_idle_is_replaced(pg_url: str, docs: Docs) -> None:
    """A server restart between two pairing changes costs nothing: the store's next read or
    write notices the cut connection and makes another."""
    with trio.fail_after(TIMEOUT):
        await migrated(pg_url)
        store, other = await docs.open(pg_url), await docs.open(pg_url)
        pair(store, "d1")
        await store.flush()
        assert await trio.to_thread.run_sync(terminate_connections, pg_url) >= 2
        pair(store, "d2")
        await store.flush()
        await other.refresh()
        assert devices(other) == ["d1", "d2"] and store.writes == 2


async def test_a_lock_held_too_long_fails_the_write_in_one_line_and_it_is_retried(
    pg_url: str, docs: Docs
) -> None:
    """Another node stopped while it held the document's lock: a write waits at most the
    lock timeout, fails `PairingStoreError` (the store stays dirty), and goes through once
    the lock is free."""
    with trio.fail_after(TIMEOUT):
        await migrated(pg_url)
        store = await docs.open(pg_url, lock_timeout_ms=200)
        pair(store, "d1")
        await store.flush()
        holder: psycopg.Connection[Any] = await trio.to_thread.run_sync(
            lambda: psycopg.connect(pg_url)
        )
        try:
            await trio.to_thread.run_sync(
                holder.execute,
                "SELECT 1 FROM shared_documents WHERE name = 'devices/pairing' FOR UPDATE",
            )
            pair(store, "d2")
            with pytest.raises(PairingStoreError) as info:
                await store.flush()
        finally:
            await trio.to_thread.run_sync(holder.close)  # its transaction ends
        message = str(info.value)
        assert "\n" not in message and "lock timeout" in message
        assert message.startswith("cannot write the pairing store devices/pairing in ")
        assert store.dirty and store.writes == 1
        await store.flush()
        assert devices(await docs.open(pg_url)) == ["d1", "d2"]
