"""The host exec approvals document in the store, on SQLite and on PostgreSQL: compare-and-set
by its hash, a stale writer refused, two stores on one database (two nodes) seeing one
document, and `update` retrying over a concurrent write."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from actors.store import ExecApprovalsChanged, ExecApprovalsDocument, open_store
from actors.store._exec_approvals import document_hash
from tests.actors._databases import Db, db, pg_url

__all__ = ["db", "pg_url"]  # the fixtures, used by name


def doc(security: str) -> dict[str, Any]:
    return {"version": 1, "defaults": {"security": security}, "agents": {}}


async def test_compare_and_set(db: Db) -> None:
    with trio.fail_after(30):
        async with open_store(backend=db.backend()) as store:
            document = ExecApprovalsDocument(store)
            assert await document.get() == (None, None)
            first = await document.set(doc("allowlist"), None)
            with pytest.raises(ExecApprovalsChanged, match="changed since last load"):
                await document.set(doc("full"), None)  # one exists now
            second = await document.set(doc("deny"), first)
            with pytest.raises(ExecApprovalsChanged):
                await document.set(doc("full"), first)  # stale
            file, hash_ = await document.get()
    assert file == doc("deny") and hash_ == second != first
    assert hash_ == document_hash('{"version":1,"defaults":{"security":"deny"},"agents":{}}')


async def test_two_nodes_share_one_document(pg_url: str) -> None:
    from actors.store import PostgresBackend

    with trio.fail_after(30):
        async with (
            open_store(backend=PostgresBackend(pg_url)) as a,
            open_store(backend=PostgresBackend(pg_url)) as b,
        ):
            on_a, on_b = ExecApprovalsDocument(a), ExecApprovalsDocument(b)
            written = await on_a.set(doc("allowlist"), None)
            seen, hash_ = await on_b.get()
            assert (seen, hash_) == (doc("allowlist"), written)
            await on_b.set(doc("deny"), hash_)
            with pytest.raises(ExecApprovalsChanged):
                await on_a.set(doc("full"), written)
            assert (await on_a.get())[0] == doc("deny")


async def test_update_retries_over_a_concurrent_write(db: Db) -> None:
    with trio.fail_after(30):
        async with open_store(backend=db.backend()) as store:
            document = ExecApprovalsDocument(store)
            calls = 0

            def add(file: dict[str, Any]) -> dict[str, Any]:
                nonlocal calls
                calls += 1
                entry = file.setdefault("agents", {}).setdefault("main", {})
                entry.setdefault("allowlist", []).append({"pattern": f"/bin/x{calls}"})
                return file

            # a writer that lands between update's read and its write, once
            real_get = document.get

            async def racing_get() -> tuple[dict[str, Any] | None, str | None]:
                got = await real_get()
                if calls == 0:
                    await document.set(doc("deny"), got[1])
                return got

            document.get = racing_get  # type: ignore[method-assign]
            written = await document.update(add)
            document.get = real_get  # type: ignore[method-assign]
            file, _ = await document.get()
    assert written is not None and calls == 2
    assert file is not None and file["defaults"] == {"security": "deny"}
    assert file["agents"]["main"]["allowlist"] == [{"pattern": "/bin/x2"}]
