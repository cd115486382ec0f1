"""A settle run's message for a batch holding a private child (`completionTarget: "parent"`)
is OpenClaw 2026.9.6's parent-only requester-settle wake (`buildRequesterSettleWakeMessage`
with `parentOnly`: no outcome instruction, its private completion instruction as the last
context line), for a yield's batch and a wave alike; without one, the yield's and the
wave's own last lines. Checked against OpenClaw's own function under Node 24 (skipped
without it), the children's findings being clawlane's. `private_replaced`: a batch whose
private child was spawned from another session of the parent tells no one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from runtime.agent._run import TrackedRun
from runtime.agent._subagent_book import SpawnedRun, TaskBook
from runtime.agent._yield_batch import (
    OUTCOME_INSTRUCTION,
    PRIVATE_LINE,
    private_replaced,
    settle_message,
    take_batch,
)
from tests.runtime.tools._openclaw_node import imports, openclaw_exports, run_node

MAIN = "agent:main:main"
OUTCOME_LINE = f"[Subagent Context] {OUTCOME_INSTRUCTION}"


class Link:
    parentKey = MAIN
    parentAgent = "main"
    label = None
    announce = True
    cleanup = None
    requesterRun = "p1"

    def __init__(self, target: str | None) -> None:
        self.completionTarget = target
        self.requesterSessionId = "s-main" if target else None


def child(book: TaskBook, n: int, target: str | None = None) -> SpawnedRun:
    key = f"agent:main:subagent:{n}"
    record = TrackedRun(run_id=f"r{n}", session_key=key, session_id="s", agent_id="main")
    run = SpawnedRun(record, MAIN, key, f"c{n}", link=Link(target))
    run.created_at = n
    book.add(run)
    return run


def ended(run: SpawnedRun, text: str) -> SpawnedRun:
    rec = run.record
    assert isinstance(rec, TrackedRun)
    rec.status = "ok"
    rec.final = {"payloads": [{"text": text}], "meta": {}}
    rec.ended_at = 100 + int(run.task_id[1:])
    rec.done.set()
    return run


def batch_of(*, yielded: bool, private: bool) -> list[SpawnedRun]:
    book = TaskBook()
    runs = [child(book, 1, "parent" if private else None), child(book, 2)]
    if yielded:
        assert book.claim_yield(MAIN, "p1")
    for n, run in enumerate(runs, 1):
        ended(run, f"child {n} done")
    if yielded:
        take_batch(book, runs[0])
        assert take_batch(book, runs[1]) == runs
    return runs


def test_a_batch_with_a_private_child_ends_its_context_with_the_private_instruction() -> None:
    for yielded in (True, False):
        message = settle_message(batch_of(yielded=yielded, private=True))
        assert message is not None
        head = message.split("\n\nChild completion results:")[0]
        assert head.endswith(f"\n{PRIVATE_LINE}") and OUTCOME_LINE not in head
        plain = settle_message(batch_of(yielded=yielded, private=False))
        assert plain is not None and OUTCOME_LINE in plain and PRIVATE_LINE not in plain


def test_a_private_childs_batch_is_told_only_to_the_session_it_was_spawned_from() -> None:
    batch = batch_of(yielded=True, private=True)
    assert not private_replaced(batch, "s-main")
    assert private_replaced(batch, "s-after-reset") and private_replaced(batch, None)
    assert not private_replaced(batch_of(yielded=True, private=False), "s-after-reset")
    batch[0].suppressed = True  # a private child stopped by an abort is not told
    assert not private_replaced(batch, "s-after-reset")


SCRIPT = """\
import { readFileSync } from "node:fs";
__IMPORTS__
const source = readFileSync(__WAKE__, "utf8");
const start = source.indexOf("function buildRequesterSettleWakeMessage(params) {");
const end = source.indexOf("\\n}", start);
const body = source.slice(source.indexOf("{", start) + 1, end);
const head = source.slice(source.indexOf("const REQUESTER_SETTLE_WAKE_ROUTE_NOTICE_MAX_CHARS"), start);
const build = new Function(
  "truncateUtf16Safe", "SILENT_REPLY_TOKEN", "SUBAGENT_COMPLETION_OUTCOME_INSTRUCTION",
  "SUBAGENT_PRIVATE_COMPLETION_INSTRUCTION", "params", head + body,
);
const cases = __CASES__;
console.log(JSON.stringify(cases.map((c) => build(
  (text) => text, "NO_REPLY", SUBAGENT_COMPLETION_OUTCOME_INSTRUCTION,
  SUBAGENT_PRIVATE_COMPLETION_INSTRUCTION, { children: [], ...c },
))));
"""


async def test_the_messages_are_openclaws_requester_settle_wakes(tmp_path: Path) -> None:
    found = openclaw_exports(
        ("subagent-completion-delivery-*.mjs", "SUBAGENT_COMPLETION_OUTCOME_INSTRUCTION"),
        ("subagent-completion-delivery-*.mjs", "SUBAGENT_PRIVATE_COMPLETION_INSTRUCTION"),
    )
    module = found["SUBAGENT_COMPLETION_OUTCOME_INSTRUCTION"][0]
    wakes = sorted(module.parent.glob("subagent-announce.requester-settle-wake-*.mjs"))
    if not wakes:
        pytest.skip("no requester-settle-wake module")
    cases: list[dict[str, Any]] = []
    ours: list[str] = []
    for yielded in (True, False):
        for private in (True, False):
            message = settle_message(batch_of(yielded=yielded, private=private))
            assert message is not None
            findings = message[message.index("Child completion results:") :]
            cases.append(
                {"findings": findings, "requireVisibleReply": yielded, "parentOnly": private}
            )
            ours.append(message)
    source = (
        SCRIPT.replace("__IMPORTS__", imports(found))
        .replace("__WAKE__", json.dumps(str(wakes[0])))
        .replace("__CASES__", json.dumps(cases))
    )
    assert await run_node(tmp_path / "wake.mjs", source) == ours
