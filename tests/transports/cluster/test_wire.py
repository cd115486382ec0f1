"""What nodes say to each other (`transports.cluster._wire`): the outbox keeps its byte
bound (event frames give way first, messages are refused past it), sends in order per
channel, retries while the channels are away; event batches round-trip with their public
frames as the hub gave them; claims waiting together go in one round trip, a claim whose
caller left is finished as refused, a failed batch fails each of its claims."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import trio
import trio.testing

from actors import ChannelMessage, ClusterUnavailable
from actors.cluster._local import LocalChannels, LocalClaims
from transports.cluster._claims import ClaimBatch, FinalsBudget
from transports.cluster._wire import Outbox, decode_batch, decode_message


class Flaky(LocalChannels):
    """Channels that refuse the first `failures` sends."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures

    async def send(self, channel: str, messages: Sequence[bytes]) -> None:
        if self.failures:
            self.failures -= 1
            raise ClusterUnavailable("Redis unavailable (test)")
        await super().send(channel, messages)


async def _all(channels: LocalChannels, names: Mapping[str, str]) -> list[ChannelMessage]:
    return await channels.receive(names, timeout_s=0)


async def test_the_outbox_sends_in_order_per_channel_and_batches_frames() -> None:
    channels = LocalChannels()
    outbox = Outbox(channels)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(outbox.run)
        outbox.put("inbox:b", {"t": "res", "fid": "1"})
        outbox.put("inbox:b", {"t": "end", "fid": "1"})
        frame, public = b'{"event":"agent"}', b'{"event":"agent","pub":1}'
        outbox.frame("events:a", 0, "r1", "k", frame, frame)  # the public frame is the frame
        outbox.frame("events:a", 0, "r1", "k", frame, None)  # a tool event
        outbox.frame("events:a", 0, "r1", "k", frame, public)
        await trio.testing.wait_all_tasks_blocked()
        got = await _all(channels, {"inbox:b": channels.START, "events:a": channels.START})
        nursery.cancel_scope.cancel()
    inbox = [decode_message(m.data)["t"] for m in got if m.channel == "inbox:b"]
    assert inbox == ["res", "end"]
    [batch] = [decode_batch(m.data) for m in got if m.channel == "events:a"]
    assert [(f, p) for _k, _r, _s, f, p in batch] == [
        (frame, frame),
        (frame, None),
        (frame, public),
    ]
    assert outbox.queued_bytes == 0


async def test_the_outbox_keeps_its_byte_bound() -> None:
    outbox = Outbox(LocalChannels(), max_bytes=1_000)
    assert outbox.put("inbox:b", {"t": "res", "payload": "x" * 400})
    assert outbox.put("inbox:b", {"t": "res", "payload": "x" * 400})
    assert not outbox.put("inbox:b", {"t": "res", "payload": "x" * 400})  # refused
    outbox.frame("events:a", 0, "r", "k", b"y" * 400, None)
    assert outbox.dropped_frames == 1
    assert outbox.queued_bytes <= 1_000


async def test_the_outbox_retries_while_the_channels_are_away(
    autojump_clock: trio.testing.MockClock,
) -> None:
    channels = Flaky(failures=3)
    outbox = Outbox(channels)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(outbox.run)
        outbox.put("inbox:b", {"t": "res", "fid": "1"})
        await trio.sleep(5)  # virtual: three retries, RETRY_S apart
        got = await _all(channels, {"inbox:b": channels.START})
        nursery.cancel_scope.cancel()
    assert [decode_message(m.data)["fid"] for m in got] == ["1"]
    assert outbox.send_errors == 3 and outbox.queued_bytes == 0


async def test_claims_waiting_together_go_in_one_round_trip() -> None:
    claims = LocalClaims()
    batch = ClaimBatch(claims, "me", b"refused")
    got: dict[str, bool] = {}

    async def claim(key: str) -> None:
        got[key] = (await batch.claim(key, b"ack")).first

    async with trio.open_nursery() as nursery:
        nursery.start_soon(batch.run)
        async with trio.open_nursery() as claimers:
            for key in ("k1", "k2", "k1"):
                claimers.start_soon(claim, key)
        assert batch.round_trips == 1
        assert sorted(got) == ["k1", "k2"]
        batch.finish("k1", b"final")
        await trio.testing.wait_all_tasks_blocked()
        nursery.cancel_scope.cancel()
    assert await claims.unfinished() == {"me": ["k2"]}
    stored = await claims.get("k1")
    assert stored is not None and stored.final == b"final"


async def test_a_claim_whose_caller_left_is_finished_as_refused() -> None:
    claims = LocalClaims()
    batch = ClaimBatch(claims, "me", b"refused")
    async with trio.open_nursery() as nursery:
        with trio.CancelScope() as scope:
            nursery.start_soon(batch.run)
            scope.cancel()  # the caller goes away before the batch is sent
            await batch.claim("gone", b"ack")
        await trio.testing.wait_all_tasks_blocked()
        nursery.cancel_scope.cancel()
    stored = await claims.get("gone")
    assert stored is not None and stored.final == b"refused"
    assert await claims.unfinished() == {}


async def test_a_failed_batch_fails_each_claim() -> None:
    class Down(LocalClaims):
        async def claim_many(self, items: Any, *, owner: str | None = None) -> Any:
            raise ClusterUnavailable("Redis unavailable (test)")

    batch = ClaimBatch(Down(), "me", b"refused")
    errors: list[str] = []

    async def claim(key: str) -> None:
        try:
            await batch.claim(key, b"ack")
        except ClusterUnavailable as exc:
            errors.append(str(exc))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(batch.run)
        async with trio.open_nursery() as claimers:
            claimers.start_soon(claim, "a")
            claimers.start_soon(claim, "b")
        nursery.cancel_scope.cancel()
    assert errors == ["Redis unavailable (test)"] * 2


async def test_the_finals_budget_frees_what_was_kept_a_claim_ttl_ago(
    autojump_clock: trio.testing.MockClock,
) -> None:
    budget = FinalsBudget(ttl_s=300.0, max_bytes=100)
    assert budget.admit(60)
    assert not budget.admit(60)  # 120 bytes within one TTL
    assert budget.admit(40)
    await trio.sleep(300.5)  # the first claims have expired in Redis
    assert budget.admit(60) and budget.admit(40)
    assert not budget.admit(1)
