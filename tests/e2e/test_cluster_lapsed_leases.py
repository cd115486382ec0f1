"""A node serves a session only while it can prove its lease: two gateways on one
PostgreSQL schema and one Redis. A renewal Redis does not answer within the TTL gives the
leases up (their actors forgotten) instead of waiting on; an actor made on a node that does
not hold the session's lease (a request racing the lease's loss) writes nothing, and is
dropped when the node takes the lease (its copy may predate another node's writes).
Skipped, saying why, only when Redis or PostgreSQL cannot be reached."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from actors import Fence, FencedOut
from actors.store import INTERRUPTED, RunOutcome, WriteGroup, ended_row
from runtime.llm import UserMessage
from tests.actors._databases import pg_url
from tests.conftest import open_client
from tests.e2e.test_cluster_nodes import ADMIN, TTL_MS, two_nodes
from transports.cluster._leases import LAPSED_FRACTION, NO_LEASE

__all__ = ["pg_url"]  # the fixture, used by name


async def _stuck(*_args: Any) -> Any:
    await trio.sleep_forever()  # Redis not answering (a partition)


async def test_a_renewal_not_answered_within_the_ttl_gives_the_leases_up(
    tmp_path: Path, pg_url: str
) -> None:
    with trio.fail_after(60):
        async with two_nodes(tmp_path, pg_url) as nodes:
            a = nodes[0]
            ra = a.gw.router
            assert ra is not None
            key = "agent:main:stuck"
            async with open_client(a.gw, scopes=ADMIN) as ca:
                params = {"message": "x", "idempotencyKey": "stuck1", "sessionKey": "stuck"}
                await ca.request("agent", params, expect_final=True)
                assert key in ra.leases.held and a.gw.supervisor.peek_session(key) is not None
                leases = ra.cluster.leases
                leases.renew_many = _stuck  # type: ignore[method-assign,assignment]
                try:
                    started = trio.current_time()
                    with trio.fail_after(TTL_MS / 1000 * 3):
                        while key in ra.leases.held:  # the background renewals are stuck too
                            await ra.leases._renew_all()
                    waited = trio.current_time() - started
                finally:
                    del leases.renew_many
                # given up by the lease's deadline (a third of the TTL late at most)
                assert waited <= TTL_MS / 1000 * (LAPSED_FRACTION + 0.5), waited
                assert ra.leases.leases_lost >= 1
                assert a.gw.supervisor.peek_session(key) is None
                params = {"message": "y", "idempotencyKey": "stuck2", "sessionKey": "stuck"}
                final = await ca.request("agent", params, expect_final=True)
                assert final["status"] == "ok", final
                assert key in ra.leases.held


async def test_an_actor_made_without_the_lease_writes_nothing_and_goes_when_it_is_taken(
    tmp_path: Path, pg_url: str
) -> None:
    with trio.fail_after(60):
        async with two_nodes(tmp_path, pg_url) as nodes:
            a, b = nodes
            ra, rb = a.gw.router, b.gw.router
            assert ra is not None and rb is not None
            key = "agent:main:unleased"
            async with open_client(b.gw, scopes=ADMIN) as cb:
                params = {"message": "x", "idempotencyKey": "unl1", "sessionKey": "unleased"}
                await cb.request("agent", params, expect_final=True)
            assert key in rb.leases.held and key not in ra.leases.held
            stale = await a.gw.supervisor.session(key, "main")  # as a racing request would
            assert stale.fence is not None and stale.fence.token == NO_LEASE
            with pytest.raises(FencedOut):
                await stale.append_messages([UserMessage(content="not mine", timestamp=0)])
            await rb.leases.let_go(key)  # b gives it up: a's next request takes it
            async with open_client(a.gw, scopes=ADMIN) as ca:
                params = {"message": "y", "idempotencyKey": "unl2", "sessionKey": "unleased"}
                final = await ca.request("agent", params, expect_final=True)
                assert final["status"] == "ok", final
                history = await ca.request("chat.history", {"sessionKey": "unleased"})
            fresh = a.gw.supervisor.peek_session(key)
            assert fresh is not None and fresh is not stale
            assert fresh.fence is not None and fresh.fence.token == ra.leases.held[key].token
            texts = str(history["messages"])
            assert "not mine" not in texts and "y" in texts


@pytest.mark.parametrize("reported", [False, True])
async def test_a_run_queued_on_a_lease_lost_ends_once_in_the_journal(
    tmp_path: Path, pg_url: str, reported: bool
) -> None:
    """Node a is late to notice its lease lapsed (a freeze): another node took the session
    meanwhile (the store holds a newer fencing token), so a's writes to it are refused; the
    run a had queued behind its stale run still ends in the journal (`aborted`, as
    `agent.wait` answers it), not left `accepted` for good. When the other node's reaper
    had reported it interrupted already (`reported`), a answers that end too."""
    with trio.fail_after(60):
        async with two_nodes(tmp_path, pg_url) as nodes:
            a, b = nodes
            ra = a.gw.router
            assert ra is not None
            key = "agent:main:queued"
            async with open_client(a.gw, scopes=ADMIN) as ca:
                long = {"message": "[[deltas:400]] [[delay:50]]", "idempotencyKey": "q-long"}
                assert (await ca.request("agent", {**long, "sessionKey": "queued"}))["status"]
                queued = {"message": "next", "idempotencyKey": "q-next", "sessionKey": "queued"}
                assert (await ca.request("agent", queued))["status"] == "accepted"
                token = ra.leases.held[key].token
                await b.gw.supervisor.store.advance_fence(Fence(key, token + 1))  # b took it
                if reported:  # as b's reaper writes it (actors.report_lost)
                    accepted = await b.gw.supervisor.store.load_run("q-next")
                    assert accepted is not None and not accepted.ended
                    outcome = RunOutcome(status="error", error=INTERRUPTED)
                    end = ended_row(accepted.identity, ended_at=1, outcome=outcome)
                    await b.gw.supervisor.store.commit_durable(WriteGroup(run=end))
                ra.leases._lose([key])  # a notices: drops its copy, ends what it had
                waited = await ca.request("agent.wait", {"runId": "q-next", "timeoutMs": 5000})
                if reported:
                    assert waited["status"] == "error" and waited["error"] == INTERRUPTED, waited
                else:
                    assert waited["status"] == "timeout" and "endedAt" in waited, waited
            await a.gw.supervisor.store.flush()
            row = await a.gw.supervisor.store.load_run("q-next")
            assert row is not None and row.ended, row
            assert row.state == ("error" if reported else "aborted"), row


async def test_a_lost_nodes_run_on_a_session_served_elsewhere_ends_in_the_journal(
    tmp_path: Path, pg_url: str
) -> None:
    """The reaper reports a lost node's run whose session another node serves now (the
    fencing token moved past the lost node's): the session is its owner's to touch, but the
    run's journal row ends `error` (interrupted), as its claim and `agent.wait` say, not
    left `accepted` for good."""
    with trio.fail_after(60):
        async with two_nodes(tmp_path, pg_url) as nodes:
            a, b = nodes
            ra, rb = a.gw.router, b.gw.router
            assert ra is not None and rb is not None
            key = "agent:main:elsewhere"
            async with open_client(a.gw, scopes=ADMIN) as ca:
                long = {"message": "[[deltas:400]] [[delay:50]]", "idempotencyKey": "e-long"}
                assert (await ca.request("agent", {**long, "sessionKey": "elsewhere"}))["status"]
                queued = {"message": "next", "idempotencyKey": "e-next", "sessionKey": "elsewhere"}
                assert (await ca.request("agent", queued))["status"] == "accepted"
                claims = rb.cluster.claims
                for _ in range(200):  # a's claims reach Redis in its next batch (no event)
                    if await claims.get("run:e-next") is not None:
                        break
                    await trio.sleep(0.05)
                token = ra.leases.held[key].token
                await b.gw.supervisor.store.advance_fence(Fence(key, token + 1))  # taken
                await rb.reaper._finish_lost(ra.node_id, ["run:e-next"])  # as if a were gone
            async with open_client(b.gw, scopes=ADMIN) as cb:
                waited = await cb.request("agent.wait", {"runId": "e-next", "timeoutMs": 100})
            assert waited["status"] == "error", waited
            row = await b.gw.supervisor.store.load_run("e-next")
            assert row is not None and row.ended and row.state == "error", row
