"""A session's files, changes and move asked on the node that does not own it: the request
goes to the owner (`SESSION_METHODS`), whose workspace holds what the session's runs wrote;
the other node's workspace never had the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio

from tests.actors._databases import pg_url
from tests.conftest import open_client
from tests.e2e.test_cluster_nodes import ADMIN, two_nodes
from tests.e2e.test_cluster_sessions import owner_of
from transports import GatewayRequestError

__all__ = ["pg_url"]  # the fixture, used by name

KEY = "agent:main:owned"


async def test_files_and_changes_are_read_on_the_owner(tmp_path: Path, pg_url: str) -> None:
    with trio.fail_after(60):
        async with two_nodes(tmp_path, pg_url) as nodes:
            a, b = nodes
            async with (
                open_client(a.gw, scopes=ADMIN, on_event=lambda *_: None) as ca,
                open_client(b.gw, scopes=ADMIN, on_event=lambda *_: None) as cb,
            ):
                write = json.dumps({"path": "made-on-a.txt", "content": "from the owner"})
                done = await ca.request(
                    "agent",
                    {
                        "message": f"[[tool:write {write}]]",
                        "sessionKey": KEY,
                        "idempotencyKey": "w",
                    },
                    expect_final=True,
                )
                assert done["status"] == "ok"
                assert owner_of(nodes, KEY) is a
                got = await cb.request(
                    "sessions.files.get", {"sessionKey": KEY, "path": "made-on-a.txt"}
                )
                assert got["file"]["content"] == "from the owner"
                listed = await cb.request("sessions.files.list", {"sessionKey": KEY})
                assert [f["path"] for f in listed["files"]] == ["made-on-a.txt"]
                diff = await cb.request("sessions.diff", {"sessionKey": KEY})
                assert diff["unavailableReason"] == "not_git"
                with pytest.raises(GatewayRequestError) as info:
                    await cb.request(
                        "sessions.move",
                        {
                            "key": KEY,
                            "expected": {"generation": 0, "environmentId": "e", "ownerEpoch": 1},
                            "target": {"kind": "gateway"},
                        },
                    )
                assert info.value.message == "session cannot move from placement local"
            assert a.gw.router is not None and a.gw.router.served >= 4
            assert not any(p.name == "made-on-a.txt" for p in (tmp_path / "node-b").rglob("*"))
