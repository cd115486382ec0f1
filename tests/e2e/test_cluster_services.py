"""What every node of a cluster serves though one node does the work: the
`cron.*` methods and `cron` events (cron runs on one node), an `agent` run's webhook (cron
used to deliver it), and the OpenAI HTTP API's runs (they go to the session's node, as a
WebSocket request does). Two gateways in this process, one PostgreSQL schema, one Redis;
skipped, saying why, only when Redis or PostgreSQL cannot be reached."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import trio

from tests.actors._databases import pg_url
from tests.conftest import open_client
from tests.e2e._events import next_event
from tests.e2e._webhook_server import webhook_server
from tests.e2e.test_cluster_loss import fence_of
from tests.e2e.test_cluster_nodes import ADMIN, Node, agent_job, holders, two_nodes, wait_for

__all__ = ["pg_url"]  # the fixture, used by name

CRON = {
    "webhookMaxAttempts": 2,
    "webhookSsrfPolicy": {"allowedHostnames": ["127.0.0.1"]},
}
HTTP = {"enabled": True}


async def _cron_nodes(nodes: list[Node]) -> tuple[Node, Node]:
    """(the node running cron, the other one)."""
    await wait_for(lambda: len(holders(nodes, "cron")) == 1, "a cron owner", timeout_s=5)
    [owner] = holders(nodes, "cron")
    [other] = [n for n in nodes if n is not owner]
    return owner, other


def _text(content: Any) -> str:
    return content if isinstance(content, str) else str(content[0]["text"])


def _port(node: Node) -> int:
    return int(node.gw.listeners[0].socket.getsockname()[1])


async def test_cron_methods_and_events_on_the_node_not_running_cron(
    tmp_path: Path, pg_url: str
) -> None:
    with trio.fail_after(60):
        async with two_nodes(tmp_path, pg_url, cron=CRON) as nodes:
            owner, other = await _cron_nodes(nodes)
            assert other.gw.cron is None
            async with open_client(other.gw, scopes=ADMIN) as client:
                assert (await client.request("cron.list", {}))["jobs"] == []
                job = await client.request("cron.add", agent_job(3_600_000))
                added = await next_event(client, "cron")  # emitted by the owner, seen here
                assert added["action"] == "added" and added["jobId"] == job["id"]
                assert owner.gw.cron is not None and job["id"] in owner.gw.cron.jobs
                listed = await client.request("cron.list", {})
                assert [j["id"] for j in listed["jobs"]] == [job["id"]]
                await client.request("cron.run", {"id": job["id"], "mode": "force"})
                while (await next_event(client, "cron")).get("action") != "finished":
                    pass
                runs = await client.request("cron.runs", {"id": job["id"]})
                assert [e["status"] for e in runs["entries"]] == ["ok"]
            assert owner.gw.router is not None and owner.gw.router.served >= 4


async def test_an_agent_webhook_is_delivered_by_a_node_not_running_cron(
    tmp_path: Path, pg_url: str
) -> None:
    with trio.fail_after(60):
        async with (
            webhook_server() as server,
            two_nodes(tmp_path, pg_url, cron=CRON) as nodes,
        ):
            _owner, other = await _cron_nodes(nodes)
            async with open_client(other.gw, scopes=ADMIN) as client:
                params = {"message": "ping", "idempotencyKey": "hooked", "webhook": server.url}
                final = await client.request("agent", params, expect_final=True)
                assert final["status"] == "ok"
            await server.wait_for(1)
            body = json.loads(server.received[0].body)
            assert body["runId"] == "hooked" and body["status"] == "ok"
            assert body["result"]["payloads"][0]["text"] == "You said: ping"


async def test_an_openai_http_run_goes_to_the_sessions_node(tmp_path: Path, pg_url: str) -> None:
    key = "agent:main:http-app"
    with trio.fail_after(60):
        async with two_nodes(
            tmp_path, pg_url, gateway__http__endpoints__chatCompletions=HTTP
        ) as nodes:
            a, b = nodes
            async with open_client(a.gw, scopes=ADMIN) as client:  # node A takes the session
                first = await client.request(
                    "agent",
                    {"message": "one", "sessionKey": key, "idempotencyKey": "h1"},
                    expect_final=True,
                )
                assert first["status"] == "ok"
            assert a.gw.router is not None and key in a.gw.router.leases.held
            body = {"model": "openclaw", "messages": [{"role": "user", "content": "two"}]}
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{_port(b)}") as http:
                res = await http.post(
                    "/v1/chat/completions", json=body, headers={"x-openclaw-session-key": key}
                )
            assert res.status_code == 200, res.text
            assert res.json()["choices"][0]["message"]["content"] == "You said: two"
            assert b.gw.router is not None and key not in b.gw.router.leases.held
            assert b.gw.supervisor.peek_session(key) is None  # it ran on A only
            async with open_client(a.gw, scopes=ADMIN) as client:
                history = await client.request("chat.history", {"sessionKey": key})
            texts = [_text(m["content"]) for m in history["messages"]]
            assert texts == ["one", "You said: one", "two", "You said: two"]


async def test_a_sessions_reads_and_writes_from_the_other_node_are_the_owners(
    tmp_path: Path, pg_url: str
) -> None:
    """Reads went to a copy of the session on the node asked, which then went stale (its
    row, and after a reset its transcript); chat.inject and sessions.create wrote beside
    the owner's lane."""
    key = "agent:main:shared"
    with trio.fail_after(60):
        async with two_nodes(tmp_path, pg_url) as nodes:
            a, b = nodes
            async with open_client(a.gw, scopes=ADMIN) as ca, open_client(b.gw, scopes=ADMIN) as cb:
                for n in (1, 2):
                    params = {"message": f"m{n}", "sessionKey": key, "idempotencyKey": f"r{n}"}
                    await ca.request("agent", params, expect_final=True)
                    got = await cb.request("sessions.get", {"key": key})
                    assert got["entry"]["lastRunId"] == f"r{n}"
                injected = await cb.request("chat.inject", {"sessionKey": key, "message": "note"})
                assert injected["ok"] is True
                history = await ca.request("chat.history", {"sessionKey": key})
                assert _text(history["messages"][-1]["content"]) == "note"
                reset = await ca.request("sessions.reset", {"key": key})
                assert (await cb.request("chat.history", {"sessionKey": key}))["messages"] == []
                described = await cb.request("sessions.describe", {"key": key})
                assert described["session"]["sessionId"] == reset["entry"]["sessionId"]
                created = await cb.request("sessions.create", {"message": "hello"})
                assert b.gw.router is not None and created["key"] in b.gw.router.leases.held
            assert b.gw.supervisor.peek_session(key) is None  # only the owner has it


async def test_a_cron_run_in_a_session_another_node_owns_moves_the_session(
    tmp_path: Path, pg_url: str
) -> None:
    """The node running cron ran the firing's turn in its own copy of the session, beside
    the owner's lane (two writers of one transcript); now the session moves to it first."""
    key = "agent:main:cron-shared"
    with trio.fail_after(60):
        async with two_nodes(tmp_path, pg_url, cron=CRON) as nodes:
            cron_node, other = await _cron_nodes(nodes)
            assert cron_node.gw.router is not None and other.gw.router is not None
            async with open_client(other.gw, scopes=ADMIN) as client:
                params = {"message": "before", "sessionKey": key, "idempotencyKey": "b1"}
                await client.request("agent", params, expect_final=True)
                assert key in other.gw.router.leases.held
                before = await trio.to_thread.run_sync(fence_of, pg_url, key)
                job = agent_job(3_600_000) | {"sessionTarget": "session:cron-shared"}
                added = await client.request("cron.add", job)
                await client.request("cron.run", {"id": added["id"], "mode": "force"})
                while (finished := await next_event(client, "cron")).get("action") != "finished":
                    pass
                assert finished["status"] == "ok", finished
                assert key not in other.gw.router.leases.held
                # The cron node took the lease and wrote under it: the session's fence moved.
                # (Whether it still holds it is timing: a loaded machine may see it lost or
                # given up idle by now, which is not what this test is about.)
                after = await trio.to_thread.run_sync(fence_of, pg_url, key)
                assert before is not None and after is not None and after > before
                history = await client.request("chat.history", {"sessionKey": key})
            texts = [_text(m["content"]) for m in history["messages"]]
            assert texts == ["before", "You said: before", "Tick.", "You said: Tick."]
