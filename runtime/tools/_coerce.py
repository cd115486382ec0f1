"""A model's tool arguments coerced to the tool's JSON Schema, as OpenClaw 2026.9.6 does.

OpenClaw checks a tool call's arguments with `validateToolArguments` (its llm-core
`validation.ts`, `@openclaw/ai/validation`): before the schema check it walks the arguments
along the tool's parameter schema (`coerceWithJsonSchema`) and turns a value of the wrong JSON
type into the declared one where that is unambiguous. `coerce_arguments` is that walk, over the
schema `tool_spec` offers, so it applies to every tool alike; what still does not fit is left
as it is, for the decoder to refuse with the field's name.

Per declared `type` (the first of a list of types that changes the value wins; nothing is done
to a value that already has one of several declared types):

- `number`: a numeric string (`" 5 "`, `"-1.5e3"`, `".5"`; ASCII digits, no hex, no
  `Infinity`) is that number, `null` is 0, `true`/`false` are 1/0.
- `integer`: the same, where the string's number is a safe integer (`"5.0"` is 5, `"5.5"`
  stays a string).
- `boolean`: exactly `"true"`/`"false"`, the numbers 1/0, and `null` (false). Not `"1"`, not
  `"TRUE"`.
- `string`: a number (written as JavaScript writes it: `1e+21`, `0.1`, `5`) or a boolean
  (`"true"`), and `null` (`""`).
- `array` / `object`: a string holding JSON of that kind (at most 65,536 UTF-16 units). A
  single value does not become a one-item array.
- `null`: `""`, 0 and `false`.

Objects are walked into (`properties` present in the value, and `additionalProperties` when it
is a schema), arrays too (`items`, a schema or a list of them). `allOf` parts apply in turn; in
an `anyOf`/`oneOf` the first branch whose coercion of the value passes that branch's schema
wins (a `null` stays `null` where a branch allows it), else the value is kept. TypeBox's
`Value.Convert`, OpenClaw's second chance, never applies to a gateway's tools: their schemas are
plain JSON by the time they are checked (OpenClaw inlines them for the provider), so it is not
reproduced. A number written `5.0` counts as the integer 5, as it does in JavaScript.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from ._schema_check import schema_accepts

__all__ = ["coerce_arguments"]

MAX_JSON_COERCE_LENGTH = 65_536
"""The longest string (UTF-16 units) parsed as JSON for an `array` or `object`."""

_SAFE = 2**53 - 1
_JSON_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_JS_SPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_UNCHANGED: Any = object()


def coerce_arguments(value: Any, schema: Mapping[str, Any]) -> Any:
    """`value` (decoded JSON) coerced along `schema` (a tool's parameters, as `tool_spec` gives
    them). Never raises and never changes `value` (what it changes is a copy); a value nested
    too deep to walk is given back as it is."""
    try:
        return _coerce(value, schema, schema)
    except RecursionError:
        return value


def _coerce(value: Any, schema: Mapping[str, Any], root: Mapping[str, Any]) -> Any:
    for nested in _schemas(schema.get("allOf")):
        value = _coerce(value, nested, root)
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            value = _union(value, _schemas(schema[key]), root)
    types = _types(schema)
    if types and not (len(types) > 1 and any(_is_type(value, t) for t in types)):
        for kind in types:
            if kind == "null" and value is not None and len(types) > 1:
                continue
            candidate = _primitive(value, kind)
            if candidate is not _UNCHANGED:
                value = candidate
                break
    if "integer" in types and isinstance(value, float) and value.is_integer():
        value = int(value)  # JSON's 5.0 is JavaScript's 5
    if "object" in types and isinstance(value, dict):
        value = _object(value, schema, root)
    if "array" in types and isinstance(value, list):
        value = _array(value, schema.get("items"), root)
    return value


def _union(value: Any, branches: list[Mapping[str, Any]], root: Mapping[str, Any]) -> Any:
    if value is None:
        for branch in branches:
            if "null" in _types(branch) and schema_accepts(value, branch, root):
                return value
    for branch in branches:
        if value is not None and _types(branch) == ["null"]:
            continue
        coerced = _coerce(value, branch, root)
        if schema_accepts(coerced, branch, root):
            return coerced
    return value


def _object(value: dict[str, Any], schema: Mapping[str, Any], root: Mapping[str, Any]) -> Any:
    props = schema.get("properties")
    defined = props if isinstance(props, Mapping) else {}
    extra = schema.get("additionalProperties")
    out = dict(value)
    for key, prop in defined.items():
        if key in out and isinstance(prop, Mapping):
            out[key] = _coerce(out[key], prop, root)
    if isinstance(extra, Mapping):
        for key, item in value.items():
            if key not in defined:
                out[key] = _coerce(item, extra, root)
    return out


def _array(value: list[Any], items: Any, root: Mapping[str, Any]) -> Any:
    if isinstance(items, list):
        return [
            _coerce(item, items[i], root)
            if i < len(items) and isinstance(items[i], Mapping)
            else item
            for i, item in enumerate(value)
        ]
    if isinstance(items, Mapping):
        return [_coerce(item, items, root) for item in value]
    return value


def _primitive(value: Any, kind: str) -> Any:
    """OpenClaw's `coercePrimitiveByType`: the coerced value, or `_UNCHANGED`."""
    if kind in ("number", "integer"):
        if value is None:
            return 0
        if isinstance(value, str) and _js_trim(value):
            parsed = _parse_number(value, integer=kind == "integer")
            if parsed is not None:
                return parsed
        if isinstance(value, bool):
            return int(value)
    elif kind == "boolean":
        if value is None:
            return False
        if value == "true" or value == "false":
            return value == "true"
        if _is_number(value) and value in (0, 1):
            return value == 1
    elif kind == "string":
        if value is None:
            return ""
        if isinstance(value, bool):
            return "true" if value else "false"
        if _is_number(value):
            return js_number_text(value)
    elif kind in ("array", "object"):
        if (
            isinstance(value, str)
            and _js_trim(value)
            and _utf16_len(value) <= MAX_JSON_COERCE_LENGTH
        ):
            parsed = _parse_json(value)
            if isinstance(parsed, list if kind == "array" else dict):
                return parsed
    elif kind == "null" and (value == "" or value is False or (_is_number(value) and value == 0)):
        return None
    return _UNCHANGED


def _parse_number(text: str, *, integer: bool) -> int | float | None:
    """JavaScript's `Number(text.trim())` for a JSON-like number token; None when it is not
    one or not finite (or, for an integer, not a safe integer)."""
    trimmed = _js_trim(text)
    if not _JSON_NUMBER.fullmatch(trimmed):
        return None
    number = float(trimmed)
    if not math.isfinite(number):
        return None
    if number.is_integer() and abs(number) <= _SAFE:
        return int(number)
    return None if integer else number


def _parse_json(text: str) -> Any:
    """JavaScript's `JSON.parse`, or None when it throws: integers beyond 2**53 lose their
    precision as a JavaScript number does."""
    try:
        return json.loads(text, parse_int=_json_int, parse_constant=_refuse)
    except (ValueError, RecursionError):
        return None


def _json_int(text: str) -> int | float:
    number = int(text)
    return number if abs(number) <= 2**53 else float(text)


def _refuse(text: str) -> Any:
    raise ValueError(f"not JSON: {text}")


def js_number_text(number: int | float) -> str:
    """A number as JavaScript's `String(number)` writes it (`1e+21`, `1.5e-7`, `100`)."""
    if isinstance(number, int) and abs(number) <= 2**53:
        return str(number)
    try:
        value = float(number)
    except OverflowError:
        value = math.inf if number > 0 else -math.inf
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "0"
    if value < 0:
        return "-" + js_number_text(-value)
    _sign, digit_tuple, exponent = Decimal(repr(value)).as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0")
    assert isinstance(exponent, int)
    point = exponent + len("".join(map(str, digit_tuple)))  # value = 0.digits × 10**point
    k = len(digits)
    if k <= point <= 21:
        return digits + "0" * (point - k)
    if 0 < point <= 21:
        return f"{digits[:point]}.{digits[point:]}"
    if -6 < point <= 0:
        return f"0.{'0' * -point}{digits}"
    power = point - 1
    mantissa = digits if k == 1 else f"{digits[0]}.{digits[1:]}"
    return f"{mantissa}e{'+' if power >= 0 else '-'}{abs(power)}"


def _schemas(node: Any) -> list[Mapping[str, Any]]:
    return [item for item in node if isinstance(item, Mapping)] if isinstance(node, list) else []


def _types(schema: Mapping[str, Any]) -> list[str]:
    declared = schema.get("type")
    if isinstance(declared, str):
        return [declared]
    if isinstance(declared, list):
        return [t for t in declared if isinstance(t, str)]
    return []


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_type(value: Any, kind: str) -> bool:
    """OpenClaw's `matchesJsonType`."""
    if kind == "number":
        return _is_number(value)
    if kind == "integer":
        return (isinstance(value, float) and value.is_integer()) or _is_int(value)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "string":
        return isinstance(value, str)
    if kind == "null":
        return value is None
    if kind == "array":
        return isinstance(value, list)
    if kind == "object":
        return isinstance(value, dict)
    return False


def _js_trim(text: str) -> str:
    return text.strip(_JS_SPACE)


def _utf16_len(text: str) -> int:
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)
