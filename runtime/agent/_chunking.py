"""Block streaming: cut streamed assistant text into sendable blocks, and coalesce them.

Pure and sans-IO ([A] `src/agents/pi-embedded-block-chunker.ts`, `src/auto-reply/chunk.ts`,
`src/auto-reply/reply/block-reply-coalescer.ts`, `block-streaming.ts`).

`BlockChunker` buffers text and emits a block once the buffer holds `min_chars`, cut at the best
break that keeps the block within `max_chars`. Breaks rank paragraph (`\\n\\n`) > newline >
sentence end (`.`, `!`, `?` then a space) > whitespace > hard cut. `break_preference` says how
fine a break may be taken while the window is still filling: "paragraph" waits for a paragraph
break, "newline" also takes a line break, "sentence" also a sentence end. Once the buffer reaches
`max_chars` the best break inside the window is taken, whatever its rank.

A block never ends inside a fenced code block (``` or ~~~) unless the fence alone is longer than
`max_chars`: then the block closes the fence at the cut and the next block reopens it with the
same opening line (marker and info string), as OpenClaw does.

Blocks are lossless: separators stay at the end of the block they close, so the `source` of the
blocks, concatenated, is exactly the text pushed. `BlockChunk.text` (what `push` returns) is
`reopened + source + closed`, where the two ends are the synthetic fence lines (usually "").
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final, Literal, Self

import attrs
import msgspec

from ..model._settings import DEFAULT_IDLE_MS as DEFAULT_IDLE_MS
from ..model._settings import DEFAULT_MAX_CHARS as DEFAULT_MAX_CHARS
from ..model._settings import DEFAULT_MIN_CHARS as DEFAULT_MIN_CHARS
from ..model._settings import BlockStreamingChunk as BlockStreamingChunk
from ..model._settings import BlockStreamingCoalesce as BlockStreamingCoalesce
from ..model._settings import BreakPreference as BreakPreference

__all__ = [
    "DEFAULT_TEXT_CHUNK_LIMIT",
    "BlockChunk",
    "BlockChunker",
    "BlockCoalescer",
    "BlockStreamingChunk",
    "BlockStreamingCoalesce",
    "BlockStreamingSettings",
    "BreakPreference",
    "FenceSpan",
    "parse_fence_spans",
]

DEFAULT_TEXT_CHUNK_LIMIT: Final = 4000


# --- fences ------------------------------------------------------------------------------

_FENCE_LINE_RE: Final = re.compile(r"( {0,3})(`{3,}|~{3,})(.*)")


@attrs.frozen
class FenceSpan:
    """A fenced code block: `start` is its opening line's first index, `end` the index just
    after its closing marker (the newline there, or the text's end for an unclosed fence).

    A break at `i` is inside the fence when `start < i < end`, or `start < i <= end` for a fence
    not closed yet (more text may still belong to it).
    """

    start: int
    end: int
    open_line: str
    marker: str
    indent: str
    closed: bool = True

    @property
    def close_line(self) -> str:
        return f"{self.indent}{self.marker}"


def parse_fence_spans(text: str) -> list[FenceSpan]:
    """The fenced code blocks of `text`, in order; an unclosed fence runs to the end."""
    spans: list[FenceSpan] = []
    open_start = -1
    open_line = marker = indent = ""
    offset = 0
    n = len(text)
    while offset <= n:
        newline = text.find("\n", offset)
        line_end = n if newline == -1 else newline
        line = text[offset:line_end].removesuffix("\r")
        match = _FENCE_LINE_RE.fullmatch(line)
        if match is not None:
            if open_start < 0:
                open_start = offset
                open_line, indent, marker = line, match[1], match[2]
            elif (
                match[2][0] == marker[0]
                and len(match[2]) >= len(marker)
                and not match[3].strip(" \t")
            ):
                spans.append(FenceSpan(open_start, line_end, open_line, marker, indent))
                open_start = -1
        if newline == -1:
            break
        offset = newline + 1
    if open_start >= 0:
        spans.append(FenceSpan(open_start, n, open_line, marker, indent, closed=False))
    return spans


def _fence_at(spans: list[FenceSpan], index: int) -> FenceSpan | None:
    for span in spans:
        if span.start >= index:
            return None
        if index < span.end or (index == span.end and not span.closed):
            return span
    return None


_FENCE_PREFIX_RE: Final = re.compile(r" {0,3}(?:`{0,2}|~{0,2})")


def _mid_line_cut_ok(text: str, index: int, *, final: bool) -> bool:
    """May a block end at `index` in the middle of a line without changing what the Markdown
    means? Not when the next block would start with a fence-like line, nor when the line being
    cut might still turn out to be a fence line (while streaming, a last line like "``" may be
    the start of "```")."""
    if _FENCE_LINE_RE.match(text, index) is not None:
        return False
    if final:
        return True
    line_start = text.rfind("\n", 0, index) + 1
    if "\n" in text[index:]:
        return True
    # The line is still growing: both halves must be unable to become a fence line.
    return (
        _FENCE_PREFIX_RE.fullmatch(text, index) is None
        and _FENCE_PREFIX_RE.fullmatch(text, line_start) is None
    )


# --- the chunker -------------------------------------------------------------------------


@attrs.frozen
class BlockChunk:
    """One emitted block. `text` = `reopened + source + closed`; `source` is the slice of the
    pushed text this block carries; `reopened`/`closed` are synthetic fence lines (or "")."""

    text: str
    source: str
    reopened: str = ""
    closed: str = ""


_PARAGRAPH_RE: Final = re.compile(r"\n[ \t]*\n(?:[ \t]*\n)*")
_SENTENCE_RE: Final = re.compile(r"[.!?][ \t]+")
_WHITESPACE_RE: Final = re.compile(r"\s+")

_RANKS: Final = ("paragraph", "newline", "sentence", "whitespace")
_EARLY_RANKS: Final[Mapping[str, tuple[str, ...]]] = {
    "paragraph": ("paragraph",),
    "newline": ("paragraph", "newline"),
    "sentence": ("paragraph", "newline", "sentence"),
}


@attrs.frozen
class _Cut:
    pos: int  # the next block starts here (after the fence close is appended, if any)
    fence: FenceSpan | None = None  # split inside this fence
    reopen_line: str = ""


@attrs.define
class BlockChunker:
    """Cuts streamed text into blocks (see the module docstring for the rules).

    `push` appends text and returns the blocks that became ready; `flush` returns the rest at
    the end of a text block or message. Blocks made only of whitespace are not returned by
    `push`/`flush` (the `*_blocks` variants return every block, for lossless accounting).
    Every returned text is at most `max_chars` long.
    """

    min_chars: int = DEFAULT_MIN_CHARS
    max_chars: int = DEFAULT_MAX_CHARS
    break_preference: BreakPreference = "paragraph"
    _buffer: str = attrs.field(default="", init=False)
    _reopen_len: int = attrs.field(default=0, init=False)

    def __attrs_post_init__(self) -> None:
        if self.max_chars < 1:
            raise ValueError(f"max_chars must be at least 1, not {self.max_chars}")
        self.min_chars = min(max(1, self.min_chars), self.max_chars)
        if self.break_preference not in _EARLY_RANKS:
            raise ValueError(f"unknown break preference {self.break_preference!r}")

    @property
    def buffered_text(self) -> str:
        """Pushed text not yet emitted (without a synthetic fence reopen line)."""
        return self._buffer[self._reopen_len :]

    def has_buffered(self) -> bool:
        return len(self._buffer) > self._reopen_len

    def reset(self) -> None:
        self._buffer = ""
        self._reopen_len = 0

    def push(self, text: str) -> list[str]:
        return [b.text for b in self.push_blocks(text) if b.source.strip()]

    def flush(self) -> list[str]:
        return [b.text for b in self.flush_blocks() if b.source.strip()]

    def push_blocks(self, text: str) -> list[BlockChunk]:
        self._buffer += text
        blocks: list[BlockChunk] = []
        while len(self._buffer) >= self.min_chars and self.has_buffered():
            cut = self._pick_cut(window_full=len(self._buffer) >= self.max_chars, final=False)
            if cut is None:
                break
            blocks.append(self._take(cut))
        return blocks

    def flush_blocks(self) -> list[BlockChunk]:
        blocks: list[BlockChunk] = []
        while self.has_buffered():
            if len(self._buffer) <= self.max_chars:
                blocks.append(self._take(_Cut(len(self._buffer))))
                break
            cut = self._pick_cut(window_full=True, final=True)
            assert cut is not None
            blocks.append(self._take(cut))
        self.reset()
        return blocks

    # -- internals

    def _take(self, cut: _Cut) -> BlockChunk:
        buf = self._buffer
        reopened = buf[: self._reopen_len]
        source = buf[self._reopen_len : cut.pos]
        if cut.fence is None:
            self._buffer = buf[cut.pos :]
            self._reopen_len = 0
            return BlockChunk(text=buf[: cut.pos], source=source, reopened=reopened)
        body = buf[: cut.pos]
        closed = cut.fence.close_line if body.endswith("\n") else f"\n{cut.fence.close_line}"
        reopen = f"{cut.reopen_line}\n"
        self._buffer = reopen + buf[cut.pos :]
        self._reopen_len = len(reopen)
        return BlockChunk(text=body + closed, source=source, reopened=reopened, closed=closed)

    def _pick_cut(self, *, window_full: bool, final: bool) -> _Cut | None:
        buf = self._buffer
        limit = min(len(buf), self.max_chars)
        window = buf[:limit]
        spans = parse_fence_spans(buf)
        ranks = _RANKS if window_full else _EARLY_RANKS[self.break_preference]
        for rank in ranks:
            pos = self._find_break(rank, buf, window, spans, final=final)
            if pos is not None:
                return _Cut(pos)
        if not window_full:
            return None
        return self._hard_cut(buf, limit, spans, final=final)

    def _find_break(
        self, rank: str, buf: str, window: str, spans: list[FenceSpan], *, final: bool
    ) -> int | None:
        """The latest break of this rank in `window` (the head of `buf` a block may take):
        where the next block would start."""
        lo = self.min_chars
        floor = self._reopen_len

        def ok(sep: int, pos: int, *, line_start: bool) -> bool:
            return (
                sep >= lo
                and pos > floor
                and _fence_at(spans, sep) is None
                and (line_start or _mid_line_cut_ok(buf, pos, final=final))
            )

        best: int | None = None
        if rank == "paragraph":
            for m in _PARAGRAPH_RE.finditer(window):
                if ok(m.start(), m.end(), line_start=True):
                    best = m.end()
        elif rank == "newline":
            i = window.rfind("\n")
            while i >= lo:
                if ok(i, i + 1, line_start=True):
                    return i + 1
                i = window.rfind("\n", 0, i)
        elif rank == "sentence":
            for m in _SENTENCE_RE.finditer(window):
                if ok(m.start() + 1, m.end(), line_start=False):
                    best = m.end()
        else:
            for m in _WHITESPACE_RE.finditer(window):
                if ok(m.start(), m.end(), line_start=window[m.end() - 1] == "\n"):
                    best = m.end()
        return best

    def _hard_cut(self, buf: str, limit: int, spans: list[FenceSpan], *, final: bool) -> _Cut:
        fence = _fence_at(spans, limit)
        if fence is None:
            pos = self._settle_mid_line(buf, limit, self._reopen_len + 1, final=final)
            # Settling may step back into a fence whose closing line is still growing.
            fence = _fence_at(spans, pos)
            if fence is None:
                return _Cut(pos)
        close = fence.close_line
        if len(fence.open_line) + len(close) + 3 <= self.max_chars:
            reopen_line = fence.open_line
        elif 2 * len(close) + 3 <= self.max_chars:
            reopen_line = close
        else:
            return _Cut(limit)  # a fence marker longer than a block: nothing sensible to do
        first_body = fence.start + len(fence.open_line) + 1  # just past the opening line
        lowest = max(first_body + 1, self._reopen_len + 1)
        # Keep the closing line out of reach: cutting just before it would leave the next
        # block an empty reopened fence.
        close_start = buf.rfind("\n", 0, fence.end) + 1 if fence.closed else len(buf) + 1
        # Prefer ending the block at a line break inside the fence.
        j = buf.rfind("\n", 0, min(self.max_chars - len(close), close_start - 1))
        if j + 1 >= lowest:
            return _Cut(j + 1, fence, reopen_line)
        pos = min(self.max_chars - len(close) - 1, close_start - 2)
        if pos >= lowest:
            pos = self._settle_mid_line(buf, pos, lowest, final=final)
            return _Cut(pos, fence, reopen_line)
        if fence.start > self._reopen_len:
            return _Cut(fence.start)  # the opening line does not fit: end before the fence
        return _Cut(limit)

    @staticmethod
    def _settle_mid_line(buf: str, pos: int, lowest: int, *, final: bool) -> int:
        """Move a cut back (not below `lowest`) until `_mid_line_cut_ok` or a line start."""
        while pos > lowest and buf[pos - 1] != "\n" and not _mid_line_cut_ok(buf, pos, final=final):
            pos -= 1
        return pos


# --- the coalescer -----------------------------------------------------------------------


@attrs.define
class BlockCoalescer:
    """Merges consecutive blocks into fewer, larger replies. Pure: time is passed in.

    `offer` adds a block and returns what must go out now: the buffer when adding would pass
    `max_chars` (and the block itself when it alone reaches `max_chars`), or the buffer when it
    reaches `max_chars`. Otherwise the idle timer restarts: `poll(now_ms)` at or after
    `deadline_ms()` emits the buffer if it holds at least `min_chars`. `flush` emits whatever is
    buffered (end of message, before a tool result, on abort the caller just drops it).

    `joiner` goes between blocks; when it is whitespace, trailing whitespace of the buffer is
    collapsed into it. `BlockChunker` blocks carry their own separators, so the default is "".
    """

    min_chars: int = DEFAULT_MIN_CHARS
    max_chars: int = DEFAULT_TEXT_CHUNK_LIMIT
    idle_ms: int = DEFAULT_IDLE_MS
    joiner: str = ""
    _buffer: str = attrs.field(default="", init=False)
    _deadline_ms: int | None = attrs.field(default=None, init=False)

    def __attrs_post_init__(self) -> None:
        if self.max_chars < 1:
            raise ValueError(f"max_chars must be at least 1, not {self.max_chars}")
        self.min_chars = min(max(1, self.min_chars), self.max_chars)
        self.idle_ms = max(0, self.idle_ms)

    def deadline_ms(self) -> int | None:
        """When `poll` should next be called, or None when no idle flush is armed."""
        return self._deadline_ms

    @property
    def buffered_text(self) -> str:
        return self._buffer

    def offer(self, text: str, now_ms: int) -> list[str]:
        if not text:
            return []
        out: list[str] = []
        combined = self._join(self._buffer, text) if self._buffer else text
        if len(combined) > self.max_chars:
            if self._buffer:
                out.append(self._buffer)
                self._buffer = ""
            if len(text) >= self.max_chars:
                out.append(text)
                self._deadline_ms = None
                return out
            self._buffer = text
        else:
            self._buffer = combined
        if len(self._buffer) >= self.max_chars:
            out.append(self._buffer)
            self._buffer = ""
            self._deadline_ms = None
        else:
            self._deadline_ms = now_ms + self.idle_ms
        return out

    def poll(self, now_ms: int) -> str | None:
        if self._deadline_ms is None or now_ms < self._deadline_ms:
            return None
        self._deadline_ms = None
        if len(self._buffer) < self.min_chars:
            return None  # too small to send alone: wait for more text or the final flush
        return self._take()

    def flush(self) -> str | None:
        self._deadline_ms = None
        return self._take() if self._buffer else None

    def _take(self) -> str:
        text, self._buffer = self._buffer, ""
        return text

    def _join(self, left: str, right: str) -> str:
        if not self.joiner or self.joiner.strip():
            return f"{left}{self.joiner}{right}"
        return f"{left.rstrip()}{self.joiner}{right}"


# --- settings ----------------------------------------------------------------------------


class BlockStreamingSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The block streaming keys of `agents.defaults`.

    Build it with `from_agent_defaults(config["agents"]["defaults"])`, which ignores the other
    keys there. `chunker()`/`coalescer()` clamp sizes to the channel's `text_chunk_limit`.
    """

    blockStreamingDefault: Literal["on", "off"] = "off"
    blockStreamingBreak: Literal["text_end", "message_end"] = "text_end"
    blockStreamingChunk: BlockStreamingChunk = msgspec.field(default_factory=BlockStreamingChunk)
    blockStreamingCoalesce: BlockStreamingCoalesce = msgspec.field(
        default_factory=BlockStreamingCoalesce
    )

    @classmethod
    def from_agent_defaults(cls, defaults: Mapping[str, Any]) -> Self:
        """Pick the block streaming keys out of `agents.defaults`.

        Raises `msgspec.ValidationError` naming the bad path (e.g. `$.blockStreamingChunk.
        maxChars`) when a value has the wrong type or range.
        """
        picked = {k: defaults[k] for k in cls.__struct_fields__ if k in defaults}
        return msgspec.convert(picked, cls)

    @property
    def enabled(self) -> bool:
        return self.blockStreamingDefault == "on"

    def chunk_limits(self, text_chunk_limit: int = DEFAULT_TEXT_CHUNK_LIMIT) -> tuple[int, int]:
        """(min_chars, max_chars) of the chunker, max clamped to the channel text limit."""
        chunk = self.blockStreamingChunk
        max_chars = max(1, min(chunk.maxChars, text_chunk_limit))
        return min(chunk.minChars, max_chars), max_chars

    def coalesce_limits(
        self, text_chunk_limit: int = DEFAULT_TEXT_CHUNK_LIMIT
    ) -> tuple[int, int, int]:
        """(min_chars, max_chars, idle_ms) of the coalescer."""
        coalesce = self.blockStreamingCoalesce
        limit = max(1, text_chunk_limit)
        max_chars = max(1, min(coalesce.maxChars or limit, limit))
        min_chars = coalesce.minChars or self.blockStreamingChunk.minChars
        return min(min_chars, max_chars), max_chars, coalesce.idleMs

    def chunker(self, text_chunk_limit: int = DEFAULT_TEXT_CHUNK_LIMIT) -> BlockChunker:
        min_chars, max_chars = self.chunk_limits(text_chunk_limit)
        return BlockChunker(
            min_chars=min_chars,
            max_chars=max_chars,
            break_preference=self.blockStreamingChunk.breakPreference,
        )

    def coalescer(self, text_chunk_limit: int = DEFAULT_TEXT_CHUNK_LIMIT) -> BlockCoalescer:
        min_chars, max_chars, idle_ms = self.coalesce_limits(text_chunk_limit)
        return BlockCoalescer(min_chars=min_chars, max_chars=max_chars, idle_ms=idle_ms)
