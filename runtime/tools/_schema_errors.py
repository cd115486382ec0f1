"""The answer OpenClaw 2026.9.6 gives a tool call whose arguments do not fit the tool's schema.

OpenClaw's `validateToolArguments` (its llm-core `validation.ts`) coerces the arguments
(`runtime.tools._coerce`), and when TypeBox 1.3's compiled validator still refuses them it
throws, and its agent loop answers the call with the message as a plain error result:

    Validation failed for tool "<name>":
      - <path>: <message>
      - ...

    Received arguments:
    <JSON.stringify(arguments as the model sent them, null, 2)>

`validation_failure` writes that text. Its lines are TypeBox's `Errors` of the coerced
arguments (`typebox_errors`): the keywords of each schema in TypeBox's order (`type`; an
object's `required`, `additionalProperties`, `dependentRequired`, `patternProperties`,
`properties`, `propertyNames`, `minProperties`, `maxProperties`; an array's `additionalItems`
(the first failing item only), `contains`, `items`, `maxItems`, `minItems`, `prefixItems`,
`uniqueItems`; a string's `maxLength`, `minLength`, `pattern`; a number's `exclusiveMaximum`,
`exclusiveMinimum`, `maximum`, `minimum`, `multipleOf`; then `$ref`, `const`, `enum`, `if`,
`not`, `allOf`, `anyOf`, `oneOf`), in its English messages, at most 8 per list as TypeBox
keeps them (each `anyOf`/`oneOf`/`allOf` branch and `$ref` collects its own 8, which its
parent takes while it has room). A property a schema forbids is `schema is false` at its own
path, then `must not have additional properties` at its object's. Properties are visited as
JavaScript orders an object's keys (array indices first, ascending). The path is the
instance path with `.` for `/` (`root` for the whole), and for `required` the first missing
property's. `format` is not checked (no clawlane tool declares one), nor are
`dependencies`, `dependentSchemas`, `unevaluated*`, `min/maxContains`.

`js_stringify` is `JSON.stringify(value, null, 2)`: numbers as JavaScript writes them (`1.0`
is `1`, `1e+21`, an integer beyond 2**53 rounded to a double), text unescaped but for `"`,
`\\` and control characters (lone surrogates as `\\udXXX`), keys in JavaScript's order.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

from ._coerce import js_number_text
from ._schema_check import js_equal, regexp, resolve_ref, schema_accepts

__all__ = ["has_null", "js_keys", "js_stringify", "typebox_errors", "validation_failure"]

MAX_ERRORS = 8
"""TypeBox's `Settings.maxErrors`: the most errors one list (context) keeps."""

_PROTO = frozenset(
    {
        "__defineGetter__",
        "__defineSetter__",
        "__lookupGetter__",
        "__lookupSetter__",
        "hasOwnProperty",
        "isPrototypeOf",
        "propertyIsEnumerable",
        "toLocaleString",
        "toString",
        "valueOf",
    }
)
"""What `key in object` finds on any JavaScript object (TypeBox's `required` asks so)."""


def validation_failure(name: str, checked: Any, received: Any, schema: Any) -> str | None:
    """OpenClaw's text for a call of tool `name` whose coerced arguments `checked` fail
    `schema`; `received` is what the model sent (after the tool's `prepare_arguments`). None
    when TypeBox finds nothing wrong with `checked`. Never raises."""
    try:
        errors = typebox_errors(checked, schema)
        received_text = js_stringify(received)
    except (RecursionError, ValueError, TypeError):
        return None
    if not errors:
        return None
    lines = "\n".join(f"  - {path}: {message}" for path, message in errors)
    return f'Validation failed for tool "{name}":\n{lines}\n\nReceived arguments:\n{received_text}'


def has_null(value: Any) -> bool:
    """Whether decoded JSON holds a `null` anywhere (iteratively: never a RecursionError)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if item is None:
            return True
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def typebox_errors(value: Any, schema: Any) -> list[tuple[str, str]]:
    """TypeBox's `Errors(schema, value)` as OpenClaw lists them: (path, message) pairs."""
    context = _Context()
    _Walk(schema if isinstance(schema, Mapping) else {}).schema(context, schema, "", value)
    return [
        (_path(keyword, path, params), _message(keyword, params))
        for keyword, path, params in context.errors
    ]


class _Context:
    """TypeBox's `ErrorContext`: errors in order, no more than `MAX_ERRORS`."""

    def __init__(self) -> None:
        self.errors: list[tuple[str, str, dict[str, Any]]] = []

    def full(self) -> bool:
        return len(self.errors) >= MAX_ERRORS

    def add(self, keyword: str, path: str, **params: Any) -> bool:
        if not self.full():
            self.errors.append((keyword, path, params))
        return False

    def add_all(self, other: _Context) -> None:
        for keyword, path, params in other.errors:
            self.add(keyword, path, **params)


class _Walk:
    """TypeBox's `ErrorSchema` and its keywords, over `root` (what `$ref`s point into)."""

    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root

    def schema(self, ctx: _Context, schema: Any, path: str, value: Any) -> bool:
        if ctx.full():
            return False
        if isinstance(schema, bool):
            return schema or ctx.add("boolean", path)
        if not isinstance(schema, Mapping):
            return True
        ok = True
        if _is_type(schema):
            ok &= _type_ok(value, schema["type"]) or ctx.add("type", path, type=schema["type"])
        if isinstance(value, dict):
            ok &= self._object(ctx, schema, path, value)
        if isinstance(value, list):
            ok &= self._array(ctx, schema, path, value)
        if isinstance(value, str):
            ok &= self._string(ctx, schema, path, value)
        if _is_number(value):
            ok &= self._number(ctx, schema, path, value)
        return self._applied(ctx, schema, path, value) and ok

    def _object(
        self, ctx: _Context, schema: Mapping[str, Any], path: str, value: dict[str, Any]
    ) -> bool:
        ok = True
        required = schema.get("required")
        if isinstance(required, list) and all(isinstance(k, str) for k in required):
            missing = [k for k in required if not _has(value, k)]
            ok &= not missing or ctx.add("required", path, requiredProperties=missing)
        props, patterns = _schemas(schema, "properties"), _schemas(schema, "patternProperties")
        if "additionalProperties" in schema and _is_schema(schema["additionalProperties"]):
            extra = []
            for key in js_keys(value):
                known = key in props or any(_search(p, key) for p in patterns)
                if not known and not self.schema(
                    ctx, schema["additionalProperties"], f"{path}/{key}", value[key]
                ):
                    extra.append(key)
            ok &= not extra or ctx.add("additionalProperties", path, additionalProperties=extra)
        dependent = schema.get("dependentRequired")
        if isinstance(dependent, Mapping) and value:
            for key in js_keys(dependent):
                if _has(value, key) and isinstance(dependent[key], list):
                    for need in dependent[key]:
                        if not _has(value, need):
                            ok = ctx.add(
                                "dependentRequired", path, property=key, dependencies=dependent[key]
                            )
        for pattern in js_keys(patterns):
            for key in js_keys(value):
                if _search(pattern, key):
                    ok &= self.schema(ctx, patterns[pattern], f"{path}/{key}", value[key])
        for key in js_keys(props):
            if key in value:
                ok &= self.schema(ctx, props[key], f"{path}/{key}", value[key])
        names = schema.get("propertyNames")
        if _is_schema(names):
            bad = [k for k in js_keys(value) if not self.schema(ctx, names, f"{path}/{k}", k)]
            ok &= not bad or ctx.add("propertyNames", path, propertyNames=bad)
        for key, keyword in (
            ("minProperties", "minProperties"),
            ("maxProperties", "maxProperties"),
        ):
            if _is_number(schema.get(key)) and not schema_accepts(
                value, {key: schema[key]}, self.root
            ):
                ok = ctx.add(keyword, path, limit=schema[key])
        return ok

    def _array(self, ctx: _Context, schema: Mapping[str, Any], path: str, value: list[Any]) -> bool:
        ok = True
        items = schema.get("items")
        sized: list[Any] | None = (
            items if isinstance(items, list) and all(map(_is_schema, items)) else None
        )
        extra = schema.get("additionalItems")
        if sized is not None and _is_schema(extra):
            for index in range(len(sized), len(value)):  # TypeBox stops at the first
                if not self.schema(ctx, extra, f"{path}/{index}", value[index]):
                    ok = False
                    break
        if _is_schema(schema.get("contains")) and not schema_accepts(
            value, {"contains": schema["contains"]}, self.root
        ):
            ok = ctx.add("contains", path)
        prefix = schema.get("prefixItems")
        prefix = prefix if isinstance(prefix, list) and all(map(_is_schema, prefix)) else None
        if sized is not None:
            for index, sub in enumerate(sized[: len(value)]):
                ok &= self.schema(ctx, sub, f"{path}/{index}", value[index])
        elif _is_schema(items):
            for index in range(len(prefix or ()), len(value)):
                ok &= self.schema(ctx, items, f"{path}/{index}", value[index])
        for key in ("maxItems", "minItems"):
            if _is_number(schema.get(key)) and not schema_accepts(
                value, {key: schema[key]}, self.root
            ):
                ok = ctx.add(key, path, limit=schema[key])
        if prefix is not None and value:
            for index, sub in enumerate(prefix[: len(value)]):
                ok &= self.schema(ctx, sub, f"{path}/{index}", value[index])
        if schema.get("uniqueItems") is True and not schema_accepts(
            value, {"uniqueItems": True}, self.root
        ):
            ok = ctx.add("uniqueItems", path)
        return ok

    def _string(self, ctx: _Context, schema: Mapping[str, Any], path: str, value: str) -> bool:
        ok = True
        for key in ("maxLength", "minLength"):
            if _is_number(schema.get(key)) and not schema_accepts(
                value, {key: schema[key]}, self.root
            ):
                ok = ctx.add(key, path, limit=schema[key])
        pattern = schema.get("pattern")
        if isinstance(pattern, str) and not schema_accepts(value, {"pattern": pattern}, self.root):
            ok = ctx.add("pattern", path, pattern=pattern)
        return ok

    def _number(self, ctx: _Context, schema: Mapping[str, Any], path: str, value: Any) -> bool:
        ok = True
        for key, comparison in (
            ("exclusiveMaximum", "<"),
            ("exclusiveMinimum", ">"),
            ("maximum", "<="),
            ("minimum", ">="),
        ):
            if _is_number(schema.get(key)) and not schema_accepts(
                value, {key: schema[key]}, self.root
            ):
                ok = ctx.add(key, path, comparison=comparison, limit=schema[key])
        step = schema.get("multipleOf")
        if _is_number(step) and not schema_accepts(value, {"multipleOf": step}, self.root):
            ok = ctx.add("multipleOf", path, multipleOf=step)
        return ok

    def _applied(self, ctx: _Context, schema: Mapping[str, Any], path: str, value: Any) -> bool:
        ok = True
        ref = schema.get("$ref")
        if isinstance(ref, str):
            target = resolve_ref(ref, self.root)
            inner = _Context()
            if not self.schema(inner, target if _is_schema(target) else False, path, value):
                ctx.add_all(inner)
                ok = False
        if "const" in schema and not js_equal(value, schema["const"]):
            ok = ctx.add("const", path)
        if isinstance(schema.get("enum"), list) and not any(
            js_equal(value, v) for v in schema["enum"]
        ):
            ok = ctx.add("enum", path)
        if _is_schema(schema.get("if")):
            ok &= self._if(ctx, schema, path, value)
        if _is_schema(schema.get("not")) and schema_accepts(value, schema["not"], self.root):
            ok = ctx.add("not", path)
        for keyword in ("allOf", "anyOf", "oneOf"):
            branches = schema.get(keyword)
            if isinstance(branches, list) and all(map(_is_schema, branches)):
                ok &= self._branches(ctx, keyword, branches, path, value)
        return ok

    def _if(self, ctx: _Context, schema: Mapping[str, Any], path: str, value: Any) -> bool:
        if self.schema(_Context(), schema["if"], path, value):
            then = schema.get("then", True)
            return self.schema(
                _Context(), then if _is_schema(then) else True, path, value
            ) or ctx.add("if", path, failingKeyword="then")
        other = schema.get("else", True)
        return self.schema(ctx, other if _is_schema(other) else True, path, value) or ctx.add(
            "if", path, failingKeyword="else"
        )

    def _branches(
        self, ctx: _Context, keyword: str, branches: list[Any], path: str, value: Any
    ) -> bool:
        failed: list[_Context] = []
        passed = 0
        for branch in branches:
            inner = _Context()
            if self.schema(inner, branch, path, value):
                passed += 1
            else:
                failed.append(inner)
        if keyword == "allOf":
            if failed:
                for inner in failed:
                    ctx.add_all(inner)
            return not failed
        if passed == 1 or (keyword == "anyOf" and passed):
            return True
        if not passed:
            for inner in failed:
                ctx.add_all(inner)
        return ctx.add(keyword, path)


def _path(keyword: str, path: str, params: Mapping[str, Any]) -> str:
    """OpenClaw's `formatValidationPath`."""
    base = path.removeprefix("/").replace("/", ".")
    if keyword == "required" and params["requiredProperties"] and params["requiredProperties"][0]:
        first = params["requiredProperties"][0]
        return f"{base}.{first}" if base else first
    return base or "root"


def _message(keyword: str, params: Mapping[str, Any]) -> str:
    """TypeBox's `en_US` locale."""
    if keyword == "type":
        kind = params["type"]
        return f"must be {kind}" if isinstance(kind, str) else f"must be either {' or '.join(kind)}"
    if keyword in ("maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum"):
        return f"must be {params['comparison']} {js_number_text(params['limit'])}"
    if keyword in _LIMITS:
        return _LIMITS[keyword].format(js_number_text(params["limit"]))
    if keyword == "required":
        return f"must have required properties {', '.join(params['requiredProperties'])}"
    if keyword == "multipleOf":
        return f"must be multiple of {js_number_text(params['multipleOf'])}"
    if keyword == "pattern":
        return f'must match pattern "{params["pattern"]}"'
    if keyword == "propertyNames":
        return f"property names {', '.join(params['propertyNames'])} are invalid"
    if keyword == "dependentRequired":
        needed = ", ".join(map(str, params["dependencies"]))
        return f"must have properties {needed} when property {params['property']} is present"
    if keyword == "if":
        return f'must match "{params["failingKeyword"]}" schema'
    return _FIXED.get(keyword, "an unknown validation error occurred")


_LIMITS = {
    "maxItems": "must not have more than {} items",
    "minItems": "must not have fewer than {} items",
    "maxLength": "must not have more than {} characters",
    "minLength": "must not have fewer than {} characters",
    "maxProperties": "must not have more than {} properties",
    "minProperties": "must not have fewer than {} properties",
}
_FIXED = {
    "additionalProperties": "must not have additional properties",
    "anyOf": "must match a schema in anyOf",
    "boolean": "schema is false",
    "const": "must be equal to constant",
    "contains": "must contain at least 1 valid item",
    "enum": "must be equal to one of the allowed values",
    "not": "must not be valid",
    "oneOf": "must match exactly one schema in oneOf",
    "uniqueItems": "must not have duplicate items",
}


def _schemas(schema: Mapping[str, Any], keyword: str) -> Mapping[str, Any]:
    """`schema[keyword]` when it maps names to schemas (TypeBox ignores it otherwise)."""
    named = schema.get(keyword)
    if isinstance(named, Mapping) and all(map(_is_schema, named.values())):
        return named
    return {}


def _is_schema(node: Any) -> bool:
    return isinstance(node, bool | Mapping)


def _is_type(schema: Mapping[str, Any]) -> bool:
    kind = schema.get("type")
    return isinstance(kind, str) or (
        isinstance(kind, list) and all(isinstance(k, str) for k in kind)
    )


def _is_number(value: Any) -> bool:
    """TypeBox's `IsNumber`: a finite number (no boolean)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return isinstance(value, int) or math.isfinite(value)


def _type_ok(value: Any, declared: str | list[str]) -> bool:
    kinds = [declared] if isinstance(declared, str) else declared
    return any(_type_name_ok(value, kind) for kind in kinds)


def _type_name_ok(value: Any, kind: str) -> bool:
    if kind == "integer":
        return _is_number(value) and (isinstance(value, int) or float(value).is_integer())
    if kind == "number":
        return _is_number(value)
    kinds = {"object": dict, "array": list, "boolean": bool, "null": type(None), "string": str}
    if kind in kinds:
        return type(value) is kinds[kind] or (kind == "object" and isinstance(value, dict))
    return kind not in ("bigint", "constructor", "function", "symbol", "undefined", "void")


def _has(value: dict[str, Any], key: str) -> bool:
    """TypeBox's `HasPropertyKey` (`key in value`) on a JSON object."""
    return key in value or key in _PROTO


def _search(pattern: str, key: str) -> bool:
    compiled = regexp(pattern)
    return compiled is not None and compiled.search(key) is not None


# --- JSON.stringify ----------------------------------------------------------------------------


def js_keys(obj: Mapping[str, Any]) -> list[str]:
    """`Object.keys(obj)`: array indices (`"0"` ... `"4294967294"`) ascending, then the rest
    in insertion order."""
    indices = [k for k in obj if _is_index(k)]
    if not indices:
        return list(obj)
    return sorted(indices, key=int) + [k for k in obj if not _is_index(k)]


def _is_index(key: str) -> bool:
    return (
        key.isascii() and key.isdigit() and (key == "0" or key[0] != "0") and int(key) < 2**32 - 1
    )


def js_stringify(value: Any) -> str:
    """`JSON.stringify(value, null, 2)` of decoded JSON."""
    return "".join(_stringify(value, ""))


def _stringify(value: Any, indent: str) -> Iterator[str]:
    if value is None or value is True or value is False:
        yield "null" if value is None else ("true" if value else "false")
    elif isinstance(value, int | float):
        text = js_number_text(value)
        yield text if text not in ("NaN", "Infinity", "-Infinity") else "null"
    elif isinstance(value, str):
        yield _quote(value)
    elif isinstance(value, list | dict):
        if not value:
            yield "{}" if isinstance(value, dict) else "[]"
            return
        inner = indent + "  "
        pairs = (
            [(_quote(k) + ": ", value[k]) for k in js_keys(value)]
            if isinstance(value, dict)
            else [("", item) for item in value]
        )
        yield "{" if isinstance(value, dict) else "["
        for n, (label, item) in enumerate(pairs):
            yield (",\n" if n else "\n") + inner + label
            yield from _stringify(item, inner)
        yield "\n" + indent + ("}" if isinstance(value, dict) else "]")
    else:
        raise TypeError(f"not JSON: {type(value).__name__}")


_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}


def _quote(text: str) -> str:
    out = []
    for ch in text:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ch < " " or "\ud800" <= ch <= "\udfff":
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'
