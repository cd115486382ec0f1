"""Images in tool results as OpenClaw 2026.9.6 gives them to a model (`runtime.tools._images`):
`read` of real files in a temporary workspace, and any tool result's image blocks. The texts
and details expected here are what OpenClaw's own read (createOpenClawReadTool over
createReadTool) and sanitizeContentBlocksImages answered under Node 24 for the same files
and blocks; the image bytes differ (another JPEG/PNG encoder), their sizes and types do not."""

from __future__ import annotations

import base64
import io
import struct
import zlib
from pathlib import Path

import pytest
import trio
from PIL import Image

from runtime.llm._types import ImageContent, TextContent, UserContent
from runtime.tools import ReadTool, ToolContext, ToolResult, invoke_tool, sanitize_result_images
from runtime.tools._images import DEFAULT_MAX_BYTES, sanitize_blocks

MIB = 1024 * 1024


def encoded(image: Image.Image, fmt: str, **options: int) -> bytes:
    out = io.BytesIO()
    image.save(out, fmt, **options)
    return out.getvalue()


def gradient(width: int, height: int, *, alpha: bool = False) -> Image.Image:
    """A smooth picture with some grain: large as a PNG, small as a JPEG."""
    ramp = Image.linear_gradient("L").resize((width, height))
    other = Image.linear_gradient("L").rotate(90).resize((width, height))
    image = Image.merge("RGB", (ramp, other, Image.effect_noise((width, height), 20)))
    if alpha:
        image = image.convert("RGBA")
        image.putalpha(ramp)
    return image


def noise(width: int, height: int, mode: str = "RGB") -> Image.Image:
    """Grain in every channel: a photo's worst case for size."""
    bands = [Image.effect_noise((width, height), 90) for _ in mode]
    return Image.merge(mode, bands)


def bomb_png() -> bytes:
    """A PNG whose header claims 100,000 x 100,000 pixels (a decompression bomb)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    header = struct.pack(">IIBBBBB", 100_000, 100_000, 8, 2, 0, 0, 0)
    body = chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(bytes(1000)))
    return b"\x89PNG\r\n\x1a\n" + body + chunk(b"IEND", b"")


def opened(block: UserContent) -> Image.Image:
    assert isinstance(block, ImageContent)
    return Image.open(io.BytesIO(base64.b64decode(block.data)))


async def read(ctx: ToolContext, path: str) -> ToolResult:
    with trio.fail_after(120):
        return await invoke_tool(ReadTool(), {"path": path}, ctx)


def resized_note(original: str, shown: str, scale: str) -> str:
    return (
        f"[Image: original {original}, displayed at {shown}. Multiply coordinates by {scale} "
        "to map to original image.]"
    )


async def test_read_fits_a_3000_px_png_in_1200_px_as_a_jpeg(
    ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "big.png").write_bytes(encoded(gradient(3000, 2000), "PNG", compress_level=1))
    result = await read(ctx, "big.png")
    text = "Read image file [image/jpeg]\n" + resized_note("3000x2000", "2000x1333", "1.50")
    assert not result.is_error
    assert result.content[0] == TextContent(text=text)
    image = opened(result.content[1])
    assert (image.format, image.size) == ("JPEG", (1200, 800))
    assert result.details == {"kind": "image", "content": text, "mimeType": "image/jpeg"}


async def test_read_keeps_a_transparent_png_as_png_before_the_jpeg_step(
    ctx: ToolContext, workspace: Path
) -> None:
    """OpenClaw's read step keeps transparency (PNG, so smaller sides until it fits 4.5 MiB of
    base64), and its header says so; the sanitizer after it makes every oversized image a
    JPEG."""
    (workspace / "alpha.png").write_bytes(
        encoded(gradient(3000, 2000, alpha=True), "PNG", compress_level=1)
    )
    result = await read(ctx, "alpha.png")
    text = "Read image file [image/png]\n" + resized_note("3000x2000", "1534x1023", "1.96")
    assert result.content[0] == TextContent(text=text)
    image = opened(result.content[1])
    assert (image.format, image.size) == ("JPEG", (1200, 800))
    assert result.details == {"kind": "image", "content": text, "mimeType": "image/jpeg"}


async def test_read_shrinks_a_photo_over_5_mib(ctx: ToolContext, workspace: Path) -> None:
    photo = encoded(noise(2400, 1800), "JPEG", quality=98)
    assert len(photo) > 5 * MIB
    (workspace / "photo.jpg").write_bytes(photo)
    result = await read(ctx, "photo.jpg")
    text = "Read image file [image/jpeg]\n" + resized_note("2400x1800", "2000x1500", "1.20")
    assert result.content[0] == TextContent(text=text)
    block = result.content[1]
    assert isinstance(block, ImageContent) and block.mimeType == "image/jpeg"
    assert len(base64.b64decode(block.data)) <= DEFAULT_MAX_BYTES
    assert opened(block).size == (1200, 900)


async def test_read_shrinks_an_image_file_over_10_mib(ctx: ToolContext, workspace: Path) -> None:
    """OpenClaw reads an image file of any size and shrinks it; clawlane refused one over
    10 MiB until its bound became the text files' 64 MiB."""
    big = encoded(noise(4000, 3000), "PNG", compress_level=0)
    assert len(big) > 30 * MIB
    (workspace / "big.png").write_bytes(big)
    result = await read(ctx, "big.png")
    text = "Read image file [image/jpeg]\n" + resized_note("4000x3000", "2000x1500", "2.00")
    assert (result.is_error, result.content[0]) == (False, TextContent(text=text))
    assert opened(result.content[1]).size == (1200, 900)


async def test_read_converts_a_bmp_to_png(ctx: ToolContext, workspace: Path) -> None:
    picture = gradient(64, 48)
    (workspace / "pic.bmp").write_bytes(encoded(picture, "BMP"))
    result = await read(ctx, "pic.bmp")
    text = "Read image file [image/png]\n[Image converted from image/bmp to image/png.]"
    assert result.content[0] == TextContent(text=text)
    image = opened(result.content[1])
    assert (image.format, image.size) == ("PNG", (64, 48))
    assert image.convert("RGB").tobytes() == picture.tobytes()
    assert result.details == {"kind": "image", "content": text, "mimeType": "image/png"}


async def test_read_sends_a_small_png_byte_for_byte(ctx: ToolContext, workspace: Path) -> None:
    png = encoded(gradient(40, 30), "PNG")
    (workspace / "small.png").write_bytes(png)
    result = await read(ctx, "small.png")
    assert result.content == [
        TextContent(text="Read image file [image/png]"),
        ImageContent(data=base64.b64encode(png).decode(), mimeType="image/png"),
    ]


async def test_read_answers_a_decompression_bomb_with_openclaws_note(
    ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "bomb.png").write_bytes(bomb_png())
    result = await read(ctx, "bomb.png")
    text = (
        "Read image file [image/png]\n"
        "[Image omitted: could not be resized below the inline image size limit.]"
    )
    assert (result.is_error, result.content) == (False, [TextContent(text=text)])
    assert result.details == {"kind": "text", "content": text}


_LABEL = "[session:history] omitted image payload"


@pytest.mark.parametrize(
    ("data", "max_bytes", "text"),
    [
        (
            base64.b64encode(bomb_png()).decode(),
            DEFAULT_MAX_BYTES,
            f"{_LABEL}: RastermillError: Image dimensions exceed the 25,000,000 pixel input "
            "limit: 100000x100000 (10000000000 pixels)",
        ),
        (
            base64.b64encode(b"not an image at all").decode(),
            DEFAULT_MAX_BYTES,
            f"{_LABEL}: RastermillError: Unable to determine image dimensions; refusing to process",
        ),
        ("@@@@", DEFAULT_MAX_BYTES, f"{_LABEL}: invalid base64"),
        ("   ", DEFAULT_MAX_BYTES, "[session:history] omitted empty image payload"),
        (
            "A" * (15 * MIB),
            DEFAULT_MAX_BYTES,
            f"{_LABEL}: image exceeds input size limit (10.00MB)",
        ),
        (
            base64.b64encode(encoded(gradient(40, 30), "PNG")).decode(),
            20,
            f"{_LABEL}: Error: Image could not be reduced below 20B (got ",
        ),
    ],
    ids=["bomb", "not-an-image", "invalid-base64", "empty", "over-10-mib", "cannot-fit"],
)
async def test_an_image_that_cannot_be_used_becomes_openclaws_text(
    data: str, max_bytes: int, text: str
) -> None:
    with trio.fail_after(60):
        [block] = await trio.to_thread.run_sync(
            lambda: sanitize_blocks(
                [ImageContent(data=data, mimeType="image/png")],
                "session:history",
                max_bytes=max_bytes,
            )
        )
    assert isinstance(block, TextContent) and block.text.startswith(text)
    if max_bytes == 20:
        assert block.text.endswith("B)")
    else:
        assert block.text == text


async def test_a_tool_results_image_over_5_mib_becomes_a_jpeg_and_the_rest_stays() -> None:
    png = encoded(noise(1200, 1200, "RGBA"), "PNG", compress_level=1)
    small = encoded(gradient(10, 10), "PNG")
    assert len(png) > 5 * MIB
    result = ToolResult(
        content=[
            TextContent(text="two pictures"),
            ImageContent(data=base64.b64encode(png).decode(), mimeType="image/png"),
            # A type the block gets wrong: OpenClaw names it by its bytes.
            ImageContent(data=base64.b64encode(small).decode(), mimeType="image/webp"),
        ],
        details={"n": 2},
    )
    with trio.fail_after(60):
        out = await sanitize_result_images(result)
    text, big, kept = out.content
    assert text == TextContent(text="two pictures") and out.details == {"n": 2}
    assert isinstance(big, ImageContent) and big.mimeType == "image/jpeg"
    assert len(base64.b64decode(big.data)) <= DEFAULT_MAX_BYTES
    assert opened(big).size == (1200, 1200)
    assert kept == ImageContent(data=base64.b64encode(small).decode(), mimeType="image/png")


async def test_a_result_without_images_is_returned_as_it_is() -> None:
    result = ToolResult(content=[TextContent(text="no pictures")])
    assert await sanitize_result_images(result) is result


async def test_a_smaller_max_side_fits_the_image_in_it() -> None:
    png = encoded(gradient(900, 600), "PNG")
    result = ToolResult(content=[ImageContent(data=base64.b64encode(png).decode(), mimeType="x")])
    with trio.fail_after(60):
        out = await sanitize_result_images(result, "read:p.png", max_side=300)
    assert opened(out.content[0]).size == (300, 200)
