"""What nodes say to each other (`transports._cluster_wire`): the outbox keeps its byte
bound (event frames give way first, messages are refused past it), sends in order per
channel, retries while the channels are away; event batches round-trip with their public
frames as the hub gave them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import trio
import trio.testing

from actors import ChannelMessage, ClusterUnavailable
from actors._cluster_local import LocalChannels
from transports._cluster_wire import Outbox, decode_batch, decode_message


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
