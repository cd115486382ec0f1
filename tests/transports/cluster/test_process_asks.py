"""Which nodes `process` asks (`transports.cluster._processes`): only those that told this node
of jobs; one that let an ask go unanswered is not asked again for `SILENT_S`, or before its
next notice. A router that records what is sent stands for the cluster; trio's clock is
the autojumping one (a wait costs no real time)."""

from __future__ import annotations

from typing import Any

import trio
import trio.testing

from transports.cluster._processes import LIST_WAIT_S, SILENT_S, ClusterProcesses


class _Router:
    node_id = "node-a"
    ttl_s = 1.0
    started_ms = 1
    cluster: Any = None
    leases: Any = None

    def __init__(self) -> None:
        self.alive = {"node-a", "node-b", "node-old"}
        self.sent: list[tuple[str, dict[str, Any]]] = []

    def tell_all(self, note: dict[str, Any]) -> None:
        for node in self.alive - {self.node_id}:
            self.tell(node, note)

    def tell(self, node: str, note: dict[str, Any]) -> None:
        self.sent.append((node, note))


def _asked(router: _Router) -> list[str]:
    asked = [node for node, note in router.sent if note.get("proc") == "ask"]
    router.sent.clear()
    return asked


async def test_only_nodes_that_told_of_jobs_are_asked_and_a_silent_one_rests(
    autojump_clock: trio.testing.MockClock,
) -> None:
    router = _Router()
    peers = ClusterProcesses(registry=None, supervisor=None, router=router)  # type: ignore[arg-type]
    greeting = {"proc": "jobs", "jobs": [], "from": "node-b", "inc": 2}
    assert peers.on_note(greeting)
    # node-old never told of jobs: never asked; node-b is, and does not answer in time.
    started = trio.current_time()
    assert await peers.list("agent:main:main") == []
    assert _asked(router) == ["node-b"]
    assert trio.current_time() - started >= LIST_WAIT_S
    # Resting: not asked, no wait.
    started = trio.current_time()
    assert await peers.list("agent:main:main") == []
    assert _asked(router) == [] and trio.current_time() - started < 1
    # Its next notice: asked again.
    peers.on_note(greeting)
    await peers.list("agent:main:main")
    assert _asked(router) == ["node-b"]
    # Or once it rested.
    await trio.sleep(SILENT_S)
    await peers.list("agent:main:main")
    assert _asked(router) == ["node-b"]
