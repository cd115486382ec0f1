"""Front matter of skill and prompt files: the `---` block at the top, read as real YAML.

`parse_front_matter(text)` splits a markdown file into (front matter, body). The block is
parsed with PyYAML's `safe_load` (no tags that build objects), the way OpenClaw reads its
skills, so flow mappings spanning lines (`metadata: { "openclaw": { ... }, }`), block
scalars, anchors and nested lists of mappings all work. Values are handed on as strings,
lists and mappings of them (`FrontMatterValue`): booleans become `"true"`/`"false"`, numbers
and dates their text, null `""`; strings are trimmed, as OpenClaw trims them.

Like OpenClaw, an unquoted top-level `description` whose text contains `: ` (a YAML error) is
read as the plain text it was meant to be. Hostile input is bounded: a block over
`MAX_FRONT_MATTER_BYTES`, deeper than `MAX_DEPTH`, or expanding (through aliases) to more
than `MAX_NODES` values is refused. Every refusal is a `FrontMatterError` naming the line
when there is one.
"""

from __future__ import annotations

import datetime
import json
import re
from typing import TYPE_CHECKING, Any, Final

from ..protocol import ClawlaneError

if TYPE_CHECKING:
    import yaml

__all__ = [
    "MAX_DEPTH",
    "MAX_FRONT_MATTER_BYTES",
    "MAX_NODES",
    "FrontMatterError",
    "FrontMatterValue",
    "parse_front_matter",
]

FrontMatterValue = str | list["FrontMatterValue"] | dict[str, "FrontMatterValue"]

MAX_FRONT_MATTER_BYTES: Final = 256 * 1024
MAX_DEPTH: Final = 32
MAX_NODES: Final = 20_000
_OPEN: Final = re.compile(r"^---[^\S\n]*\n")
_CLOSE: Final = re.compile(r"(?:^|\n)(?:---|\.\.\.)[^\S\n]*(?:\n|$)")
_FREEFORM: Final = re.compile(r"^(description):[ \t]+(.*\S)[ \t]*$", re.MULTILINE)


class FrontMatterError(ClawlaneError, ValueError):
    """Front matter that cannot be parsed; the message names the line when it can."""


def _normalize(text: str) -> str:
    return text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


def parse_front_matter(text: str) -> tuple[dict[str, FrontMatterValue], str]:
    """Split markdown into (front matter, body). Without front matter: `({}, text)`.
    Raises `FrontMatterError` for a block that is not closed, not YAML, or not a mapping."""
    normalized = _normalize(text)
    opening = _OPEN.match(normalized)
    if opening is None:
        if normalized.rstrip() == "---":
            raise FrontMatterError("front matter is not closed by a '---' line")
        return {}, text
    rest = normalized[opening.end() :]
    closing = _CLOSE.search(rest)
    if closing is None:
        raise FrontMatterError("front matter is not closed by a '---' line")
    block = rest[: closing.start()]
    body = rest[closing.end() :].lstrip("\n")
    if len(block.encode("utf-8", errors="replace")) > MAX_FRONT_MATTER_BYTES:
        raise FrontMatterError(f"front matter is over {MAX_FRONT_MATTER_BYTES:,} bytes")
    if not block.strip():
        return {}, body
    value = _load(block)
    if value is None:
        return {}, body
    if not isinstance(value, dict):
        kind = "a list" if isinstance(value, list) else "plain text"
        raise FrontMatterError(f"front matter must be a mapping, not {kind}")
    converted = _Converter().mapping(value, 0)
    return converted, body


def _load(block: str) -> Any:
    import yaml  # here, not at the top: only a file with front matter needs PyYAML loaded

    try:
        return yaml.safe_load(block)
    except yaml.YAMLError as exc:
        recovered = _quote_freeform(block)
        if recovered != block:
            try:
                return yaml.safe_load(recovered)
            except yaml.YAMLError:
                pass
        raise FrontMatterError(_describe(exc)) from None
    except RecursionError:
        raise FrontMatterError("front matter is nested too deeply") from None


def _quote_freeform(block: str) -> str:
    """OpenClaw's recovery: `description: Use when: x` (an unquoted colon) as one string."""

    def quote(m: re.Match[str]) -> str:
        value = m.group(2)
        if value[0] in "\"'|>[{&*!" or ": " not in value:
            return m.group(0)
        return f"{m.group(1)}: {json.dumps(value)}"

    return _FREEFORM.sub(quote, block)


def _describe(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    if mark is not None:
        return f"front matter line {mark.line + 1}, column {mark.column + 1}: {problem}"
    return f"front matter: {problem}"


class _Converter:
    """YAML values → `FrontMatterValue`, counting nodes (aliases can share a subtree many
    times: it is counted each time it is reached)."""

    def __init__(self) -> None:
        self.nodes = 0

    def _count(self, depth: int) -> None:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise FrontMatterError(f"front matter expands to more than {MAX_NODES:,} values")
        if depth > MAX_DEPTH:
            raise FrontMatterError(f"front matter is nested deeper than {MAX_DEPTH} levels")

    def mapping(self, value: dict[Any, Any], depth: int) -> dict[str, FrontMatterValue]:
        self._count(depth)
        out: dict[str, FrontMatterValue] = {}
        for key, item in value.items():
            name = self.scalar(key).strip()
            if name:
                out[name] = self.value(item, depth + 1)
        return out

    def value(self, value: Any, depth: int) -> FrontMatterValue:
        if isinstance(value, dict):
            return self.mapping(value, depth)
        if isinstance(value, list):
            self._count(depth)
            return [self.value(v, depth + 1) for v in value]
        self._count(depth)
        return self.scalar(value)

    @staticmethod
    def scalar(value: Any) -> str:
        if value is None:
            return ""
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, str):
            return value.strip()
        if isinstance(value, datetime.date | datetime.datetime):
            return value.isoformat()
        if isinstance(value, bytes):
            return value.decode("utf-8", errors="replace")
        return str(value)
