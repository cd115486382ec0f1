"""The config as OpenClaw's Control UI renders it as a form: `config.schema` and
`config.schema.lookup`.

`config_form_schema()` is the config's JSON Schema in the form OpenClaw's `config.schema`
answers it: draft-07, every `$ref` inlined (the Control UI's form does not follow
references), titled `OpenClawConfig`, without the root `$schema` key; and its `uiHints`, one
per dotted path (`agents.list[]`, `models.providers.*` for map values): a `label` made from the key,
the struct's description as `help`, top-level sections with a `group` and an `order`, and
`sensitive: true` on every path whose key holds a secret (`is_sensitive_key`, the rule that
redacts them in `config.get`), so the form masks them.

`lookup_config_schema(form, path)` answers `config.schema.lookup`: the node at a dotted path
(`a.b`, `a[0]`, `a[*]`, `a.*`; at most `LOOKUP_MAX_SEGMENTS` segments; `.` is the root), cut
down to its scalar keywords (and up to `LOOKUP_NESTED_DEPTH` levels of nested properties),
its hint, and its children (`key`, `path`, `type`, `required`, `hasChildren`, `hint`); None
when the path names nothing. `reloadKind` is `hot` for every path: clawlane applies every
config change by publishing a new generation, without a restart.
"""

from __future__ import annotations

import copy
import re
from typing import Any, Final

import attrs
import msgspec

from ._config import is_sensitive_key
from ._config_types import Config

__all__ = [
    "LOOKUP_MAX_SEGMENTS",
    "ConfigForm",
    "config_form_schema",
    "lookup_config_schema",
]

LOOKUP_MAX_SEGMENTS: Final = 32
LOOKUP_NESTED_DEPTH: Final = 4
_MAX_INLINE_DEPTH: Final = 32
_FORBIDDEN: Final = frozenset({"__proto__", "prototype", "constructor"})
_SCALAR_KEYS: Final = frozenset(
    {
        "title",
        "description",
        "format",
        "pattern",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "minProperties",
        "maxProperties",
        "additionalProperties",
        "uniqueItems",
        "deprecated",
    }
)
_COMPOSITIONS: Final = ("anyOf", "oneOf", "allOf")
SECTIONS: Final = (
    ("gateway", "Gateway", 30),
    ("auth", "Auth", 40),
    ("models", "Models", 50),
    ("agents", "Agents", 60),
    ("tools", "Tools", 70),
    ("messages", "Messages", 80),
    ("cron", "Cron", 85),
    ("plugins", "Plugins", 90),
    ("memory", "Memory", 95),
    ("cluster", "Cluster", 100),
    ("storage", "Storage", 110),
    ("diagnostics", "Diagnostics", 27),
    ("logging", "Logging", 900),
)
"""Top-level sections: their label, group and order in the form (OpenClaw's where it has the
same section)."""
_WORDS: Final = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_ACRONYMS: Final = {"api": "API", "url": "URL", "id": "ID", "ms": "(ms)", "ui": "UI", "tls": "TLS"}


@attrs.frozen
class ConfigForm:
    """The config's form schema and its hints (a `config.schema` answer without its dates)."""

    schema: dict[str, Any]
    hints: dict[str, dict[str, Any]]


def label_of(key: str) -> str:
    """`timeoutSeconds` → `Timeout Seconds`, `apiKey` → `API Key`, `baseUrl` → `Base URL`."""
    words = _WORDS.findall(key) or [key]
    out = [_ACRONYMS.get(w.lower(), w[:1].upper() + w[1:]) for w in words]
    return " ".join(out)


def _inline(node: Any, defs: dict[str, Any], depth: int) -> Any:
    if isinstance(node, list):
        return [_inline(item, defs, depth) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        if depth >= _MAX_INLINE_DEPTH:
            return {}
        target = copy.deepcopy(defs[ref.removeprefix("#/$defs/")])
        target.pop("title", None)  # a struct's class name: the key's label replaces it
        merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return _inline(merged, defs, depth + 1)
    return {k: _inline(v, defs, depth) for k, v in node.items() if k != "$defs"}


def _hints(node: dict[str, Any], path: str, hints: dict[str, dict[str, Any]]) -> None:
    """Walk the inlined schema, adding each property's label (and help, sensitivity)."""
    for key, child in (node.get("properties") or {}).items():
        if not isinstance(child, dict):
            continue
        child_path = f"{path}.{key}" if path else key
        hint: dict[str, Any] = {"label": label_of(key)}
        description = child.get("description")
        if isinstance(description, str) and description:
            hint["help"] = description
        if is_sensitive_key(key):
            hint["sensitive"] = True
        hints[child_path] = {**hint, **hints.get(child_path, {})}
        child.setdefault("title", hint["label"])
        _hints(child, child_path, hints)
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        _hints(extra, f"{path}.*" if path else "*", hints)
    items = node.get("items")
    if isinstance(items, dict):
        _hints(items, f"{path}[]" if path else "[]", hints)
    for keyword in _COMPOSITIONS:
        for branch in node.get(keyword) or ():
            if isinstance(branch, dict):
                _hints(branch, path, hints)


def config_form_schema() -> ConfigForm:
    """The config's form schema and hints (a new copy each call; see the module docstring)."""
    raw: dict[str, Any] = msgspec.json.schema(Config)
    defs = raw.get("$defs", {})
    schema = _inline({"$ref": raw["$ref"]}, defs, 0)
    schema["properties"].pop("$schema", None)
    schema = {"$schema": "http://json-schema.org/draft-07/schema#", **schema}
    schema["title"] = "OpenClawConfig"
    hints: dict[str, dict[str, Any]] = {}
    for key, label, order in SECTIONS:
        if key in schema["properties"]:
            hints[key] = {"label": label, "group": label, "order": order}
    _hints(schema, "", hints)
    return ConfigForm(schema, hints)


# --- config.schema.lookup ------------------------------------------------------------------


def _segments(path: str) -> list[str]:
    normalized = re.sub(r"\[(\*|\d*)\]", lambda m: "." + (m.group(1) or "*"), path.strip())
    return [s for s in normalized.strip(".").split(".") if s]


def _child(node: dict[str, Any], segment: str) -> dict[str, Any] | None:
    if segment in _FORBIDDEN:
        return None
    properties = node.get("properties") or {}
    if segment in properties and isinstance(properties[segment], dict):
        child: dict[str, Any] = properties[segment]
        return child
    items = node.get("items")
    if isinstance(items, dict) and (segment == "*" or segment.isdigit()):
        return items
    for keyword in _COMPOSITIONS:
        for branch in node.get(keyword) or ():
            if isinstance(branch, dict) and (found := _child(branch, segment)) is not None:
                return found
    extra = node.get("additionalProperties")
    return extra if isinstance(extra, dict) else None


def _hint_for(
    hints: dict[str, dict[str, Any]], parts: list[str]
) -> tuple[str, dict[str, Any]] | None:
    """The hint of a path, its array indexes and map keys matched by `[]` / `*`."""
    candidates = [""]
    for part in parts:
        options = [part] if not part.isdigit() else []
        step: list[str] = []
        for base in candidates:
            for option in options:
                step.append(f"{base}.{option}" if base else option)
            step.append(f"{base}.*" if base else "*")
            step.append(f"{base}[]" if base else "[]")
        candidates = step
    for candidate in candidates:
        if candidate in hints:
            return candidate, hints[candidate]
    return None


def _strip(node: dict[str, Any], depth: int = 0) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in node.items():
        if (key in _SCALAR_KEYS and isinstance(value, str | int | float | bool)) or (
            key == "type"
            and (
                isinstance(value, str)
                or (isinstance(value, list) and all(isinstance(v, str) for v in value))
            )
        ):
            out[key] = value
        elif key == "enum" and isinstance(value, list):
            if all(v is None or isinstance(v, str | int | float | bool) for v in value):
                out[key] = list(value)
        elif key == "const" and (value is None or isinstance(value, str | int | float | bool)):
            out[key] = value
    extra = node.get("additionalProperties")
    properties = node.get("properties")
    if isinstance(properties, dict) and (
        0 < depth <= LOOKUP_NESTED_DEPTH or isinstance(extra, dict)
    ):
        out["properties"] = {
            k: _strip(v, depth + 1) for k, v in properties.items() if isinstance(v, dict)
        }
    if isinstance(extra, dict):
        out["additionalProperties"] = _strip(extra, depth + 1)
    items = node.get("items")
    if isinstance(items, dict):
        out["items"] = _strip(items, depth + 1)
    if depth <= LOOKUP_NESTED_DEPTH:
        for keyword in _COMPOSITIONS:
            branches = node.get(keyword)
            if isinstance(branches, list):
                out[keyword] = [_strip(b, depth + 1) for b in branches if isinstance(b, dict)]
    return out


def _has_children(node: dict[str, Any]) -> bool:
    if node.get("properties") or isinstance(node.get("additionalProperties"), dict):
        return True
    if isinstance(node.get("items"), dict):
        return True
    return any(
        isinstance(b, dict) and _has_children(b) for k in _COMPOSITIONS for b in node.get(k) or ()
    )


def _with_hint(entry: dict[str, Any], found: tuple[str, dict[str, Any]] | None) -> dict[str, Any]:
    if found is not None:
        entry["hint"], entry["hintPath"] = dict(found[1]), found[0]
    return entry


def lookup_config_schema(form: ConfigForm, path: str) -> dict[str, Any] | None:
    """`config.schema.lookup`'s answer for `path` (see the module docstring); None when the
    path names nothing in the schema."""
    root = path.strip() == "."
    parts = _segments(path)
    if (not parts and not root) or len(parts) > LOOKUP_MAX_SEGMENTS:
        return None
    node: dict[str, Any] | None = form.schema
    for part in parts:
        node = _child(node, part) if node is not None else None
    if node is None:
        return None
    base = "." if root else ".".join(parts)
    result: dict[str, Any] = {"path": base, "schema": _strip(node), "reloadKind": "hot"}
    _with_hint(result, _hint_for(form.hints, parts) if parts else None)
    prefix = "" if root else base
    required = set(node.get("required") or ())
    children: list[dict[str, Any]] = []
    branches = [node, *[b for k in _COMPOSITIONS for b in node.get(k) or () if isinstance(b, dict)]]
    seen: set[str] = set()
    for branch in branches:
        for key, child in (branch.get("properties") or {}).items():
            if key in seen or not isinstance(child, dict):
                continue
            seen.add(key)
            children.append(_entry(form, parts, prefix, key, child, key in required))
    wildcard = node.get("additionalProperties")
    if not isinstance(wildcard, dict):
        wildcard = node.get("items") if isinstance(node.get("items"), dict) else None
    if isinstance(wildcard, dict):
        children.append(_entry(form, parts, prefix, "*", wildcard, False))
    result["children"] = children
    return result


def _entry(
    form: ConfigForm, parts: list[str], prefix: str, key: str, child: dict[str, Any], required: bool
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "key": key,
        "path": f"{prefix}.{key}" if prefix else key,
        "required": required,
        "hasChildren": _has_children(child),
        "reloadKind": "hot",
    }
    kind = child.get("type")
    if isinstance(kind, str) or (isinstance(kind, list) and all(isinstance(k, str) for k in kind)):
        entry["type"] = kind
    return _with_hint(entry, _hint_for(form.hints, [*parts, key]))
