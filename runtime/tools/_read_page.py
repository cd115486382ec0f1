"""The text OpenClaw 2026.9.6's `read` tool answers for a text file, word for word.

OpenClaw's gateway builds `read` in two layers, both followed here step by step:

- the session tool (`base_page`, its createReadTool): the file decoded as UTF-8 (invalid
  bytes as U+FFFD), a BOM dropped, CRLF read as LF; lines from `offset` (1-based), at most
  `limit`, from `cursor` (UTF-16 units) within the first; then one page of it bounded
  (`bounded_page`, its createBoundedReadTextPage) to `min(50 KB, max_bytes)` bytes and 2 000
  lines, with a continuation notice (`[Read output capped at 32KB for this call. Use
  offset=N to continue.]`, or `[K more lines in file. Use offset=N to continue.]` under a
  `limit`); a first line longer than the page is cut and continued by `cursor`. The plain
  answers: "File is empty (0 bytes).", "File contains no readable text (N bytes).",
  "Offset N is beyond end of file (M lines total). Retry with offset <= M.", "Cursor C is at
  or beyond the end of line N (K characters).", "File contains N blank lines.";
- the gateway's paging (`read_text`, its executeReadWithAdaptivePaging): up to 4 such pages
  joined while they fit `max_bytes` (its adaptive page size: 10% of the model's context
  window at 4 characters a token, 32 KB to 128 KB; 32 KB when the window is unknown) and the
  model's budget for a tool result (`Budget`).

The result's details are OpenClaw's: `{kind: "text", content}` or `{kind: "truncated",
content, truncation: {...}, continuation: {kind: "line"|"cursor", offset, limit?, cursor?}}`.
All arithmetic is on UTF-16 code units (`_js_text`), as OpenClaw's is. Pure functions.
"""

from __future__ import annotations

import math
import re
from typing import Any, Final, NamedTuple

from ._js_text import (
    Budget,
    estimate_chars,
    fits_budget,
    format_size,
    slice_to_budget,
    text,
    truncate_utf8_prefix,
    units,
    utf8_length,
)

__all__ = ["ReadError", "ReadPage", "adaptive_max_bytes", "decode_file", "read_text"]

DEFAULT_MAX_LINES: Final = 2000
DEFAULT_MAX_BYTES: Final = 50 * 1024
DEFAULT_READ_PAGE_MAX_BYTES: Final = 32 * 1024
MAX_ADAPTIVE_READ_MAX_BYTES: Final = 128 * 1024
MAX_ADAPTIVE_READ_PAGES: Final = 4

_NOTICE: Final = re.compile(
    r"\n\n\[(?:Showing (?:lines|part of line) [^\]]*|Read output capped [^\]]*"
    r"|\d+ more lines? in file\. [^\]]*)\]\s*\Z"
)

Continuation = dict[str, Any]
"""`{kind: "line", offset, limit?}` or `{kind: "cursor", offset, cursor, limit?}`."""


class ReadError(Exception):
    """What OpenClaw's read throws (its message becomes the error result's text)."""


class ReadPage(NamedTuple):
    """A page: the text for the model (code units) and the details (their strings too)."""

    text: str
    details: dict[str, Any]


def adaptive_max_bytes(context_window: int | None) -> int:
    """OpenClaw's page size for a model's context window (resolveAdaptiveReadMaxBytes)."""
    if context_window is None or context_window <= 0:
        return DEFAULT_READ_PAGE_MAX_BYTES
    wanted = math.floor(context_window * 4 * 0.1)
    return min(max(wanted, DEFAULT_READ_PAGE_MAX_BYTES), MAX_ADAPTIVE_READ_MAX_BYTES)


def positive_limit(limit: float | None) -> int:
    """OpenClaw's normalizePositiveLimit: floored, at least 1, 2 000 when not finite."""
    if limit is None or not math.isfinite(limit):
        return DEFAULT_MAX_LINES
    return max(1, math.floor(limit))


def decode_file(data: bytes) -> str:
    """A file's text as OpenClaw's read sees it: UTF-8 (U+FFFD for invalid bytes), one BOM
    dropped, CRLF as LF; as code units."""
    decoded = units(data.decode("utf-8", "replace"))
    return decoded.removeprefix("\ufeff").replace("\r\n", "\n")


# --- one page ------------------------------------------------------------------------------


def continuation_notice(
    continuation: Continuation, max_bytes: int, shown: tuple[int, int] | None = None
) -> str:
    """formatReadContinuationNotice; `shown` is (start line, total lines) when not adaptive."""
    cursor = f", cursor={continuation['cursor']}" if continuation["kind"] == "cursor" else ""
    limit = f", limit={continuation['limit']}" if continuation.get("limit") is not None else ""
    use = f"offset={continuation['offset']}{cursor}{limit}"
    if shown is None:
        size = re.sub(r"\.0(?=KB)", "", format_size(max_bytes))
        return f"\n\n[Read output capped at {size} for this call. Use {use} to continue.]"
    start, total = shown
    if continuation["kind"] == "cursor":
        label, action = f"part of line {start}", "Use read with"
    else:
        label, action = f"lines {start}-{continuation['offset'] - 1} of {total}", "Use"
    return f"\n\n[Showing {label} ({format_size(max_bytes)} limit). {action} {use} to continue.]"


class _Head(NamedTuple):
    content: str
    truncated: bool
    truncated_by: str | None
    total_lines: int
    total_bytes: int
    output_lines: int
    first_line_exceeds_limit: bool


def _truncate_head(content: str, max_bytes: int, max_lines: int = DEFAULT_MAX_LINES) -> _Head:
    """OpenClaw's truncateHead: whole lines from the start within both limits."""
    total_lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
    total_bytes = utf8_length(content)
    if total_lines <= max_lines and total_bytes <= max_bytes:
        return _Head(content, False, None, total_lines, total_bytes, total_lines, False)
    first_line = content.split("\n", 1)[0]
    if total_lines > 0 and utf8_length(first_line) > max_bytes:
        return _Head("", True, "bytes", total_lines, total_bytes, 0, True)
    lines: list[str] = []
    used = 0
    by = "lines" if total_lines > max_lines else "bytes"
    start = 0
    while len(lines) < min(total_lines, max_lines):
        newline = content.find("\n", start)
        end = len(content) if newline == -1 else newline
        line = content[start:end]
        size = utf8_length(line) + (1 if lines else 0)
        if used + size > max_bytes:
            by = "bytes"
            break
        lines.append(line)
        start = end + 1
        used += size
    if total_lines > max_lines and len(lines) >= max_lines and used <= max_bytes:
        by = "lines"
    return _Head("\n".join(lines), True, by, total_lines, total_bytes, len(lines), False)


def _limited(limit: int | None) -> dict[str, int]:
    return {} if limit is None else {"limit": limit}


class _Span(NamedTuple):
    """Which lines a page holds: `start`-`end` (1-based) of `total`, from `cursor` within
    the first, under a `limit` of lines (None: none given)."""

    start: int
    end: int
    total: int
    cursor: int | None
    limit: int | None


def _complete_page(
    span: _Span,
    selected: str,
    notice: str,
    continuation: Continuation | None,
    sizes: tuple[int, int],
) -> ReadPage:
    """The page of all `selected` lines, with the limit's `notice` if any (`sizes`: the
    selection's bytes and the page's byte budget)."""
    if not notice:
        return ReadPage(selected, {"kind": "text", "content": selected})
    by_cursor = continuation is not None and continuation["kind"] == "cursor"
    go_on = continuation or {"kind": "line", "offset": span.end + 1, "limit": span.limit}
    shown = go_on["offset"] - span.start if by_cursor else span.end - span.start + 1
    content_bytes, page_max_bytes = sizes
    truncation = {
        "truncated": True,
        "truncatedBy": "bytes" if by_cursor else "lines",
        "totalLines": span.total,
        "totalBytes": content_bytes,
        "outputLines": shown,
        "outputBytes": utf8_length(selected),
        "lastLinePartial": by_cursor,
        "firstLineExceedsLimit": False,
        "maxLines": DEFAULT_MAX_LINES if span.limit is None else span.limit,
        "maxBytes": page_max_bytes,
    }
    details = {"kind": "truncated", "content": selected, "continuation": go_on}
    return ReadPage(selected + notice, details | {"truncation": truncation})


def _cut_page(
    span: _Span, cut: _Head, first_line: str, budget_bytes: int, max_bytes: int
) -> ReadPage:
    """The page of the lines (or the first line's part) that fit `budget_bytes`."""
    if cut.first_line_exceeds_limit:
        shown_text = truncate_utf8_prefix(first_line, budget_bytes)
        go_on: Continuation = {"kind": "cursor", "offset": span.start}
        go_on |= {"cursor": (span.cursor or 0) + len(shown_text)} | _limited(span.limit)
    else:
        shown_text = cut.content
        next_offset = span.start + cut.output_lines
        go_on = {"kind": "line", "offset": next_offset}
        if span.limit is not None:
            go_on["limit"] = max(1, span.end - next_offset + 1)
    truncation = {
        "truncated": True,
        "truncatedBy": cut.truncated_by,
        "totalLines": span.total,
        "totalBytes": cut.total_bytes,
        "outputLines": cut.output_lines,
        "outputBytes": utf8_length(shown_text),
        "lastLinePartial": go_on["kind"] == "cursor",
        "firstLineExceedsLimit": False,
        "maxLines": DEFAULT_MAX_LINES,
        "maxBytes": budget_bytes,
    }
    details = {
        "kind": "truncated",
        "content": shown_text,
        "truncation": truncation,
        "continuation": go_on,
    }
    return ReadPage(shown_text + continuation_notice(go_on, max_bytes), details)


def bounded_page(
    content: str,
    *,
    start_line: int,
    end_line: int,
    total_lines: int,
    max_bytes: int,
    page_max_bytes: int,
    cursor: int | None = None,
    limit: int | None = None,
    continuation: Continuation | None = None,
    budget: Budget | None = None,
    prefix: str = "",
) -> ReadPage:
    """OpenClaw's createBoundedReadTextPage, adaptive (its gateway's read)."""
    span = _Span(start_line, end_line, total_lines, cursor, limit)
    remaining = total_lines - end_line
    if continuation is not None:
        limit_notice = continuation_notice(continuation, max_bytes)
    elif limit is not None and remaining > 0:
        s = "" if remaining == 1 else "s"
        limit_notice = (
            f"\n\n[{remaining} more line{s} in file. Use offset={end_line + 1} to continue.]"
        )
    else:
        limit_notice = ""
    sizes = (utf8_length(content), page_max_bytes)
    if (
        end_line - start_line < DEFAULT_MAX_LINES
        and sizes[0] + utf8_length(limit_notice) <= page_max_bytes
        and fits_budget(prefix + content + limit_notice, budget)
    ):
        return _complete_page(span, content, limit_notice, continuation, sizes)
    first_line = content.split("\n", 1)[0]
    by_cursor_estimate = {"kind": "cursor", "offset": start_line}
    by_cursor_estimate["cursor"] = (cursor or 0) + len(first_line)
    by_line_estimate = {"kind": "line", "offset": total_lines + 1}
    reserved = max(
        utf8_length(continuation_notice(by_cursor_estimate | _limited(limit), max_bytes)),
        utf8_length(continuation_notice(by_line_estimate | _limited(limit), max_bytes)),
    )
    head = truncate_utf8_prefix(content, max(0, page_max_bytes - reserved))
    if budget is not None:
        head = slice_to_budget(head, budget.max_chars - reserved - estimate_chars(prefix))
        head = slice_to_budget(
            head, budget.max_context_chars - reserved * 2 - estimate_chars(prefix, 2), 2
        )
    budget_bytes = utf8_length(head)
    cut = _truncate_head(content, budget_bytes)
    if not cut.truncated:
        return _complete_page(span, cut.content, limit_notice, continuation, sizes)
    return _cut_page(span, cut, first_line, budget_bytes, max_bytes)


def _line_end(content: str, start: int) -> int:
    newline = content.find("\n", start)
    return len(content) if newline == -1 else newline


def _select(
    content: str, start_line: int, wanted: int | None
) -> tuple[int, int, tuple[int, int, int], bool]:
    """OpenClaw's line selection: the file's line count (a last line without LF counts, an
    LF at the end starts none), how many lines are selected from `start_line` (0-based), at
    most `wanted`, where the first starts and ends and the last ends, and whether any of
    them has text."""
    length = len(content)
    total = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
    if start_line >= total:
        return total, 0, (0, 0, 0), False
    start = length - len(content.split("\n", start_line)[-1]) if start_line else 0
    count = total - start_line if wanted is None else min(wanted, total - start_line)
    first_end = _line_end(content, start)
    if start_line + count == total:
        last_end = length - 1 if content.endswith("\n") else length
    else:
        last_end = first_end
        for _ in range(count - 1):
            last_end = _line_end(content, last_end + 1)
    has_text = content[start:last_end].strip("\n") != ""
    return total, count, (start, first_end, last_end), has_text


def _is_low(unit: str) -> bool:
    return "\udc00" <= unit <= "\udfff"


def _round_trip(u: str) -> str:
    """Node's utf16le round trip: lone surrogates become U+FFFD (kept as code units)."""
    return units(text(u))


def base_page(
    content: str,
    size: int,
    *,
    offset: int | None,
    limit: float | None,
    cursor: int,
    max_bytes: int,
    budget: Budget | None,
    note: str | None = None,
) -> ReadPage:
    """One call of OpenClaw's session read tool on a file of `size` bytes whose text is
    `content` (`decode_file`), `note` the line it puts first (a resolved file name). Raises
    ReadError where it throws."""
    page = _base_page(
        content,
        size,
        offset=offset,
        limit=limit,
        cursor=cursor,
        max_bytes=max_bytes,
        budget=budget,
        note=note,
    )
    return page if note is None else ReadPage(f"{note}\n{page.text}", page.details)


def _base_page(
    content: str,
    size: int,
    *,
    offset: int | None,
    limit: float | None,
    cursor: int,
    max_bytes: int,
    budget: Budget | None,
    note: str | None,
) -> ReadPage:
    start_line = 0 if offset is None else offset - 1
    wanted = None if limit is None else positive_limit(limit)
    selection = _select(content, start_line, wanted)
    total, count, (selected_start, first_end, selected_end), has_text = selection
    first_length = first_end - selected_start
    if total == 0:
        message = "File is empty (0 bytes)." if size == 0 else None
        message = message or f"File contains no readable text ({size} bytes)."
        return ReadPage(message, {"kind": "text", "content": message})
    if start_line >= total:
        message = (
            f"Offset {offset} is beyond end of file ({total} lines total). "
            f"Retry with offset <= {total}."
        )
        return ReadPage(message, {"kind": "text", "content": message})
    if cursor > 0 and cursor >= first_length:
        more = f" Use offset={start_line + 2} to continue." if start_line + 1 < total else ""
        message = (
            f"Cursor {cursor} is at or beyond the end of line {start_line + 1} "
            f"({first_length} characters).{more}"
        )
        return ReadPage(message, {"kind": "text", "content": message})
    at = selected_start + cursor
    if cursor > 0 and _is_low(content[at]) and "\ud800" <= content[at - 1] <= "\udbff":
        raise ReadError(
            f"Cursor {cursor} splits a UTF-16 surrogate pair; retry with "
            f"cursor={cursor - 1} or cursor={cursor + 1}."
        )
    end_line = start_line + count
    stop = len(content) if end_line == total else selected_end
    selected = content[selected_start + cursor : stop]
    page = bounded_page(
        selected,
        start_line=start_line + 1,
        end_line=end_line,
        total_lines=total,
        cursor=cursor,
        limit=None if limit is None else end_line - start_line,
        max_bytes=max_bytes,
        page_max_bytes=min(DEFAULT_MAX_BYTES, max_bytes)
        - (0 if note is None else utf8_length(note) + 1),
        budget=budget,
        prefix="" if note is None else f"{note}\n",
    )
    shown = page.text
    if not has_text:
        whole = start_line == 0 and end_line == total
        s = "" if count == 1 else "s"
        shown = f"{'File' if whole else 'Selected range'} contains {count} blank line{s}."
        if page.details["kind"] == "truncated":
            shown += page.text[len(page.details["content"]) :]
    details = dict(page.details)
    same = shown == details["content"]
    shown = _round_trip(shown)
    details["content"] = shown if same else _round_trip(details["content"])
    return ReadPage(shown, details)


# --- the gateway's paging --------------------------------------------------------------------


def _with_text(page: ReadPage, shown: str, content: str | None = None) -> ReadPage:
    """withToolResultText: the text replaced, and the details' content when given."""
    if content is not None and page.details.get("kind") in ("text", "truncated"):
        return ReadPage(shown, {"kind": "text", "content": content})
    return ReadPage(shown, page.details)


def _with_continuation(
    first: ReadPage,
    shown: str,
    continuation: Continuation,
    content: str,
    initial_offset: int,
    truncation: dict[str, Any] | None = None,
) -> ReadPage:
    """withReadContinuation: a truncated answer of the pages joined so far."""
    authoritative = first.details.get("truncation") or truncation
    if not authoritative:
        return _with_text(first, shown)
    truncation = authoritative | {
        "outputLines": continuation["offset"] - initial_offset,
        "outputBytes": utf8_length(content),
        "lastLinePartial": continuation["kind"] == "cursor",
    }
    details = {
        "kind": "truncated",
        "content": content,
        "truncation": truncation,
        "continuation": continuation,
    }
    return ReadPage(shown, details)


def _paged(
    content: str,
    size: int,
    *,
    offset: int | None,
    limit: float | None,
    cursor: int | None,
    max_bytes: int,
    budget: Budget | None,
    note: str | None,
) -> ReadPage:
    """executeReadWithAdaptivePaging over `base_page`."""
    explicit = limit is not None
    initial_offset = offset if offset is not None and offset > 0 else 1
    following: Continuation = {"kind": "line" if cursor is None else "cursor"}
    following["offset"] = initial_offset
    if cursor is not None:
        following["cursor"] = cursor
    if explicit:
        following["limit"] = positive_limit(limit)
    first: ReadPage | None = None
    joined_text = joined_content = previous_notice = ""
    joined_bytes = 0
    for page_number in range(MAX_ADAPTIVE_READ_PAGES):
        by_line = following["kind"] == "line"
        page = base_page(
            content,
            size,
            offset=following["offset"],
            limit=following.get("limit", limit),
            cursor=0 if by_line else following["cursor"],
            max_bytes=max_bytes,
            budget=budget,
            note=note,
        )
        first = first or page
        truncation = page.details.get("truncation")
        page_continuation = page.details.get("continuation") if truncation else None
        end_line = following["offset"] - 1 + (truncation["outputLines"] if truncation else 0)
        at_end = truncation is not None and end_line >= truncation["totalLines"]
        raw = page.text
        page_text = _NOTICE.sub("", raw, count=1) if page_continuation or at_end else raw
        page_content = page.details["content"]
        delimiter = "\n" if joined_text and page_text and by_line else ""
        candidate_bytes = joined_bytes + len(delimiter) + utf8_length(page_text)
        candidate = joined_content + delimiter + page_content
        notice = continuation_notice(page_continuation, max_bytes) if page_continuation else ""
        if (
            candidate_bytes + utf8_length(notice) > max_bytes
            or utf8_length(candidate) > max_bytes
            or not fits_budget(candidate, budget)
            or not fits_budget(joined_text + delimiter + page_text + notice, budget)
        ):
            if joined_text:
                return _with_continuation(
                    first, joined_text + previous_notice, following, joined_content, initial_offset
                )
            return _bounded_again(
                (first, page), page_text, following, initial_offset, max_bytes, budget
            )
        if explicit:
            return page
        joined_text += delimiter + page_text
        joined_content, joined_bytes = candidate, candidate_bytes
        if not page_continuation or at_end:
            return _with_text(page, joined_text, joined_content)
        if page_number == MAX_ADAPTIVE_READ_PAGES - 1:
            return _with_continuation(
                first, joined_text + notice, page_continuation, joined_content, initial_offset
            )
        previous_notice = notice
        following = page_continuation
    raise AssertionError("unreachable")  # the last page returns


def _bounded_again(
    pages: tuple[ReadPage, ReadPage],
    page_text: str,
    following: Continuation,
    initial_offset: int,
    max_bytes: int,
    budget: Budget | None,
) -> ReadPage:
    """A first page over the gateway's page size, bounded once more to it (`pages`: the
    first page and this one)."""
    first, page = pages
    truncation = page.details.get("truncation")
    page_content: str = page.details["content"]
    lines = page_content.count("\n") + 1
    ends = page_text.endswith(page_content)
    prefix = page_text[: len(page_text) - len(page_content)] if ends else ""
    start = following["offset"]
    bounded = bounded_page(
        page_content,
        start_line=start,
        end_line=start + lines - 1,
        total_lines=truncation["totalLines"] if truncation else start + lines - 1,
        continuation=page.details.get("continuation") if truncation else None,
        cursor=following.get("cursor"),
        limit=following.get("limit"),
        max_bytes=max_bytes,
        page_max_bytes=min(DEFAULT_MAX_BYTES, max_bytes) - utf8_length(prefix),
        prefix=prefix,
        budget=budget,
    )
    if bounded.details["kind"] == "text":
        return _with_text(page, prefix + bounded.text, bounded.details["content"])
    return _with_continuation(
        first,
        prefix + bounded.text,
        bounded.details["continuation"],
        bounded.details["content"],
        initial_offset,
        bounded.details["truncation"],
    )


def read_text(
    data: bytes,
    *,
    offset: int | None,
    limit: float | None,
    cursor: int | None,
    context_window: int | None = None,
    note: str | None = None,
) -> tuple[str, dict[str, Any]]:
    """OpenClaw's gateway `read` of a text file's bytes: the result text and details (for
    a model of `context_window` tokens; None: unknown; `note`: a line put first, the file
    name resolved). Raises ReadError where it throws."""
    page = _paged(
        decode_file(data),
        len(data),
        offset=offset,
        limit=limit,
        cursor=cursor,
        max_bytes=adaptive_max_bytes(context_window),
        budget=Budget.for_context_window(context_window),
        note=note,
    )
    details = page.details
    truncation, continuation = details.get("truncation"), details.get("continuation")
    content = text(details["content"])
    if truncation and continuation:
        details = {
            "kind": "truncated",
            "content": content,
            "truncation": truncation,
            "continuation": continuation,
        }
    else:
        details = {"kind": "text", "content": content}
    return text(page.text), details
