"""A yield's claim kept beside it in the transcript (`runtime.agent._run_notes`): a custom
entry after the yield's hidden context, never in the model's context nor in a history's
messages, read back by a restart (`yield_claims`); a prompt OpenClaw keeps no row of
(a child's announce) is left out of the run's entries, the rest of the run kept."""

from __future__ import annotations

from runtime.agent._compaction import persist_run
from runtime.agent._run_notes import YIELD_BATCH_TYPE, YieldClaim, run_notes, yield_claims
from runtime.llm._types import AssistantMessage, TextContent, UserMessage
from runtime.loop._agent import RunProgress, TurnYield
from runtime.sessions import SUBAGENT_ANNOUNCE, completion_provenance, marked_prompt
from runtime.sessions._branches import branch_messages
from runtime.sessions._sessions import (
    CustomEntry,
    CustomMessageEntry,
    MessageEntry,
    TranscriptBuilder,
    build_context,
)
from tests.runtime.agent.test_run_notes import run_of_a_yield


def test_a_claim_is_kept_after_the_yields_context_and_read_back() -> None:
    builder = TranscriptBuilder()
    run = run_of_a_yield()
    progress = RunProgress(messages=run[1:], yielded=TurnYield("waiting"))
    claim = YieldClaim(2, ("a", "b"))
    entries, _ = persist_run(builder, run, notes=run_notes(progress, run, "r1", claim))
    *_, context, kept = entries
    assert isinstance(context, CustomMessageEntry)
    assert isinstance(kept, CustomEntry) and kept.customType == YIELD_BATCH_TYPE
    assert kept.data == {"runId": "r1", "generation": 2, "children": ["a", "b"]}
    assert yield_claims(entries) == {"a": ("r1", claim), "b": ("r1", claim)}
    assert len(build_context(entries)) == len(run) + 1  # the hidden context, not the claim
    assert len(branch_messages(entries)) == len(run)
    no_yield = RunProgress(messages=run[1:])
    assert run_notes(no_yield, run, "r1", claim) == []  # the yield was refused: nothing kept


def test_an_announces_prompt_has_no_row_and_the_run_keeps_the_rest() -> None:
    prompt = marked_prompt(
        UserMessage(content="[Subagent Result] ...", timestamp=1),
        completion_provenance(SUBAGENT_ANNOUNCE, "agent:main:subagent:x"),
    )
    reply = AssistantMessage(content=[TextContent("noted")], timestamp=2)
    entries, context = persist_run(TranscriptBuilder(), [prompt, reply])
    assert context is None
    assert [e.message for e in entries if isinstance(e, MessageEntry)] == [reply]
