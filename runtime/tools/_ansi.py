"""What a command writes, made safe to keep and to show a model: OpenClaw's output sanitizer.

OpenClaw 2026.9.6 passes every chunk of an exec job's stdout and stderr through a streaming
sanitizer before the chunk is counted, kept or shown (`createStreamingBinaryOutputSanitizer`).
This module does the same, in two steps. (Its whole-text twin, `sanitizeBinaryOutput`, is
applied by OpenClaw's terminal UI to what it displays, never to a tool result: a command
echoed in `process list` reaches the model as written, so it has no counterpart here.)

1. Terminal escape sequences are removed (`AnsiStripper`, across chunks). What counts as one,
   as OpenClaw's parser has it:
   - CSI: `ESC [` or the 8-bit `0x9B`, parameter and intermediate characters (0x20-0x3F),
     a final one (0x40-0x7E). A C0 control inside it is executed, not swallowed (kept in the
     output); CAN or SUB cancels it; ESC, `0x9B` or `0x9D` starts a new sequence; any other
     character ends it and is kept.
   - OSC: `ESC ]` or `0x9D`, its payload, ended by BEL, `ESC \\` or the 8-bit ST `0x9C`.
   - Two-character escapes and the looser "compat" grammar of the `ansi-regex` package:
     `ESC` with prefix characters `[ ] ( ) # ; ?`, up to four digits per `;`/`:`-separated
     parameter, and a final character from `0-9 A-P R-T Z c f-n q-u y = > < ~`.
   - DCS, SOS, PM and APC get nothing of their own: `ESC P` and `ESC X` are two-character
     escapes (their payload stays as text), `ESC ^` and `ESC _` drop only the ESC, and their
     8-bit forms (0x90, 0x98, 0x9E, 0x9F) are C1 controls, escaped below.
2. Unicode format characters (category Cf: soft hyphen, zero-width and bidi controls, BOM,
   tags) and surrogates are removed; every control character (C0, DEL, C1) but tab, LF and CR
   becomes the four characters `\\xNN` (lowercase hex).

A sequence cut by a chunk's end: the streaming stripper carries only a few flags from one
chunk to the next, never the sequence's text, so its memory stays constant however long an
unterminated sequence runs; what it has read of one is dropped as it goes (an OSC never
terminated swallows the rest of the stream, as OpenClaw's does).

The CSI sequences the streaming stripper removes can be reported (`on_csi`, with the
characters after the introducer, e.g. `6n` for a cursor position query) when their parameters
are at most 64 characters; OpenClaw answers a terminal's queries from it.

Bytes become text first (`OutputSanitizer`): UTF-8 decoded incrementally per stream, a broken
sequence replaced by U+FFFD, as Node's decoder does.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable
from typing import Final, Literal

__all__ = [
    "AnsiStripper",
    "OnCsi",
    "OutputSanitizer",
    "escape_controls",
]

OnCsi = Callable[[str], None]
"""Receives a removed CSI sequence without its introducer (`6n`, `?1h`, `31m`)."""

_ESC: Final = 0x1B
_CSI8: Final = 0x9B
_OSC8: Final = 0x9D
_ST8: Final = 0x9C
_BEL: Final = 0x07
_CAN: Final = 0x18
_SUB: Final = 0x1A
_CSI_KEPT: Final = 64
"""The longest CSI parameter text kept for `on_csi`; a longer sequence is removed unreported."""

_INTRODUCER: Final = re.compile("[\x1b\x9b\x9d]")
_OSC_STOP: Final = re.compile("[\x07\x1b\x9c]")
_CSI_RUN: Final = re.compile("[\x20-\x3f]+")
_PREFIX_RUN: Final = re.compile("[\\[\\]()#;?]+")
_NOT_PREFIX: Final = re.compile("[^\\[\\]()#;?]")
_COMPAT_PREFIX: Final = frozenset(b"[]()#;?")
_COMPAT_FINAL: Final = frozenset(b"0123456789@ABCDEFGHIJKLMNOPQRSTUVWXYZcfghijklmnqrstuy=><~")
"""What ends an escape in the streaming grammar (a little wider than the one-text regex's)."""

State = Literal["text", "escape", "osc", "osc-escape", "csi", "compat"]


def _is_digit(code: int) -> bool:
    return 0x30 <= code <= 0x39


class AnsiStripper:
    """Removes escape sequences from a stream of text chunks (see the module docstring); one
    per stream, since a sequence may span chunks. Its state is a few fields, whatever it
    reads."""

    def __init__(self, on_csi: OnCsi | None = None) -> None:
        self._on_csi = on_csi
        self.state: State = "text"
        self._csi: str | None = None  # the CSI's parameters so far, while `on_csi` may get it
        self._prefix_only = False  # the CSI so far is compat prefix characters only
        self._in_params = False  # compat: in the digits
        self._digits = 0  # compat: digits of the current parameter

    def write(self, chunk: str) -> str:
        """`chunk` without the sequences in it, or the part of one it ends or continues."""
        if self.state == "text" and _INTRODUCER.search(chunk) is None:
            return chunk
        out: list[str] = []
        i, end = 0, len(chunk)
        while i < end:
            if self.state == "text":
                found = _INTRODUCER.search(chunk, i)
                if found is None:
                    out.append(chunk[i:])
                    break
                out.append(chunk[i : found.start()])
                i = found.start()
                self._introduce(ord(chunk[i]))
                i += 1
            elif self.state == "osc":
                stop = _OSC_STOP.search(chunk, i)
                if stop is None:
                    break  # the payload is dropped as it comes
                i = stop.start() + 1
                self.state = "osc-escape" if chunk[stop.start()] == "\x1b" else "text"
            else:
                i = self._step(chunk, i, out)
        return "".join(out)

    def _introduce(self, code: int) -> None:
        if code == _CSI8:
            self._start_csi()
        else:
            self.state = "escape" if code == _ESC else "osc"

    def _start_csi(self) -> None:
        self.state = "csi"
        self._prefix_only = True
        self._csi = "" if self._on_csi is not None else None

    def _start_compat(self, *, digit: bool) -> None:
        self.state = "compat"
        self._in_params = digit
        self._digits = 1 if digit else 0

    def _step(self, chunk: str, i: int, out: list[str]) -> int:
        """One character in the states that read a character at a time; the next index (the
        same one when the character ends the sequence and is text)."""
        code = ord(chunk[i])
        if self.state == "osc-escape":
            if code in (0x5C, _BEL, _ST8):
                self.state = "text"
            elif code != _ESC:
                self.state = "osc"
            return i + 1
        if code in (_ESC, _CSI8, _OSC8):
            self._introduce(code)
            return i + 1
        if self.state == "csi":
            return self._csi_step(chunk, i, code, out)
        if self.state == "escape":
            return self._escape_step(i, code)
        return self._compat_step(chunk, i, code)

    def _csi_step(self, chunk: str, i: int, code: int, out: list[str]) -> int:
        if code in (_CAN, _SUB):
            self.state = "text"
        elif code <= 0x1F or code == 0x7F:
            out.append(chunk[i])  # executed inside the sequence: kept
        elif code <= 0x3F:  # parameters and intermediates: a run at once
            run = _CSI_RUN.match(chunk, i)
            assert run is not None
            if self._csi is not None:
                kept = self._csi + run.group()
                self._csi = kept if len(kept) <= _CSI_KEPT else None
            if _NOT_PREFIX.search(run.group()) is not None:
                self._prefix_only = False
            return run.end()
        elif code in (0x5B, 0x5D) and self._prefix_only:
            self._start_compat(digit=False)
        elif code <= 0x7E:
            if self._csi is not None and self._on_csi is not None:
                self._on_csi(self._csi + chunk[i])
            self.state = "text"
        else:
            self.state = "text"
            return i
        return i + 1

    def _escape_step(self, i: int, code: int) -> int:
        if code == 0x5D:
            self.state = "osc"
        elif code == 0x5B:
            self._start_csi()
        elif code in _COMPAT_PREFIX:
            self._start_compat(digit=False)
        elif _is_digit(code):
            self._start_compat(digit=True)
        elif code in _COMPAT_FINAL:
            self.state = "text"
        else:
            self.state = "text"
            return i
        return i + 1

    def _compat_step(self, chunk: str, i: int, code: int) -> int:
        if code in (_CAN, _SUB):
            self.state = "text"
        elif not self._in_params and code in _COMPAT_PREFIX:
            run = _PREFIX_RUN.match(chunk, i)
            assert run is not None
            return run.end()
        elif not self._in_params and _is_digit(code):
            self._in_params, self._digits = True, 1
        elif self._in_params and (_is_digit(code) or code in (0x3A, 0x3B)):
            if code in (0x3A, 0x3B):
                self._digits = 0
            elif self._digits < 4:
                self._digits += 1
            else:
                self.state = "text"  # a fifth digit ends it, and goes with it
        elif code in _COMPAT_FINAL:
            self.state = "text"
        else:
            self.state = "text"
            return i
        return i + 1


# --- controls and format characters ----------------------------------------------------------

_FORMAT_RANGES: Final = (
    "\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e"
    "\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f"
)
"""Unicode's Format category (Cf) as Node 24's regular expressions have it (Unicode 17)."""
_FORMAT: Final = re.compile(f"[{_FORMAT_RANGES}\ud800-\udfff]")
_CONTROL: Final = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def escape_controls(text: str) -> str:
    """`text` without format characters and surrogates, its control characters but tab, LF and
    CR written `\\xNN` (OpenClaw's `sanitizeStrippedBinaryOutput`)."""
    text = _FORMAT.sub("", text)
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


class OutputSanitizer:
    """One output stream of a process, bytes in, sanitized text out: UTF-8 decoded across
    chunks, then `AnsiStripper` (with `on_csi`), then `escape_controls`."""

    def __init__(self, on_csi: OnCsi | None = None) -> None:
        self._decode = codecs.getincrementaldecoder("utf-8")(errors="replace").decode
        self._stripper = AnsiStripper(on_csi)

    def feed(self, data: bytes, *, final: bool = False) -> str:
        """The sanitized text of `data`; `final` at the stream's end (an incomplete UTF-8
        character left is then one U+FFFD)."""
        return escape_controls(self._stripper.write(self._decode(data, final)))
