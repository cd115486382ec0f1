"""Cron job definitions: strict params, validation naming the field, patches, OpenClaw's
wire views (validated against the 2026.9.6 definitions)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from runtime.cron._cron_jobs import CronJobError, apply_patch, job_from_add, job_view
from runtime.cron._cron_params import CronGetParams, CronJobPatch, CronRunParams, CronUpdateParams
from runtime.protocol._wire import CronAddParams
from tests._schema import definitions, validate

NOW = 1_796_160_000_000  # 2026-12-01T21:20:00Z


def add(**over: Any) -> CronAddParams:
    raw: dict[str, Any] = {
        "name": "digest",
        "schedule": {"kind": "cron", "expr": "0 9 * * 1-5", "tz": "Europe/Vienna"},
        "sessionTarget": "isolated",
        "wakeMode": "now",
        "payload": {"kind": "agentTurn", "message": "Summarize."},
    }
    raw.update(over)
    return msgspec.convert(raw, CronAddParams)


def _props(schema: dict[str, Any]) -> set[str]:
    return set(schema["properties"])


def test_hand_written_params_have_the_schemas_fields() -> None:
    defs = definitions()
    for name, cls in (("CronGetParams", CronGetParams), ("CronRunParams", CronRunParams)):
        branches = defs[name]["anyOf"]
        want = set().union(*(_props(b) for b in branches))
        assert set(cls.__struct_fields__) == want, name
    update = defs["CronUpdateParams"]["anyOf"][0]
    assert set(CronUpdateParams.__struct_fields__) == _props(update) | {"jobId"}
    assert set(CronJobPatch.__struct_fields__) == _props(update["properties"]["patch"])


def test_a_new_job_is_an_openclaw_cron_job() -> None:
    job = job_from_add(add(), job_id="j1", now_ms=NOW)
    view = job_view(job)
    validate("CronJob", view)
    assert view["nextRunAtMs"] == view["state"]["nextRunAtMs"] == 1796198400000
    assert view["delivery"] == {"mode": "announce"}  # OpenClaw's default for isolated turns
    assert view["configRevision"].startswith("sha256:")


def test_defaults_as_openclaw_fills_them() -> None:
    at = job_from_add(
        add(schedule={"kind": "at", "at": "2027-01-01T00:00:00Z"}), job_id="j", now_ms=NOW
    )
    assert at.deleteAfterRun is True
    assert msgspec.to_builtins(at.schedule) == {"kind": "at", "at": "2027-01-01T00:00:00.000Z"}
    every = job_from_add(add(schedule={"kind": "every", "everyMs": 60_000}), job_id="j", now_ms=NOW)
    assert msgspec.to_builtins(every.schedule)["anchorMs"] == NOW
    top = job_from_add(add(schedule={"kind": "cron", "expr": "0 * * * *"}), job_id="j", now_ms=NOW)
    assert msgspec.to_builtins(top.schedule)["staggerMs"] == 300_000
    exact = job_from_add(
        add(schedule={"kind": "cron", "expr": "0 * * * *", "staggerMs": 0}), job_id="j", now_ms=NOW
    )
    assert msgspec.to_builtins(exact.schedule)["staggerMs"] == 0
    main = job_from_add(
        add(sessionTarget="main", payload={"kind": "systemEvent", "text": "Reminder"}),
        job_id="j",
        now_ms=NOW,
    )
    assert main.delivery is None


@pytest.mark.parametrize(
    ("over", "message"),
    [
        ({"schedule": {"kind": "at", "at": "2020-01-01T00:00:00Z"}}, "schedule.at is in the past"),
        ({"schedule": {"kind": "at", "at": "garbage"}}, "schedule.at: expected an ISO-8601"),
        ({"schedule": {"kind": "cron", "expr": "61 * * * *"}}, "schedule.expr: Bad minute"),
        ({"schedule": {"kind": "cron", "expr": "0 9 * * *", "tz": "Nope/Nope"}}, "schedule.tz"),
        ({"schedule": {"kind": "on-exit", "command": "x"}}, "schedule.kind: 'on-exit' is not"),
        ({"sessionTarget": "main"}, 'main cron jobs require payload.kind="systemEvent"'),
        ({"payload": {"kind": "systemEvent", "text": "x"}}, 'require payload.kind="agentTurn"'),
        ({"payload": {"kind": "command", "argv": ["ls"]}}, "payload.kind: 'command' is not"),
        ({"sessionTarget": "elsewhere"}, "sessionTarget: expected main, isolated"),
        ({"delivery": {"mode": "webhook", "to": "ftp://x"}}, "delivery.to: cron webhook"),
        ({"delivery": {"mode": "webhook", "to": "https://u:p@h/x"}}, "must not embed credentials"),
        ({"trigger": {"script": "x"}}, "trigger: condition triggers are not supported"),
    ],
)
def test_what_clawlane_cannot_run_is_refused_naming_the_field(
    over: dict[str, Any], message: str
) -> None:
    with pytest.raises(CronJobError, match=message.replace(".", r"\.").replace("(", r"\(")):
        job_from_add(add(**over), job_id="j", now_ms=NOW)


def test_unknown_fields_and_wrong_types_fail_decoding_with_their_path() -> None:
    with pytest.raises(msgspec.ValidationError, match=r"unknown field `bogus`"):
        add(bogus=1)
    with pytest.raises(msgspec.ValidationError, match=r"\$\.schedule\.everyMs"):
        add(schedule={"kind": "every", "everyMs": "often"})
    with pytest.raises(msgspec.ValidationError, match=r"\$\.patch"):
        msgspec.convert({"id": "j", "patch": {"nope": 1}}, CronUpdateParams)


def patched(job: Any, patch: dict[str, Any], now: int = NOW + 1000) -> Any:
    return apply_patch(job, msgspec.convert(patch, CronJobPatch), now_ms=now)


def test_patches_merge_payloads_and_clear_with_null() -> None:
    job = job_from_add(
        add(
            payload={
                "kind": "agentTurn",
                "message": "m",
                "model": "local/echo",
                "timeoutSeconds": 5,
            }
        ),
        job_id="j",
        now_ms=NOW,
    )
    new = patched(job, {"payload": {"kind": "agentTurn", "message": "m2", "timeoutSeconds": None}})
    assert msgspec.to_builtins(new.payload) == {
        "kind": "agentTurn", "message": "m2", "model": "local/echo"
    }  # fmt: skip
    assert msgspec.to_builtins(job.payload)["message"] == "m"  # the original is untouched
    validate("CronJob", job_view(new))


def test_a_new_schedule_starts_a_new_decision() -> None:
    job = job_from_add(add(schedule={"kind": "every", "everyMs": 60_000}), job_id="j", now_ms=NOW)
    new = patched(job, {"schedule": {"kind": "every", "everyMs": 120_000}}, now=NOW + 5_000)
    assert msgspec.to_builtins(new.schedule)["anchorMs"] == NOW + 5_000
    assert new.state.nextRunAtMs == NOW + 125_000
    assert new.state.scheduleActivatedAtMs == NOW + 5_000


def test_disable_clears_the_next_run_and_enable_brings_it_back() -> None:
    job = job_from_add(add(), job_id="j", now_ms=NOW)
    off = patched(job, {"enabled": False})
    assert off.state.nextRunAtMs is None and "nextRunAtMs" not in job_view(off)
    on = patched(off, {"enabled": True})
    assert on.state.nextRunAtMs == job.state.nextRunAtMs


def test_switching_payload_kind_needs_its_text() -> None:
    job = job_from_add(add(), job_id="j", now_ms=NOW)
    with pytest.raises(CronJobError, match="requires text"):
        patched(job, {"sessionTarget": "main", "payload": {"kind": "systemEvent"}})
    ok = patched(job, {"sessionTarget": "main", "payload": {"kind": "systemEvent", "text": "t"}})
    assert ok.sessionTarget == "main"


def test_delivery_patch_switches_to_a_webhook() -> None:
    job = job_from_add(add(), job_id="j", now_ms=NOW)
    new = patched(job, {"delivery": {"mode": "webhook", "to": "https://example.invalid/h"}})
    assert msgspec.to_builtins(new.delivery) == {
        "mode": "webhook",
        "to": "https://example.invalid/h",
    }
    with pytest.raises(CronJobError, match="delivery"):
        patched(job, {"delivery": {"mode": "webhook"}})


def test_job_ref_params_need_exactly_one_id() -> None:
    from runtime.cron._cron_params import JobIdError

    assert msgspec.convert({"jobId": "a"}, CronGetParams).job_id() == "a"
    for raw in ({}, {"id": "a", "jobId": "b"}):
        with pytest.raises(JobIdError):
            msgspec.convert(raw, CronGetParams).job_id()
