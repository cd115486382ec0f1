"""Reply shaping for the agent loop: silent replies, chat delta throttling, final payloads.

Everything here is pure and sans-IO: callers pass text and time in and get decisions back.

- `is_silent_reply` / `SilentStreamFilter`: the `NO_REPLY` token ([A] `src/auto-reply/tokens.ts`).
  A reply whose whole text is the token (case-insensitive, repeated tokens and surrounding
  whitespace allowed) or the JSON envelope `{"action":"NO_REPLY"}` is silent and dropped. A
  *trailing* token after real text does not silence a reply and is left in place. While text
  streams, a leading token is stripped and anything that could still grow into the token or the
  envelope (`N`, `no_`, `{"action":"NO_`, ...) is held back, so nothing of it leaks.
- `ChatDeltaThrottle`: at most one chat `delta` per 150 ms per run, flushed before a tool start
  and before `final` (protocol notes §3.2).
- `normalize_for_dedupe` / `dedupe_against_sent`: drop final payloads that repeat what the
  `message` tool already sent ([A] `pi-embedded-helpers/messaging-dedupe.ts`).
- `build_final_payloads`: the run's final reply payloads ([A] `pi-embedded-runner/run/payloads.ts`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Final, Literal, NamedTuple

import attrs
import msgspec

__all__ = [
    "CHAT_DELTA_INTERVAL_MS",
    "SILENT_TOKEN",
    "ChatDeltaThrottle",
    "DeltaEmit",
    "ReasoningMode",
    "ReplyPayload",
    "SilentStreamFilter",
    "ToolErrorInfo",
    "build_final_payloads",
    "dedupe_against_sent",
    "format_reasoning",
    "is_messaging_duplicate",
    "is_silent_reply",
    "normalize_for_dedupe",
    "strip_leading_silent_token",
]

SILENT_TOKEN: Final = "NO_REPLY"
CHAT_DELTA_INTERVAL_MS: Final = 150
_MIN_DUPLICATE_CHARS: Final = 10

ReasoningMode = Literal["off", "on", "stream"]


# --- the silent token --------------------------------------------------------------------

_HOLD: Final = "hold"
_SILENT: Final = "silent"
_SHOW: Final = "show"
_Verdict = Literal["hold", "silent", "show"]


def _is_token_fragment(text: str, token: str) -> bool:
    """`text` is a non-empty lead fragment of `token` (or the whole token), ignoring case.

    ASCII only: `str.upper` maps a few non-ASCII letters onto ASCII ones, which must not count.
    """
    return 0 < len(text) <= len(token) and text.isascii() and token.startswith(text.upper())


def _starts_with_token(text: str, token: str) -> bool:
    head = text[: len(token)]
    return len(head) == len(token) and head.isascii() and head.upper() == token


# The envelope `{"action":"<token>"}` as a template: a space stands for optional whitespace,
# `$` for the token, any other character for itself.
_ENVELOPE_TEMPLATE: Final = '{ "action" : " $ " } '


def _match_envelope(text: str, token: str) -> Literal["full", "prefix", "no"]:
    """Match `text` (already left-stripped) against the silent JSON envelope.

    "full" when it is a complete envelope, "prefix" when more text could still complete one,
    "no" otherwise.
    """
    i = 0
    n = len(text)
    for part in _ENVELOPE_TEMPLATE:
        if part == " ":
            while i < n and text[i].isspace():
                i += 1
            continue
        if i == n:
            return "prefix"
        if part == "$":
            chunk = text[i : i + len(token)]
            if not _is_token_fragment(chunk, token):
                return "no"
            if len(chunk) < len(token):
                return "prefix"
            i += len(token)
        elif text[i] == part:
            i += 1
        else:
            return "no"
    return "full" if i == n else "no"


def _classify(text: str, token: str, *, final: bool) -> tuple[_Verdict, str]:
    """Decide what of the cumulative `text` may be shown.

    Returns `("hold", "")` while the text could still become silent (only when not final),
    `("silent", "")` for a silent reply, and `("show", visible)` otherwise, where `visible` is
    the text with a leading token (and the whitespace after it) removed.
    """
    stripped = text.lstrip()
    if not stripped:
        return (_SILENT, "") if final else (_HOLD, "")
    envelope = _match_envelope(stripped, token)
    if envelope == "full":
        return (_SILENT, "") if final else (_HOLD, "")
    if envelope == "prefix" and not final:
        return _HOLD, ""

    rest = stripped
    removed_token = False
    while True:
        if _is_token_fragment(rest, token):
            if not final:
                return _HOLD, ""
            if len(rest) == len(token):  # only tokens and whitespace: silent
                return _SILENT, ""
            break  # a dangling fragment at the end of the stream is real text ("NO")
        if not _starts_with_token(rest, token):
            break
        after = rest[len(token)]
        if after.isspace():
            tail = rest[len(token) :].lstrip()
            if not tail:
                return (_SILENT, "") if final else (_HOLD, "")
            rest = tail
            removed_token = True
            continue
        if after.isalnum():  # `NO_REPLYhello`: the token glued to the answer
            rest = rest[len(token) :]
            removed_token = True
        break  # `NO_REPLY_x`, `NO_REPLY.`: not the token, plain text
    return _SHOW, (rest if removed_token else text)


def is_silent_reply(text: str | None, token: str = SILENT_TOKEN) -> bool:
    """True when the whole reply is the silent token (or its JSON envelope).

    Case-insensitive; surrounding whitespace and repeated tokens separated by whitespace are
    allowed. `"Done. NO_REPLY"` is not silent.
    """
    if not text:
        return False
    stripped = text.strip()
    if not stripped:
        return False
    words = stripped.split()
    if all(len(w) == len(token) and _starts_with_token(w, token) for w in words):
        return True
    return _match_envelope(stripped, token) == "full"


def strip_leading_silent_token(text: str, token: str = SILENT_TOKEN) -> str:
    """The reply as it should be shown: a leading token (and what whitespace follows) removed.

    Returns "" for a silent reply. A trailing token is left as is.
    """
    verdict, visible = _classify(text, token, final=True)
    return visible if verdict == _SHOW else ""


@attrs.define
class SilentStreamFilter:
    """Cleans streamed cumulative assistant text so no part of a silent token leaks.

    Feed the cumulative text after every assistant delta. `feed` returns the cleaned cumulative
    text that may be shown, or None while the text could still turn out to be the token (or the
    JSON envelope). Text is released as soon as it can no longer become the token: `"N"` is
    held, `"No,"` is shown. A leading token followed by real text is stripped (`"NO_REPLY\\n
    Hi"` shows `"Hi"`). Once something was shown, later results extend it.

    `finish` gives the final cleaned text: "" for a silent reply, the held text itself when the
    stream ended on a fragment that never became the token.
    """

    token: str = SILENT_TOKEN
    _last: str = attrs.field(default="", init=False)
    # Once text is released the decision only depends on the text seen then: later text that
    # extends it is shown from the same offset without classifying it again.
    _decided: str | None = attrs.field(default=None, init=False)
    _offset: int = attrs.field(default=0, init=False)
    _finished: tuple[str, str] | None = attrs.field(default=None, init=False)

    def feed(self, cumulative: str) -> str | None:
        self._last = cumulative
        if self._decided is not None and cumulative.startswith(self._decided):
            return cumulative[self._offset :]
        verdict, visible = _classify(cumulative, self.token, final=False)
        if verdict != _SHOW:
            self._decided = None
            return None
        self._decided = cumulative
        self._offset = len(cumulative) - len(visible)
        return visible

    def finish(self, cumulative: str | None = None) -> str:
        if cumulative is not None:
            self._last = cumulative
        last = self._last
        known = self._finished
        if known is not None and known[0] is last:
            return known[1]
        verdict, visible = _classify(last, self.token, final=True)
        result = visible if verdict == _SHOW else ""
        self._finished = (last, result)
        return result


# --- chat delta throttle -----------------------------------------------------------------


class DeltaEmit(NamedTuple):
    """One chat `delta` to send: `delta_text` is the wire `deltaText`, `text` the cumulative.

    `replace` is True when `text` does not extend the previously emitted text (the model
    rewrote it); `delta_text` is then the whole of `text`. A named tuple: one is made for
    every chat delta of every run, and a frozen attrs class costs ~5 times as much to make.
    """

    text: str
    delta_text: str
    replace: bool = False


@attrs.define
class ChatDeltaThrottle:
    """Decides when a run's chat `delta` goes out: at most one per `interval_ms`.

    Pure: callers pass the time (`now_ms`, monotonic milliseconds). The first offer emits at
    once; an offer inside the interval is kept as pending and replaced by later offers. Call
    `flush` before a tool `start` and before `final` to send what is pending regardless of the
    interval. `due_ms()` says when a pending delta may go out, for callers that want a timer.
    """

    interval_ms: int = CHAT_DELTA_INTERVAL_MS
    _emitted: str = attrs.field(default="", init=False)
    _pending: str | None = attrs.field(default=None, init=False)
    _last_emit_ms: int | None = attrs.field(default=None, init=False)

    @property
    def emitted_text(self) -> str:
        """The cumulative text of the last emitted delta."""
        return self._emitted

    def has_pending(self) -> bool:
        return self._pending is not None

    def due_ms(self) -> int | None:
        """When the pending text may be emitted, or None when nothing is pending."""
        if self._pending is None:
            return None
        if self._last_emit_ms is None:
            return 0
        return self._last_emit_ms + self.interval_ms

    def offer(self, cumulative_text: str, now_ms: int) -> DeltaEmit | None:
        if cumulative_text == self._emitted:
            self._pending = None
            return None
        self._pending = cumulative_text
        if self._last_emit_ms is not None and now_ms - self._last_emit_ms < self.interval_ms:
            return None
        return self._emit(now_ms)

    def flush(self, now_ms: int) -> DeltaEmit | None:
        if self._pending is None:
            return None
        return self._emit(now_ms)

    def _emit(self, now_ms: int) -> DeltaEmit | None:
        text = self._pending
        assert text is not None
        self._pending = None
        if text == self._emitted:
            return None
        previous = self._emitted
        self._emitted = text
        self._last_emit_ms = now_ms
        if text.startswith(previous):
            return DeltaEmit(text=text, delta_text=text[len(previous) :])
        return DeltaEmit(text=text, delta_text=text, replace=True)


# --- messaging-tool dedupe ---------------------------------------------------------------

# Emoji_Presentation / Extended_Pictographic, approximated by code-point ranges (the stdlib
# `re` has no Unicode property classes), plus the joiners and selectors that glue emoji.
_EMOJI_RE: Final = re.compile(
    "["
    "\u00a9\u00ae\u203c\u2049\u2122\u2139\u2194-\u2199\u21a9\u21aa"
    "\u231a\u231b\u2328\u23cf\u23e9-\u23f3\u23f8-\u23fa\u24c2\u25aa\u25ab\u25b6\u25c0"
    "\u25fb-\u25fe\u2600-\u27bf\u2934\u2935\u2b05-\u2b07\u2b1b\u2b1c\u2b50\u2b55"
    "\u3030\u303d\u3297\u3299"
    "\u200d\u20e3\ufe0e\ufe0f"
    "\U0001f000-\U0001faff\U000e0020-\U000e007f"
    "]"
)
_WHITESPACE_RE: Final = re.compile(r"\s+")


def normalize_for_dedupe(text: str) -> str:
    """Lowercase, emoji stripped, whitespace collapsed to single spaces, trimmed."""
    if not text:
        return ""
    lowered = _EMOJI_RE.sub("", text.strip().lower())
    return _WHITESPACE_RE.sub(" ", lowered).strip()


def _is_duplicate_normalized(normalized: str, normalized_sent: Iterable[str]) -> bool:
    if len(normalized) < _MIN_DUPLICATE_CHARS:
        return False
    return any(
        len(sent) >= _MIN_DUPLICATE_CHARS and (sent in normalized or normalized in sent)
        for sent in normalized_sent
    )


def is_messaging_duplicate(text: str, sent_texts: Sequence[str]) -> bool:
    """True when `text` repeats (contains or is contained in) a text the message tool sent.

    Both sides are normalised with `normalize_for_dedupe`; either shorter than 10 characters
    never counts as a duplicate.
    """
    if not sent_texts:
        return False
    return _is_duplicate_normalized(
        normalize_for_dedupe(text), [normalize_for_dedupe(s) for s in sent_texts]
    )


# --- final payloads ----------------------------------------------------------------------


class ReplyPayload(msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=True):
    """One reply to deliver (OpenClaw `ReplyPayload`, the fields clawlane produces)."""

    text: str | None = None
    mediaUrl: str | None = None
    mediaUrls: list[str] | None = None
    replyToId: str | None = None
    isError: bool = False
    isReasoning: bool = False

    def has_content(self) -> bool:
        return bool((self.text and self.text.strip()) or self.mediaUrl or self.mediaUrls)


def dedupe_against_sent(
    payloads: Sequence[ReplyPayload], sent_texts: Sequence[str]
) -> list[ReplyPayload]:
    """Remove payloads whose text the message tool already sent (see `is_messaging_duplicate`)."""
    if not sent_texts:
        return list(payloads)
    normalized_sent = [normalize_for_dedupe(s) for s in sent_texts]
    return [
        p
        for p in payloads
        if not _is_duplicate_normalized(normalize_for_dedupe(p.text or ""), normalized_sent)
    ]


@attrs.frozen
class ToolErrorInfo:
    """A failed tool call, as the fallback error reply needs it.

    `summary` is the human tool summary (e.g. `"🛠️ exec: ls -la"`); `mutating` says whether
    the call changes state (write, edit, exec, message send, ...): such failures are always
    reported so a reply never confirms an action that did not happen.
    """

    tool_name: str
    summary: str
    error: str | None = None
    mutating: bool = False


# Errors the model is expected to retry itself (validation, missing params): not surfaced for
# non-mutating tools ([A] RECOVERABLE_TOOL_ERROR_KEYWORDS).
_RECOVERABLE_ERROR_KEYWORDS: Final = (
    "required",
    "missing",
    "invalid",
    "must be",
    "must have",
    "needs",
    "requires",
)


def _is_recoverable(error: str | None) -> bool:
    lowered = (error or "").lower()
    return any(k in lowered for k in _RECOVERABLE_ERROR_KEYWORDS)


def format_reasoning(text: str) -> str:
    """Reasoning as a reply: `Thinking`, a blank line, then each non-empty line in italics."""
    stripped = text.strip()
    if not stripped:
        return ""
    lines = "\n".join(f"_{line}_" if line else line for line in stripped.split("\n"))
    return f"Thinking\n\n{lines}"


def _fallback_tool_error(
    tool_errors: Sequence[ToolErrorInfo], *, has_user_facing_reply: bool, verbose: bool
) -> str | None:
    if not tool_errors:
        return None
    mutating = [e for e in tool_errors if e.mutating]
    if mutating:
        failed = mutating[-1]
    else:
        failed = tool_errors[-1]
        if has_user_facing_reply or _is_recoverable(failed.error):
            return None
    summary = failed.summary.strip() or failed.tool_name
    detail = (
        f": {failed.error.strip()}" if verbose and failed.error and failed.error.strip() else ""
    )
    return f"⚠️ {summary} failed{detail}"


def build_final_payloads(
    *,
    assistant_texts: Sequence[str],
    reasoning_text: str | None,
    reasoning_mode: ReasoningMode,
    tool_summaries: Sequence[str],
    verbose: bool,
    model_error: str | None,
    tool_errors: Sequence[ToolErrorInfo],
    messaging_sent_texts: Sequence[str],
    messaging_sent_to_origin: bool,
) -> list[ReplyPayload]:
    """The final reply payloads of a run, in order: model error, tool summaries, reasoning,
    answers, tool-error fallback.

    - The model error text (`model_error`, already user-facing) becomes an `isError` payload;
      assistant texts that merely echo it are dropped.
    - Tool summaries are inlined only when `verbose`.
    - Reasoning becomes its own `isReasoning` payload (`format_reasoning`) when mode is "on";
      "stream" streams it elsewhere and "off" hides it.
    - Silent assistant texts are dropped, a leading token is stripped, texts are trimmed.
    - Texts the message tool already sent are removed (`dedupe_against_sent`); when it sent to
      the originating conversation every final reply is suppressed (returns `[]`).
    - Tool-error fallback `⚠️ <summary> failed[: error]` (`isError`, error detail only when
      `verbose`): always for a mutating tool; for other tools only when no user-facing reply
      exists (no answer left and nothing sent by the message tool) and the error is not one
      the model is expected to recover from (validation, missing parameters).
    """
    if messaging_sent_to_origin:
        return []

    head: list[ReplyPayload] = []
    error_text = (model_error or "").strip()
    if error_text:
        head.append(ReplyPayload(text=error_text, isError=True))
    if verbose:
        head.extend(ReplyPayload(text=s.strip()) for s in tool_summaries if s.strip())
    if reasoning_mode == "on" and reasoning_text:
        formatted = format_reasoning(reasoning_text)
        if formatted:
            head.append(ReplyPayload(text=formatted, isReasoning=True))

    normalized_error = normalize_for_dedupe(error_text) if error_text else ""
    answers: list[ReplyPayload] = []
    for raw in assistant_texts:
        visible = strip_leading_silent_token(raw).strip()
        if not visible:
            continue
        if normalized_error and normalize_for_dedupe(visible) == normalized_error:
            continue
        answers.append(ReplyPayload(text=visible))
    answers = dedupe_against_sent(answers, messaging_sent_texts)
    head = dedupe_against_sent(head, messaging_sent_texts)

    payloads = head + answers
    has_user_facing_reply = bool(answers) or any(s.strip() for s in messaging_sent_texts)
    warning = _fallback_tool_error(
        tool_errors, has_user_facing_reply=has_user_facing_reply, verbose=verbose
    )
    if warning is not None:
        normalized_warning = normalize_for_dedupe(warning)
        if not any(normalize_for_dedupe(p.text or "") == normalized_warning for p in payloads):
            payloads.append(ReplyPayload(text=warning, isError=True))
    return [p for p in payloads if p.has_content()]
