"""The Control UI's agents pages over a real socket: `agents.create/update/delete` change
the config's `agents.list` as one compare-and-set and publish a generation;
`agents.files.*` read and write an agent's bootstrap files with a hash; `agents.workspace.*`
browse its workspace read-only, confined to it. Every answer validates against OpenClaw
2026.9.6's result definitions."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from runtime.model._config import load_config, write_config_text
from tests.conftest import client_auth, frame_checker, gateway_url, running_gateway
from transports import GatewayClient, GatewayRequestError, open_gateway_client
from transports.server._gateway import Gateway

CONFIG: dict[str, Any] = {
    "models": {
        "providers": {
            "local": {"api": "local", "models": [{"id": "echo"}, {"id": "other"}]},
        }
    },
    "agents": {"defaults": {"model": {"primary": "local/echo"}}},
}


@asynccontextmanager
async def agents_gateway(tmp_path: Path) -> AsyncIterator[tuple[Gateway, Path, GatewayClient]]:
    path = tmp_path / "clawlane.json"
    write_config_text(path, json.dumps(CONFIG, indent=2))
    async with (
        running_gateway(tmp_path, load_config(path), config_path=path) as gw,
        open_gateway_client(
            gateway_url(gw),
            client_id="test",
            mode="test",
            on_frame=frame_checker().check,
            **client_auth(gw),
        ) as c,
    ):
        yield gw, path, c


async def call(c: GatewayClient, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """`method`, its answer validated against its 2026.9.6 result definition."""
    result: dict[str, Any] = await c.request(method, params)
    definition = frame_checker().result_definition(method)
    assert definition is not None, method
    frame_checker().validate(definition, result)
    return result


async def refused(c: GatewayClient, method: str, params: dict[str, Any]) -> GatewayRequestError:
    with pytest.raises(GatewayRequestError) as info:
        await c.request(method, params)
    assert info.value.code == "INVALID_REQUEST", info.value
    return info.value


def text_of(*parts: str) -> str:
    return Path(*parts).read_text()


def roster(path: Path) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = json.loads(path.read_text())["agents"]["list"]
    return entries


async def test_create_update_delete_change_the_config_and_the_serving_generation(
    tmp_path: Path,
) -> None:
    with trio.fail_after(20):
        async with agents_gateway(tmp_path) as (gw, path, c):
            before = gw.supervisor.generation.number
            created = await call(
                c, "agents.create", {"name": "Ops Bot", "model": "local/other", "emoji": "🛠"}
            )
            assert created["agentId"] == "ops-bot" and created["name"] == "Ops Bot"
            assert created["model"] == "local/other"
            assert Path(created["workspace"]) == (tmp_path / "state" / "workspaces" / "ops-bot")
            # the implicit default agent stays, listed first; the new one is served at once
            assert [e["id"] for e in roster(path)] == ["main", "ops-bot"]
            assert gw.supervisor.generation.number > before
            listed = await c.request("agents.list", {})
            assert {a["id"] for a in listed["agents"]} == {"main", "ops-bot"}
            shown = await call(c, "agent.identity.get", {"agentId": "ops-bot"})
            assert shown["name"] == "Ops Bot" and shown["emoji"] == "🛠"
            identity = text_of(created["workspace"], "IDENTITY.md")
            assert "- Name: Ops Bot" in identity and "- Emoji: 🛠" in identity

            await refused(c, "agents.create", {"name": "ops bot"})  # exists already
            await refused(c, "agents.create", {"name": "!!!"})  # no id characters
            await refused(c, "agents.create", {"name": "x", "model": "nowhere/none"})
            assert [e["id"] for e in roster(path)] == ["main", "ops-bot"]

            updated = await call(
                c, "agents.update", {"agentId": "ops-bot", "name": "Operator", "model": None}
            )
            assert updated == {"ok": True, "agentId": "ops-bot"}
            entry = roster(path)[1]
            assert entry["name"] == "Operator" and "model" not in entry
            assert entry["identity"] == {"name": "Operator", "emoji": "🛠"}
            text = text_of(created["workspace"], "IDENTITY.md")
            assert "- Name: Operator" in text and "Ops Bot" not in text
            await refused(c, "agents.update", {"agentId": "ghost", "name": "x"})
            await refused(c, "agents.update", {"agentId": "ops-bot", "agentRuntime": "codex"})

            deleted = await call(c, "agents.delete", {"agentId": "ops-bot"})
            assert deleted["removedBindings"] == 0
            assert deleted["removed"] == [{"path": created["workspace"], "method": "trash"}]
            assert not Path(created["workspace"]).exists()  # noqa: ASYNC240 (a test's check)
            assert os.listdir(tmp_path / "state" / "trash" / "agents")
            assert [e["id"] for e in roster(path)] == ["main"]
            only = await refused(c, "agents.delete", {"agentId": "main"})
            assert "only configured agent" in only.message
            await refused(c, "agents.delete", {"agentId": "ops-bot"})


async def test_a_relative_workspace_is_under_the_state_dir(tmp_path: Path) -> None:
    with trio.fail_after(20):
        async with agents_gateway(tmp_path) as (_, path, c):
            created = await call(c, "agents.create", {"name": "rel", "workspace": "team/rel"})
    expected = tmp_path / "state" / "workspaces" / "team" / "rel"
    assert created["workspace"] == str(expected)
    assert roster(path)[1]["workspace"] == str(expected)


async def test_a_workspace_the_host_cannot_hold_is_refused_and_the_config_kept(
    tmp_path: Path,
) -> None:
    """A name too long for the file system, a path through a file: INVALID_REQUEST naming
    `workspace`, the roster as it was (the fuzz had made it an internal error after the
    config had already changed)."""
    (tmp_path / "a-file").write_text("x")
    with trio.fail_after(20):
        async with agents_gateway(tmp_path) as (_, path, c):
            before = path.read_text()
            for params in (
                {"name": "long", "workspace": "w" * 300},
                {"name": "through", "workspace": str(tmp_path / "a-file" / "ws")},
            ):
                err = await refused(c, "agents.create", params)
                assert err.message.startswith("workspace cannot be used"), err.message
                err = await refused(c, "agents.update", {"agentId": "main", **params})
                assert err.message.startswith("workspace cannot be used"), err.message
            assert path.read_text() == before
            await c.request("health", {})  # the connection carries on


async def test_a_stale_base_is_retried_not_lost(tmp_path: Path) -> None:
    """Two creates at once: each is a compare-and-set, so both agents end up listed."""
    with trio.fail_after(20):
        async with agents_gateway(tmp_path) as (_, path, c), trio.open_nursery() as nursery:
            for name in ("alpha", "beta", "gamma"):
                nursery.start_soon(call, c, "agents.create", {"name": name})
    assert sorted(e["id"] for e in roster(path)) == ["alpha", "beta", "gamma", "main"]


async def test_agent_files_are_read_and_written_with_a_hash(tmp_path: Path) -> None:
    with trio.fail_after(20):
        async with agents_gateway(tmp_path) as (gw, _, c):
            listed = await call(c, "agents.files.list", {"agentId": "main"})
            names = [f["name"] for f in listed["files"]]
            assert names == ["AGENTS.md", "SOUL.md", "USER.md", "MEMORY.md"]
            soul = next(f for f in listed["files"] if f["name"] == "SOUL.md")
            assert soul["missing"] and soul["expectedAbsent"]

            missing = await call(c, "agents.files.get", {"agentId": "main", "name": "AGENTS.md"})
            assert missing["file"]["missing"] is True and "content" not in missing["file"]

            wrote = await call(
                c, "agents.files.set", {"agentId": "main", "name": "AGENTS.md", "content": "# v1\n"}
            )
            digest = hashlib.sha256(b"# v1\n").hexdigest()
            assert wrote["file"]["size"] == 5 and "hash" not in wrote["file"]
            workspace = Path(wrote["workspace"])
            assert (workspace / "AGENTS.md").read_text() == "# v1\n"

            got = await call(c, "agents.files.get", {"agentId": "main", "name": "AGENTS.md"})
            assert got["file"]["content"] == "# v1\n"

            await call(
                c,
                "agents.files.set",
                {
                    "agentId": "main",
                    "name": "AGENTS.md",
                    "content": "# v2\n",
                    "expectedHash": digest,
                },
            )
            stale = await refused(
                c,
                "agents.files.set",
                {
                    "agentId": "main",
                    "name": "AGENTS.md",
                    "content": "# v3\n",
                    "expectedHash": digest,
                },
            )
            assert "changed since it was read" in stale.message
            assert stale.details["currentHash"] == hashlib.sha256(b"# v2\n").hexdigest()
            assert (workspace / "AGENTS.md").read_text() == "# v2\n"

            await refused(c, "agents.files.get", {"agentId": "main", "name": "../etc/passwd"})
            await refused(c, "agents.files.set", {"agentId": "main", "name": "x.md", "content": ""})
            await refused(c, "agents.files.list", {"agentId": "ghost"})
            outside = tmp_path / "outside.md"
            outside.write_text("secret")
            os.symlink(outside, workspace / "SOUL.md")
            unsafe = await refused(c, "agents.files.get", {"agentId": "main", "name": "SOUL.md"})
            assert "unsafe" in unsafe.message
            await refused(
                c, "agents.files.set", {"agentId": "main", "name": "SOUL.md", "content": "x"}
            )
            assert outside.read_text() == "secret"
            too_big = "x" * (2 * 1024 * 1024 + 1)
            await refused(
                c, "agents.files.set", {"agentId": "main", "name": "USER.md", "content": too_big}
            )
            # the connection carries on
            assert (await c.request("agents.list", {}))["defaultId"] == "main"
            assert gw.supervisor.generation is not None


async def test_the_workspace_browser_stays_inside_the_workspace(tmp_path: Path) -> None:
    with trio.fail_after(20):
        async with agents_gateway(tmp_path) as (_, _, c):
            empty = await call(c, "agents.workspace.list", {"agentId": "main"})
            assert empty["entries"] == [] and empty["totalEntries"] == 0
            wrote = await call(
                c, "agents.files.set", {"agentId": "main", "name": "AGENTS.md", "content": "hi"}
            )
            workspace = Path(wrote["workspace"])
            (workspace / "notes").mkdir()
            (workspace / "notes" / "a.txt").write_text("alpha")
            (workspace / "notes" / "pic.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"0" * 10)
            (workspace / "notes" / "blob.bin").write_bytes(b"\xff\xfe\x00")
            (tmp_path / "secret.txt").write_text("secret")
            os.symlink(tmp_path / "secret.txt", workspace / "notes" / "link.txt")

            root = await call(c, "agents.workspace.list", {"agentId": "main"})
            assert [(e["name"], e["kind"]) for e in root["entries"]] == [
                ("notes", "directory"),
                ("AGENTS.md", "file"),
            ]
            notes = await call(
                c, "agents.workspace.list", {"agentId": "main", "path": "notes", "limit": 2}
            )
            assert notes["parentPath"] == "" and notes["totalEntries"] == 3  # no symlink
            assert [e["path"] for e in notes["entries"]] == ["notes/a.txt", "notes/blob.bin"]

            text = await call(c, "agents.workspace.get", {"agentId": "main", "path": "notes/a.txt"})
            assert text["file"]["content"] == "alpha" and text["file"]["encoding"] == "utf8"
            image = await call(
                c, "agents.workspace.get", {"agentId": "main", "path": "notes/pic.png"}
            )
            assert image["file"]["encoding"] == "base64"
            assert image["file"]["mimeType"] == "image/png"

            for path, kind in (
                ("../secret.txt", "workspace_path_invalid"),
                ("/etc/passwd", "workspace_path_invalid"),
                ("notes/link.txt", "workspace_path_invalid"),
                ("notes/none.txt", "workspace_file_not_found"),
                ("notes/blob.bin", "workspace_file_unsupported"),
            ):
                error = await refused(c, "agents.workspace.get", {"agentId": "main", "path": path})
                assert error.details["type"] == kind, (path, error)
            missing = await refused(c, "agents.workspace.list", {"agentId": "main", "path": "nope"})
            assert missing.details["type"] == "workspace_path_not_found"
