"""The Publisher of a cluster node on PostgreSQL (`Publisher.use_document`): two nodes, each
with its own config file, store and supervisor (as on two machines), on one config document
in a real PostgreSQL schema of the test's own. The first node to start seeds the document
from its file and the next adopts it; a config write through either node is a compare-and-
set on the document (a stale base hash is refused, and of two writes on the same base one
wins); `--seed-config` makes a node's file the cluster's config; the file watch publishes a
changed file and refuses one older than the document; a node that cannot build the
document's config keeps its generation and says so."""

from __future__ import annotations

import json
import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from actors import PostgresBackend, PublishConflict, StoreError, open_store, open_supervisor
from actors._publisher import Publisher
from actors.store import ConfigDocument, ConfigRecord
from runtime.model import GenerationError
from runtime.model._config import load_config, write_config_text
from runtime.model._generation import GenerationBuilder
from tests.actors._databases import pg_url

__all__ = ["pg_url"]  # the fixture, used by name

TIMEOUT = 60


def config(timeout_s: int, *, primary: str = "local/echo") -> dict[str, Any]:
    return {
        "models": {"providers": {"local": {"api": "local", "models": [{"id": "echo"}]}}},
        "agents": {"defaults": {"model": primary, "timeoutSeconds": timeout_s}},
    }


def timeout_of(publisher: Publisher) -> float | None:
    return publisher.generation.config.agents.defaults.timeoutSeconds


def age(path: Path, seconds: float) -> None:
    """Set the file's modification time `seconds` from now (negative: in the past)."""
    at = time.time() + seconds
    os.utime(path, (at, at))


@asynccontextmanager
async def node(
    tmp_path: Path, name: str, url: str, raw: dict[str, Any], *, seed: bool = False
) -> AsyncIterator[Publisher]:
    """A node's Publisher on the cluster's document, primed as a start does (its generation
    1 is built from its own file first, as the gateway builds it)."""
    home = tmp_path / name
    path = home / "clawlane.json"
    if not path.exists():
        write_config_text(path, json.dumps(raw, indent=2))
    builder = GenerationBuilder(state_dir=home / "state")
    document = ConfigDocument(url)
    try:
        async with (
            open_store(home / "db.sqlite") as store,
            open_supervisor(
                generation=builder.build_config(load_config(path), 1),
                store=store,
                workspace_root=home / "ws",
            ) as sup,
        ):
            publisher = Publisher(sup, builder=builder, config_path=path)
            publisher.use_document(document, origin=name, seed=seed)
            await publisher.prime()
            yield publisher
    finally:
        await trio.to_thread.run_sync(document.close)


async def migrated(url: str) -> None:
    async with open_store(backend=PostgresBackend(url)):
        pass


async def stored(publisher: Publisher) -> ConfigRecord:
    assert publisher.document is not None
    found = await publisher.document.read()
    assert found is not None
    return found.record


async def test_the_first_node_seeds_the_cluster_config_and_the_next_adopts_it(
    tmp_path: Path, pg_url: str
) -> None:
    with trio.fail_after(TIMEOUT):
        await migrated(pg_url)
        async with node(tmp_path, "a", pg_url, config(100)) as a:
            record = await stored(a)
            assert (record.origin, record.reason) == ("a", "seed")
            assert a.document_version == 1 and timeout_of(a) == 100
            async with node(tmp_path, "b", pg_url, config(200)) as b:
                assert timeout_of(b) == 100  # the cluster's, not its file's
                assert b.generation.inputs_hash == a.generation.inputs_hash
                assert b.document_version == 1 and b.document_error is None
                got_a, got_b = await a.read_snapshot(), await b.read_snapshot()
                assert got_a.hash == got_b.hash and got_b.raw == record.text
                assert (await stored(b)) == record  # adopting writes nothing
                assert "200" in (tmp_path / "b" / "clawlane.json").read_text()  # left alone
                assert b.status_view()["document"] == {"version": 1, "error": None, "seed": False}


async def test_config_writes_on_any_node_are_compare_and_sets_on_the_document(
    tmp_path: Path, pg_url: str
) -> None:
    with trio.fail_after(TIMEOUT):
        await migrated(pg_url)
        async with (
            node(tmp_path, "a", pg_url, config(100)) as a,
            node(tmp_path, "b", pg_url, config(100)) as b,
        ):
            first = (await b.read_snapshot()).hash
            patch = json.dumps({"agents": {"defaults": {"timeoutSeconds": 777}}})
            result = await a.write_patch(patch, base_hash=first)
            assert result.changed and timeout_of(a) == 777
            assert a.document_version == 2
            record = await stored(a)
            assert (record.origin, record.reason) == ("a", "config.patch")
            # node B reads what A wrote (and serves it once it adopts it)
            second = (await b.read_snapshot()).hash
            assert second == result.snapshot.hash != first
            await b.adopt_document()
            assert timeout_of(b) == 777 and b.generation.inputs_hash == a.generation.inputs_hash
            # a write through B on the old hash is refused, and nothing is written
            stale = json.dumps({"agents": {"defaults": {"timeoutSeconds": 5}}})
            with pytest.raises(PublishConflict):
                await b.write_patch(stale, base_hash=first)
            assert (await stored(b)) == record and timeout_of(b) == 777
            # on A's new hash it goes through; the files are not written
            done = await b.write_text(
                json.dumps(config(888)), base_hash=second, reason="config.set"
            )
            assert timeout_of(b) == 888 and b.document_version == 3
            for name in ("a", "b"):
                assert "100" in (tmp_path / name / "clawlane.json").read_text()
            # two writes at once on the same base: one wins, the other is refused
            outcomes: list[str] = []

            async def patch_through(publisher: Publisher, value: int) -> None:
                raw = json.dumps({"agents": {"defaults": {"timeoutSeconds": value}}})
                try:
                    await publisher.write_patch(raw, base_hash=done.snapshot.hash)
                    outcomes.append("ok")
                except PublishConflict:
                    outcomes.append("conflict")

            async with trio.open_nursery() as nursery:
                nursery.start_soon(patch_through, a, 1)
                nursery.start_soon(patch_through, b, 2)
            assert sorted(outcomes) == ["conflict", "ok"]
            found = await b.document.read() if b.document else None
            assert found is not None and found.version == 4


async def test_a_node_restarted_from_an_older_file_adopts_and_seed_replaces(
    tmp_path: Path, pg_url: str
) -> None:
    """A restart (a deploy, a crash) adopts the cluster's config, not the node's file; a
    node started with `seed` makes its file the cluster's config."""
    with trio.fail_after(TIMEOUT):
        await migrated(pg_url)
        async with node(tmp_path, "a", pg_url, config(100)) as a:
            async with node(tmp_path, "b", pg_url, config(100)) as b:
                base = (await b.read_snapshot()).hash
                patch = json.dumps({"agents": {"defaults": {"timeoutSeconds": 777}}})
                await b.write_patch(patch, base_hash=base)
            async with node(tmp_path, "b", pg_url, config(100)) as b:  # restarted
                assert timeout_of(b) == 777 and b.document_version == 2
            async with node(tmp_path, "b", pg_url, config(100), seed=True) as b:
                assert timeout_of(b) == 100 and b.document_version == 3
                record = await stored(b)
                assert (record.origin, record.reason) == ("b", "seed")
                assert b.status_view()["document"]["seed"] is True
            await a.adopt_document()
            assert timeout_of(a) == 100


async def test_the_file_watch_publishes_a_changed_file_and_refuses_an_older_one(
    tmp_path: Path, pg_url: str
) -> None:
    with trio.fail_after(TIMEOUT):
        await migrated(pg_url)
        async with node(tmp_path, "a", pg_url, config(100)) as a:
            assert a.config_path is not None
            write_config_text(a.config_path, json.dumps(config(300)))
            age(a.config_path, -3600)  # e.g. restored from a backup, or copied with its mtime
            assert await a.reload(reason="file") is None
            assert timeout_of(a) == 100 and a.document_version == 1
            error = a.last_error
            assert error is not None and error.reason == "file"
            assert "older than the cluster's config (version 1" in error.message
            assert "--seed-config" in error.message
            age(a.config_path, 0)  # saved again
            published = await a.reload(reason="file")
            assert published is not None and timeout_of(a) == 300
            assert a.document_version == 2 and a.last_error is None
            record = await stored(a)
            assert (record.origin, record.reason) == ("a", "file")
        # with seed, even an older file is published
        async with node(tmp_path, "b", pg_url, config(400), seed=True) as b:
            assert b.config_path is not None
            write_config_text(b.config_path, json.dumps(config(500)))
            age(b.config_path, -3600)
            assert await b.reload(reason="file") is not None
            assert timeout_of(b) == 500


async def test_a_node_that_cannot_build_the_clusters_config_keeps_its_generation_and_says_so(
    tmp_path: Path, pg_url: str
) -> None:
    with trio.fail_after(TIMEOUT):
        await migrated(pg_url)
        async with (
            node(tmp_path, "a", pg_url, config(100)) as a,
            node(tmp_path, "b", pg_url, config(100)) as b,
        ):
            serving = b.generation.number
            assert a.document is not None
            async with a.document.locked() as held:  # a config node B cannot build
                bad = json.dumps(config(100, primary="local/missing"))
                record = ConfigRecord(bad, int(time.time() * 1000), "a", "config.set")
                await trio.to_thread.run_sync(held.write_sync, record)
            with pytest.raises(GenerationError):
                await b.adopt_document()
            assert b.generation.number == serving and b.document_version == 1
            view = b.status_view()["document"]
            assert view["version"] == 1
            assert view["error"].startswith("the cluster's config (version 2): ")
            assert "unknown model 'local/missing'" in view["error"]


async def test_an_auth_or_plugin_change_builds_the_clusters_config_even_without_the_database(
    tmp_path: Path, pg_url: str
) -> None:
    """A reload for another input (an auth store, the plugins) builds the document as it is
    now, so a version that failed may build then; with the database away it rebuilds the
    config the node serves, and the watcher keeps running."""
    with trio.fail_after(TIMEOUT):
        await migrated(pg_url)
        async with (
            node(tmp_path, "a", pg_url, config(100)) as a,
            node(tmp_path, "b", pg_url, config(100)) as b,
        ):
            base = (await a.read_snapshot()).hash
            await a.write_patch(
                json.dumps({"agents": {"defaults": {"timeoutSeconds": 7}}}), base_hash=base
            )
            assert timeout_of(b) == 100 and b.document_version == 1  # not told yet
            assert await b.reload(reason="auth-profiles") is not None
            assert timeout_of(b) == 7 and b.document_version == 2
            away = ConfigDocument("postgresql://nobody@127.0.0.1:1/x")
            b.document = away
            try:
                assert await b.reload(reason="plugins") is None  # unchanged, not raised
                with pytest.raises(StoreError):
                    await b.read_snapshot()  # config.get: UNAVAILABLE
            finally:
                away.close()
            assert timeout_of(b) == 7 and b.document_version == 2


async def test_a_file_change_made_while_the_database_is_away_is_published_once_it_is_back(
    tmp_path: Path, pg_url: str
) -> None:
    with trio.fail_after(TIMEOUT):
        await migrated(pg_url)
        async with node(tmp_path, "a", pg_url, config(100)) as a:
            assert a.config_path is not None and a.document is not None
            document, away = a.document, ConfigDocument("postgresql://nobody@127.0.0.1:1/x")
            a.document = away
            try:
                write_config_text(a.config_path, json.dumps(config(300)))
                await a.poll_once()  # the file watch's step: not published, not raised
                assert timeout_of(a) == 100
            finally:
                away.close()
            a.document = document
            await a.poll_once()
            assert timeout_of(a) == 300 and a.document_version == 2
            record = await stored(a)
            assert (record.origin, record.reason) == ("a", "file")
