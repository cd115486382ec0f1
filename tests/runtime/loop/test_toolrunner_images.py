"""`RunTools` bounds every tool result's images before the model sees them, as OpenClaw 2026.9.6
does (`runtime.tools.sanitize_result_images`): a tool's oversized image reaches the run's
message as a JPEG within 1200 px a side, one that cannot be decoded (a decompression bomb's
header) as OpenClaw's text, and a small one byte for byte."""

from __future__ import annotations

import base64
import io
import struct
import zlib
from pathlib import Path

import attrs
import msgspec
import trio
from PIL import Image

from runtime.llm._types import ImageContent, TextContent, ToolCallContent
from runtime.loop import RunTools
from runtime.tools import ToolContext, ToolPolicy, ToolResult


class SnapParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    which: str


class SnapTool:
    """A plugin-like tool answering with a picture it made (no file involved)."""

    name = "snap"
    description = "Take a picture."
    params = SnapParams
    mutating = False

    def __init__(self, pictures: dict[str, bytes]) -> None:
        self.pictures = pictures

    async def run(self, args: SnapParams, ctx: ToolContext) -> ToolResult:
        await trio.lowlevel.checkpoint()
        data = base64.b64encode(self.pictures[args.which]).decode()
        return ToolResult(
            content=[TextContent(text=f"snapped {args.which}"), ImageContent(data, "image/png")]
        )


def png(width: int, height: int) -> bytes:
    image = Image.merge("RGB", [Image.effect_noise((width, height), 40) for _ in "RGB"])
    out = io.BytesIO()
    image.save(out, "PNG", compress_level=1)
    return out.getvalue()


def bomb() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    header = struct.pack(">IIBBBBB", 100_000, 100_000, 8, 2, 0, 0, 0)
    body = chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(bytes(1000)))
    return b"\x89PNG\r\n\x1a\n" + body + chunk(b"IEND", b"")


def runner(tmp_path: Path, pictures: dict[str, bytes]) -> RunTools:
    async def deliver(text: str) -> None:
        await trio.lowlevel.checkpoint()

    return RunTools(
        tools=[SnapTool(pictures)],
        policy=ToolPolicy(profile="full"),
        workspace=tmp_path,
        agent_id="main",
        session_key="agent:main:main",
        session_id="s1",
        run_id="run-1",
        deliver_message=deliver,
    )


async def snap(tools: RunTools, which: str) -> list[TextContent | ImageContent]:
    call = ToolCallContent(id=f"call-{which}", name="snap", arguments={"which": which})
    with trio.fail_after(60):
        outcome = await tools.call(call, lambda stream, data: None)
    assert not outcome.message.isError
    return list(outcome.message.content)


async def test_a_tools_large_image_reaches_the_model_as_a_jpeg_within_1200_px(
    tmp_path: Path,
) -> None:
    tools = runner(tmp_path, {"wide": png(2400, 1000)})
    text, image = await snap(tools, "wide")
    assert text == TextContent(text="snapped wide")
    assert isinstance(image, ImageContent) and image.mimeType == "image/jpeg"
    decoded = Image.open(io.BytesIO(base64.b64decode(image.data)))
    assert (decoded.format, decoded.size) == ("JPEG", (1200, 500))


async def test_a_small_image_is_kept_and_a_bomb_becomes_openclaws_text(tmp_path: Path) -> None:
    small = png(30, 20)
    tools = runner(tmp_path, {"small": small, "bomb": bomb()})
    assert (await snap(tools, "small"))[1] == ImageContent(
        base64.b64encode(small).decode(), "image/png"
    )
    assert (await snap(tools, "bomb"))[1] == TextContent(
        text="[session:history] omitted image payload: RastermillError: Image dimensions "
        "exceed the 25,000,000 pixel input limit: 100000x100000 (10000000000 pixels)"
    )


async def test_agents_image_max_dimension_bounds_a_tools_image(tmp_path: Path) -> None:
    """`agents.defaults.imageMaxDimensionPx` (OpenClaw's key) is the longest side kept."""
    tools = attrs.evolve(runner(tmp_path, {"wide": png(2400, 1000)}), image_max_side=600)
    _, image = await snap(tools, "wide")
    assert isinstance(image, ImageContent)
    decoded = Image.open(io.BytesIO(base64.b64decode(image.data)))
    assert (decoded.format, decoded.size) == ("JPEG", (600, 250))
