"""OpenClaw's own CLI (openclaw@2026.9.6 on Node 24, a subprocess with a clean home of its
own) against a real clawlane gateway: `openclaw approvals grants list` (JSON and the table)
shows the standing grant a cron run's allow-always minted, `openclaw approvals grants
revoke <id>` revokes it, and the ledger then says who revoked it. Skipped when Node 24 or
the package is not installed (`../shared/openclaw-peer/peer.sh install`)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.conftest import local_config, open_client, running_gateway
from tests.e2e.test_cron_e2e import CronEvents
from tests.e2e.test_exec_grants import ADMIN, APPROVER, fire_and_answer, job

NODE = Path.home() / ".cache/node24/bin/node"
PACKAGE = Path.home() / ".cache/openclaw-peer/node_modules/openclaw"
TOKEN = "cli-grants-token"


def openclaw(port: int, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run `openclaw ARGS` against the gateway on `port` (blocking: call in a thread)."""
    state = home / "state"
    state.mkdir(parents=True, exist_ok=True)
    gateway = {"mode": "local", "port": port, "bind": "loopback"}
    gateway["auth"] = {"mode": "token", "token": TOKEN}
    (state / "openclaw.json").write_text(json.dumps({"gateway": gateway}))
    env = {
        "PATH": f"{NODE.parent}:/usr/bin:/bin",
        "HOME": str(home),
        "OPENCLAW_HOME": str(home),
        "OPENCLAW_STATE_DIR": str(state),
        "OPENCLAW_CONFIG_PATH": str(state / "openclaw.json"),
        "OPENCLAW_SKIP_CHANNELS": "1",
        "OPENCLAW_NO_AUTO_UPDATE": "1",
        "OPENCLAW_OFFLINE": "1",
        "DO_NOT_TRACK": "1",
        "OPENCLAW_GATEWAY_URL": f"ws://127.0.0.1:{port}",
        "OPENCLAW_GATEWAY_TOKEN": TOKEN,
    }
    argv = [str(NODE), str(PACKAGE / "openclaw.mjs"), *args]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)


async def test_openclaw_approvals_grants_list_and_revoke(tmp_path: Path) -> None:
    if not NODE.exists() or not (PACKAGE / "openclaw.mjs").exists():
        pytest.skip(f"Node 24 ({NODE}) or the openclaw package ({PACKAGE}) is not installed")
    events = CronEvents()
    config = local_config(tools__exec={"mode": "ask"})
    home = tmp_path / "openclaw-home"
    with trio.fail_after(240):
        async with (
            running_gateway(tmp_path, config, token=TOKEN) as gw,
            open_client(gw, token=TOKEN, scopes=ADMIN, on_event=events) as admin,
            open_client(gw, token=TOKEN, scopes=APPROVER) as approver,
        ):
            added = await admin.request("cron.add", job())
            await fire_and_answer(admin, approver, events, added["id"], 1, "allow-always")
            port = gw.listeners[0].socket.getsockname()[1]

            async def cli(*args: str) -> subprocess.CompletedProcess[str]:
                return await trio.to_thread.run_sync(lambda: openclaw(port, home, *args))

            listed = await cli("approvals", "grants", "list", "--json")
            table = await cli("approvals", "grants", "list")
            [grant] = json.loads(listed.stdout)["grants"]
            revoked = await cli("approvals", "grants", "revoke", grant["grantId"])
            after = await cli("approvals", "grants", "list")
    results: list[Any] = [listed, table, revoked, after]
    assert [r.returncode for r in results] == [0, 0, 0, 0], [r.stderr for r in results]
    assert (grant["cronJobId"], grant["cronJobName"]) == (added["id"], "nightly")
    assert grant["command"] == "touch marker.txt" and grant["revokedAtMs"] is None
    assert "nightly" in table.stdout and "until revoked" in table.stdout
    assert f"Grant {grant['grantId']} revoked" in revoked.stdout
    assert "revoked by cli" in after.stdout
