"""`read` of images over a real gateway, driven by the `local` model's `[[tool:read ...]]`
directive: the result a client's tool events carry and the one the session keeps (what the
model is given) are OpenClaw 2026.9.6's, its text and details word for word (as its own read
answered for the same files under Node 24), the image fit in 1200 px a side as a JPEG."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import trio
from PIL import Image

from tests.conftest import local_config, open_client, running_gateway
from tests.e2e._events import recorder_events, run_events

NOTE = (
    "[Image: original 3000x2000, displayed at 2000x1333. Multiply coordinates by 1.50 to map "
    "to original image.]"
)


def big_png() -> bytes:
    ramp = Image.linear_gradient("L").resize((3000, 2000))
    image = Image.merge("RGB", (ramp, ramp.rotate(90), Image.effect_noise((3000, 2000), 20)))
    out = io.BytesIO()
    image.save(out, "PNG", compress_level=1)
    return out.getvalue()


async def test_read_gives_a_large_png_fit_in_1200_px_as_openclaw_does(tmp_path: Path) -> None:
    events, on_event = recorder_events()
    async with running_gateway(tmp_path) as gw:
        workspace = tmp_path / "state" / "workspaces" / "main"
        workspace.mkdir(parents=True, exist_ok=True)
        (workspace / "big.png").write_bytes(big_png())
        message = f"[[tool:read {json.dumps({'path': 'big.png'})}]]"
        with trio.fail_after(120):
            async with open_client(gw, caps=["tool-events"], on_event=on_event) as client:
                final = await client.request(
                    "agent", {"message": message, "idempotencyKey": "img"}, expect_final=True
                )
                history = await client.request("chat.history", {"sessionKey": "main"})
    assert final["status"] == "ok"
    [result] = [
        p["data"] for p in run_events(events, "img", "tool") if p["data"]["phase"] == "result"
    ]
    text = f"Read image file [image/jpeg]\n{NOTE}"
    assert result["result"]["details"] == {
        "kind": "image",
        "content": text,
        "mimeType": "image/jpeg",
    }
    first, placeholder = result["result"]["content"]
    assert first == {"type": "text", "text": text}
    assert placeholder["text"].startswith("[image: image/jpeg, ")
    kept = [m for m in history["messages"] if m.get("role") == "toolResult"]
    [image] = [b for b in kept[0]["content"] if b["type"] == "image"]
    decoded = Image.open(io.BytesIO(base64.b64decode(image["data"])))
    assert (image["mimeType"], decoded.format, decoded.size) == ("image/jpeg", "JPEG", (1200, 800))


async def test_read_fits_an_image_in_the_configured_max_dimension(tmp_path: Path) -> None:
    """`agents.defaults.imageMaxDimensionPx: 600`: read's image is fit in 600 px a side, as
    OpenClaw's read sanitizes with the configured limit."""
    config = local_config(agents__defaults__imageMaxDimensionPx=600)
    async with running_gateway(tmp_path, config) as gw:
        workspace = tmp_path / "state" / "workspaces" / "main"
        workspace.mkdir(parents=True, exist_ok=True)
        (workspace / "big.png").write_bytes(big_png())
        message = f"[[tool:read {json.dumps({'path': 'big.png'})}]]"
        with trio.fail_after(120):
            async with open_client(gw) as client:
                await client.request(
                    "agent", {"message": message, "idempotencyKey": "img"}, expect_final=True
                )
                history = await client.request("chat.history", {"sessionKey": "main"})
    kept = [m for m in history["messages"] if m.get("role") == "toolResult"]
    [image] = [b for b in kept[0]["content"] if b["type"] == "image"]
    decoded = Image.open(io.BytesIO(base64.b64decode(image["data"])))
    assert (decoded.format, decoded.size) == ("JPEG", (600, 400))
