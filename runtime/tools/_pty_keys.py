"""The bytes `process send-keys` types: OpenClaw's key encoder, with xterm's modifiers and the
terminal's cursor key mode.

A `send-keys` call gives `literal` text, `hex` bytes and `keys` tokens; they are typed in
that order (`encode_keys`). What OpenClaw 2026.9.6 makes of a token (its `pty-keys`):

- Surrounding whitespace is ignored; an empty token types nothing.
- `^X` (two characters) is Ctrl-X when X has a control form (`@`, `A`-`Z`, `[`, `\\`, `]`, `^`,
  `_`, either case; `^?` is DEL).
- Modifier prefixes, any number, each a letter and a dash: `C-` Ctrl, `M-` Alt (Meta), `S-`
  Shift (`C-M-x`). What follows is the key.
- Named keys, in any case (`KEYS`): `enter`/`return`, `tab`, `escape`/`esc`, `space`,
  `backspace`/`bspace` (DEL), the arrows, `home`, `end`, `pageup`/`pgup`/`ppage`,
  `pagedown`/`pgdn`/`npage`, `insert`/`ic`, `delete`/`del`/`dc`, `btab`, `f1`-`f12`, and the
  keypad in application mode (`kp0`-`kp9`, `kp/ kp* kp- kp+ kp.`, `kpenter`).
  - A modifier on an arrow, home, end, page up/down, insert or delete gives xterm's modifier
    parameter m = 1 + 1 for Shift + 2 for Alt + 4 for Ctrl: `ESC [ 1 ; m A` for an arrow,
    `ESC [ n ; m ~` for a key typed `ESC [ n ~` (home 1, insert 2, delete 3, end 4, page up 5,
    page down 6: OpenClaw's home and end are the `~` forms, here too).
  - Shift-Tab is back-tab (`ESC [ Z`); Alt on another named key puts ESC before it; Ctrl or
    Shift alone on one changes nothing.
  - In application cursor key mode (DECCKM, set by `ESC [ ? 1 h`: `smkx`, what full-screen
    programs send), an unmodified arrow, home or end is sent as SS3, `ESC O A` ... `ESC O H`,
    `ESC O F`; otherwise as CSI.
- One character: itself, with Shift upper-casing a-z, Ctrl making its control form when it has
  one, Alt putting ESC before it.
- Anything else is typed as it is written; with modifiers, a warning says the key was unknown
  (`Unknown key "X" for modifiers; sending literal.`). A hex token that is not one or two hex
  digits (an optional `0x`) is left out with a warning (`Invalid hex byte: X`).

A job's cursor key mode is tracked from its output by the registry (`Job.cursor_keys`): a job
started without a terminal is `normal`; one started with `pty` is `unknown` until its output
sets or resets DECCKM (`ESC [ ? 1 h` / `ESC [ ? 1 l`, each exactly). While it is unknown, a
call that sends an unmodified arrow, home or end (`cursor_mode_sensitive`) is refused, as
OpenClaw refuses it: those keys would mean something else if the guess were wrong.

Lengths follow JavaScript's strings (UTF-16 units), whitespace is JavaScript's `trim`, and text
is encoded as Node's `Buffer.from` does (a lone surrogate becomes U+FFFD), so a token means
what it means to OpenClaw. Pure functions, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final, Literal

from attrs import frozen

__all__ = [
    "KEYS",
    "CursorKeyMode",
    "bracketed_paste",
    "cursor_mode_sensitive",
    "encode_keys",
    "unknown_cursor_mode_message",
    "utf16_length",
]

CursorKeyMode = Literal["unknown", "normal", "application"]

_ESC: Final = "\x1b"

KEYS: Final[dict[str, str]] = {
    "enter": "\r",
    "return": "\r",
    "tab": "\t",
    "escape": _ESC,
    "esc": _ESC,
    "space": " ",
    "bspace": "\x7f",
    "backspace": "\x7f",
    "up": f"{_ESC}[A",
    "down": f"{_ESC}[B",
    "right": f"{_ESC}[C",
    "left": f"{_ESC}[D",
    "home": f"{_ESC}[1~",
    "end": f"{_ESC}[4~",
    "pageup": f"{_ESC}[5~",
    "pgup": f"{_ESC}[5~",
    "ppage": f"{_ESC}[5~",
    "pagedown": f"{_ESC}[6~",
    "pgdn": f"{_ESC}[6~",
    "npage": f"{_ESC}[6~",
    "insert": f"{_ESC}[2~",
    "ic": f"{_ESC}[2~",
    "delete": f"{_ESC}[3~",
    "del": f"{_ESC}[3~",
    "dc": f"{_ESC}[3~",
    "btab": f"{_ESC}[Z",
    "f1": f"{_ESC}OP",
    "f2": f"{_ESC}OQ",
    "f3": f"{_ESC}OR",
    "f4": f"{_ESC}OS",
    "f5": f"{_ESC}[15~",
    "f6": f"{_ESC}[17~",
    "f7": f"{_ESC}[18~",
    "f8": f"{_ESC}[19~",
    "f9": f"{_ESC}[20~",
    "f10": f"{_ESC}[21~",
    "f11": f"{_ESC}[23~",
    "f12": f"{_ESC}[24~",
    "kp/": f"{_ESC}Oo",
    "kp*": f"{_ESC}Oj",
    "kp-": f"{_ESC}Om",
    "kp+": f"{_ESC}Ok",
    "kp7": f"{_ESC}Ow",
    "kp8": f"{_ESC}Ox",
    "kp9": f"{_ESC}Oy",
    "kp4": f"{_ESC}Ot",
    "kp5": f"{_ESC}Ou",
    "kp6": f"{_ESC}Ov",
    "kp1": f"{_ESC}Oq",
    "kp2": f"{_ESC}Or",
    "kp3": f"{_ESC}Os",
    "kp0": f"{_ESC}Op",
    "kp.": f"{_ESC}On",
    "kpenter": f"{_ESC}OM",
}
"""Named keys (lower case) and what they type in normal cursor key mode, unmodified."""

_SS3: Final = {
    "up": f"{_ESC}OA",
    "down": f"{_ESC}OB",
    "right": f"{_ESC}OC",
    "left": f"{_ESC}OD",
    "home": f"{_ESC}OH",
    "end": f"{_ESC}OF",
}
"""What the cursor keys type in application cursor key mode (DECCKM set)."""

_MODIFIABLE: Final = frozenset(
    {
        *("up", "down", "left", "right", "home", "end"),
        *("pageup", "pgup", "ppage", "pagedown", "pgdn", "npage"),
        *("insert", "ic", "delete", "del", "dc"),
    }
)
"""The named keys that take xterm's modifier parameter."""

_JS_SPACE: Final = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
"""What JavaScript's `String.prototype.trim` removes (Python's `strip` differs a little)."""
_HEX_BYTE: Final = re.compile("[0-9a-f]{1,2}")


@frozen
class _Mods:
    ctrl: bool = False
    alt: bool = False
    shift: bool = False

    @property
    def any(self) -> bool:
        return self.ctrl or self.alt or self.shift

    @property
    def xterm(self) -> int:
        """xterm's modifier parameter: 1 + Shift 1 + Alt 2 + Ctrl 4."""
        return 1 + self.shift + 2 * self.alt + 4 * self.ctrl


def _trim(text: str) -> str:
    return text.strip(_JS_SPACE)


def utf16_length(text: str) -> int:
    """`text`'s length as JavaScript counts it (UTF-16 code units)."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _utf8(text: str) -> bytes:
    """`text` as Node's `Buffer.from` encodes it: surrogate pairs joined, lone ones U+FFFD."""
    joined = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return joined.encode()


def _parse_mods(token: str) -> tuple[_Mods, str, bool]:
    """The modifier prefixes of `token`, the key after them, and whether there were any."""
    ctrl = alt = shift = False
    rest, seen = token, False
    while len(rest) > 2 and rest[1] == "-":
        mod = _trim(rest[0]).lower()
        if mod == "c":
            ctrl = True
        elif mod == "m":
            alt = True
        elif mod == "s":
            shift = True
        else:
            break
        seen = True
        rest = rest[2:]
    return _Mods(ctrl=ctrl, alt=alt, shift=shift), rest, seen


def _ctrl_char(char: str) -> str | None:
    """Ctrl with `char`, where it has a control form."""
    if utf16_length(char) != 1:
        return None
    if char == "?":
        return "\x7f"
    code = ord(char.upper()[0])
    return chr(code & 31) if 64 <= code <= 95 else None


def _char_with(char: str, mods: _Mods) -> str:
    value = char
    if mods.shift and "a" <= value <= "z":
        value = value.upper()
    if mods.ctrl:
        value = _ctrl_char(value) or value
    return f"{_ESC}{value}" if mods.alt else value


def _encode_token(raw: str, warnings: list[str], mode: CursorKeyMode) -> str:
    token = _trim(raw)
    if not token:
        return ""
    if utf16_length(token) == 2 and token.startswith("^"):
        ctrl = _ctrl_char(token[1])
        if ctrl is not None:
            return ctrl
    mods, base, had_mods = _parse_mods(token)
    name = _trim(base).lower()
    if name == "tab" and mods.shift:
        return f"{_ESC}[Z"
    if name in _MODIFIABLE and not mods.any and mode == "application" and name in _SS3:
        return _SS3[name]
    plain = KEYS.get(name)
    if plain is not None:
        if name in _MODIFIABLE and mods.any:
            parameter = plain[2:-1] or "1"
            return f"{_ESC}[{parameter};{mods.xterm}{plain[-1]}"
        return f"{_ESC}{plain}" if mods.alt else plain
    if utf16_length(base) == 1:
        return _char_with(base, mods)
    if had_mods:
        warnings.append(f'Unknown key "{base}" for modifiers; sending literal.')
    return base


def _hex_byte(raw: str) -> int | None:
    lower = _trim(raw).lower()
    digits = lower[2:] if lower.startswith("0x") else lower
    return int(digits, 16) if _HEX_BYTE.fullmatch(digits) else None


def encode_keys(
    *,
    literal: str | None = None,
    hex_bytes: Sequence[str] = (),
    keys: Sequence[str] = (),
    mode: CursorKeyMode = "normal",
) -> tuple[bytes, list[str]]:
    """What `send-keys` types for `literal`, `hex_bytes` and `keys`, in that order, with the
    job's cursor key `mode` (`unknown` encodes as `normal`); and the warnings to report."""
    warnings: list[str] = []
    typed = bytearray()
    for raw in hex_bytes:
        value = _hex_byte(raw)
        if value is None:
            warnings.append(f"Invalid hex byte: {raw}")
        else:
            typed.append(value)
    tokens = "".join(_encode_token(token, warnings, mode) for token in keys)
    return _utf8(literal or "") + bytes(typed) + _utf8(tokens), warnings


def cursor_mode_sensitive(keys: Sequence[str]) -> bool:
    """Whether `keys` holds an unmodified arrow, home or end: keys whose bytes depend on the
    cursor key mode."""
    for raw in keys:
        token = _trim(raw)
        if not token:
            continue
        mods, base, _ = _parse_mods(token)
        if not mods.any and _trim(base).lower() in _SS3:
            return True
    return False


def unknown_cursor_mode_message(session_id: str) -> str:
    """OpenClaw's refusal of cursor-mode-sensitive keys while the mode is unknown."""
    return (
        f"Session {session_id} cursor key mode is not known yet. Poll or log until startup "
        "output appears, then retry send-keys."
    )


def bracketed_paste(text: str, bracketed: bool = True) -> str:
    """`text` wrapped in bracketed-paste markers (`ESC [ 200 ~` ... `ESC [ 201 ~`) unless
    `bracketed` is false."""
    return f"{_ESC}[200~{text}{_ESC}[201~" if bracketed else text
