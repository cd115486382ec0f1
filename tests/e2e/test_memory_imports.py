"""`migrations.memory.plan` / `.apply` on a real gateway (loopback), with a Claude Code home and
a Hermes home made in `tmp_path` (`CLAUDE_CONFIG_DIR`, `HERMES_HOME`): the plan lists both
providers with OpenClaw 2026.9.6's shapes, the apply copies the selected files into the
agent's `memory/imports/...`, where memory search finds them; OpenClaw's refusals (a stale
plan, a conflict without overwrite, a reused idempotency key, an unknown agent); an
overwrite backs the old file up; a provider with nothing to import is `found: false`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from tests.conftest import FrameChecker, open_client, running_gateway
from transports import GatewayRequestError

PROJECT = "-home-me-kestrel"


@pytest.fixture
def homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    claude = tmp_path / "claude"
    memory = claude / "projects" / PROJECT / "memory"
    (memory / "topics").mkdir(parents=True)
    (memory / "MEMORY.md").write_text("# Kestrel\n\nThe kestrel deploys go out on Thursdays.\n")
    (memory / "topics" / "db.md").write_text("Postgres replicas live in Lisbon.\n")
    (claude / "projects" / "-home-me-empty").mkdir(parents=True)  # no memory: not a collection
    (claude / "settings.json").write_text("{}")
    hermes = tmp_path / "hermes"
    (hermes / "memories").mkdir(parents=True)
    (hermes / "memories" / "USER.md").write_text("The user prefers tea.\n")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    monkeypatch.setenv("HERMES_HOME", str(hermes))
    return {"claude": claude, "hermes": hermes}


def _read(path: Path) -> str:
    return path.read_text()


def _write(path: Path, text: str) -> None:
    path.write_text(text)


def _files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()]


async def _refused(client: Any, method: str, params: dict[str, Any]) -> str:
    with pytest.raises(GatewayRequestError) as info:
        await client.request(method, params)
    assert info.value.code == "INVALID_REQUEST", info.value
    return info.value.message


async def test_plan_and_apply_import_claude_and_hermes_memory_as_openclaw(
    tmp_path: Path, homes: dict[str, Path], schema_checker: FrameChecker
) -> None:
    workspace = tmp_path / "state" / "workspaces" / "main"
    async with running_gateway(tmp_path) as gw:
        with trio.fail_after(30):
            async with open_client(gw) as client:
                params = {"agentId": "main"}
                schema_checker.validate("MigrationsMemoryPlanParams", params)
                plan = await client.request("migrations.memory.plan", params)
                schema_checker.validate("MigrationsMemoryPlanResult", plan)
                assert plan["agentId"] == "main" and plan["workspace"] == str(workspace)
                claude, hermes = plan["providers"]
                assert (claude["providerId"], hermes["providerId"]) == ("claude", "hermes")
                assert claude["found"] and claude["confidence"] == "high"
                assert claude["source"] == str(homes["claude"])
                assert claude["summary"]["total"] == claude["summary"]["planned"] == 2
                ids = [item["id"] for item in claude["items"]]
                assert all(i.startswith("memory:claude-auto:") for i in ids)
                assert [i.rsplit(":", 1)[1] for i in ids] == ["MEMORY.md", "topics/db.md"]
                target = Path(claude["items"][1]["target"])
                assert target.relative_to(workspace).parts[:3] == (
                    "memory",
                    "imports",
                    "claude-code",
                )
                assert target.parent.parent.name.startswith("-home-me-kestrel-".lstrip("-"))
                assert hermes["found"] and [i["id"] for i in hermes["items"]] == ["memory:USER.md"]

                apply = {
                    "idempotencyKey": "import-1",
                    "agentId": "main",
                    "providerId": "claude",
                    "planFingerprint": claude["planFingerprint"],
                    "itemIds": [ids[1]],
                }
                schema_checker.validate("MigrationsMemoryApplyParams", apply)
                done = await client.request("migrations.memory.apply", apply)
                schema_checker.validate("MigrationsMemoryApplyResult", done)
                assert done["summary"]["migrated"] == 1 and done["summary"]["skipped"] == 1
                assert [i["status"] for i in done["items"]] == ["skipped", "migrated"]
                assert _read(target) == "Postgres replicas live in Lisbon.\n"
                assert _files(Path(done["reportDir"])) == [Path(done["reportDir"]) / "report.json"]
                assert "backupPath" not in done
                # the same key again: the same answer; with other items: refused
                assert await client.request("migrations.memory.apply", apply) == done
                reused = await _refused(
                    client, "migrations.memory.apply", {**apply, "itemIds": [ids[0]]}
                )
                assert reused == "memory import idempotency key was reused"
                # the imported note is a memory file the agent's search finds
                found = await client.request("memory.search", {"query": "Lisbon replicas"})
                assert found["results"][0]["path"] == target.relative_to(workspace).as_posix()

                # the old plan is stale now (its target exists); the new one has a conflict
                stale = {**apply, "idempotencyKey": "import-2", "itemIds": [ids[0]]}
                assert await _refused(client, "migrations.memory.apply", stale) == (
                    "memory migration plan changed; refresh the plan before importing"
                )
                again = (await client.request("migrations.memory.plan", params))["providers"][0]
                conflict = again["items"][1]
                assert (conflict["status"], conflict["reason"]) == ("conflict", "target exists")
                assert again["warnings"]
                fresh = {**stale, "idempotencyKey": "import-3", "itemIds": [ids[1]]}
                fresh["planFingerprint"] = again["planFingerprint"]
                assert await _refused(client, "migrations.memory.apply", fresh) == (
                    "selected memory was already imported; enable replacement and refresh the plan"
                )
                # with overwrite: planned again, the old copy backed up
                _write(target, "edited here\n")
                over = await client.request(
                    "migrations.memory.plan", {"agentId": "main", "overwrite": True}
                )
                claude_over = over["providers"][0]
                assert [i["status"] for i in claude_over["items"]] == ["planned", "planned"]
                replaced = await client.request(
                    "migrations.memory.apply",
                    {
                        **fresh,
                        "idempotencyKey": "import-4",
                        "overwrite": True,
                        "planFingerprint": claude_over["planFingerprint"],
                    },
                )
                schema_checker.validate("MigrationsMemoryApplyResult", replaced)
                assert _read(target) == "Postgres replicas live in Lisbon.\n"
                backups = Path(replaced["backupPath"])
                (backup,) = _files(backups)
                assert _read(backup) == "edited here\n"

                # refusals: an unknown agent, an unknown provider, items not in the plan
                assert await _refused(client, "migrations.memory.plan", {"agentId": "nobody"}) == (
                    "unknown agent id"
                )
                bad = {**fresh, "idempotencyKey": "import-5", "providerId": "nowhere"}
                assert await _refused(client, "migrations.memory.apply", bad) == (
                    "unknown memory migration provider"
                )
                hermes_apply = {
                    "idempotencyKey": "import-6",
                    "agentId": "main",
                    "providerId": "hermes",
                    "planFingerprint": hermes["planFingerprint"],
                    "itemIds": ["memory:MEMORY.md"],
                }
                message = await _refused(client, "migrations.memory.apply", hermes_apply)
                assert message.startswith("memory migration items changed; refresh the plan")
                await _refused(client, "migrations.memory.plan", {"agentId": "main", "x": 1})


async def test_nothing_to_import_is_found_false(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, schema_checker: FrameChecker
) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "no-claude"))
    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "no-hermes"))
    async with running_gateway(tmp_path) as gw:
        with trio.fail_after(30):
            async with open_client(gw) as client:
                plan = await client.request("migrations.memory.plan", {"agentId": "main"})
    schema_checker.validate("MigrationsMemoryPlanResult", plan)
    claude, hermes = plan["providers"]
    assert claude == {
        "providerId": "claude",
        "label": "Claude",
        "description": "Import Claude Code auto-memory, instructions, MCP servers, and skills.",
        "found": False,
        "source": str(tmp_path / "no-claude"),
        "confidence": "low",
        "message": "Claude state not found.",
        "summary": {
            "total": 0,
            "planned": 0,
            "migrated": 0,
            "skipped": 0,
            "conflicts": 0,
            "errors": 0,
            "sensitive": 0,
        },
        "items": [],
    }
    assert hermes["found"] is False and hermes["message"] == "Hermes state not found."
