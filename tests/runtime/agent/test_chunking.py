"""Block streaming: chunk boundaries, code fences, coalescing, settings."""

from __future__ import annotations

import itertools
import re

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from runtime.agent._chunking import (
    BlockChunk,
    BlockChunker,
    BlockCoalescer,
    BlockStreamingChunk,
    BlockStreamingSettings,
    FenceSpan,
    parse_fence_spans,
)


def _stream(chunker: BlockChunker, text: str, step: int = 1) -> list[BlockChunk]:
    blocks: list[BlockChunk] = []
    for i in range(0, len(text), step):
        blocks += chunker.push_blocks(text[i : i + step])
    return blocks + chunker.flush_blocks()


def _all_fences_closed(text: str) -> bool:
    return all(span.closed for span in parse_fence_spans(text))


# --- fences ------------------------------------------------------------------------------


def test_parse_fence_spans() -> None:
    text = "a\n```py\nx\n```\nb\n  ~~~~ sh\n~~~\n  ~~~~~\n````\nopen"
    spans = parse_fence_spans(text)
    assert spans == [
        FenceSpan(start=2, end=13, open_line="```py", marker="```", indent=""),
        FenceSpan(start=16, end=37, open_line="  ~~~~ sh", marker="~~~~", indent="  "),
        FenceSpan(
            start=38, end=len(text), open_line="````", marker="````", indent="", closed=False
        ),
    ]
    assert spans[1].close_line == "  ~~~~"


def test_fence_needs_at_most_three_spaces_and_a_bare_closer() -> None:
    assert parse_fence_spans("    ```\ncode") == []
    (span,) = parse_fence_spans("```\n``` not a closer\n```")
    assert span.closed and span.end == len("```\n``` not a closer\n```")


# --- break ranking -----------------------------------------------------------------------


def test_waits_below_min_chars_and_flushes_the_rest() -> None:
    chunker = BlockChunker(min_chars=20, max_chars=60)
    assert chunker.push("Short text.\n\nMore") == []
    assert chunker.buffered_text == "Short text.\n\nMore"
    assert chunker.flush() == ["Short text.\n\nMore"]
    assert chunker.buffered_text == ""
    assert chunker.flush() == []


def test_paragraph_break_beats_newline_and_sentence() -> None:
    chunker = BlockChunker(min_chars=10, max_chars=60)
    text = (
        "Intro words here.\n\nMore words. And a line\nthen the rest of it goes on past the window"
    )
    assert chunker.push(text)[0] == "Intro words here.\n\n"


def test_newline_beats_sentence_when_no_paragraph_fits() -> None:
    chunker = BlockChunker(min_chars=10, max_chars=60)
    text = (
        "Intro words here. More words here\nand more. Then the rest of it runs on past the window"
    )
    assert chunker.push(text)[0] == "Intro words here. More words here\n"


def test_sentence_beats_whitespace() -> None:
    chunker = BlockChunker(min_chars=10, max_chars=60)
    text = "Intro words here. More words here! And then the rest runs on and on past the window"
    assert chunker.push(text)[0] == "Intro words here. More words here! "


def test_whitespace_then_hard_cut() -> None:
    chunker = BlockChunker(min_chars=10, max_chars=30)
    assert chunker.push("alpha beta gamma delta epsilon zeta") == ["alpha beta gamma delta "]
    chunker = BlockChunker(min_chars=10, max_chars=30)
    assert chunker.push("x" * 70) == ["x" * 30, "x" * 30]
    assert chunker.flush() == ["x" * 10]


def test_breaks_before_min_chars_are_not_taken() -> None:
    chunker = BlockChunker(min_chars=30, max_chars=60)
    text = "Tiny.\n\nThen a much longer paragraph that runs past the window limit here"
    first = chunker.push(text)[0]
    assert not first.endswith("Tiny.\n\n")
    assert len(first) >= 30


def test_paragraph_preference_emits_early_only_on_a_paragraph_break() -> None:
    chunker = BlockChunker(min_chars=10, max_chars=100)
    assert chunker.push("Hello there friend\nsecond line. Third") == []
    assert chunker.push("\n\nNext") == ["Hello there friend\nsecond line. Third\n\n"]
    assert chunker.buffered_text == "Next"


def test_newline_preference_emits_early_on_a_line_break() -> None:
    chunker = BlockChunker(min_chars=10, max_chars=100, break_preference="newline")
    assert chunker.push("Hello there friend. Next") == []
    assert chunker.push("\nmore") == ["Hello there friend. Next\n"]


def test_sentence_preference_emits_early_on_a_sentence_end() -> None:
    chunker = BlockChunker(min_chars=10, max_chars=100, break_preference="sentence")
    assert chunker.push("Hello there friend. Next") == ["Hello there friend. "]
    assert chunker.buffered_text == "Next"


def test_several_blocks_from_one_push() -> None:
    chunker = BlockChunker(min_chars=5, max_chars=40)
    paragraphs = [f"Paragraph number {i} is here." for i in range(4)]
    text = "\n\n".join(paragraphs)
    assert chunker.push(text) == [p + "\n\n" for p in paragraphs[:3]]
    assert chunker.flush() == [paragraphs[3]]


def test_whitespace_only_blocks_are_not_returned() -> None:
    chunker = BlockChunker(min_chars=1, max_chars=10)
    assert chunker.push("   ") == []
    assert chunker.flush() == []
    chunker.push("   ")
    assert [b.source for b in chunker.flush_blocks()] == ["   "]


def test_invalid_sizes() -> None:
    with pytest.raises(ValueError, match="max_chars"):
        BlockChunker(min_chars=1, max_chars=0)
    chunker = BlockChunker(min_chars=500, max_chars=100)
    assert chunker.min_chars == 100


# --- code fences -------------------------------------------------------------------------


def test_never_breaks_inside_a_code_fence() -> None:
    text = "Intro line\n```py\nx = 1\n\ny = 2\n```\nAfter the fence there is more text that goes on"
    chunker = BlockChunker(min_chars=10, max_chars=80)
    assert chunker.push(text)[0] == "Intro line\n```py\nx = 1\n\ny = 2\n```\n"
    streamed = _stream(BlockChunker(min_chars=10, max_chars=80), text)
    assert all(_all_fences_closed(b.text) for b in streamed)
    assert [b.closed for b in streamed] == ["" for _ in streamed]


def test_a_fence_longer_than_max_is_closed_and_reopened() -> None:
    code = "\n".join(f"print({i})" for i in range(30))
    text = f"Here is the code:\n\n```python\n{code}\n```\nDone."
    blocks = _stream(BlockChunker(min_chars=20, max_chars=60), text, step=7)
    assert "".join(b.source for b in blocks) == text
    assert all(len(b.text) <= 60 for b in blocks)
    assert all(_all_fences_closed(b.text) for b in blocks)
    split = [b for b in blocks if b.closed]
    assert len(split) >= 3
    assert all(b.text.endswith("\n```") for b in split)
    continued = [b for b in blocks if b.reopened]
    assert continued and all(b.text.startswith("```python\n") for b in continued)
    # Cut at line ends: no code line is torn apart.
    for block in blocks:
        body = block.source.strip("\n")
        for line in body.split("\n"):
            assert line in text.split("\n")


def test_tilde_fence_keeps_indent_and_info_when_reopened() -> None:
    body = "\n".join(f"  echo {i}" for i in range(12))
    text = f"  ~~~~ sh\n{body}\n  ~~~~\n"
    blocks = _stream(BlockChunker(min_chars=10, max_chars=50), text)
    assert "".join(b.source for b in blocks) == text
    assert blocks[0].closed.endswith("  ~~~~")
    assert all(b.reopened == "  ~~~~ sh\n" for b in blocks[1:])
    assert all(_all_fences_closed(b.text) for b in blocks)


def test_a_single_long_line_in_a_fence_is_cut_mid_line() -> None:
    text = "```\n" + "a" * 200 + "\n```"
    chunker = BlockChunker(min_chars=10, max_chars=50)
    blocks = chunker.push_blocks(text) + chunker.flush_blocks()
    assert blocks[0].text == "```\n" + "a" * 42 + "\n```"
    assert blocks[1].text.startswith("```\naaa")
    assert all(len(b.text) <= 50 and _all_fences_closed(b.text) for b in blocks)


def test_an_open_fence_at_the_end_of_the_stream_is_split_too() -> None:
    text = "```js\n" + "\n".join(f"let v{i} = {i};" for i in range(20))
    blocks = _stream(BlockChunker(min_chars=10, max_chars=60), text)
    assert "".join(b.source for b in blocks) == text
    assert all(_all_fences_closed(b.text) for b in blocks[:-1])
    assert blocks[-1].reopened == "```js\n"


def test_a_hard_cut_never_makes_the_next_block_start_a_fence() -> None:
    chunker = BlockChunker(min_chars=10, max_chars=60)
    blocks = chunker.push_blocks("x" * 60 + "```not a fence at all" + "y" * 60)
    assert blocks[0].text == "x" * 59
    assert not blocks[1].text.startswith("```")


# --- properties --------------------------------------------------------------------------


@st.composite
def _pushes(draw: st.DrawFn, texts: st.SearchStrategy[str]) -> tuple[str, list[str]]:
    text = draw(texts)
    cuts = sorted(draw(st.sets(st.integers(0, len(text)), max_size=12)))
    bounds = [0, *cuts, len(text)]
    return text, [text[a:b] for a, b in itertools.pairwise(bounds)]


@st.composite
def _sizes(draw: st.DrawFn, lowest_max: int) -> tuple[int, int]:
    max_chars = draw(st.integers(lowest_max, 160))
    return draw(st.integers(1, max_chars)), max_chars


@given(
    _pushes(st.text(alphabet="ab `~\n.!?\t#x", max_size=400)),
    _sizes(1),
    st.sampled_from(["paragraph", "newline", "sentence"]),
)
def test_blocks_are_lossless_and_bounded(
    case: tuple[str, list[str]], sizes: tuple[int, int], preference: str
) -> None:
    text, pushes = case
    min_chars, max_chars = sizes
    chunker = BlockChunker(min_chars, max_chars, preference)  # type: ignore[arg-type]
    blocks: list[BlockChunk] = []
    for piece in pushes:
        blocks += chunker.push_blocks(piece)
    blocks += chunker.flush_blocks()
    assert "".join(b.source for b in blocks) == text
    for block in blocks:
        assert block.text == block.reopened + block.source + block.closed
        assert block.source
        assert len(block.text) <= max_chars


_FENCE_LIKE = re.compile(r" {0,3}(?:`{3,}|~{3,})")


def _no_fence_lines(text: str) -> bool:
    return not any(_FENCE_LIKE.match(line) for line in text.split("\n"))


# Backticks and tildes inside lines, never a fence line of their own.
_PROSE = st.text(alphabet="abc .!?\n`~", min_size=1, max_size=80).filter(_no_fence_lines)
_CODE_LINE = st.text(alphabet="abc ()=.#\t`~", max_size=30).filter(_no_fence_lines)


@st.composite
def _fenced(draw: st.DrawFn) -> str:
    marker = draw(st.sampled_from(["```", "~~~", "````", "~~~~~"]))
    indent = draw(st.sampled_from(["", " ", "   "]))
    info = draw(st.sampled_from(["", "py", "sh", "typescript"]))
    lines = draw(st.lists(_CODE_LINE, max_size=12))
    return "\n".join([f"{indent}{marker}{info}", *lines, f"{indent}{marker}"]) + "\n"


_MARKDOWN = st.lists(st.one_of(_PROSE, _fenced()), max_size=8).map("\n".join)


@given(
    _pushes(_MARKDOWN),
    _sizes(40),
    st.sampled_from(["paragraph", "newline", "sentence"]),
)
def test_every_block_of_markdown_has_balanced_fences(
    case: tuple[str, list[str]], sizes: tuple[int, int], preference: str
) -> None:
    text, pushes = case
    min_chars, max_chars = sizes
    chunker = BlockChunker(min_chars, max_chars, preference)  # type: ignore[arg-type]
    blocks: list[BlockChunk] = []
    for piece in pushes:
        blocks += chunker.push_blocks(piece)
    blocks += chunker.flush_blocks()
    for block in blocks:
        assert len(block.text) <= max_chars
        assert _all_fences_closed(block.text), block
    # The blocks, less the synthetic fence lines, concatenate to the input.
    rebuilt = "".join(b.text[len(b.reopened) : len(b.text) - len(b.closed)] for b in blocks)
    assert rebuilt == text


# --- coalescer ---------------------------------------------------------------------------


def test_coalescer_buffers_until_idle_then_flushes() -> None:
    coalescer = BlockCoalescer(min_chars=10, max_chars=100, idle_ms=1000)
    assert coalescer.offer("First block. ", 0) == []
    assert coalescer.offer("Second block. ", 400) == []
    assert coalescer.deadline_ms() == 1400
    assert coalescer.poll(1399) is None
    assert coalescer.poll(1400) == "First block. Second block. "
    assert coalescer.deadline_ms() is None
    assert coalescer.flush() is None


def test_coalescer_idle_flush_waits_for_min_chars() -> None:
    coalescer = BlockCoalescer(min_chars=50, max_chars=100, idle_ms=1000)
    coalescer.offer("tiny", 0)
    assert coalescer.poll(5000) is None
    assert coalescer.deadline_ms() is None  # disarmed until the next offer
    assert coalescer.buffered_text == "tiny"
    assert coalescer.flush() == "tiny"


def test_coalescer_sends_before_passing_max_chars() -> None:
    coalescer = BlockCoalescer(min_chars=5, max_chars=20, idle_ms=1000)
    assert coalescer.offer("0123456789", 0) == []
    assert coalescer.offer("abcdefghijkl", 10) == ["0123456789"]
    assert coalescer.offer("x" * 25, 20) == ["abcdefghijkl", "x" * 25]
    assert coalescer.offer("12345678", 30) == []
    assert coalescer.offer("abcdefghijkl", 40) == ["12345678abcdefghijkl"]
    assert coalescer.flush() is None


def test_coalescer_whitespace_joiner_collapses_separators() -> None:
    coalescer = BlockCoalescer(min_chars=1, max_chars=100, joiner="\n\n")
    coalescer.offer("One.\n\n", 0)
    coalescer.offer("Two.", 1)
    assert coalescer.flush() == "One.\n\nTwo."
    coalescer = BlockCoalescer(min_chars=1, max_chars=100, joiner=" | ")
    coalescer.offer("a", 0)
    coalescer.offer("b", 1)
    assert coalescer.flush() == "a | b"


# --- settings ----------------------------------------------------------------------------


def test_settings_defaults() -> None:
    settings = BlockStreamingSettings()
    assert not settings.enabled
    assert settings.blockStreamingBreak == "text_end"
    assert settings.chunk_limits() == (800, 1200)
    assert settings.coalesce_limits() == (800, 4000, 1000)
    chunker = settings.chunker()
    assert (chunker.min_chars, chunker.max_chars, chunker.break_preference) == (
        800,
        1200,
        "paragraph",
    )


def test_settings_from_agent_defaults_and_clamping() -> None:
    defaults = {
        "model": {"primary": "local/echo"},
        "maxConcurrent": 4,
        "blockStreamingDefault": "on",
        "blockStreamingBreak": "message_end",
        "blockStreamingChunk": {"minChars": 3000, "maxChars": 5000, "breakPreference": "newline"},
        "blockStreamingCoalesce": {"idleMs": 250},
    }
    settings = BlockStreamingSettings.from_agent_defaults(defaults)
    assert settings.enabled
    assert settings.blockStreamingBreak == "message_end"
    assert settings.blockStreamingChunk == BlockStreamingChunk(3000, 5000, "newline")
    assert settings.chunk_limits() == (3000, 4000)
    assert settings.chunk_limits(text_chunk_limit=2000) == (2000, 2000)
    assert settings.coalesce_limits(text_chunk_limit=2000) == (2000, 2000, 250)
    coalescer = settings.coalescer(text_chunk_limit=1500)
    assert (coalescer.min_chars, coalescer.max_chars, coalescer.idle_ms) == (1500, 1500, 250)


@pytest.mark.parametrize(
    ("defaults", "where"),
    [
        ({"blockStreamingChunk": {"maxChars": 0}}, "$.blockStreamingChunk.maxChars"),
        ({"blockStreamingChunk": {"breakPreference": "word"}}, "$.blockStreamingChunk"),
        ({"blockStreamingCoalesce": {"idle": 5}}, "$.blockStreamingCoalesce"),
        ({"blockStreamingDefault": True}, "$.blockStreamingDefault"),
    ],
)
def test_settings_reject_bad_values(defaults: dict[str, object], where: str) -> None:
    with pytest.raises(msgspec.ValidationError, match=re.escape(f"`{where}")):
        BlockStreamingSettings.from_agent_defaults(defaults)
