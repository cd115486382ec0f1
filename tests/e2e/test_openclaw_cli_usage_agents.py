"""OpenClaw's own CLI (openclaw@2026.9.6 on Node 24) against a real clawlane gateway, for
what issue 35 names: `openclaw gateway usage-cost --json` reports the totals a hand
computation of the stored transcripts gives, and `openclaw agents list` sees the gateway's
agents after one is added through the gateway (`agents.create`, what the Control UI and
`openclaw agents` reach over RPC). Skipped when Node 24 or the package is not installed
(`../shared/openclaw-peer/peer.sh install`)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import trio

from runtime.model import load_config, parse_config
from tests.conftest import open_client, running_gateway
from tests.e2e.test_openclaw_cli_grants import NODE, PACKAGE, TOKEN, openclaw
from tests.e2e.test_usage import CONFIG, by_hand, calls_of, run


def _json(done: subprocess.CompletedProcess[str]) -> Any:
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    return json.loads(done.stdout)


async def test_openclaw_gateway_usage_cost_and_agents_list(tmp_path: Path) -> None:
    if not NODE.exists() or not (PACKAGE / "openclaw.mjs").exists():
        pytest.skip(f"Node 24 ({NODE}) or the openclaw package ({PACKAGE}) is not installed")
    home = tmp_path / "openclaw-home"
    with trio.fail_after(240):
        async with (
            running_gateway(tmp_path, parse_config(CONFIG), token=TOKEN) as gw,
            open_client(gw, token=TOKEN) as c,
        ):
            await run(c, "agent:main:a", "hello there")
            await run(c, "agent:main:a", "and a longer second question")
            await run(c, "agent:main:b", "on the unpriced model", model="local/other")
            expected = by_hand(
                await calls_of(gw, "agent:main:a") + await calls_of(gw, "agent:main:b")
            )
            await c.request("agents.create", {"name": "ops"})
            port = gw.listeners[0].socket.getsockname()[1]

            async def cli(*args: str) -> subprocess.CompletedProcess[str]:
                return await trio.to_thread.run_sync(lambda: openclaw(port, home, *args))

            cost = _json(await cli("gateway", "usage-cost", "--json"))
            table = await cli("gateway", "usage-cost")
            rpc = await c.request("usage.cost", {})
    assert cost["totals"]["totalCost"] == pytest.approx(expected["totalCost"], abs=1e-12)
    assert cost["totals"]["missingCostEntries"] == expected["missingCostEntries"] == 1
    assert cost["totals"]["input"] == expected["input"] and cost["totals"] == rpc["totals"]
    assert table.returncode == 0 and "$" in table.stdout, table.stdout


async def test_openclaw_agents_add_on_the_gateways_config_file(tmp_path: Path) -> None:
    """`openclaw agents add` edits the config file it is pointed at, rewriting it in its
    2026.9.6 layout (`agents.entries` by id, `agents.ownership`, `talk`, `meta`): pointed at
    the gateway's own file, the gateway reloads it and serves the added agent, and a later
    `agents.create` through the gateway keeps every agent (the map folded into the list)."""
    if not NODE.exists() or not (PACKAGE / "openclaw.mjs").exists():
        pytest.skip(f"Node 24 ({NODE}) or the openclaw package ({PACKAGE}) is not installed")
    path = tmp_path / "clawlane.json"
    path.write_text(json.dumps({"agents": {"list": [{"id": "main"}]}}))
    home = tmp_path / "openclaw-home"
    env = {
        "PATH": f"{NODE.parent}:/usr/bin:/bin",
        "HOME": str(home),
        "OPENCLAW_HOME": str(home),
        "OPENCLAW_STATE_DIR": str(home / "state"),
        "OPENCLAW_CONFIG_PATH": str(path),
        "OPENCLAW_SKIP_CHANNELS": "1",
        "OPENCLAW_NO_AUTO_UPDATE": "1",
        "OPENCLAW_OFFLINE": "1",
        "DO_NOT_TRACK": "1",
    }
    argv = [str(NODE), str(PACKAGE / "openclaw.mjs"), "agents", "add", "ops"]
    argv += ["--workspace", str(tmp_path / "ws-ops"), "--non-interactive", "--json"]

    def add() -> subprocess.CompletedProcess[str]:
        return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)

    with trio.fail_after(240):
        async with (
            running_gateway(tmp_path, load_config(path), config_path=path, token=TOKEN) as gw,
            open_client(gw, token=TOKEN) as c,
        ):
            added = await trio.to_thread.run_sync(add)
            assert added.returncode == 0, (added.stdout[-2000:], added.stderr[-2000:])
            written = json.loads(path.read_text())
            assert "ops" in written["agents"]["entries"]  # OpenClaw's layout, as it wrote it
            assert gw.publisher is not None
            await gw.publisher.reload(reason="file")  # what the file watch does
            assert sorted(gw.supervisor.generation.agents) == ["main", "ops"]
            await c.request("agents.create", {"name": "research"})
            listed = {a["id"] for a in (await c.request("agents.list", {}))["agents"]}
    assert listed == {"main", "ops", "research"}
    after = json.loads(path.read_text())["agents"]
    assert "entries" not in after and [e["id"] for e in after["list"]] == [
        "main",
        "ops",
        "research",
    ]
