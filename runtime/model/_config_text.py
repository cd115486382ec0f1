"""The config file's text: JSON5, as OpenClaw writes `openclaw.json`.

`decode_config_text` accepts JSON5 (comments, trailing commas, unquoted keys, single-quoted
strings, hex numbers; `json5`, a maintained implementation of the spec, rather than a
hand-written parser): plain JSON takes msgspec's fast path, anything else goes through
`json5`. Numbers that are not finite (`Infinity`, `NaN`, `1e400`) are refused: no config
value means them. Errors are `ConfigSyntaxError` with the line and column.

What a write through the API does to such a file (`config.patch`, or a `config.apply`
whose secrets had to be restored) is what OpenClaw does: the new file is plain JSON (valid
JSON5), two-space indented; the comments of the old file are not carried over. Because that
loses something a person wrote, `keep_previous` saves the old text as `<file>.bak` (mode
0600) before every API write, and the publisher logs a warning naming both files when the old
text had comments. A `config.apply` is written as sent (its own comments stay).
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Any, Final

import json5
import msgspec

from ..protocol import ClawlaneError

__all__ = [
    "ConfigSyntaxError",
    "backup_path",
    "decode_config_text",
    "has_comments",
    "keep_previous",
]

MAX_DEPTH: Final = 64
_JSON5_ERROR: Final = re.compile(r"^<string>:(\d+) (.*?)(?: at column (\d+))?$")


class ConfigSyntaxError(ClawlaneError, ValueError):
    """Text that is not JSON5; the message gives the line and column."""


def _no_constants(name: str) -> Any:
    raise ConfigSyntaxError(f"{name} is not a valid config value (numbers must be finite)")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ConfigSyntaxError(f"the number {text} is out of range (numbers must be finite)")
    return value


def _check(value: Any) -> Any:
    """Refuse what neither path should let through: a number that is not finite (msgspec
    reads 1e400 as inf) and nesting deeper than `MAX_DEPTH` (no config needs it, and the
    recursive steps after decoding would hit Python's recursion limit)."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                raise ConfigSyntaxError("a number is out of range (numbers must be finite)")
        elif isinstance(item, dict | list):
            if depth >= MAX_DEPTH:
                raise ConfigSyntaxError(f"nested too deeply (more than {MAX_DEPTH} levels)")
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return value


def decode_config_text(text: str | bytes) -> Any:
    """The value of JSON5 `text`. Raises `ConfigSyntaxError`. Not a checkpoint; the JSON5
    path is pure Python (~1 ms for a typical config): call it off the event loop for text
    from outside."""
    try:
        return _check(msgspec.json.decode(text))
    except msgspec.DecodeError:
        pass
    except RecursionError:
        raise ConfigSyntaxError(f"nested too deeply (more than {MAX_DEPTH} levels)") from None
    source = text.decode("utf-8", errors="strict") if isinstance(text, bytes) else text
    try:
        return _check(json5.loads(source, parse_float=_finite_float, parse_constant=_no_constants))
    except ConfigSyntaxError:
        raise
    except RecursionError:
        raise ConfigSyntaxError(f"nested too deeply (more than {MAX_DEPTH} levels)") from None
    except ValueError as exc:
        raise ConfigSyntaxError(_describe(str(exc))) from None


def _describe(message: str) -> str:
    """`<string>:2 Unexpected "b" at column 2` → `line 2, column 2: unexpected "b"`."""
    m = _JSON5_ERROR.match(message)
    if m is None:
        return message
    line, what, column = m.group(1), m.group(2), m.group(3)
    what = what[:1].lower() + what[1:]
    return f"line {line}, column {column}: {what}" if column else f"line {line}: {what}"


def has_comments(text: str) -> bool:
    """Whether JSON5 `text` holds a `//` or `/* */` comment (outside strings)."""
    i, n = 0, len(text)
    quote = ""
    while i < n:
        c = text[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
        elif c == "/" and i + 1 < n and text[i + 1] in "/*":
            return True
        i += 1
    return False


def backup_path(path: Path) -> Path:
    return path.with_name(path.name + ".bak")


def keep_previous(path: Path) -> str | None:
    """Before an API write: copy the current file to `<file>.bak` (mode 0600). Returns the
    old text (None when there was no file). Blocking I/O; `OSError` when the copy fails (the
    write should not go ahead then)."""
    try:
        old = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    target = backup_path(path)
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(old)
    os.chmod(target, 0o600)
    return old
