"""Load on a cluster while a fault happens, and what every request got.

Each worker holds a connection to one node and sends `agent` runs one after the other on
its sessions, each with a reply that names its run (`done <runId>`, so that a transcript
shows whether it ran, and how often); it records the ack (or the refusal's code and
message) and then the run's outcome (`agent.wait`). A request the fault leaves without an
answer is given up after `REQUEST_TIMEOUT_S` and counted as `no answer`; a broken
connection is opened again.

`probe()` measures recovery: from a moment on (the end of a fault), runs are sent to a node
until one is acknowledged and ends `ok`; the time from that moment to that ack and end."""

from __future__ import annotations

import collections
from typing import Any

import attrs
import trio

from tests.chaos._cluster import Node
from transports.client._client import GatewayClientError, GatewayRequestError

REQUEST_TIMEOUT_S = 15.0
UNREACHABLE = ("cannot be reached", "was lost before the request ended")
"""What `agent.wait` says in an `error` that is not the run's end but the node's view of
another during the fault (the run may go on, and end `ok`: see `Run.misreported`)."""


@attrs.define
class Run:
    run_id: str
    node: str
    session: str
    sent_at: float
    acked_at: float | None = None
    outcome: str | None = None
    """`ok`, `error`, `aborted` (as `agent.wait` answered), None while unknown."""
    refusal: str | None = None
    """The code of the refusal (or `no answer`) of a run that was not acknowledged."""
    message: str = ""
    waited: dict[str, Any] | None = None
    """What `agent.wait` first answered with an end."""
    errors: list[str] = attrs.Factory(list)
    """The errors `agent.wait` answered for it in the checks."""
    misreported: dict[str, Any] | None = None
    """An `agent.wait` that answered `error` because the run's node could not be reached
    or was taken for lost (through Redis) while the run went on: reported in the figures
    (a fault under `CLAWLANE_CHAOS_STRICT=1`), not taken as its end."""


def is_misreport(waited: dict[str, Any]) -> bool:
    """Whether an `agent.wait` answer is an `error` that is a node's view of another."""
    error = str(waited.get("error"))
    return waited.get("status") == "error" and any(w in error for w in UNREACHABLE)


def end_of(waited: dict[str, Any]) -> str | None:
    """How a run ended by an `agent.wait` answer: `ok`, `error`, or `aborted` (which
    `agent.wait` answers `timeout`, with the run's `endedAt`); None while it runs."""
    status = waited.get("status")
    if status in ("ok", "error", "aborted"):
        return str(status)
    return "aborted" if status == "timeout" and "endedAt" in waited else None


def reply_of(run_id: str) -> str:
    return f"done {run_id}"


class Load:
    """What every request of every worker got (`runs`, by run id)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.runs: dict[str, Run] = {}
        self._n = 0

    @property
    def acked(self) -> list[Run]:
        return [r for r in self.runs.values() if r.acked_at is not None]

    def refusals(self) -> collections.Counter[str]:
        return collections.Counter(r.refusal for r in self.runs.values() if r.refusal)

    def outcomes(self) -> collections.Counter[str]:
        return collections.Counter(r.outcome or "unknown" for r in self.acked)

    def since(self, since: float) -> str:
        """What the runs sent from `since` on got, for a failure's message."""
        got = collections.Counter(
            f"{r.node} {r.outcome or r.refusal or ('acked' if r.acked_at else 'no answer yet')}"
            for r in self.runs.values()
            if r.sent_at >= since
        )
        return ", ".join(f"{k}: {n}" for k, n in sorted(got.items()))

    def sessions_ok(self) -> set[str]:
        """The sessions with a run that ended `ok`."""
        return {r.session for r in self.acked if r.outcome == "ok"}

    def ok_since(self, node: str, since: float) -> int:
        return sum(
            1 for r in self.acked if r.node == node and r.outcome == "ok" and r.sent_at >= since
        )

    def new_run(
        self, node: Node, session: str, message: str | None = None
    ) -> tuple[Run, dict[str, Any]]:
        self._n += 1
        run = Run(f"{self.name}-{node.name}-{self._n}", node.name, session, trio.current_time())
        text = message or f"[[reply:{reply_of(run.run_id)}]]"
        self.runs[run.run_id] = run
        return run, {"message": text, "idempotencyKey": run.run_id, "sessionKey": session}

    async def send(self, client: Any, node: Node, session: str, message: str | None = None) -> Run:
        """Send one run and wait for its ack (not its end)."""
        run, params = self.new_run(node, session, message)
        try:
            with trio.fail_after(REQUEST_TIMEOUT_S):
                ack = await client.request("agent", params, timeout=None)
        except GatewayRequestError as exc:
            run.refusal, run.message = exc.code, exc.message
            return run
        except trio.TooSlowError:
            run.refusal = "no answer"
            return run
        except GatewayClientError:
            run.refusal = "connection lost"  # the node went away: the worker connects again
            raise
        run.acked_at = trio.current_time()
        if ack.get("status") not in ("accepted", "ok"):
            run.message = f"ack {ack}"
        return run

    async def wait(self, client: Any, run: Run, timeout_s: float = REQUEST_TIMEOUT_S) -> None:
        """The outcome of an acknowledged run, if its node can say within `timeout_s`."""
        try:
            with trio.fail_after(timeout_s):
                params = {"runId": run.run_id, "timeoutMs": int(timeout_s * 1000)}
                waited = await client.request("agent.wait", params, timeout=None)
        except (GatewayRequestError, trio.TooSlowError):
            return
        if is_misreport(waited):
            run.misreported = waited  # not the run's end: its node could not be asked
            return
        if (end := end_of(waited)) is not None:
            run.outcome = end
            run.waited = waited

    async def worker(self, node: Node, sessions: list[str], stop: trio.Event) -> None:
        """Runs on `sessions` in turn through `node` until `stop`."""
        turn = 0
        while not stop.is_set():
            try:
                async with node.client() as client:
                    while not stop.is_set():
                        session = sessions[turn % len(sessions)]
                        turn += 1
                        run = await self.send(client, node, session)
                        if run.acked_at is not None:
                            await self.wait(client, run)
                        elif run.refusal is not None:
                            await trio.sleep(0.05)  # a refusal is immediate: pace the retries
            except (GatewayClientError, OSError):
                await trio.sleep(0.1)  # the node is away: try to connect again


async def drive(
    load: Load,
    nodes: list[Node],
    sessions: int,
    stop: trio.Event,
    *,
    per_node: int = 2,
    shared: bool = True,
) -> None:
    """`per_node` workers on each node, the sessions shared out between them: with
    `shared`, each session is used from both nodes (half its runs are forwarded); else
    each node has `sessions` of its own (none forwarded, no lease changes hands)."""
    keys = [f"s{i}" for i in range(sessions)]
    async with trio.open_nursery() as nursery:
        for node in nodes:
            own = keys if shared else [f"{node.name}-{k}" for k in keys]
            for w in range(per_node):
                nursery.start_soon(load.worker, node, own[w::per_node], stop)


async def probe(
    load: Load, node: Node, since: float, *, timeout_s: float, session: str | None = None
) -> tuple[float, float]:
    """From `since` on, runs through `node` (on `session`, else one of the probe's own)
    until one is acknowledged and ends `ok`: the seconds from `since` to its ack and to
    its end."""
    first = len(load.runs)
    with trio.move_on_after(timeout_s):
        while True:
            try:
                async with node.client() as client:
                    while True:
                        run = await load.send(client, node, session or f"probe-{node.name}")
                        if run.acked_at is not None:
                            await load.wait(client, run)
                            if run.outcome == "ok":
                                return run.acked_at - since, trio.current_time() - since
                        await trio.sleep(0.02)
            except (GatewayClientError, OSError):
                await trio.sleep(0.02)
    sent = [
        r for r in list(load.runs.values())[first:] if r.node == node.name and r.sent_at >= since
    ]
    got = [
        f"{r.run_id} +{r.sent_at - since:.2f} s: {r.outcome or r.refusal or 'acked'} {r.message[:80]}"
        for r in sent
        if r.session == (session or f"probe-{node.name}")
    ]
    raise AssertionError(f"{node.name} served no run within {timeout_s} s; its probes: {got}")


async def until(predicate: Any, what: str, *, timeout_s: float, detail: Any = None) -> None:
    """Poll `predicate` every 50 ms for at most `timeout_s` (what it reads changes in other
    processes, which no event here announces); `detail()` says more when it fails."""
    deadline = trio.current_time() + timeout_s
    while not predicate():
        if trio.current_time() >= deadline:
            more = f" ({detail()})" if detail is not None else ""
            raise AssertionError(f"not within {timeout_s} s: {what}{more}")
        await trio.sleep(0.05)
