"""Tool-result images made fit for a model, as OpenClaw 2026.9.6 makes them (Pillow).

Two steps, OpenClaw's two:

- `prepare_read_image` (`read` only; OpenClaw's read tool's `processImage`): a BMP is
  converted to PNG ("[Image converted from image/bmp to image/png.]"); an image over 2000 px a
  side or 4.5 MiB of base64 (`READ_MAX_SIDE`, `READ_MAX_BASE64_BYTES`) is re-encoded within
  them: PNG (zlib level 6, then 9; 8-bit RGBA, rows unfiltered, as OpenClaw's encoder writes
  it) when it has a transparent pixel, else JPEG (quality 80, 85, 70, 55, 40, 35), fit in
  2000 px, then at smaller sides (2048, 1536, 1280, 1024, 800 below that, then 3/4, 1/2, 3/8,
  1/4, 3/16, 1/8 of it); a transparent image none of whose PNGs fit is flattened to JPEG.
  When its size changed it adds "[Image: original WxH, displayed at W'xH'. Multiply
  coordinates by S to map to original image.]". An image it cannot decode or fit becomes a
  note instead ("[Image omitted: ...]", `Prepared.omitted`).
- `sanitize_image` / `sanitize_blocks` (every tool result's images; OpenClaw's
  `sanitizeContentBlocksImages`): an image is kept byte for byte when its header says it is at
  most `max_side` a side (`DEFAULT_MAX_DIMENSION_PX`, 1200; OpenClaw takes it from
  `agents.defaults.imageMaxDimensionPx`, which clawlane's config does not declare yet),
  `max_bytes` (`DEFAULT_MAX_BYTES`, 5 MiB) long and `MAX_INPUT_PIXELS` (25,000,000) pixels;
  else it becomes a JPEG (always: OpenClaw's `resizeToJpeg`) fit in a side from
  min(max_side, its longest side), 1800, 1600, 1400, 1200, 1000, 800 (those not over max_side,
  largest first), at quality 85, 75, 65, 55, 45, 35, the first that is at most max_bytes. An
  image that cannot be made to fit (or decoded, or is over 10 MiB, or not base64) becomes a
  text block "[<label>] omitted image payload: <why>" in OpenClaw's words; `label` is
  "read:<path>" for `read`, "session:history" for other tools' results (the label of
  OpenClaw's replay sanitizer, which is where it bounds them).

Decompression bombs: nothing is decoded before the header's width x height is checked against
`MAX_INPUT_PIXELS` (Pillow's format plugins are opened directly, so its own warning threshold
is never reached). A hostile header becomes the note or text above, never an exception.

All functions here are synchronous CPU work: call them from a worker thread
(`sanitize_result_images` does, `trio.to_thread.run_sync`, not abandoned on cancellation).
"""

from __future__ import annotations

import base64
import binascii
import io
import math
import struct
import zlib
from collections.abc import Sequence
from typing import Final

import attrs
import trio
from PIL import (
    BmpImagePlugin,
    GifImagePlugin,
    Image,
    ImageFile,
    ImageOps,
    JpegImagePlugin,
    PngImagePlugin,
    WebPImagePlugin,
)

from runtime.llm._types import ImageContent, TextContent, UserContent

from ._js_text import js_round
from ._tool import ToolResult

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_DIMENSION_PX",
    "Prepared",
    "prepare_read_image",
    "sanitize_blocks",
    "sanitize_image",
    "sanitize_result_images",
]

DEFAULT_MAX_DIMENSION_PX: Final = 1200
DEFAULT_MAX_BYTES: Final = 5 * 1024 * 1024
MAX_INPUT_BYTES: Final = 10 * 1024 * 1024
"""A base64 image decoding to more is dropped unread (OpenClaw's MAX_IMAGE_INPUT_BYTES)."""
MAX_INPUT_PIXELS: Final = 25_000_000
QUALITY_STEPS: Final = (85, 75, 65, 55, 45, 35)
SIDE_STEPS: Final = (1800, 1600, 1400, 1200, 1000, 800)

READ_MAX_SIDE: Final = 2000
READ_MAX_BASE64_BYTES: Final = 4_718_592
READ_QUALITY_STEPS: Final = (80, 85, 70, 55, 40, 35)
READ_PNG_LEVELS: Final = (6, 9)
_READ_SIDES: Final = (2048, 1536, 1280, 1024, 800)
_READ_FRACTIONS: Final = (0.75, 0.5, 0.375, 0.25, 0.1875, 0.125)

HISTORY_LABEL: Final = "session:history"
INLINE_MIMES: Final = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})

_OPENERS: Final[dict[str, type[ImageFile.ImageFile]]] = {
    "image/jpeg": JpegImagePlugin.JpegImageFile,
    "image/png": PngImagePlugin.PngImageFile,
    "image/gif": GifImagePlugin.GifImageFile,
    "image/webp": WebPImagePlugin.WebPImageFile,
    "image/bmp": BmpImagePlugin.BmpImageFile,
}
_EXIF_ORIENTATION: Final = 0x0112


class ImageError(Exception):
    """Why an image could not be used; `str` is what OpenClaw's `String(err)` shows."""

    def __init__(self, message: str, *, kind: str = "Error") -> None:
        super().__init__(message)
        self.kind = kind

    def __str__(self) -> str:
        return f"{self.kind}: {self.args[0]}"


# --- reading headers and pixels ----------------------------------------------------------------


def sniff_mime(data: bytes) -> str | None:
    """The image type of `data` by its first bytes (JPEG, PNG, GIF, WebP, BMP), or None."""
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data[:2] == b"BM":
        return "image/bmp"
    return None


def _open(data: bytes) -> ImageFile.ImageFile | None:
    """The image's header parsed (no pixels decoded), or None when it is not one we read."""
    opener = _OPENERS.get(sniff_mime(data) or "")
    if opener is None:
        return None
    try:
        image = opener(io.BytesIO(data))
    except Exception:  # a plugin raises SyntaxError, struct.error, EOFError, ... for junk
        return None
    width, height = image.size
    return image if width > 0 and height > 0 else None


def _display_size(image: ImageFile.ImageFile) -> tuple[int, int]:
    """Width and height as shown: a JPEG's EXIF orientation 5-8 swaps them."""
    width, height = image.size
    if isinstance(image, JpegImagePlugin.JpegImageFile):
        try:
            orientation = image.getexif().get(_EXIF_ORIENTATION)
        except Exception:
            orientation = None
        if orientation in (5, 6, 7, 8):
            return height, width
    return width, height


def _check_pixels(width: int, height: int) -> None:
    if width > MAX_INPUT_PIXELS // height:
        raise ImageError(
            f"Image dimensions exceed the {MAX_INPUT_PIXELS:,} pixel input limit: "
            f"{width}x{height} ({width * height} pixels)",
            kind="RastermillError",
        )


def _decode(data: bytes) -> Image.Image:
    """All of `data`'s pixels (its first frame), upright, after the pixel-count check."""
    opened = _open(data)
    if opened is None:
        raise ImageError(
            "Unable to determine image dimensions; refusing to process", kind="RastermillError"
        )
    _check_pixels(*opened.size)
    try:
        opened.load()
        return ImageOps.exif_transpose(opened)
    except Exception as exc:
        raise ImageError(f"Failed to decode image: {exc}", kind="RastermillError") from exc


def _scaled(size: tuple[int, int], box: tuple[int, int]) -> tuple[int, int]:
    """`size` fit inside `box`, never enlarged, rounded (rastermill's scaledDimensions)."""
    width, height = size
    scale = min(1.0, box[0] / width, box[1] / height)
    return max(1, js_round(width * scale)), max(1, js_round(height * scale))


def _resized(image: Image.Image, size: tuple[int, int]) -> Image.Image:
    if image.size == size:
        return image
    return image.resize(size, Image.Resampling.LANCZOS)


def _jpeg(image: Image.Image, quality: int) -> bytes:
    out = io.BytesIO()
    image.convert("RGB").save(out, "JPEG", quality=quality)
    return out.getvalue()


def _png(image: Image.Image, level: int = 6) -> bytes:
    """`image` as OpenClaw's PNG encoder writes one (rastermill's encodePngRgba): 8-bit RGBA,
    no filter on any row, zlib at `level`, no metadata chunks."""
    rgba = image.convert("RGBA")
    width, height = rgba.size
    pixels = rgba.tobytes()
    stride = width * 4
    rows = b"".join(b"\0" + pixels[row : row + stride] for row in range(0, len(pixels), stride))
    header = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
    return b"".join(
        (
            b"\x89PNG\r\n\x1a\n",
            _chunk(b"IHDR", header),
            _chunk(b"IDAT", zlib.compress(rows, level)),
            _chunk(b"IEND", b""),
        )
    )


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _has_transparency(image: Image.Image) -> bool:
    """Whether any pixel is less than opaque (OpenClaw keeps those images PNG)."""
    if image.mode not in ("RGBA", "LA", "PA", "RGBa", "La") and "transparency" not in image.info:
        return False
    alpha = image.convert("RGBA").getchannel("A")
    low, _ = alpha.getextrema()
    return bool(low < 255)  # type: ignore[operator]


def format_bytes(size: int) -> str:
    """OpenClaw's short byte size: "812B", "1.5KB", "5.00MB"."""
    if size < 1024:
        return f"{size}B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f}KB"
    return f"{size / (1024 * 1024):.2f}MB"


# --- read's own step ----------------------------------------------------------------------------


@attrs.frozen
class Prepared:
    """What `read` shows of an image: its bytes and type with notes, or only a note."""

    data: bytes | None
    mime: str
    hints: tuple[str, ...] = ()
    omitted: str | None = None


_CANNOT_CONVERT: Final = (
    "[Image omitted: could not be converted to a supported inline image format.]"
)
_CANNOT_RESIZE: Final = "[Image omitted: could not be resized below the inline image size limit.]"


def prepare_read_image(data: bytes, mime: str) -> Prepared:
    """OpenClaw's read-tool image step (see the module docstring). Never raises for a bad
    image: what it cannot use is `omitted`."""
    hints: list[str] = []
    if mime not in INLINE_MIMES:
        try:
            data = _png(_decode(data))
        except Exception:
            return Prepared(None, mime, omitted=_CANNOT_CONVERT)
        hints.append(f"[Image converted from {mime} to image/png.]")
        mime = "image/png"
    try:
        encoded = _fit_for_read(data, mime)
    except Exception:
        encoded = None
    if encoded is None:
        return Prepared(None, mime, omitted=_CANNOT_RESIZE)
    out, out_mime, original, shown = encoded
    if shown != original:
        scale = original[0] / shown[0]
        hints.append(
            f"[Image: original {original[0]}x{original[1]}, displayed at {shown[0]}x{shown[1]}. "
            f"Multiply coordinates by {scale:.2f} to map to original image.]"
        )
    return Prepared(out, out_mime, tuple(hints))


_Fitted = tuple[bytes, str, tuple[int, int], tuple[int, int]]


def _fit_for_read(data: bytes, mime: str) -> _Fitted | None:
    """`data` within 2000 px a side and 4.5 MiB of base64: as it is, or re-encoded; None when
    nothing fits or the header is unreadable or over the pixel cap."""
    opened = _open(data)
    if opened is None:
        return None
    _check_pixels(*opened.size)
    original = _display_size(opened)
    width, height = original
    small = width <= READ_MAX_SIDE and height <= READ_MAX_SIDE
    if small and _b64len(len(data)) <= READ_MAX_BASE64_BYTES:
        return data, mime, original, original
    image = _decode(data)
    box: tuple[int, int] | None = None
    if width > READ_MAX_SIDE or height > READ_MAX_SIDE:
        scale = min(READ_MAX_SIDE / width, READ_MAX_SIDE / height)
        box = (max(1, math.floor(width * scale)), max(1, math.floor(height * scale)))
    sizes = _read_sizes(original, box)
    if _has_transparency(image):
        found = _search_read(image, original, sizes, png=True)
        if found is not None:
            return found
    return _search_read(image, original, sizes, png=False)


def _read_sizes(original: tuple[int, int], box: tuple[int, int] | None) -> list[tuple[int, int]]:
    """The sizes read's search tries, largest first (rastermill's encodeWithBudget: its
    default sides under the 2000 px fit, then fractions of it; each fit in the original)."""
    target = _scaled(original, box) if box is not None else original
    if box is None:
        sides = list(_READ_SIDES)
    else:
        top = max(target)
        candidates = [top, *(s for s in _READ_SIDES if s < top)]
        candidates += [max(1, math.floor(top * f)) for f in _READ_FRACTIONS]
        sides = sorted(set(candidates), reverse=True)
    sizes: list[tuple[int, int]] = []
    for side in sides:
        side_box = box
        if max(target) > side:
            scale = side / max(target)
            side_box = (
                max(1, math.floor(target[0] * scale)),
                max(1, math.floor(target[1] * scale)),
            )
        sizes.append(_scaled(original, side_box) if side_box is not None else original)
    return sizes


def _search_read(
    image: Image.Image,
    original: tuple[int, int],
    sizes: Sequence[tuple[int, int]],
    *,
    png: bool,
) -> _Fitted | None:
    budget = READ_MAX_BASE64_BYTES // 4 * 3
    for size in sizes:
        scaled = _resized(image, size)
        for step in READ_PNG_LEVELS if png else READ_QUALITY_STEPS:
            out = _png(scaled, step) if png else _jpeg(scaled, step)
            if len(out) <= budget and _b64len(len(out)) <= READ_MAX_BASE64_BYTES:
                return out, "image/png" if png else "image/jpeg", original, size
    return None


def _b64len(size: int) -> int:
    return math.ceil(size / 3) * 4


# --- every tool result's images -----------------------------------------------------------------


@attrs.frozen
class Sanitized:
    data: bytes
    mime: str
    resized: bool


def sanitize_image(
    data: bytes,
    mime: str,
    *,
    max_side: int = DEFAULT_MAX_DIMENSION_PX,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Sanitized:
    """`data` as it is when within the limits, else the first JPEG of OpenClaw's ladder that
    fits (see the module docstring). Raises `ImageError` (OpenClaw's message) otherwise."""
    opened = _open(data)
    size = _display_size(opened) if opened is not None else None
    if size is not None and _within(len(data), size, max_side, max_bytes):
        return Sanitized(data, mime, resized=False)
    start = min(max_side, max(size)) if size is not None else max_side
    grid = sorted({min(max_side, s) for s in (start, *SIDE_STEPS) if min(max_side, s) > 0})
    image: Image.Image | None = None
    smallest: int | None = None
    for side in reversed(grid):
        if image is None:
            image = _decode(data)
        scaled = _resized(image, _scaled(image.size, (side, side)))
        for quality in QUALITY_STEPS:
            out = _jpeg(scaled, quality)
            smallest = len(out) if smallest is None else min(smallest, len(out))
            if len(out) <= max_bytes:
                return Sanitized(out, "image/jpeg", resized=True)
    best = smallest if smallest is not None else len(data)
    raise ImageError(
        f"Image could not be reduced below {format_bytes(max_bytes)} (got {format_bytes(best)})"
    )


def _within(length: int, size: tuple[int, int], max_side: int, max_bytes: int) -> bool:
    width, height = size
    return (
        length <= max_bytes
        and width <= max_side
        and height <= max_side
        and width * height <= MAX_INPUT_PIXELS
    )


def _infer_mime(b64: str) -> str | None:
    if b64.startswith("/9j/"):
        return "image/jpeg"
    if b64.startswith("iVBOR"):
        return "image/png"
    if b64.startswith("R0lGOD"):
        return "image/gif"
    return None


def sanitize_blocks(
    blocks: Sequence[UserContent],
    label: str,
    *,
    max_side: int = DEFAULT_MAX_DIMENSION_PX,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> list[UserContent]:
    """OpenClaw's `sanitizeContentBlocksImages`: each image kept, shrunk, or replaced by a
    text block saying why it was left out; other blocks as they are. CPU work: call it from a
    worker thread."""
    out: list[UserContent] = []
    for block in blocks:
        if not isinstance(block, ImageContent):
            out.append(block)
            continue
        if not block.mimeType:
            out.append(_omitted(label, "missing data or mimeType"))
            continue
        compact = "".join(block.data.split())
        padding = len(compact) - len(compact.rstrip("="))
        if len(compact) * 3 // 4 - padding > MAX_INPUT_BYTES:
            why = f"image exceeds input size limit ({format_bytes(MAX_INPUT_BYTES)})"
            out.append(_omitted(label, why))
            continue
        if not compact:
            out.append(TextContent(text=f"[{label}] omitted empty image payload"))
            continue
        try:
            raw = base64.b64decode(compact, validate=True)
        except (binascii.Error, ValueError):
            out.append(_omitted(label, "invalid base64"))
            continue
        canonical = base64.b64encode(raw).decode("ascii")
        mime = _infer_mime(canonical) or block.mimeType
        try:
            done = sanitize_image(raw, mime, max_side=max_side, max_bytes=max_bytes)
        except ImageError as exc:
            out.append(_omitted(label, str(exc)))
            continue
        except Exception as exc:  # a decoder's own failure: still a text, never a crash
            out.append(_omitted(label, str(ImageError(str(exc)))))
            continue
        data = canonical if not done.resized else base64.b64encode(done.data).decode("ascii")
        out.append(ImageContent(data=data, mimeType=done.mime))
    return out


def _omitted(label: str, why: str) -> TextContent:
    return TextContent(text=f"[{label}] omitted image payload: {why}")


async def sanitize_result_images(
    result: ToolResult, label: str = HISTORY_LABEL, *, max_side: int | None = None
) -> ToolResult:
    """`result` with its images sanitized (`sanitize_blocks`) in a worker thread; the same
    object when it holds no image (no thread then). A checkpoint when it has images; the work
    is not abandoned on cancellation (it finishes, then `Cancelled` is raised)."""
    if not any(isinstance(block, ImageContent) for block in result.content):
        return result
    side = DEFAULT_MAX_DIMENSION_PX if max_side is None else max(1, max_side)
    content = await trio.to_thread.run_sync(
        lambda: sanitize_blocks(result.content, label, max_side=side)
    )
    return ToolResult(content=content, is_error=result.is_error, details=result.details)
