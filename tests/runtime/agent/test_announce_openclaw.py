"""A child's end is told to its parent in the text OpenClaw 2026.9.6's model reads for the same
end, under OpenClaw's idempotency key: the recorded table of `_announce_cases` replayed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio

from runtime.agent._announce import announce_key, announce_message, announce_task
from tests.runtime.agent._announce_cases import CASES, RECORD, openclaw_announces

TABLE: list[dict[str, Any]] = json.loads(RECORD.read_text())["cases"]


@attrs.define
class _Record:
    run_id: str
    session_id: str
    status: str
    abort_reason: str | None
    error: str | None
    started_at: int | None
    ended_at: int | None
    final: dict[str, Any] | None
    done: trio.Event = attrs.field(factory=trio.Event)

    @property
    def ended(self) -> bool:
        return True

    def abort(self, reason: str) -> bool:
        return False


def _record(case: dict[str, Any]) -> _Record:
    rec = case["record"]
    return _Record(
        run_id=rec["runId"],
        session_id=rec["sessionId"],
        status=rec["status"],
        abort_reason=rec["abortReason"],
        error=rec["error"],
        started_at=rec["startedAt"],
        ended_at=rec["endedAt"],
        final={"payloads": rec["payloads"], "meta": {"agentMeta": {"usage": rec["usage"]}}},
    )


@pytest.mark.parametrize("case", TABLE, ids=[c["name"] for c in TABLE])
def test_the_announce_is_the_text_openclaw_renders_for_the_same_end(case: dict[str, Any]) -> None:
    rec = case["record"]
    message = announce_message(
        _record(case),  # type: ignore[arg-type]
        rec["childKey"],
        rec["label"],
        task=rec["task"],
        requester_key=rec["parentKey"],
        private=rec["private"],
    )
    assert message == case["message"]


@pytest.mark.parametrize("case", TABLE, ids=[c["name"] for c in TABLE])
def test_the_announce_run_id_is_openclaws_idempotency_key(case: dict[str, Any]) -> None:
    key = announce_key(case["record"]["childKey"], case["record"]["runId"])
    assert key == case["idempotencyKey"]
    assert announce_task(key) == case["record"]["runId"]


def test_other_run_ids_name_no_announced_task() -> None:
    assert announce_task("announce:requester-settle:main:agent:main:main:r1") is None
    assert announce_task("r1:announce") is None
    assert announce_task("r1") is None


def test_the_recorded_table_is_what_openclaw_renders_now(tmp_path: Path) -> None:
    """The table was made from `CASES` by OpenClaw's own code (skipped without Node 24)."""
    answers = trio.run(openclaw_announces, tmp_path, CASES)
    recorded = [{"message": c["message"], "idempotencyKey": c["idempotencyKey"]} for c in TABLE]
    assert [{k: c[k] for k in ("name", "record", "openclaw")} for c in TABLE] == CASES
    assert answers == recorded
