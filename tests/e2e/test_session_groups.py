"""`sessions.groups.*` over a real socket, as OpenClaw 2026.9.6's Control UI sidebar uses them:
groups made with put, sessions filed under one with `sessions.patch {category}` (which adds
a new name), renamed and deleted with their sessions refiled, the defaults of a group,
the sidebar's section order; all persisted (a restarted gateway lists the same), on SQLite
and PostgreSQL. Answers validate against the 2026.9.6 definitions; refusals are
`INVALID_REQUEST` naming what, a non-admin's cwd outside the workspaces `FORBIDDEN`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from runtime.model import parse_config
from tests._schema import validate
from tests.actors._databases import pg_url
from tests.conftest import client_auth, frame_checker, gateway_url, running_gateway
from transports import GatewayClient, GatewayRequestError, open_gateway_client
from transports.server._gateway import Gateway

__all__ = ["pg_url"]  # the fixture, used by name

RESULTS = {
    "sessions.groups.list": "SessionsGroupsListResult",
    "sessions.groups.defaults": "SessionsGroupsDefaultsResult",
    "sessions.groups.put": "SessionsGroupsMutationResult",
    "sessions.groups.rename": "SessionsGroupsMutationResult",
    "sessions.groups.delete": "SessionsGroupsMutationResult",
    "sessions.groups.update": "SessionsGroupsUpdateResult",
}


@pytest.fixture(params=["sqlite", "postgres"])
def storage(request: pytest.FixtureRequest) -> dict[str, Any]:
    if request.param == "sqlite":
        return {}
    return {
        "storage": {"backend": "postgres", "postgres": {"url": request.getfixturevalue("pg_url")}}
    }


@asynccontextmanager
async def groups_gateway(
    tmp_path: Path, storage: dict[str, Any], scopes: list[str] | None = None
) -> AsyncIterator[tuple[Gateway, GatewayClient]]:
    config = {"agents": {"defaults": {"workspace": str(tmp_path / "ws")}}, **storage}
    async with (
        running_gateway(tmp_path, parse_config(config)) as gw,
        open_gateway_client(
            gateway_url(gw),
            client_id="test",
            mode="test",
            on_frame=frame_checker().check,
            on_event=lambda *_: None,
            scopes=scopes,
            **client_auth(gw),
        ) as c,
    ):
        yield gw, c


async def call(c: GatewayClient, method: str, params: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = await c.request(method, params)
    validate(RESULTS[method], result)
    return result


async def refused(c: GatewayClient, method: str, params: dict[str, Any]) -> GatewayRequestError:
    with pytest.raises(GatewayRequestError) as info:
        await c.request(method, params)
    return info.value


async def say(c: GatewayClient, key: str) -> None:
    final = await c.request(
        "agent", {"message": "hi", "sessionKey": key, "idempotencyKey": key}, expect_final=True
    )
    assert final["status"] == "ok"


async def categories(c: GatewayClient) -> dict[str, str | None]:
    rows = (await c.request("sessions.list", {}))["sessions"]
    return {r["key"]: r.get("category") for r in rows}


def names(result: dict[str, Any]) -> list[str]:
    assert [g["position"] for g in result["groups"]] == list(range(len(result["groups"])))
    return [g["name"] for g in result["groups"]]


async def test_groups_are_made_filled_renamed_and_deleted(
    tmp_path: Path, storage: dict[str, Any]
) -> None:
    with trio.fail_after(60):
        async with groups_gateway(tmp_path, storage) as (_gw, c):
            assert await call(c, "sessions.groups.list", {}) == {"groups": [], "sectionOrder": []}
            put = await call(
                c,
                "sessions.groups.put",
                {
                    "names": [" Work ", "Home", "Work", "Later"],
                    "sectionOrder": ["category:Home", "ungrouped", "category:Nope", "bogus"],
                },
            )
            assert names(put) == ["Work", "Home", "Later"]
            assert put["sectionOrder"] == ["category:Home", "ungrouped"]

            for key in ("agent:main:a", "agent:main:b", "agent:main:c"):
                await say(c, key)
            await c.request("sessions.patch", {"key": "agent:main:a", "category": "Work"})
            await c.request(
                "sessions.patchMany",
                {
                    "targets": [{"key": "agent:main:b"}, {"key": "agent:main:c"}],
                    "patch": {"category": "Errands"},
                },
            )
            cats = await categories(c)
            assert (cats["agent:main:a"], cats["agent:main:b"]) == ("Work", "Errands")
            listed = await call(c, "sessions.groups.list", {})
            assert names(listed) == ["Work", "Home", "Later", "Errands"]  # a new name added
            grouped = await c.request("sessions.list", {"group": "Errands"})
            assert sorted(r["key"] for r in grouped["sessions"]) == ["agent:main:b", "agent:main:c"]
            ungrouped = await c.request("sessions.list", {"group": ""})
            assert "agent:main:a" not in {r["key"] for r in ungrouped["sessions"]}

            busy = await refused(c, "sessions.groups.put", {"names": ["Home"]})
            assert busy.code == "INVALID_REQUEST"
            assert '"Work" (1)' in busy.message and '"Errands" (2)' in busy.message
            dropped = await call(c, "sessions.groups.put", {"names": ["Errands", "Work", "Home"]})
            assert names(dropped) == ["Errands", "Work", "Home"]
            assert dropped["sectionOrder"] == ["category:Home", "ungrouped"]

            renamed = await call(c, "sessions.groups.rename", {"name": "Errands", "to": "Chores"})
            assert names(renamed) == ["Chores", "Work", "Home"]
            assert renamed["updatedSessions"] == 2
            cats = await categories(c)
            assert cats["agent:main:b"] == cats["agent:main:c"] == "Chores"
            renamed = await call(c, "sessions.groups.rename", {"name": "Home", "to": "Abode"})
            assert renamed["sectionOrder"] == ["category:Abode", "ungrouped"]

            updated = await call(
                c,
                "sessions.groups.update",
                {"name": "Work", "cwd": str(tmp_path / "ws" / "proj"), "worktree": True},
            )
            assert updated["defaults"] == [
                {"name": "Work", "cwd": str(tmp_path / "ws" / "proj"), "worktree": True}
            ]
            cleared = await call(
                c, "sessions.groups.update", {"name": "Work", "cwd": None, "worktree": False}
            )
            assert cleared["defaults"] == []
            await call(
                c, "sessions.groups.update", {"name": "Chores", "cwd": "/tmp", "worktree": False}
            )
            defaults = await call(c, "sessions.groups.defaults", {})
            assert defaults == {"defaults": [{"name": "Chores", "cwd": "/tmp"}]}

            deleted = await call(c, "sessions.groups.delete", {"name": "Chores"})
            assert names(deleted) == ["Work", "Abode"] and deleted["updatedSessions"] == 2
            assert (await call(c, "sessions.groups.defaults", {}))["defaults"] == []
            cats = await categories(c)
            assert cats["agent:main:b"] is None and cats["agent:main:a"] == "Work"

            for method, params, says in (
                ("sessions.groups.delete", {"name": "Nope"}, "unknown session group: Nope"),
                ("sessions.groups.rename", {"name": "Nope", "to": "X"}, "unknown session group"),
                (
                    "sessions.groups.update",
                    {"name": "Nope", "cwd": None, "worktree": False},
                    "unknown session group",
                ),
                (
                    "sessions.groups.update",
                    {"name": "Work", "cwd": "rel/dir", "worktree": False},
                    "must be absolute",
                ),
                ("sessions.groups.update", {"name": "Work", "cwd": "/x"}, "worktree"),
                ("sessions.groups.put", {"names": ["x" * 513]}, "names"),
                ("sessions.groups.list", {"extra": 1}, "extra"),
            ):
                error = await refused(c, method, params)
                assert error.code == "INVALID_REQUEST" and says in error.message, (method, error)
            error = await refused(c, "sessions.patch", {"key": "agent:main:a", "category": " "})
            assert "category" in error.message

        # A restarted gateway lists what the store holds.
        async with groups_gateway(tmp_path, storage) as (_gw, c):
            listed = await call(c, "sessions.groups.list", {})
            assert names(listed) == ["Work", "Abode"]
            assert listed["sectionOrder"] == ["category:Abode", "ungrouped"]
            assert (await categories(c))["agent:main:a"] == "Work"


async def test_a_writer_sets_defaults_inside_a_workspace_only(tmp_path: Path) -> None:
    with trio.fail_after(60):
        async with groups_gateway(tmp_path, {}) as (_gw, admin):
            await call(admin, "sessions.groups.put", {"names": ["Work"]})
        async with groups_gateway(tmp_path, {}, scopes=["operator.read", "operator.write"]) as (
            _gw,
            writer,
        ):
            inside = str(tmp_path / "ws" / "sub")
            done = await call(
                writer, "sessions.groups.update", {"name": "Work", "cwd": inside, "worktree": False}
            )
            assert done["defaults"][0]["cwd"].endswith("/ws/sub")
            error = await refused(
                writer, "sessions.groups.update", {"name": "Work", "cwd": "/etc", "worktree": False}
            )
            assert error.code == "FORBIDDEN" and "operator.admin" in error.message
