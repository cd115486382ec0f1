"""Block streaming: a run's answer delivered as block replies while it streams.

The cleaned assistant text (a silent `NO_REPLY` never becomes a block) is cut by
`BlockChunker` and merged by `BlockCoalescer` (`_chunking`); with `text_end` blocks are
emitted as they are ready and flushed at the end of each model turn (before a tool starts, at
the end), with `message_end` the text is held until then. With reasoning "on", a model turn's
reasoning goes out as its own block before its answer.

Everything here is synchronous and never blocks (no checkpoints): the pipeline is fed from the
turn's event stream. The coalescer's idle flush needs a `BlockFlusher` task (one per gateway,
like `ChatFlusher`).
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
import trio

from ._chunking import (
    DEFAULT_TEXT_CHUNK_LIMIT,
    BlockChunker,
    BlockCoalescer,
    BlockStreamingSettings,
)
from ._flusher import DeadlineFlusher
from ._reply import SilentStreamFilter, format_reasoning

__all__ = ["BlockFlusher", "BlockPipeline", "BlockReply", "BlockSink"]


@attrs.frozen
class BlockReply:
    """One block reply: a piece of the answer (or the reasoning) ready to deliver."""

    text: str
    index: int
    is_reasoning: bool = False
    is_notice: bool = False
    """A context-maintenance notice (OpenClaw's `isCompactionNotice`), not a piece of the
    answer: delivered like a block, never counted in the reply."""


BlockSink = Callable[[BlockReply], None]
"""Receives block replies; synchronous and non-blocking, like `Emit`."""


def _clock_ms() -> int:
    return int(trio.current_time() * 1000)


@attrs.define(eq=False)
class BlockPipeline:
    """One run's block replies: silent-token filter → chunker → coalescer → sink.

    Synchronous; `poll` does the coalescer's idle flush (called by a `BlockFlusher`).
    """

    settings: BlockStreamingSettings
    sink: BlockSink
    reasoning_blocks: bool = False
    text_chunk_limit: int = DEFAULT_TEXT_CHUNK_LIMIT
    flusher: BlockFlusher | None = None
    clock: Callable[[], int] = _clock_ms
    sent: list[BlockReply] = attrs.field(factory=list)
    _filter: SilentStreamFilter = attrs.field(factory=SilentStreamFilter)
    _visible: str = ""
    _pushed: int = 0
    _thinking: str = ""
    _closed: bool = False
    _chunker: BlockChunker = attrs.field(init=False)
    _coalescer: BlockCoalescer = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self._chunker = self.settings.chunker(self.text_chunk_limit)
        self._coalescer = self.settings.coalescer(self.text_chunk_limit)

    @property
    def streams_early(self) -> bool:
        return self.settings.blockStreamingBreak == "text_end"

    def _deliver(self, text: str, *, reasoning: bool = False) -> None:
        if not text.strip():
            return
        block = BlockReply(text=text, index=len(self.sent), is_reasoning=reasoning)
        self.sent.append(block)
        self.sink(block)

    def _offer(self, block: str) -> None:
        for out in self._coalescer.offer(block, self.clock()):
            self._deliver(out)
        if self._coalescer.deadline_ms() is not None and self.flusher is not None:
            self.flusher.add(self)

    def _push(self) -> None:
        new = self._visible[self._pushed :]
        self._pushed = len(self._visible)
        if new:
            for block in self._chunker.push(new):
                self._offer(block)

    def _reasoning_done(self) -> None:
        if self._thinking:
            thinking, self._thinking = self._thinking, ""
            if self.reasoning_blocks:
                self._deliver(format_reasoning(thinking), reasoning=True)

    def on_thinking(self, cumulative: str) -> None:
        """The reasoning of the current model turn so far."""
        self._thinking = cumulative

    def on_text(self, cumulative: str) -> None:
        """The run's assistant text so far (as `progress.text`)."""
        if self._closed:
            return
        self._reasoning_done()
        shown = self._filter.feed(cumulative)
        if shown is None:
            return
        self._visible = shown
        self._pushed = min(self._pushed, len(shown))
        if self.streams_early:
            self._push()

    def boundary(self) -> None:
        """The end of a model turn's text: flush everything buffered."""
        if self._closed:
            return
        self._reasoning_done()
        self._push()
        for block in self._chunker.flush():
            self._offer(block)
        out = self._coalescer.flush()
        if out is not None:
            self._deliver(out)

    def rewind(self, committed: str) -> None:
        """A model turn failed after streaming some text: drop what is still buffered and go
        on from `committed` (the text of the turns that completed). Blocks already delivered
        stay delivered."""
        self._chunker.reset()
        self._coalescer = self.settings.coalescer(self.text_chunk_limit)
        self._filter = SilentStreamFilter()
        shown = self._filter.feed(committed) if committed else None
        self._visible = shown or ""
        self._pushed = len(self._visible)
        self._thinking = ""

    def finish(self) -> None:
        """The run ended: release a held fragment that turned out to be text, flush all."""
        if self._closed:
            return
        final = self._filter.finish()
        if final.startswith(self._visible):
            self._visible = final
        self.boundary()
        self._closed = True

    def close(self) -> None:
        """The run failed or was cancelled: drop what is buffered."""
        self._closed = True

    def due_ms(self) -> int | None:
        return None if self._closed else self._coalescer.deadline_ms()

    def poll(self, now_ms: int) -> None:
        if not self._closed:
            out = self._coalescer.poll(now_ms)
            if out is not None:
                self._deliver(out)


class BlockFlusher(DeadlineFlusher[BlockPipeline]):
    """Runs the coalescers' idle flushes of every run. One task for all runs: start `run`
    in a nursery that outlives the runs (it sleeps while no run has a block waiting)."""

    def __init__(self) -> None:
        super().__init__(_clock_ms)
