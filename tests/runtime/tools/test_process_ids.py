"""Background job ids: OpenClaw 2026.9.6's slugs (`createSessionSlug`: `<adjective>-<noun>`,
numbered, three words, a random suffix), none in use here nor, in a cluster, on another node
(what `ProcessPeers.taken` knows, what `ProcessPeers.reserve` refuses). Real processes."""

from __future__ import annotations

import re
from typing import Any

import pytest
import trio

from runtime.tools import _process as process_module
from runtime.tools._exec import ExecTool
from runtime.tools._process import Job, open_process_registry
from runtime.tools._slug import SLUG_ADJECTIVES, SLUG_NOUNS, session_slug
from runtime.tools._tool import ToolContext, ToolResult, invoke_tool

SLUG = re.compile(r"[a-z]+-[a-z]+(-(\d+|[a-z]+))?(-[a-z0-9]{3})?(-[a-z0-9]+)?")


def test_a_slug_is_an_adjective_and_a_noun_numbered_or_longer_when_taken() -> None:
    first = session_slug()
    adjective, noun = first.split("-")
    assert adjective in SLUG_ADJECTIVES and noun in SLUG_NOUNS
    # Every two-word base taken: a numbered one.
    numbered = session_slug(lambda s: s.count("-") == 1)
    assert re.fullmatch(r"[a-z]+-[a-z]+-([2-9]|1[0-2])", numbered), numbered
    # Every two-word id taken, numbered or not: three words.
    three = session_slug(lambda s: len(s.split("-")) < 3 or s.split("-")[-1].isdigit())
    words = three.split("-")
    assert len(words) == 3 and words[1] in SLUG_NOUNS and words[2] in SLUG_NOUNS
    # Everything taken: a random suffix, then the time in base 36.
    last = session_slug(lambda s: True)
    assert re.fullmatch(r"[a-z]+-[a-z]+-[a-z]+-[a-z0-9]{3}-[a-z0-9]+", last), last


def test_ids_drawn_against_what_is_taken_never_repeat() -> None:
    seen: set[str] = set()
    for _ in range(2000):
        seen.add(session_slug(seen.__contains__))
    assert len(seen) == 2000


class _Peers:
    """Another node's jobs: `known` told, `claimed` by another node."""

    def __init__(self, known: set[str], claimed: set[str]) -> None:
        self.known, self.claimed = known, claimed
        self.asked: list[str] = []

    def taken(self, job_id: str) -> bool:
        return job_id in self.known

    async def reserve(self, job_id: str) -> bool:
        await trio.lowlevel.checkpoint()
        self.asked.append(job_id)
        return job_id not in self.claimed

    def listed(self, job: Job) -> None:
        pass

    def unlisted(self, job: Job) -> None:
        pass


async def _started(registry: Any, ctx: ToolContext) -> str:
    result: ToolResult = await invoke_tool(
        ExecTool(processes=registry), {"command": "sleep 30", "background": True}, ctx
    )
    assert result.details is not None and result.details["status"] == "running"
    return str(result.details["sessionId"])


async def test_a_jobs_id_is_a_slug_no_other_job_has(
    ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    order = ["swift-reef", "calm-cove", "keen-otter", "tidal-kelp"]

    def fixed(is_taken: Any = lambda _: False) -> str:
        return next(s for s in order if not is_taken(s))

    monkeypatch.setattr(process_module, "session_slug", fixed)
    peers = _Peers(known={"calm-cove"}, claimed={"keen-otter"})
    with trio.fail_after(15):
        async with open_process_registry() as registry:
            first = await _started(registry, ctx)
            assert first == "swift-reef"
            registry.peers = peers  # type: ignore[assignment]
            # swift-reef runs here, calm-cove is another node's, keen-otter claimed there
            second = await _started(registry, ctx)
            assert second == "tidal-kelp"
            assert peers.asked == ["keen-otter", "tidal-kelp"]
            registry.peers = None
            registry.kill_all()


async def test_ids_of_jobs_started_at_once_differ(ctx: ToolContext) -> None:
    ids: list[str] = []
    with trio.fail_after(15):
        async with open_process_registry() as registry:

            async def start() -> None:
                ids.append(await _started(registry, ctx))

            async with trio.open_nursery() as nursery:
                for _ in range(8):
                    nursery.start_soon(start)
            registry.kill_all()
    assert len(set(ids)) == 8 and all(SLUG.fullmatch(i) for i in ids), ids
