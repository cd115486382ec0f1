"""cron.* over a real socket: add, list, run now, runs history, the `cron` event, scopes,
strict params, durability across a restart, webhooks received by a loopback HTTP server
(signature checked; a failing receiver retried, then recorded as failed), the `agent`
method's webhook, and one gateway per state dir."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from actors.runs._webhook import sign
from runtime.model._config import Config
from tests._schema import validate
from tests.conftest import local_config, open_client, running_gateway
from tests.e2e._webhook_server import webhook_server
from transports import GatewayConfigError, GatewayRequestError

ADMIN = ["operator.admin", "operator.read", "operator.write"]
SECRET = "s3cret-for-tests"
ROOT = Path(__file__).resolve().parents[2]


def config(**cron: Any) -> Config:
    settings: dict[str, Any] = {
        "webhookSecret": SECRET,
        "webhookToken": "bearer-for-tests",
        "webhookMaxAttempts": 3,
        "webhookSsrfPolicy": {"allowedHostnames": ["127.0.0.1"]},
    }
    settings.update(cron)
    return local_config(gateway__auth={"mode": "none"}, cron=settings)


def agent_job(**over: Any) -> dict[str, Any]:
    job: dict[str, Any] = {
        "name": "digest",
        "enabled": True,
        "schedule": {"kind": "every", "everyMs": 3_600_000},
        "sessionTarget": "isolated",
        "wakeMode": "now",
        "payload": {"kind": "agentTurn", "message": "Summarize the day."},
        "delivery": {"mode": "none"},
    }
    job.update(over)
    return job


class CronEvents:
    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []
        self.changed = trio.Event()

    def __call__(self, event: str, payload: Any, seq: int | None) -> None:
        if event == "cron":
            self.items.append(payload)
            self.changed.set()
            self.changed = trio.Event()

    async def finished(self, job_id: str, count: int = 1) -> list[dict[str, Any]]:
        while True:
            done = [e for e in self.items if e["action"] == "finished" and e["jobId"] == job_id]
            if len(done) >= count:
                return done
            await self.changed.wait()


async def run_and_wait(client: Any, events: CronEvents, job_id: str) -> dict[str, Any]:
    started = await client.request("cron.run", {"id": job_id, "mode": "force"})
    assert started["ok"] and started["enqueued"]
    await events.finished(job_id)
    page = await client.request("cron.runs", {"id": job_id, "runId": started["runId"], "limit": 1})
    [entry] = page["entries"]
    return dict(entry)


async def test_add_list_run_and_history_over_a_socket(tmp_path: Path) -> None:
    events = CronEvents()
    with trio.fail_after(30):
        async with (
            running_gateway(tmp_path, config()) as gw,
            open_client(gw, scopes=ADMIN, on_event=events) as client,
        ):
            job = await client.request("cron.add", agent_job())
            validate("CronAddResult", job)
            assert job["deliveryPreview"] == {"label": "not requested", "detail": "not requested"}
            listed = await client.request(
                "cron.list", {"includeDisabled": False, "limit": 200, "offset": 0}
            )
            assert [j["id"] for j in listed["jobs"]] == [job["id"]]
            assert listed["jobs"][0]["nextRunAtMs"] == job["createdAtMs"] + 3_600_000
            assert (
                listed["total"] == 1 and listed["hasMore"] is False and listed["nextOffset"] is None
            )
            assert listed["snapshotRevision"].startswith("sha256:")
            for view in listed["jobs"]:
                assert view.pop("effectiveAgentId") == "main"  # OpenClaw adds it in cron.list
                validate("CronJob", view)
            entry = await run_and_wait(client, events, job["id"])
            validate("CronRunLogEntry", entry)
            assert entry["status"] == "ok" and entry["completionStatus"] == "succeeded"
            assert entry["summary"] == "You said: Summarize the day."
            assert entry["sessionKey"].startswith(f"agent:main:cron:{job['id']}:run:")
            actions = [e["action"] for e in events.items if e["jobId"] == job["id"]]
            assert actions == ["added", "started", "finished"]
            status = await client.request("cron.status", {})
            assert status["enabled"] is True and status["jobs"] == 1
            got = await client.request("cron.get", {"jobId": job["id"]})
            assert got["state"]["lastRunStatus"] == "ok"
            validate("CronJob", got)
            edited = await client.request(
                "cron.update", {"id": job["id"], "patch": {"enabled": False}}
            )
            assert edited["enabled"] is False and "nextRunAtMs" not in edited
            validate("CronJob", edited)
            # the schema lets a patch clear a failure alert's fields with null
            cleared = {"after": None, "mode": None, "channel": None, "cooldownMs": None}
            await client.request(
                "cron.update", {"id": job["id"], "patch": {"failureAlert": cleared}}
            )
            assert (await client.request("cron.list", {}))["jobs"] == []
            assert len((await client.request("cron.list", {"includeDisabled": True}))["jobs"]) == 1
            removed = await client.request("cron.remove", {"id": job["id"]})
            assert removed == {"ok": True, "removed": True}
            with pytest.raises(GatewayRequestError) as err:
                await client.request("cron.get", {"id": job["id"]})
            assert err.value.code == "INVALID_REQUEST"
            assert err.value.details == {"code": "CRON_JOB_NOT_FOUND", "jobId": job["id"]}


async def test_jobs_and_history_survive_a_restart(tmp_path: Path) -> None:
    events = CronEvents()
    with trio.fail_after(30):
        async with (
            running_gateway(tmp_path, config()) as gw,
            open_client(gw, scopes=ADMIN, on_event=events) as client,
        ):
            job = await client.request("cron.add", agent_job(name="keeper"))
            await run_and_wait(client, events, job["id"])
        async with (
            running_gateway(tmp_path, config()) as gw,
            open_client(gw, scopes=ADMIN) as client,
        ):
            [kept] = (await client.request("cron.list", {}))["jobs"]
            assert kept["id"] == job["id"] and kept["name"] == "keeper"
            assert kept["nextRunAtMs"] == job["nextRunAtMs"]
            runs = await client.request("cron.runs", {"id": job["id"]})
            assert runs["total"] == 1


async def test_scopes_are_the_schemas(tmp_path: Path) -> None:
    with trio.fail_after(30):
        async with (
            running_gateway(tmp_path, config()) as gw,
            open_client(gw, scopes=["operator.read"]) as reader,
        ):
            assert (await reader.request("cron.list", {}))["jobs"] == []
            assert (await reader.request("cron.runs", {}))["entries"] == []
            await reader.request("cron.status", {})
            for method, params in (
                ("cron.add", agent_job()),
                ("cron.run", {"id": "x"}),
                ("cron.update", {"id": "x", "patch": {}}),
                ("cron.remove", {"id": "x"}),
            ):
                with pytest.raises(GatewayRequestError) as err:
                    await reader.request(method, params)
                assert err.value.code == "FORBIDDEN", method
                assert err.value.details["missingScope"] == "operator.admin"


async def test_bad_params_are_invalid_request_naming_the_field(tmp_path: Path) -> None:
    with trio.fail_after(30):
        async with (
            running_gateway(tmp_path, config()) as gw,
            open_client(gw, scopes=ADMIN) as client,
        ):
            cases = [
                ("cron.add", agent_job(schedule={"kind": "every", "everyMs": 0}), "$.schedule.everyMs"),
                ("cron.add", agent_job(bogus=1), "unknown field `bogus`"),
                ("cron.add", agent_job(schedule={"kind": "cron", "expr": "61 * * * *"}), "schedule.expr"),
                ("cron.add", agent_job(payload={"kind": "agentTurn", "message": "m", "model": "nope/x"}), "payload.model"),
                ("cron.list", {"limit": 500}, "$.limit"),
                ("cron.runs", {"id": "a/b"}, "$.id"),
                ("cron.get", {}, "exactly one of id or jobId"),
                ("cron.update", {"id": "x"}, "`patch`"),
            ]  # fmt: skip
            for method, params, needle in cases:
                with pytest.raises(GatewayRequestError) as err:
                    await client.request(method, params)
                assert err.value.code == "INVALID_REQUEST", (method, params)
                assert needle in str(err.value), (needle, str(err.value))
            assert (await client.request("cron.status", {}))["jobs"] == 0  # still serving


async def test_jobs_are_bounded_in_bytes_each_and_together(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every job is in memory: one past `JOB_MAX_BYTES` is refused by add and update, and
    the jobs together stop at `CRON_JOBS_MAX_BYTES` (lowered here); nothing is stored."""
    monkeypatch.setattr("actors.cron._scheduler.CRON_JOBS_MAX_BYTES", 40_000)
    big = "x" * 300_000
    with trio.fail_after(30):
        async with (
            running_gateway(tmp_path, config()) as gw,
            open_client(gw, scopes=ADMIN) as client,
        ):
            with pytest.raises(GatewayRequestError, match="over the limit of 262,144") as err:
                await client.request("cron.add", agent_job(description=big))
            assert err.value.code == "INVALID_REQUEST"
            added = await client.request("cron.add", agent_job(description="y" * 15_000))
            with pytest.raises(GatewayRequestError, match="over the limit of 262,144"):
                await client.request(
                    "cron.update", {"id": added["id"], "patch": {"description": big}}
                )
            await client.request("cron.add", agent_job(description="y" * 15_000))
            with pytest.raises(GatewayRequestError, match="remove some first") as err:
                await client.request("cron.add", agent_job(description="y" * 15_000))
            assert err.value.code == "INVALID_REQUEST"
            with pytest.raises(GatewayRequestError, match="remove some first"):
                await client.request(
                    "cron.update", {"id": added["id"], "patch": {"description": "z" * 30_000}}
                )
            smaller = {"id": added["id"], "patch": {"description": "small"}}
            assert (await client.request("cron.update", smaller))["description"] == "small"
            assert (await client.request("cron.status", {}))["jobs"] == 2


def check_signature(received: Any) -> dict[str, Any]:
    ts = int(received.headers["x-clawlane-timestamp"])
    assert received.headers["x-clawlane-signature"] == sign(SECRET, ts, received.body)
    assert received.headers["authorization"] == "Bearer bearer-for-tests"
    assert received.headers["content-type"] == "application/json"
    body: dict[str, Any] = json.loads(received.body)
    return body


async def test_a_webhook_gets_the_signed_result(tmp_path: Path) -> None:
    events = CronEvents()
    with trio.fail_after(30):
        async with (
            webhook_server() as server,
            running_gateway(tmp_path, config()) as gw,
            open_client(gw, scopes=ADMIN, on_event=events) as client,
        ):
            job = await client.request(
                "cron.add", agent_job(delivery={"mode": "webhook", "to": server.url})
            )
            assert job["deliveryPreview"]["label"] == f"webhook:{server.url}"
            entry = await run_and_wait(client, events, job["id"])
            [received] = server.received
            body = check_signature(received)
            assert received.method == "POST" and received.path == "/hook"
            assert body["jobId"] == job["id"] and body["action"] == "finished"
            assert body["status"] == "ok" and body["summary"] == "You said: Summarize the day."
            assert body["runId"] == entry["runId"]
            assert entry["delivered"] is True and entry["deliveryStatus"] == "delivered"
            assert entry["completionStatus"] == "succeeded"
            [attempt] = entry["diagnostics"]["entries"]
            assert attempt["source"] == "delivery" and attempt["severity"] == "info"
            assert attempt["message"].startswith("webhook attempt 1/3: HTTP 200 after ")
            validate("CronRunLogEntry", entry)


async def test_a_failing_receiver_is_retried_then_recorded_as_failed(tmp_path: Path) -> None:
    events = CronEvents()
    with trio.fail_after(30):
        async with (
            webhook_server(
                statuses=[500, 503, 500], extra_headers=[("retry-after", "0")]
            ) as server,
            running_gateway(tmp_path, config()) as gw,
            open_client(gw, scopes=ADMIN, on_event=events) as client,
        ):
            job = await client.request(
                "cron.add", agent_job(delivery={"mode": "webhook", "to": server.url})
            )
            entry = await run_and_wait(client, events, job["id"])
            assert len(server.received) == 3  # cron.webhookMaxAttempts
            deliveries = {r.headers["x-clawlane-delivery"] for r in server.received}
            assert len(deliveries) == 1  # one delivery id across its attempts
            for received in server.received:
                check_signature(received)
            assert entry["status"] == "ok"  # the run itself succeeded
            assert entry["completionStatus"] == "failed"
            assert entry["deliveryStatus"] == "not-delivered" and entry["delivered"] is False
            assert entry["deliveryError"] == "Webhook request failed with HTTP 500"
            notes = [d["message"] for d in entry["diagnostics"]["entries"]]
            assert [n.split(" after ")[0] for n in notes] == [
                "webhook attempt 1/3: HTTP 500",
                "webhook attempt 2/3: HTTP 503",
                "webhook attempt 3/3: HTTP 500",
            ]
            assert entry["diagnostics"]["summary"] == "Webhook request failed with HTTP 500"
            assert entry["diagnostics"]["entries"][-1]["severity"] == "error"
            validate("CronRunLogEntry", entry)
            job_now = await client.request("cron.get", {"id": job["id"]})
            assert job_now["state"]["lastDeliveryStatus"] == "not-delivered"


async def test_loopback_webhooks_are_refused_unless_allowed(tmp_path: Path) -> None:
    events = CronEvents()
    with trio.fail_after(30):
        async with (
            webhook_server() as server,
            running_gateway(tmp_path, config(webhookSsrfPolicy={})) as gw,
            open_client(gw, scopes=ADMIN, on_event=events) as client,
        ):
            job = await client.request(
                "cron.add", agent_job(delivery={"mode": "webhook", "to": server.url})
            )
            entry = await run_and_wait(client, events, job["id"])
            assert server.received == []
            assert entry["deliveryStatus"] == "not-delivered"
            assert "Blocked hostname or private/internal" in entry["deliveryError"]
            assert len(entry["diagnostics"]["entries"]) == 1  # a refusal is not retried


async def test_the_agent_method_takes_a_webhook(tmp_path: Path) -> None:
    with trio.fail_after(30):
        async with (
            webhook_server() as server,
            running_gateway(tmp_path, config()) as gw,
            open_client(gw, scopes=ADMIN) as client,
        ):
            final = await client.request(
                "agent",
                {"message": "ping", "idempotencyKey": "run-with-hook", "webhook": server.url},
                expect_final=True,
            )
            assert final["status"] == "ok"
            await server.wait_for(1)
            body = check_signature(server.received[0])
            assert body["runId"] == "run-with-hook" and body["status"] == "ok"
            assert body["result"]["payloads"][0]["text"] == "You said: ping"
            with pytest.raises(GatewayRequestError) as err:
                await client.request(
                    "agent", {"message": "x", "idempotencyKey": "bad", "webhook": "ftp://x/y"}
                )
            assert err.value.code == "INVALID_REQUEST" and "$.webhook" in str(err.value)


async def test_a_second_gateway_on_the_same_state_dir_refuses_to_start(tmp_path: Path) -> None:
    with trio.fail_after(30):
        async with running_gateway(tmp_path, config()):
            with pytest.raises(GatewayConfigError, match="gateway already running on state dir"):
                async with running_gateway(tmp_path, config()):
                    pass  # pragma: no cover
            state = tmp_path / "state"
            cli = await trio.run_process(
                [sys.executable, "-c", "import sys; from transports import main; sys.exit(main())",
                 "gateway", "--state-dir", str(state), "--port", "0"],
                capture_stdout=True, capture_stderr=True, check=False, cwd=ROOT,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
            )  # fmt: skip
            assert cli.returncode == 2
            lines = cli.stderr.decode().strip().splitlines()
            assert len(lines) == 1 and "gateway already running on state dir" in lines[0]
            assert str(os.getpid()) in lines[0]
        async with running_gateway(tmp_path, config()):  # released with the first one
            pass


def test_the_lock_is_released_when_its_process_is_killed(tmp_path: Path) -> None:
    state = tmp_path / "state"
    code = (
        "import sys, time; from pathlib import Path; "
        "from transports.server._state_lock import state_dir_lock; "
        "cm = state_dir_lock(Path(sys.argv[1])); cm.__enter__(); print('held', flush=True); "
        "time.sleep(60)"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code, str(state)], cwd=ROOT, stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"held"
        from transports.server._state_lock import GatewayLockError, state_dir_lock

        with pytest.raises(GatewayLockError, match=f"pid {holder.pid}"), state_dir_lock(state):
            pass  # pragma: no cover
    finally:
        holder.kill()
        holder.wait(timeout=10)
        if holder.stdout is not None:
            holder.stdout.close()
    with state_dir_lock(state):  # SIGKILL released it: nothing stale
        pass
