"""Malformed input never crashes the server, never kills the connection (except the size
limit, 1009) and never leaks a task: hypothesis-generated frames over a real socket."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import pytest
import trio
import trio_websocket
from hypothesis import HealthCheck, given, settings

from tests.conftest import gateway_url, open_client, raw_handshake, running_gateway
from transports.client._client import open_websocket

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
frames = st.one_of(
    json_values.map(json.dumps),
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(["req", "res", "event", "cancel", "x"]),
            "id": json_values,
            "method": st.sampled_from(
                ["agent", "agent.wait", "chat.send", "sessions.patch", "health", "nope"]
            ),
            "params": json_values,
        }
    ).map(json.dumps),
    st.text(max_size=60),
)


async def fuzz(batch: list[str], root: Path) -> None:
    async with running_gateway(root) as gw:
        with trio.fail_after(20):
            async with open_client(gw) as client:
                for text in batch:
                    await client.send_raw(text)
                    health = await client.request("health")
                    assert health["ok"] is True
            # Every task the connection started has finished with it.
            await trio.testing.wait_all_tasks_blocked()
            assert gw.connections == {}


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(frames, min_size=1, max_size=8))
def test_arbitrary_frames_get_answers_and_the_connection_lives(batch: list[str]) -> None:
    with tempfile.TemporaryDirectory() as root:
        trio.run(fuzz, batch, Path(root))


async def test_a_frame_over_the_payload_limit_closes_1009_and_others_carry_on(
    tmp_path: Path,
) -> None:
    async with running_gateway(tmp_path) as gw:
        with trio.fail_after(30):
            async with (
                open_client(gw) as other,
                open_websocket(gateway_url(gw), max_message_size=1 << 26) as ws,
            ):
                await raw_handshake(ws, gw=gw)
                await ws.send_message("x" * (25 * 1024 * 1024 + 10))
                with pytest.raises(trio_websocket.ConnectionClosed) as closed:
                    while True:
                        await ws.get_message()
                assert closed.value.reason is not None and closed.value.reason.code == 1009
                assert (await other.request("health"))["ok"] is True


async def test_requests_before_connect_and_repeated_connect_are_refused(gateway: Any) -> None:
    async with open_client(gateway) as client:
        with pytest.raises(Exception, match="already connected"):
            await client.request("connect", {"minProtocol": 4, "maxProtocol": 4})
        assert (await client.request("health"))["ok"] is True
