"""Standing grants for cron runs, and the approval history, on a real gateway (the local
model's `[[tool:exec ...]]` directive as a cron job's payload, `tools.exec.mode: ask`):
allow-always on a cron run's approval mints a grant (no allowlist entry), the job's next
runs execute that command without a prompt and are counted, a revoke makes the next one
prompt again; editing the job voids the grant (editing it back does not revive it), pausing
it does not; grants and history
survive a restart. Answers validated against OpenClaw's schemas."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from tests.conftest import frame_checker, local_config, open_client, running_gateway
from tests.e2e._events import next_event
from tests.e2e.test_cron_e2e import CronEvents, agent_job
from transports import GatewayClient, GatewayRequestError

RUN = '[[tool:exec {"command": "touch marker.txt"}]]'
APPROVER = ["operator.approvals"]
ADMIN = ["operator.admin", "operator.read", "operator.write"]


def marker(tmp_path: Path) -> Path:
    return tmp_path / "state" / "workspaces" / "main" / "marker.txt"


def config(**exec_keys: Any) -> Any:
    return local_config(gateway__auth={"mode": "none"}, tools__exec={"mode": "ask", **exec_keys})


def job() -> dict[str, Any]:
    return agent_job(name="nightly", payload={"kind": "agentTurn", "message": RUN})


async def fire(client: GatewayClient, events: CronEvents, job_id: str, count: int) -> None:
    started = await client.request("cron.run", {"id": job_id, "mode": "force"})
    assert started["ok"] and started["enqueued"]
    await events.finished(job_id, count)


async def fire_and_answer(
    admin: GatewayClient,
    approver: GatewayClient,
    events: CronEvents,
    job_id: str,
    count: int,
    decision: str,
    **extra: Any,
) -> dict[str, Any]:
    """Fire the job, answer its exec approval with `decision`; the requested event."""
    async with trio.open_nursery() as nursery:
        nursery.start_soon(fire, admin, events, job_id, count)
        requested = await next_event(approver, "exec.approval.requested")
        await approver.request(
            "exec.approval.resolve", {"id": requested["id"], "decision": decision, **extra}
        )
    return requested


async def grants(client: GatewayClient) -> list[dict[str, Any]]:
    listed = await client.request("exec.approval.grants.list", {})
    frame_checker().validate("ExecApprovalGrantsListResult", listed)
    return list(listed["grants"])


async def test_allow_always_on_a_cron_run_mints_a_grant_the_next_runs_use_until_revoked(
    tmp_path: Path,
) -> None:
    events = CronEvents()
    with trio.fail_after(60):
        async with (
            running_gateway(tmp_path, config()) as gw,
            open_client(gw, scopes=ADMIN, on_event=events) as admin,
            open_client(gw, scopes=APPROVER) as approver,
        ):
            added = await admin.request("cron.add", job())
            requested = await fire_and_answer(
                admin, approver, events, added["id"], 1, "allow-always", grantExpiresInDays=7
            )
            assert marker(tmp_path).exists()
            document = await admin.request("exec.approvals.get", {})
            [minted] = await grants(approver)
            marker(tmp_path).unlink()

            await fire(admin, events, added["id"], 2)  # no prompt: the grant covers it
            assert marker(tmp_path).exists()
            [used] = await grants(approver)
            assert await admin.request("exec.approval.list") == []

            revoke = "exec.approval.grants.revoke"
            first = await approver.request(revoke, {"grantId": minted["grantId"]})
            again = await approver.request(revoke, {"grantId": minted["grantId"]})
            unknown = await approver.request(revoke, {"grantId": "nope"})
            [revoked] = await grants(approver)
            marker(tmp_path).unlink()
            prompted = await fire_and_answer(admin, approver, events, added["id"], 3, "deny")
            history = await admin.request("approval.history", {"kind": "exec"})

    scope = requested["request"]["scope"]
    assert scope == {
        "kind": "standing-grant",
        "automation": "nightly",
        "command": "touch marker.txt",
    }
    assert document["exists"] is False  # a grant, not an allowlist entry
    assert minted["mintedByApprovalId"] == requested["id"]
    assert (minted["agentId"], minted["cronJobId"], minted["cronJobName"]) == (
        "main",
        added["id"],
        "nightly",
    )
    assert minted["command"] == "touch marker.txt"
    assert minted["cwd"] == str(marker(tmp_path).parent)
    assert minted["expiresAtMs"] - minted["createdAtMs"] == 7 * 86_400_000
    assert (minted["useCount"], minted["lastUsedAtMs"], minted["revokedAtMs"]) == (0, None, None)
    assert used["useCount"] == 1 and used["lastUsedAtMs"] >= used["createdAtMs"]
    assert (first, again, unknown) == (
        {"outcome": "revoked"},
        {"outcome": "already-revoked"},
        {"outcome": "not-found"},
    )
    assert revoked["revokedAtMs"] is not None and revoked["revokedBy"]
    assert prompted["id"] != requested["id"]
    assert not marker(tmp_path).exists()  # denied after the revoke: nothing ran
    assert [item["decision"] for item in history["items"]] == ["deny", "allow-always"]
    frame_checker().validate("ApprovalHistoryResult", history)


async def test_an_edit_voids_the_grant_a_pause_keeps_it_and_both_outlive_a_restart(
    tmp_path: Path,
) -> None:
    events = CronEvents()
    with trio.fail_after(60):
        async with (
            running_gateway(tmp_path, config(grantExpiryDays=3)) as gw,
            open_client(gw, scopes=ADMIN, on_event=events) as admin,
            open_client(gw, scopes=APPROVER) as approver,
        ):
            added = await admin.request("cron.add", job())
            first = await fire_and_answer(admin, approver, events, added["id"], 1, "allow-always")
            [minted] = await grants(approver)

    events = CronEvents()
    with trio.fail_after(60):
        async with (
            running_gateway(tmp_path, config(grantExpiryDays=3)) as gw,
            open_client(gw, scopes=ADMIN, on_event=events) as admin,
            open_client(gw, scopes=APPROVER) as approver,
        ):
            job_id = added["id"]
            for enabled in (False, True):
                patch = {"id": job_id, "patch": {"enabled": enabled}}
                await admin.request("cron.update", patch)
            await fire(admin, events, job_id, 1)  # paused and resumed: still granted
            [kept] = await grants(approver)
            got = await admin.request("approval.get", {"id": first["id"]})
            history = await admin.request("approval.history", {})

            for name in ("renamed", "nightly"):  # edited, then edited back
                await admin.request("cron.update", {"id": job_id, "patch": {"name": name}})
            edited = await fire_and_answer(admin, approver, events, job_id, 2, "allow-once")
            [voided] = await grants(approver)

    assert first["request"]["scope"]["expiresInDays"] == 3
    assert minted["expiresAtMs"] - minted["createdAtMs"] == 3 * 86_400_000
    assert kept["grantId"] == minted["grantId"] and kept["useCount"] == 1
    assert got["approval"]["status"] == "allowed"
    assert got["approval"]["decision"] == "allow-always"
    frame_checker().validate("ApprovalGetResult", got)
    assert [item["id"] for item in history["items"]] == [first["id"]]
    assert edited["request"]["scope"]["automation"] == "nightly"  # prompted: no revival
    assert voided["grantId"] == minted["grantId"] and voided["useCount"] == 1


async def test_an_interactive_run_is_not_covered_by_a_cron_grant(tmp_path: Path) -> None:
    events = CronEvents()
    with trio.fail_after(60):
        async with (
            running_gateway(tmp_path, config()) as gw,
            open_client(gw, scopes=ADMIN, on_event=events) as admin,
            open_client(gw, scopes=APPROVER) as approver,
        ):
            added = await admin.request("cron.add", job())
            await fire_and_answer(admin, approver, events, added["id"], 1, "allow-always")
            async with trio.open_nursery() as nursery:

                async def chat() -> None:
                    await admin.request(
                        "agent", {"message": RUN, "idempotencyKey": "i1"}, expect_final=True
                    )

                nursery.start_soon(chat)
                requested = await next_event(approver, "exec.approval.requested")
                await approver.request(
                    "exec.approval.resolve", {"id": requested["id"], "decision": "deny"}
                )
    assert "scope" not in requested["request"]
    assert requested["request"]["runId"] == "i1"


async def test_the_grant_methods_need_the_approvals_scope(tmp_path: Path) -> None:
    async with (
        running_gateway(tmp_path, config()) as gw,
        open_client(gw, scopes=["operator.read", "operator.write"]) as reader,
    ):
        with trio.fail_after(20):
            for method, params in (
                ("exec.approval.grants.list", {}),
                ("exec.approval.grants.revoke", {"grantId": "g"}),
            ):
                with pytest.raises(GatewayRequestError, match=r"operator\.approvals"):
                    await reader.request(method, params)
            async with open_client(gw, scopes=APPROVER) as approver:
                with pytest.raises(GatewayRequestError, match="limit"):
                    await approver.request("exec.approval.grants.list", {"limit": 501})


async def test_a_job_run_in_a_named_session_is_asked_as_any_run(tmp_path: Path) -> None:
    events = CronEvents()
    with trio.fail_after(60):
        async with (
            running_gateway(tmp_path, config()) as gw,
            open_client(gw, scopes=ADMIN, on_event=events) as admin,
            open_client(gw, scopes=APPROVER) as approver,
        ):
            added = await admin.request("cron.add", {**job(), "sessionTarget": "session:ops"})
            requested = await fire_and_answer(admin, approver, events, added["id"], 1, "deny")
    assert "scope" not in requested["request"]
