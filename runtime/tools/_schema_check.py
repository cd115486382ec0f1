"""Whether a decoded JSON value satisfies a JSON Schema: the check OpenClaw's argument
coercion makes of each branch of an `anyOf`/`oneOf` (a TypeBox `Compile(schema).Check`).

Only what decides a branch is checked: `type`, `enum`, `const`, `allOf`/`anyOf`/`oneOf`/`not`,
an object's `properties`, `required`, `additionalProperties`, `patternProperties`,
`propertyNames`, `minProperties`/`maxProperties`, an array's `items` (a schema or a list),
`prefixItems`, `minItems`/`maxItems`, `uniqueItems`, a number's bounds and `multipleOf`, a
string's `minLength`/`maxLength` (in grapheme clusters, as TypeBox counts) and `pattern`, and
local `$ref`s (`#/$defs/...`). Annotations and `format` are not checked. A `$ref` that does not
resolve or a `pattern` that does not compile fails (TypeBox cannot compile such a schema). As
in TypeBox, a boolean is no number, nor is an infinity, and `5.0` is the integer 5.
"""

from __future__ import annotations

import functools
import math
import operator
import re
from collections.abc import Mapping
from typing import Any, TypeGuard

from ._graphemes import grapheme_spans

__all__ = ["js_equal", "regexp", "resolve_ref", "schema_accepts"]


def schema_accepts(value: Any, schema: Any, root: Mapping[str, Any]) -> bool:
    """Whether `value` satisfies `schema`; `root` is the document `$ref`s point into."""
    try:
        return _accepts(value, schema, root)
    except RecursionError:
        return False


def _accepts(value: Any, schema: Any, root: Mapping[str, Any]) -> bool:
    if isinstance(schema, bool):
        return schema
    if not isinstance(schema, Mapping):
        return True
    ref = schema.get("$ref")
    if isinstance(ref, str):
        target = resolve_ref(ref, root)
        if target is None or not _accepts(value, target, root):
            return False
    return (
        _type_ok(value, schema.get("type"))
        and _enum_ok(value, schema)
        and _combinators_ok(value, schema, root)
        and _object_ok(value, schema, root)
        and _array_ok(value, schema, root)
        and _number_ok(value, schema)
        and _string_ok(value, schema)
    )


def resolve_ref(ref: str, root: Mapping[str, Any]) -> Any:
    if ref == "#":
        return root
    for prefix in ("#/$defs/", "#/definitions/"):
        if ref.startswith(prefix):
            defs = root.get(prefix[2:-1])
            name = ref.removeprefix(prefix).replace("~1", "/").replace("~0", "~")
            if isinstance(defs, Mapping) and name in defs:
                return defs[name]
    return None


def _type_ok(value: Any, declared: Any) -> bool:
    if declared is None:
        return True
    kinds = [declared] if isinstance(declared, str) else declared
    return isinstance(kinds, list) and any(_is(value, kind) for kind in kinds)


def _is(value: Any, kind: Any) -> bool:
    # TypeBox's numbers are finite (Number.isFinite)
    number = _number(value) and (isinstance(value, int) or math.isfinite(value))
    if kind == "number":
        return number
    if kind == "integer":
        return number and (isinstance(value, int) or value.is_integer())
    return {
        "boolean": bool,
        "string": str,
        "array": list,
        "object": dict,
        "null": type(None),
    }.get(kind) is type(value) or (kind == "object" and isinstance(value, dict))


def _enum_ok(value: Any, schema: Mapping[str, Any]) -> bool:
    if "const" in schema and not js_equal(value, schema["const"]):
        return False
    values = schema.get("enum")
    return not isinstance(values, list) or any(js_equal(value, v) for v in values)


def _combinators_ok(value: Any, schema: Mapping[str, Any], root: Mapping[str, Any]) -> bool:
    all_of, any_of, one_of = (schema.get(k) for k in ("allOf", "anyOf", "oneOf"))
    if isinstance(all_of, list) and not all(_accepts(value, s, root) for s in all_of):
        return False
    if isinstance(any_of, list) and not any(_accepts(value, s, root) for s in any_of):
        return False
    if isinstance(one_of, list) and sum(_accepts(value, s, root) for s in one_of) != 1:
        return False
    return "not" not in schema or not _accepts(value, schema["not"], root)


def _object_ok(value: Any, schema: Mapping[str, Any], root: Mapping[str, Any]) -> bool:
    if not isinstance(value, dict):
        return True
    required = schema.get("required")
    if isinstance(required, list) and any(key not in value for key in required):
        return False
    if not _count_ok(len(value), schema, "minProperties", "maxProperties"):
        return False
    props = schema.get("properties")
    props = props if isinstance(props, Mapping) else {}
    patterns = schema.get("patternProperties")
    patterns = patterns if isinstance(patterns, Mapping) else {}
    extra = schema.get("additionalProperties", True)
    names = schema.get("propertyNames")
    for key, item in value.items():
        if names is not None and not _accepts(key, names, root):
            return False
        matched = key in props
        if matched and not _accepts(item, props[key], root):
            return False
        for pattern, sub in patterns.items():
            compiled = regexp(pattern)
            if compiled is None:
                return False
            if compiled.search(key):
                matched = True
                if not _accepts(item, sub, root):
                    return False
        if not matched and not _accepts(item, extra, root):
            return False
    return True


def _array_ok(value: Any, schema: Mapping[str, Any], root: Mapping[str, Any]) -> bool:
    if not isinstance(value, list):
        return True
    if not _count_ok(len(value), schema, "minItems", "maxItems"):
        return False
    items = schema.get("items")
    prefix = schema.get("prefixItems")
    if isinstance(items, list):  # draft 7 tuples
        prefix, items = items, schema.get("additionalItems")
    prefix = prefix if isinstance(prefix, list) else []
    for index, item in enumerate(value):
        sub = prefix[index] if index < len(prefix) else items
        if sub is not None and not _accepts(item, sub, root):
            return False
    contains = schema.get("contains")
    if contains is not None and not any(_accepts(item, contains, root) for item in value):
        return False
    if schema.get("uniqueItems") is True:
        for i, item in enumerate(value):
            if any(js_equal(item, other) for other in value[i + 1 :]):
                return False
    return True


def _number_ok(value: Any, schema: Mapping[str, Any]) -> bool:
    if not isinstance(value, int | float) or isinstance(value, bool):
        return True
    bounds = (
        ("minimum", operator.ge),
        ("maximum", operator.le),
        ("exclusiveMinimum", operator.gt),
        ("exclusiveMaximum", operator.lt),
    )
    for key, holds in bounds:
        bound = schema.get(key)
        if _number(bound) and not holds(value, bound):
            return False
    step = schema.get("multipleOf")
    if _number(step) and step > 0:
        try:
            quotient = value / step
        except OverflowError:
            return True  # a multiple as far as a double can tell
        if not (math.isfinite(quotient) and quotient == math.floor(quotient)):
            return False
    return True


def _string_ok(value: Any, schema: Mapping[str, Any]) -> bool:
    if not isinstance(value, str):
        return True
    if ("minLength" in schema or "maxLength" in schema) and not _count_ok(
        len(grapheme_spans(value)), schema, "minLength", "maxLength"
    ):
        return False
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        compiled = regexp(pattern)
        return compiled is not None and compiled.search(value) is not None
    return True


def _count_ok(count: int, schema: Mapping[str, Any], low: str, high: str) -> bool:
    least, most = schema.get(low), schema.get(high)
    return not (_number(least) and count < least) and not (_number(most) and count > most)


def _number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


_JS_SPACE = "\\s\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_OUTSIDE = {
    "\\s": f"[{_JS_SPACE}]",
    "\\S": f"[^{_JS_SPACE}]",
    ".": "[^\\n\\r\u2028\u2029]",
    "$": "\\Z",
}


@functools.lru_cache(maxsize=256)
def regexp(pattern: str) -> re.Pattern[str] | None:
    """`pattern` as JavaScript reads it with the `u` flag (TypeBox's `UnicodeRegExp`): `\\d`,
    `\\w` and `\\b` are ASCII, `\\s` is JavaScript's white space, `.` stops at any line
    terminator, `$` is the very end. None when it does not compile."""
    out: list[str] = []
    in_class = False
    index = 0
    while index < len(pattern):
        token = pattern[index : index + 2] if pattern[index] == "\\" else pattern[index]
        index += len(token)
        if in_class:
            in_class = token != "]"
            out.append(_JS_SPACE if token == "\\s" else token)
        else:
            in_class = token == "["
            out.append(_OUTSIDE.get(token, token))
    try:
        return re.compile("".join(out), re.ASCII)
    except re.error:
        return None


def js_equal(a: Any, b: Any) -> bool:
    """Deep equality of JSON values as JavaScript sees them (`true` is not 1; 5.0 is 5)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if _number(a) and _number(b):
        return bool(a == b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(js_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(map(js_equal, a, b))
    return type(a) is type(b) and a == b
