"""The `edit` tool as OpenClaw 2026.9.6 has it: several exact replacements in one file.

Arguments: `{path, edits: [{oldText, newText}, ...]}`. What a model sends is first prepared
as OpenClaw's `prepareEditArguments` prepares it (`prepare_arguments`): `edits` given as a
JSON string is parsed (after the repairs OpenClaw makes to such strings: raw control
characters escaped, a backslash before a character JSON does not escape doubled), each edit
keeps only `oldText` and `newText`, and a top-level `oldText`/`newText` pair (the older form)
joins `edits` unless already there; everything else is dropped. Then, as OpenClaw's
required-parameter check, `path` must not be blank and every `oldText` not blank.

The edits are matched against the file's original text (`_edit_match`: exactly, else fuzzily;
unique, not overlapping; line endings as `_line_endings` says) and written all at once, or
none. An edit whose `oldText` equals its `newText` changes nothing but must still find its
target. A call that changes nothing is not an error: its result says "No changes made" with
details `{changed: false}`. Otherwise the result says how many blocks were replaced, with
details `{changed: true, diff, patch, firstChangedLine}` (`_line_diff`). The messages are
OpenClaw's, naming the path as the model gave it. A path outside the workspace is refused
as by the other file tools.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Annotated, Any, Final

import msgspec

from ._edit_match import (
    EditError,
    NoChangeError,
    TextEdit,
    apply_edits,
    js_trim,
    split_no_op_edits,
    truncate_utf16,
    utf16_length,
    validate_no_op_targets,
)
from ._fs import Refused, in_thread, open_regular, write_bytes
from ._line_diff import display_diff, unified_patch
from ._line_endings import BOM, normalize_to_lf, restore_line_endings
from ._sandbox import resolve_in_workspace
from ._tool import ToolContext, ToolResult, text_result

__all__ = ["EditParams", "EditReplacement", "EditTool", "prepare_edit_arguments"]

_MISMATCH: Final = "Could not find the exact text in"
_MISMATCH_SNIPPET: Final = 800


class EditReplacement(msgspec.Struct, frozen=True, rename="camel"):
    old_text: Annotated[
        str,
        msgspec.Meta(description="Exact original text; unique and non-overlapping in this call."),
    ]
    new_text: Annotated[str, msgspec.Meta(description="Replacement text.")]


class EditParams(msgspec.Struct, frozen=True, rename="camel"):
    path: Annotated[str, msgspec.Meta(description="File path; relative/absolute.")]
    edits: Annotated[
        list[EditReplacement],
        msgspec.Meta(
            description=(
                "Targeted replacements against original file; no overlap/nesting. "
                "Merge nearby changes."
            )
        ),
    ]


class EditTool:
    """`edit`: exact replacements in one file, all matched against its original text."""

    name = "edit"
    description = (
        "Exact single-file replacements. oldText unique/non-overlapping against original. "
        "Merge nearby changes; omit large unchanged spans."
    )
    params = EditParams
    mutating = True

    def prepare_arguments(self, arguments: Any) -> Any:
        return prepare_edit_arguments(arguments)

    async def run(self, args: EditParams, ctx: ToolContext) -> ToolResult:
        return await in_thread(self.name, _edit, ctx.workspace, args)


# --- the arguments -----------------------------------------------------------------------------

_ESCAPABLE: Final = frozenset('"\\/bfnrtu')
_CONTROL_ESCAPES: Final = {"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_UNICODE_ESCAPE: Final = re.compile(r"u[0-9a-fA-F]{4}")


def _repair_json(text: str) -> str:
    """`text` with what OpenClaw repairs in JSON a model wrote: inside strings, raw control
    characters escaped and a backslash before anything JSON cannot escape doubled."""
    out: list[str] = []
    in_string = False
    index = 0
    while index < len(text):
        ch = text[index]
        if ch == '"' or not in_string:
            in_string = in_string != (ch == '"')
            out.append(ch)
        elif ch == "\\":
            escape = _UNICODE_ESCAPE.match(text, index + 1)
            following = text[index + 1 : index + 2]
            if escape is not None:
                out.append("\\" + escape.group())
                index = escape.end()
                continue
            if following in _ESCAPABLE and following != "u":
                out.append("\\" + following)
                index += 2
                continue
            out.append("\\\\")
        elif ord(ch) < 0x20:
            out.append(_CONTROL_ESCAPES.get(ch, f"\\u{ord(ch):04x}"))
        else:
            out.append(ch)
        index += 1
    return "".join(out)


def prepare_edit_arguments(arguments: Any) -> Any:
    """A model's `edit` arguments as OpenClaw prepares them (see the module docstring)."""
    if not isinstance(arguments, dict):
        return arguments
    edits = arguments.get("edits")
    if isinstance(edits, str):
        try:
            parsed = json.loads(_repair_json(edits))
        except ValueError:
            parsed = None
        if isinstance(parsed, list):
            edits = parsed
    if isinstance(edits, list):
        edits = [
            {k: e[k] for k in ("oldText", "newText") if k in e} if isinstance(e, dict) else e
            for e in edits
        ]
    old, new = arguments.get("oldText"), arguments.get("newText")
    if isinstance(old, str) and isinstance(new, str):
        batch = edits if isinstance(edits, list) else []
        pair = {"oldText": old, "newText": new}
        if pair not in batch:
            batch.append(pair)
        edits = batch
    prepared = {"path": arguments["path"]} if "path" in arguments else {}
    if edits is not None or "edits" in arguments:
        prepared["edits"] = edits
    return prepared


def _missing_parameters(args: EditParams) -> str | None:
    """OpenClaw's required-parameter message, when `path` or an `oldText` is blank."""
    missing = []
    if not js_trim(args.path):
        missing.append("path")
    if not args.edits or any(not js_trim(e.old_text) for e in args.edits):
        missing.append("edits")
    if not missing:
        return None
    noun = "parameter" if len(missing) == 1 else "parameters"
    path = "path" if js_trim(args.path) else "path=<empty-string>"
    return (
        f"Missing required {noun}: {', '.join(missing)} (received: {path}, edits=<array>). "
        "Supply correct parameters before retrying."
    )


# --- the thread side ---------------------------------------------------------------------------


def _read_target(real: Path, path: str) -> str:
    """The file's text, BOM included; OpenClaw's messages for a missing file or a directory."""
    try:
        mode = os.lstat(real).st_mode
    except FileNotFoundError:
        raise EditError(f"Could not edit file: {path}. Error code: ENOENT.") from None
    except NotADirectoryError:
        raise EditError(f"Could not edit file: {path}. Error code: ENOTDIR.") from None
    if stat.S_ISDIR(mode):
        raise EditError("EISDIR: illegal operation on a directory, read")
    try:
        fd = open_regular(real, os.O_RDONLY, path)
    except Refused as exc:
        raise EditError(str(exc)) from None
    with os.fdopen(fd, "rb") as f:
        raw = f.read()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise EditError(f"File {real} is not valid UTF-8 and cannot be edited safely.") from None


def _mismatch_hint(message: str, current: str) -> str:
    """OpenClaw's not-found message: the file as it is now, up to 800 UTF-16 units."""
    if utf16_length(current) > _MISMATCH_SNIPPET:
        snippet = truncate_utf16(current, _MISMATCH_SNIPPET) + "\n... (truncated)"
    else:
        snippet = current
    return f"{message}\nCurrent file contents:\n{snippet}"


def _edit(workspace: Path, args: EditParams) -> ToolResult:
    missing = _missing_parameters(args)
    if missing is not None:
        return text_result(missing, is_error=True)
    path = args.path
    real = resolve_in_workspace(workspace, path, for_write=False)  # a directory: EISDIR below
    edits = [TextEdit(e.old_text, e.new_text) for e in args.edits]
    try:
        raw = _read_target(real, path)
    except EditError as exc:
        return text_result(str(exc), is_error=True)
    content = raw.removeprefix(BOM)
    bom = BOM if len(content) < len(raw) else ""
    normalized = normalize_to_lf(content)
    try:
        no_ops, real_edits = split_no_op_edits(normalized, edits, path)
        validate_no_op_targets(normalized, no_ops, real_edits, path)
        if not real_edits:
            return text_result(
                f"No changes made to {path}. The replacement text is identical to the original.",
                details={"changed": False},
            )
        applied = apply_edits(normalized, real_edits, path)
        final = restore_line_endings(content, normalized, applied.replacements)
    except NoChangeError:
        return text_result(
            f"No changes made to {path}. The replacement produced identical content.",
            details={"changed": False},
        )
    except EditError as exc:
        message = str(exc)
        if _MISMATCH in message:
            message = _mismatch_hint(message, raw)
        return text_result(message, is_error=True)
    except ValueError as exc:  # line endings could not be kept (`restore_line_endings`)
        return text_result(str(exc), is_error=True)
    try:
        write_bytes(real, (bom + final).encode("utf-8"), path)
    except Refused as exc:
        return text_result(str(exc), is_error=True)
    diff, first = display_diff(applied.base, applied.new)
    details: dict[str, Any] = {
        "changed": True,
        "diff": diff,
        "patch": unified_patch(path, applied.base, applied.new),
    }
    if first is not None:
        details["firstChangedLine"] = first
    return text_result(
        f"Successfully replaced {len(real_edits)} block(s) in {path}.", details=details
    )
