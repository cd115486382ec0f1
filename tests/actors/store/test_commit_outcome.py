"""A group commit whose COMMIT got no answer (the link to PostgreSQL broke as it committed)
is reported as it went, never guessed: the store asks the server whether the batch's
transaction committed (once it can be reached) before it tells the writes' callers.

A proxy of the test's own between the store and a real PostgreSQL breaks the link at the
COMMIT it is armed for: passing the COMMIT on and losing its answer (the batch committed),
losing the COMMIT and closing both ways (it did not), or losing it and keeping the
server's side open (the transaction is still in progress when the store asks: its backend
is ended first)."""

from __future__ import annotations

import functools
import urllib.parse
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Literal

import pytest
import trio
import trio.testing

from actors import PostgresBackend, StoreError, open_store
from actors.store import WriteGroup
from actors.store._journal import RunIdentity, RunOutcome, ended_row
from runtime.sessions._sessions import SessionRow, new_session_row
from tests.actors._databases import Db, pg_url

__all__ = ["pg_url"]  # the fixture, used by name

TIMEOUT = 30
COMMIT = b"Q\x00\x00\x00\x0bCOMMIT\x00"
"""psycopg's COMMIT: a simple-protocol Query message."""

Mode = Literal["lost_answer", "lost_commit", "held"]


class _Link:
    """One connection through the proxy: `losing` its server's next answer (to a COMMIT
    passed on), `answered` once that answer came (and was lost)."""

    def __init__(self) -> None:
        self.losing = False
        self.answered = trio.Event()
        self.held = False


class CommitCutProxy:
    """Between the store and PostgreSQL; `arm(mode)` breaks the link at the next COMMIT
    (see the module docstring); `cut()`/`heal()` refuse new connections or let them in
    (`refused` is set at each one refused)."""

    def __init__(self, port: int) -> None:
        self.target = port
        self.port = 0
        self.armed: Mode | None = None
        self.fired = trio.Event()
        self.cut_off = False
        self.refused = trio.Event()
        self.held_ended = trio.Event()
        """Set when the server ended a connection held in its transaction ("held")."""
        self._then_cut = False

    def arm(self, mode: Mode, *, then_cut: bool = False) -> None:
        self.armed, self.fired, self.cut_off = mode, trio.Event(), False
        self._then_cut = then_cut

    def heal(self) -> None:
        self.cut_off = False

    async def handle(self, client: trio.SocketStream) -> None:
        if self.cut_off:
            self.refused.set()
            self.refused = trio.Event()
            await client.aclose()
            return
        upstream = await trio.open_tcp_stream("127.0.0.1", self.target)
        link = _Link()
        async with client, upstream, trio.open_nursery() as nursery:
            done = nursery.cancel_scope
            nursery.start_soon(self._to_server, client, upstream, link, done)
            nursery.start_soon(self._to_client, upstream, client, link, done)

    async def _to_client(
        self,
        upstream: trio.SocketStream,
        client: trio.SocketStream,
        link: _Link,
        done: trio.CancelScope,
    ) -> None:
        try:
            while data := await upstream.receive_some(65536):
                if link.held:
                    break  # its backend was ended (terminated)
                if link.losing:
                    link.answered.set()  # it committed; the answer is lost
                    return
                await client.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        if link.held:
            self.held_ended.set()
        done.cancel()

    async def _to_server(
        self,
        client: trio.SocketStream,
        upstream: trio.SocketStream,
        link: _Link,
        done: trio.CancelScope,
    ) -> None:
        try:
            while data := await client.receive_some(65536):
                at = data.find(COMMIT) if self.armed else -1
                if at < 0:
                    await upstream.send_all(data)
                    continue
                mode, self.armed = self.armed, None
                self.cut_off = self._then_cut
                await upstream.send_all(data[:at])
                if mode == "lost_answer":
                    link.losing = True
                    await upstream.send_all(data[at:])
                    await link.answered.wait()
                self.fired.set()
                if mode == "held":  # the server waits on, in the transaction
                    link.held = True
                    await client.aclose()
                    await trio.sleep_forever()  # until the server ends it
                await upstream.aclose()
                await client.aclose()
                break
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        done.cancel()


@asynccontextmanager
async def open_proxy(pg_url: str) -> AsyncIterator[tuple[CommitCutProxy, str]]:
    parts = urllib.parse.urlsplit(pg_url)
    proxy = CommitCutProxy(parts.port or 5432)
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            functools.partial(trio.serve_tcp, proxy.handle, 0, host="127.0.0.1")
        )
        proxy.port = listeners[0].socket.getsockname()[1]
        user = f"{parts.username}@" if parts.username else ""
        yield proxy, urllib.parse.urlunsplit(parts._replace(netloc=f"{user}127.0.0.1:{proxy.port}"))
        nursery.cancel_scope.cancel()


def session(key: str) -> SessionRow:
    return new_session_row(key, now_ms=1, session_id=f"sid-{key}")


def run_end(run_id: str, on_commit: Callable[[StoreError | None], None]) -> WriteGroup:
    """A run's end as a session writes it: its journal row and its session's row."""
    identity = RunIdentity(run_id, "agent", "agent:main:s", "sid-s", "main", 1)
    row = ended_row(identity, ended_at=5, outcome=RunOutcome(status="ok"))
    return WriteGroup(run=row, row=session(f"agent:main:{run_id}"), on_commit=on_commit)


def keys(db: Db) -> set[str]:
    return {k for (k,) in db.query("SELECT key FROM sessions")}


async def test_a_commit_whose_answer_was_lost_is_reported_committed(pg_url: str) -> None:
    db = Db("postgres", url=pg_url)
    with trio.fail_after(TIMEOUT):
        async with (
            open_proxy(pg_url) as (proxy, url),
            open_store(backend=PostgresBackend(url)) as store,
        ):
            await store.put_session_durable(session("agent:main:before"))
            heard: list[StoreError | None] = []
            proxy.arm("lost_answer")
            store.commit_nowait(run_end("went-through", heard.append))
            await store.flush()  # the flush waits for the outcome too
            assert proxy.fired.is_set()
            assert heard == [None]
            stats = store.statistics()
            assert (stats.commits, stats.failed_commits, stats.unresolved) == (2, 0, 0)
            assert stats.runs_written == 1
    rows = await trio.to_thread.run_sync(keys, db)
    assert rows == {"agent:main:before", "agent:main:went-through"}


async def test_a_commit_that_never_reached_the_server_is_reported_failed(pg_url: str) -> None:
    db = Db("postgres", url=pg_url)
    with trio.fail_after(TIMEOUT):
        async with (
            open_proxy(pg_url) as (proxy, url),
            open_store(backend=PostgresBackend(url)) as store,
        ):
            proxy.arm("lost_commit")
            with pytest.raises(StoreError, match="cannot store session"):
                await store.put_session_durable(session("agent:main:lost"))
            assert proxy.fired.is_set()
            assert store.statistics().failed_commits == 1
            await store.put_session_durable(session("agent:main:after"))
    assert await trio.to_thread.run_sync(keys, db) == {"agent:main:after"}


async def test_a_transaction_still_open_when_asked_is_ended_and_reported_failed(
    pg_url: str,
) -> None:
    """The server never saw the COMMIT nor the connection's end: the transaction is in
    progress when the store asks, so its backend is terminated first (then it has not
    committed, for good)."""
    db = Db("postgres", url=pg_url)
    with trio.fail_after(TIMEOUT):
        async with (
            open_proxy(pg_url) as (proxy, url),
            open_store(backend=PostgresBackend(url)) as store,
        ):
            proxy.arm("held")
            with pytest.raises(StoreError, match="cannot store session"):
                await store.put_session_durable(session("agent:main:held"))
            await proxy.held_ended.wait()  # its backend was terminated
            await store.put_session_durable(session("agent:main:after"))
    assert await trio.to_thread.run_sync(keys, db) == {"agent:main:after"}


async def test_the_outcome_waits_for_the_server_and_later_writes_fail_fast_meanwhile(
    pg_url: str,
) -> None:
    """The link stays down after the lost answer: the store cannot ask, so the run's
    callers wait (writes after it fail as the outage they meet, reads too); once the link
    is back the store asks, and the committed run is reported committed."""
    db = Db("postgres", url=pg_url)
    with trio.fail_after(TIMEOUT):
        async with (
            open_proxy(pg_url) as (proxy, url),
            open_store(backend=PostgresBackend(url)) as store,
        ):
            await store.put_session_durable(session("agent:main:before"))
            heard: list[StoreError | None] = []
            told = trio.Event()

            def hear(error: StoreError | None) -> None:
                heard.append(error)
                told.set()

            proxy.arm("lost_answer", then_cut=True)
            store.commit_nowait(run_end("later", hear))
            await proxy.fired.wait()
            for _ in range(2):  # the writer asked, and will ask again
                await proxy.refused.wait()
            assert heard == [] and store.statistics().unresolved == 1
            assert store.statistics().failing
            with pytest.raises(StoreError):
                await store.put_session_durable(session("agent:main:during"))
            with pytest.raises(StoreError):
                await store.list_sessions()
            flushed: list[BaseException | None] = []

            async def flush() -> None:  # waits for the run's outcome too
                try:
                    await store.flush()
                    flushed.append(None)
                except StoreError as exc:
                    flushed.append(exc)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(flush)
                await trio.testing.wait_all_tasks_blocked()
                assert heard == [] and flushed == []
                proxy.heal()
                await told.wait()
            assert heard == [None]
            assert store.statistics().unresolved == 0
            (error,) = flushed  # "during", written after the run, did not commit
            assert isinstance(error, StoreError) and "failed to commit" in str(error)
    rows = await trio.to_thread.run_sync(keys, db)
    assert rows == {"agent:main:before", "agent:main:later"}
