"""Background job ids unique across a cluster of two gateways (this process, one PostgreSQL,
one Redis): an id is OpenClaw's slug, and a node claims it among the cluster's claims
(`exec-job:<id>`) before its job takes it, so a slug another node's process claimed is never
given to a job here, even before that node told of its job.

The slug drawn is fixed here (the real draw is random, a collision rare): the first free of a
list, as OpenClaw's draw skips the taken ones. Skipped, saying why, when Redis or PostgreSQL
cannot be reached.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import trio

from runtime.tools import _process as process_module
from tests._procs import tool_directive, turn_text
from tests.actors._databases import pg_url
from tests.conftest import open_client
from tests.e2e.test_cluster_nodes import ADMIN, two_nodes
from transports import Gateway

__all__ = ["pg_url"]  # the fixture, used by name


def _processes(gw: Gateway) -> Any:
    router = gw.router
    assert router is not None and router.processes is not None
    return router.processes


def _session_id(text: str) -> str:
    found = re.search(r"Command still running \(session ([0-9a-z-]+), pid (\d+)\)", text)
    assert found is not None, text
    return found.group(1)


async def test_a_slug_another_nodes_process_claimed_is_not_given_to_a_job_here(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    order = ["swift-reef", "calm-cove", "keen-otter"]

    def fixed(is_taken: Any = lambda _: False) -> str:
        return next(s for s in order if not is_taken(s))

    monkeypatch.setattr(process_module, "session_slug", fixed)
    with trio.fail_after(60):
        async with two_nodes(tmp_path, pg_url) as nodes:
            a, b = nodes
            at_a_jobs, at_b_jobs = _processes(a.gw), _processes(b.gw)
            assert await at_a_jobs.reserve("swift-reef")  # A's process claims it
            assert not await at_b_jobs.reserve("swift-reef")
            assert await at_a_jobs.reserve("swift-reef")  # still A's own
            exec_call = tool_directive("exec", command="sleep 300", background=True)
            async with open_client(b.gw, scopes=ADMIN) as at_b:
                on_b = _session_id(await turn_text(at_b, "agent:main:on-b", exec_call, "b1"))
            assert on_b == "calm-cove"  # swift-reef is A's, though no job of A's has it yet
            async with open_client(a.gw, scopes=ADMIN) as at_a:
                on_a = _session_id(await turn_text(at_a, "agent:main:on-a", exec_call, "a1"))
            assert on_a == "swift-reef"
