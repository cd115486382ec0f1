"""config.get / config.set / config.patch / config.apply over a real socket, the
`runtime.generation` event, hot reload of the file on disk, models.list under publishes, and
the `clawlane config` CLI against a running gateway."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from runtime.model._config import load_config, write_config_text
from tests.conftest import client_auth, frame_checker, gateway_url, running_gateway
from transports import GatewayClient, GatewayRequestError, open_gateway_client
from transports.cli._main import main as cli_main
from transports.server._gateway import Gateway

SECRET = "sk-very-secret"


def base_config(*, tag: str = "one", models: tuple[str, ...] = ("echo",)) -> dict[str, Any]:
    return {
        "models": {
            "providers": {
                "local": {
                    "api": "local",
                    "models": [{"id": m} for m in models],
                    "options": {"deltaDelayMs": 0, "tag": tag},
                },
                "remote": {
                    "api": "openai-completions",
                    "baseUrl": "https://llm.example.com/v1",
                    "apiKey": SECRET,
                    "models": [{"id": "big"}],
                },
            }
        },
        "agents": {"defaults": {"model": {"primary": "local/echo", "fallbacks": ["remote/big"]}}},
    }


class Events:
    def __init__(self) -> None:
        self.items: list[tuple[str, Any]] = []
        self.changed = trio.Event()

    def __call__(self, event: str, payload: Any, seq: int | None) -> None:
        self.items.append((event, payload))
        self.changed.set()
        self.changed = trio.Event()

    def generation(self) -> list[dict[str, Any]]:
        return [p for e, p in self.items if e == "runtime.generation"]

    async def wait_generation(self, count: int) -> list[dict[str, Any]]:
        while len(self.generation()) < count:
            await self.changed.wait()
        return self.generation()


@asynccontextmanager
async def file_gateway(
    tmp_path: Path, raw: dict[str, Any] | None = None
) -> AsyncIterator[tuple[Gateway, Path]]:
    path = tmp_path / "clawlane.json"
    write_config_text(path, json.dumps(raw or base_config(), indent=2))
    async with running_gateway(tmp_path, load_config(path), config_path=path) as gw:
        yield gw, path


def check_frame(frame: dict[str, Any]) -> None:
    """Every frame the server sends validates against the protocol schema."""
    frame_checker().check(frame)


def client(gw: Gateway, events: Events | None = None, **kw: Any) -> Any:
    kw = {**client_auth(gw), **kw}
    return open_gateway_client(
        gateway_url(gw), client_id="test", mode="test", on_event=events, on_frame=check_frame, **kw
    )


async def get(c: GatewayClient) -> dict[str, Any]:
    result: dict[str, Any] = await c.request("config.get", {})
    return result


async def test_hello_lists_the_event_and_the_methods(tmp_path: Path) -> None:
    with trio.fail_after(10):
        async with file_gateway(tmp_path) as (gw, _), client(gw) as c:
            assert "runtime.generation" in c.hello["features"]["events"]
            for method in ("config.get", "config.set", "config.patch", "config.apply"):
                assert method in c.hello["features"]["methods"]


async def test_config_get_is_the_redacted_file_snapshot_with_its_hash(tmp_path: Path) -> None:
    with trio.fail_after(10):
        async with file_gateway(tmp_path) as (gw, path), client(gw) as c:
            snap = await get(c)
    assert snap["path"] == str(path) and snap["exists"] and snap["valid"]
    assert snap["issues"] == [] and snap["warnings"] == [] and snap["legacyIssues"] == []
    import hashlib

    assert snap["hash"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert SECRET not in json.dumps(snap)
    remote = snap["config"]["models"]["providers"]["remote"]
    assert remote["apiKey"] == "__OPENCLAW_REDACTED__" and remote["models"][0]["id"] == "big"
    assert snap["parsed"]["models"]["providers"]["remote"]["apiKey"] == "__OPENCLAW_REDACTED__"
    assert json.loads(snap["raw"]) == snap["parsed"]
    assert snap["generation"]["number"] == 1 and snap["lastError"] is None


async def test_config_set_checks_the_base_hash_writes_the_file_and_publishes(
    tmp_path: Path,
) -> None:
    watcher = Events()
    with trio.fail_after(10):
        async with file_gateway(tmp_path) as (gw, path), client(gw) as admin, client(gw, watcher):
            snap = await get(admin)
            new = snap["parsed"]  # redacted: the secret comes back as the sentinel
            new["models"]["providers"]["local"]["models"].append({"id": "second"})
            raw = json.dumps(new)
            with pytest.raises(GatewayRequestError, match="base hash required") as info:
                await admin.request("config.set", {"raw": raw})
            assert info.value.code == "INVALID_REQUEST"
            with pytest.raises(GatewayRequestError, match="config changed since last load"):
                await admin.request("config.set", {"raw": raw, "baseHash": "0" * 64})
            result = await admin.request("config.set", {"raw": raw, "baseHash": snap["hash"]})
            assert result["ok"] and result["changed"] and result["generation"]["number"] == 2
            [event] = await watcher.wait_generation(1)
            models = await admin.request("models.list", {})
            again = await get(admin)
    assert event["status"] == "published" and event["reason"] == "config.set"
    assert event["generation"]["number"] == 2 and event["previous"] == 1
    assert {m["id"] for m in models["models"]} == {"echo", "second", "big"}
    on_disk = json.loads(path.read_text())
    assert (
        on_disk["models"]["providers"]["remote"]["apiKey"] == SECRET
    )  # restored, not the sentinel
    assert again["hash"] == result["hash"] != snap["hash"]
    assert gw.supervisor.generation.number == 2


async def test_config_patch_merges_and_guards_destructive_array_changes(tmp_path: Path) -> None:
    with trio.fail_after(10):
        async with file_gateway(tmp_path) as (gw, path), client(gw) as c:
            snap = await get(c)
            patch: dict[str, Any] = {"agents": {"defaults": {"model": {"fallbacks": []}}}}
            with pytest.raises(GatewayRequestError) as info:
                await c.request(
                    "config.patch", {"raw": json.dumps(patch), "baseHash": snap["hash"]}
                )
            assert info.value.details == {"path": "agents.defaults.model.fallbacks"}
            result = await c.request(
                "config.patch",
                {
                    "raw": json.dumps(patch),
                    "baseHash": snap["hash"],
                    "replacePaths": ["agents.defaults.model.fallbacks"],
                    "note": "drop fallbacks",
                    "restartDelayMs": 0,
                },
            )
            assert result["generation"]["number"] == 2
            snap = await get(c)
            grow = {"models": {"providers": {"local": {"options": {"deltaDelayMs": 1}}}}}
            await c.request("config.patch", {"raw": json.dumps(grow), "baseHash": snap["hash"]})
    on_disk = json.loads(path.read_text())
    assert on_disk["agents"]["defaults"]["model"]["fallbacks"] == []
    assert on_disk["models"]["providers"]["local"]["options"] == {"deltaDelayMs": 1, "tag": "one"}
    assert on_disk["models"]["providers"]["remote"]["apiKey"] == SECRET
    assert gw.supervisor.generation.agent(None).fallbacks == ()


async def test_a_config_that_fails_to_build_is_refused_and_reported(tmp_path: Path) -> None:
    watcher = Events()
    with trio.fail_after(10):
        async with file_gateway(tmp_path) as (gw, path), client(gw) as c, client(gw, watcher):
            before = path.read_text()
            snap = await get(c)
            bad = base_config()
            bad["agents"]["defaults"]["model"]["primary"] = "remote/missing"
            with pytest.raises(GatewayRequestError, match="unknown model 'remote/missing'"):
                await c.request("config.apply", {"raw": json.dumps(bad), "baseHash": snap["hash"]})
            wrong_type = base_config()
            wrong_type["gateway"] = {"port": "x"}
            with pytest.raises(GatewayRequestError) as info:
                await c.request(
                    "config.apply", {"raw": json.dumps(wrong_type), "baseHash": snap["hash"]}
                )
            assert info.value.details == {"path": "gateway.port"}
            events = await watcher.wait_generation(2)
            after = await get(c)
    assert path.read_text() == before and gw.supervisor.generation.number == 1
    assert [e["status"] for e in events] == ["failed", "failed"]
    assert events[0]["reason"] == "config.apply" and events[1]["error"]["path"] == "gateway.port"
    assert after["lastError"]["path"] == "gateway.port" and after["generation"]["number"] == 1


async def test_writes_need_admin_reads_do_not(tmp_path: Path) -> None:
    with trio.fail_after(10):
        async with (
            file_gateway(tmp_path) as (gw, _),
            client(gw, scopes=["operator.read"]) as reader,
        ):
            snap = await get(reader)
            with pytest.raises(GatewayRequestError, match=r"operator\.admin"):
                await reader.request("config.set", {"raw": "{}", "baseHash": snap["hash"]})


async def test_an_edit_on_disk_is_published_to_clients(tmp_path: Path) -> None:
    watcher = Events()
    with trio.fail_after(10):
        async with file_gateway(tmp_path) as (gw, path), client(gw, watcher) as c:
            assert gw.publisher is not None
            gw.publisher.debounce_s = 0
            write_config_text(path, json.dumps(base_config(models=("echo", "hot"))))
            gw.publisher.trigger()
            [event] = await watcher.wait_generation(1)
            models = await c.request("models.list", {})
            write_config_text(path, "{ broken")
            gw.publisher.trigger()
            events = await watcher.wait_generation(2)
            snap = await get(c)
    assert event["status"] == "published" and event["reason"] == "file"
    assert {m["id"] for m in models["models"]} == {"echo", "hot", "big"}
    assert events[1]["status"] == "failed" and "not valid JSON" in events[1]["error"]["message"]
    assert not snap["valid"] and snap["raw"] is None and snap["issues"]
    assert gw.supervisor.generation.number == 2


async def test_without_a_config_file_the_config_lives_in_memory(gateway: Gateway) -> None:
    with trio.fail_after(10):
        async with client(gateway) as c:
            snap = await get(c)
            assert snap["path"] is None and snap["exists"]
            raw = json.dumps({"agents": {"defaults": {"maxConcurrent": 3}}})
            result = await c.request("config.set", {"raw": raw, "baseHash": snap["hash"]})
            assert result["generation"]["number"] == 2
            assert gateway.supervisor.lane.total_tokens == 3
            assert (await get(c))["hash"] == result["hash"]


async def test_models_list_never_returns_a_partial_catalog(tmp_path: Path) -> None:
    catalogs = {frozenset({"echo", "big"})}
    seen: list[frozenset[str]] = []
    with trio.fail_after(30):
        async with file_gateway(tmp_path) as (gw, _), client(gw) as writer, client(gw) as reader:
            done = trio.Event()

            async def publish() -> None:
                for i in range(15):
                    models = ("echo", *(f"v{i}-{k}" for k in range(4)))
                    catalogs.add(frozenset({*models, "big"}))
                    snap = await get(writer)
                    patch = {
                        "models": {"providers": {"local": {"models": [{"id": m} for m in models]}}}
                    }
                    await writer.request(
                        "config.patch",
                        {
                            "raw": json.dumps(patch),
                            "baseHash": snap["hash"],
                            "replacePaths": ["models.providers.local.models"],
                        },
                    )
                done.set()

            async def read() -> None:
                while not done.is_set():
                    result = await reader.request("models.list", {})
                    seen.append(frozenset(m["id"] for m in result["models"]))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(publish)
                nursery.start_soon(read)
            assert gw.supervisor.generation.number == 16
    assert seen and all(s in catalogs for s in seen)


async def test_the_cli_applies_and_patches_a_running_gateway(tmp_path: Path) -> None:
    new_file = tmp_path / "new.json"
    new_file.write_text(json.dumps(base_config(models=("echo", "from-cli"))))
    with trio.fail_after(20):
        async with file_gateway(tmp_path) as (gw, path):
            url = gateway_url(gw)

            def cli(*args: str) -> int:
                # The CLI reads the gateway's token from its state dir, as on a user's machine.
                state = str(gw.state_dir)
                return cli_main(
                    ["config", *args, "--url", url, "--timeout", "10", "--state-dir", state]
                )

            assert await trio.to_thread.run_sync(cli, "apply", str(new_file)) == 0
            assert gw.supervisor.generation.number == 2
            assert "from-cli" in {e.id for e in gw.supervisor.generation.catalog}
            patch = json.dumps({"agents": {"defaults": {"maxConcurrent": 5}}})
            assert await trio.to_thread.run_sync(cli, "patch", patch) == 0
            assert gw.supervisor.generation.config.agents.defaults.maxConcurrent == 5
            assert await trio.to_thread.run_sync(cli, "patch", "[1]") == 2
            bad = json.dumps({"agents": {"defaults": {"model": {"primary": "nope/x"}}}})
            assert await trio.to_thread.run_sync(cli, "patch", bad) == 1
            assert await trio.to_thread.run_sync(cli, "get") == 0
    assert json.loads(path.read_text())["agents"]["defaults"]["maxConcurrent"] == 5
