"""Generate `runtime/protocol/_wire.py` from OpenClaw's Gateway protocol v4 JSON schemas.

The runtime must not read the schemas, so the wire types are generated once and committed. The output is a pure function of the schemas: same schemas, same bytes.

Two sources: the published schema (`@openclaw/gateway-protocol@2026.9.1`, with the `methods`
map of scopes) and the newer definitions the `openclaw@2026.9.6` clients send
(`openclaw-2026.9.6-definitions.json`, definitions only). Where both define a type the newer
one wins (e.g. `ModelsListParams` with `sessionKey`, `ChatHistoryParams` with `maxBytes`);
types only the newer file has (`ChatStartupParams`, `UsersPrefsGetParams`) are taken from it.

Usage:
    .venv/bin/python scripts/gen_protocol.py [SCHEMA] [--newer DEFS] [-o OUTPUT] [--check]

`SCHEMA` defaults to `tests/data/openclaw-protocol/protocol.schema.json` (the tests' copy, whose
README says where each file comes from), `DEFS` to
`tests/data/openclaw-protocol/openclaw-2026.9.6-definitions.json` (`--newer ''` for none) and
`OUTPUT` to `runtime/protocol/_wire.py`, relative to the repository root. With `--check` nothing is
written and the exit status is 1 when `OUTPUT` differs from what would be generated.

Mapping (JSON schema draft-07 to msgspec):
- an object with `properties` and `additionalProperties: false` becomes a frozen Struct that
  forbids unknown fields and omits unset fields; a nested object is its own Struct named
  `<Parent><PropName>` (array items and map values too); required fields come first, optional
  ones are `T | msgspec.UnsetType = msgspec.UNSET`; schema `default`s are not applied;
- any other object becomes `dict[str, T]` (`Any` unless every value has one schema);
- string/integer/number constraints become `Annotated[..., msgspec.Meta(...)]`, arrays
  `list[T]`, `enum`/`const` (and unions of them) `Literal[...]`;
- `anyOf`/`oneOf` becomes a union when msgspec can decode it: at most one member per JSON
  kind, several object branches only when a required string `const` property tags them (the
  branches then become Structs with `tag_field`/`tag`, named `<Parent><PropName><Tag>`);
  anything else falls back to `Any`, with a comment in the output saying why.
"""

from __future__ import annotations

import argparse
import json
import keyword
import re
import sys
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

REPO_ROOT: Final = Path(__file__).resolve().parent.parent
PROTOCOL_DIR: Final = REPO_ROOT / "tests" / "data" / "openclaw-protocol"
"""OpenClaw's schemas, in the repository beside the tests that validate frames against them."""
DEFAULT_SCHEMA: Final = PROTOCOL_DIR / "protocol.schema.json"
DEFAULT_NEWER: Final = DEFAULT_SCHEMA.with_name("openclaw-2026.9.6-definitions.json")
DEFAULT_OUTPUT: Final = REPO_ROOT / "runtime" / "protocol" / "_wire.py"
PROTOCOL_VERSION: Final = 4

#: Definitions to generate, in output order.
DEFINITIONS: Final = (
    "ConnectParams",
    "HelloOk",
    "ErrorShape",
    "AgentParams",
    "AgentWaitParams",
    "AgentEvent",
    "ChatSendParams",
    "ChatHistoryParams",
    "ChatAbortParams",
    "ChatInjectParams",
    "ChatDeltaEvent",
    "ChatFinalEvent",
    "ChatAbortedEvent",
    "ChatErrorEvent",
    "SessionsListParams",
    "SessionsResolveParams",
    "SessionsPatchParams",
    "SessionsResetParams",
    "SessionsDeleteParams",
    "SessionsSendParams",
    "SessionsAbortParams",
    "SessionsCompactParams",
    "SessionsMessagesSubscribeParams",
    "SessionsMessagesUnsubscribeParams",
    "SessionsUsageParams",
    "ModelsListParams",
    "ModelsListResult",
    "ConfigGetParams",
    "ConfigSetParams",
    "ConfigApplyParams",
    "ConfigPatchParams",
    "ConfigSchemaParams",
    "ConfigSchemaLookupParams",
    "TickEvent",
    "ShutdownEvent",
)
#: Generated only when the schema has them.
OPTIONAL_DEFINITIONS: Final = (
    "SessionsGetParams",
    "SessionsSubscribeParams",
    "StatusParams",
    "HealthParams",
    # OpenClaw's clients (CLI, terminal UI, Control UI):
    "AgentsListParams",
    "AgentIdentityParams",
    "AgentsCreateParams",
    "AgentsUpdateParams",
    "AgentsDeleteParams",
    "AgentsFilesListParams",
    "AgentsFilesGetParams",
    "AgentsFilesSetParams",
    "AgentsWorkspaceListParams",
    "AgentsWorkspaceGetParams",
    "SessionsCreateParams",
    "SessionsDescribeParams",
    "CommandsListParams",
    "QuestionListParams",
    "TaskSuggestionsListParams",
    "LogsTailParams",
    "ChatStartupParams",
    "ChatMetadataParams",
    "SessionsBranchesListParams",
    "SessionsBranchesSwitchParams",
    "SessionsRewindParams",
    "SessionsForkParams",
    "SessionsPreviewParams",
    "SessionsCompanionStateParams",
    "SessionsObserverVisibilityParams",
    "ModelsAuthStatusParams",
    "UpdateStatusParams",
    "ProgressCardGetParams",
    "TalkCatalogParams",
    "TasksListParams",
    "SessionsCatalogListParams",
    "SessionsGroupsListParams",
    "SystemInfoParams",
    "UsersPrefsGetParams",
    "UsersPrefsSetParams",
    "SkillsStatusParams",
    "ChannelsStatusParams",
    "NodeListParams",
    "HooksStatusParams",
    "ToolsCatalogParams",
    "ToolsEffectiveParams",
    "WebSearchStatusParams",
    # Exec approvals and the host approvals document, kind-agnostic approvals:
    "ExecApprovalsGetParams",
    "ExecApprovalsSetParams",
    "ExecApprovalRequestParams",
    "ExecApprovalResolveParams",
    "ExecApprovalGetParams",
    "ApprovalGetParams",
    "ApprovalResolveParams",
    "ApprovalHistoryParams",
    # Scheduled runs (cron):
    "CronAddParams",
    "CronListParams",
    "CronRunsParams",
    "CronStatusParams",
    # Plugin approvals:
    "PluginApprovalRequestParams",
    "PluginApprovalResolveParams",
    # Questions an agent asks its operators (ask_user), the progress card:
    "QuestionRequestParams",
    "QuestionWaitAnswerParams",
    "QuestionResolveParams",
    "QuestionGetParams",
    "ProgressCardPutParams",
    "ToolsInvokeParams",
)

_STRUCT_OPTIONS: Final = "frozen=True, forbid_unknown_fields=True, omit_defaults=True"
# Names the generated annotations refer to. A field with one of these names would shadow it
# inside the class body (annotations are evaluated eagerly), so such fields are renamed.
_RESERVED: Final = frozenset(
    {"msgspec", "Any", "Annotated", "Literal", "str", "int", "float", "bool", "list", "dict"}
)
_ANNOTATION_KEYS: Final = frozenset(
    {"description", "title", "default", "examples", "deprecated", "$comment", "readOnly"}
)
_CATCH_ALL_PATTERNS: Final = frozenset({"", ".*", "^.*$", "^.*", ".*$", "^(.*)$"})

Literalish = str | int | bool


@dataclass(frozen=True)
class PyType:
    """A Python type expression and what msgspec needs to know to put it in a union.

    Attributes:
        src: The source text, e.g. `Annotated[str, msgspec.Meta(min_length=1)]`.
        kind: The JSON kind it decodes from: `any`, `str`, `int`, `float`, `bool`, `null`,
            `object` or `array`.
        literals: The allowed values when the type is a `Literal`, else `None`.
        plain: True for an unconstrained builtin (`str`, `int`, `bool`) that accepts every
            value of its kind.
        tag: `(tag_field, tag)` for a tagged Struct, else `None`.
        members: The members when `kind` is `union`.
    """

    src: str
    kind: str
    literals: tuple[Literalish, ...] | None = None
    plain: bool = False
    tag: tuple[str, str] | None = None
    members: tuple[PyType, ...] = ()


ANY: Final = PyType("Any", "any")


@dataclass
class Field:
    """One Struct field as it will be rendered."""

    py_name: str
    json_name: str
    type: PyType
    required: bool
    comments: list[str]


@dataclass
class Generator:
    """Turns schema definitions into the source of `runtime/protocol/_wire.py`.

    Attributes:
        schema: The whole schema document.
        blocks: Rendered classes and aliases, dependencies before dependents.
        names: Every module-level name emitted so far.
        exported: Names listed in `__all__`.
        in_progress: Definitions being generated (a `$ref` back to one is a cycle).
        done: Definitions already generated, and the types that refer to them.
        imports: Names imported from `typing`.
    """

    schema: Mapping[str, Any]
    blocks: list[str] = field(default_factory=list)
    names: set[str] = field(default_factory=set)
    exported: list[str] = field(default_factory=list)
    in_progress: set[str] = field(default_factory=set)
    done: dict[str, PyType] = field(default_factory=dict)
    imports: set[str] = field(default_factory=set)

    @property
    def definitions(self) -> Mapping[str, Any]:
        defs = self.schema.get("definitions", {})
        assert isinstance(defs, Mapping)
        return defs

    # -- definitions -----------------------------------------------------------------------

    def definition(self, name: str, notes: list[str]) -> PyType:
        """Generate the definition `name` (once) and return the type that refers to it."""
        if name in self.done:
            return self.done[name]
        if name in self.in_progress:
            return self.fallback(notes, f"recursive reference to `{name}`")
        node = self.definitions[name]
        self.in_progress.add(name)
        self.names.add(name)
        if _is_struct(node):
            result = self.struct(node, name, name, tag=None)
        else:
            alias_notes: list[str] = []
            target = self.convert(node, name, name, alias_notes)
            self.imports.add("TypeAlias")
            lines = [f"# {line}" for note in alias_notes for line in _wrap(note)]
            lines.append(f"{name}: TypeAlias = {target.src}")
            lines.append(f'"""`#/definitions/{name}`."""')
            self.blocks.append("\n".join(lines))
            self.exported.append(name)
            result = PyType(name, target.kind, target.literals, target.plain, None, target.members)
        self.in_progress.discard(name)
        self.done[name] = result
        return result

    def struct(
        self, node: Mapping[str, Any], name: str, where: str, *, tag: tuple[str, str] | None
    ) -> PyType:
        """Render `node` as a Struct class called `name`; nested objects are rendered first."""
        properties: Mapping[str, Any] = node.get("properties", {})
        required = [key for key in node.get("required", []) if key in properties]
        fields: list[Field] = []
        taken: set[str] = set()
        for json_name, sub in properties.items():
            if tag is not None and json_name == tag[0]:
                continue
            comments: list[str] = []
            if isinstance(sub, Mapping):
                description = sub.get("description")
                if isinstance(description, str) and description.strip():
                    comments.append(description.strip())
                if sub.get("deprecated") is True and "deprecated" not in str(description).lower():
                    comments.append("Deprecated.")
            py_type = self.convert(sub, name + _pascal(json_name), f"{where}.{json_name}", comments)
            fields.append(
                Field(
                    py_name=_py_name(json_name, taken),
                    json_name=json_name,
                    type=py_type,
                    required=json_name in required,
                    comments=comments,
                )
            )
        fields.sort(key=lambda f: not f.required)  # stable: schema order within each group

        class_notes: list[str] = []
        nots = [node["not"]] if "not" in node else []
        all_of = node.get("allOf")
        if isinstance(all_of, list) and all(
            isinstance(x, Mapping) and set(x) == {"not"} for x in all_of
        ):
            nots.extend(x["not"] for x in all_of)  # `allOf` of `not`s: each one enforced
            all_of = None
        checks: list[tuple[str, str]] = []
        for forbidden in nots:
            check = _forbidden_combination(forbidden, fields)
            if check is None:
                class_notes.append(f"Not enforced: `not` {_compact(forbidden)}.")
            else:
                checks.append(check)
        for keyword_ in ("allOf", "anyOf", "oneOf", "dependencies", "if", "propertyNames"):
            if keyword_ in node and not (keyword_ == "allOf" and all_of is None):
                class_notes.append(f"Not enforced: `{keyword_}` on the object.")

        options = _STRUCT_OPTIONS
        if tag is not None:
            options += f", tag_field={_pystr(tag[0])}, tag={_pystr(tag[1])}"
        lines = [f"class {name}(msgspec.Struct, {options}):"]
        if where in self.definitions:
            doc = f"`{where}` (`#/definitions/{where}`)."
        else:
            doc = f"`{where}`."
        if tag is not None:
            doc = doc[:-1] + f" when `{tag[0]}` is {_pystr(tag[1])} (the tag)."
        description = node.get("description")
        if isinstance(description, str) and description.strip():
            class_notes.insert(0, description.strip())
        lines.append(f'    """{doc}')
        for note in class_notes:
            lines.append("")
            lines.extend(f"    {line}" for line in _wrap(note))
        if class_notes:
            lines.append('    """')
        else:
            lines[-1] += '"""'
        if fields:
            lines.append("")
        for f in fields:
            lines.extend(f"    # {line}" for comment in f.comments for line in _wrap(comment))
            lines.append(f"    {_render_field(f)}")
        if len(checks) == 1:
            condition, message = checks[0]
            lines += [
                "",
                "    def __post_init__(self) -> None:",
                f'        """Enforce the schema\'s `not`: {message}."""',
                f"        if {condition}:",
                f"            raise ValueError({_pystr(message)})",
            ]
        elif checks:
            lines += ["", "    def __post_init__(self) -> None:"]
            lines.append(
                '        """Enforce the schema\'s `not`s: '
                + "; ".join(m for _, m in checks)
                + '."""'
            )
            for condition, message in checks:
                lines += [
                    f"        if {condition}:",
                    f"            raise ValueError({_pystr(message)})",
                ]
        self.blocks.append("\n".join(lines))
        self.exported.append(name)
        return PyType(name, "object", tag=tag)

    # -- schema nodes ----------------------------------------------------------------------

    def convert(self, node: Any, name: str, where: str, notes: list[str]) -> PyType:
        """The Python type for schema `node` found at `where` (a dotted path).

        `name` names the Struct it may need to create.

        Anything lost on the way (a fallback to `Any`, an unenforced keyword) is appended to
        `notes`, which end up as comments next to the field.
        """
        if node is True or (isinstance(node, Mapping) and not (set(node) - _ANNOTATION_KEYS)):
            return ANY
        if not isinstance(node, Mapping):
            return self.fallback(notes, f"schema {_compact(node)}")
        if "$ref" in node:
            ref = node["$ref"]
            prefix = "#/definitions/"
            if (
                isinstance(ref, str)
                and ref.startswith(prefix)
                and ref[len(prefix) :] in self.definitions
            ):
                return self.definition(ref[len(prefix) :], notes)
            return self.fallback(notes, f"unresolvable `$ref` {ref!r}")
        if "const" in node:
            return self.literal([node["const"]], notes)
        if "enum" in node:
            return self.literal(list(node["enum"]), notes)
        for keyword_ in ("anyOf", "oneOf"):
            if keyword_ in node:
                return self.union(node, keyword_, name, where, notes)
        if "allOf" in node:
            parts = node["allOf"]
            if isinstance(parts, list) and len(parts) == 1:
                return self.convert(parts[0], name, where, notes)
            return self.fallback(notes, "`allOf`")
        if "not" in node:
            notes.append(f"Not enforced: `not` {_compact(node['not'])}.")
        type_ = node.get("type")
        if isinstance(type_, list):
            branches = [{**node, "type": t} for t in type_]
            return self.union({"anyOf": branches}, "anyOf", name, where, notes)
        if type_ is None and ("properties" in node or "patternProperties" in node):
            type_ = "object"
        if type_ == "string":
            return self.string(node, notes)
        if type_ in ("integer", "number"):
            return self.number(node, type_)
        if type_ == "boolean":
            return PyType("bool", "bool", plain=True)
        if type_ == "null":
            return PyType("None", "null")
        if type_ == "array":
            return self.array(node, name, where, notes)
        if type_ == "object":
            return self.object(node, name, where, notes)
        return self.fallback(notes, f"schema {_compact(node)}")

    def fallback(self, notes: list[str], why: str) -> PyType:
        notes.append(f"Any: not representable in msgspec: {why}.")
        return ANY

    def literal(self, values: list[Any], notes: list[str]) -> PyType:
        allowed = [v for v in values if v is None or isinstance(v, str | int | bool)]
        if len(allowed) != len(values) or not values:
            return self.fallback(notes, f"`enum`/`const` of {_compact(values)}")
        has_null = None in allowed
        by_kind: dict[str, list[Literalish]] = {}
        for value in allowed:
            if value is not None:
                by_kind.setdefault(_literal_kind(value), []).append(value)
        members = [self._literal_type(kind, vals) for kind, vals in by_kind.items()]
        if has_null:
            members.append(PyType("None", "null"))
        return self.join(members, notes) if len(members) > 1 else members[0]

    def _literal_type(self, kind: str, values: Sequence[Literalish]) -> PyType:
        self.imports.add("Literal")
        unique = list(dict.fromkeys(values))
        src = "Literal[" + ", ".join(_pyliteral(v) for v in unique) + "]"
        return PyType(src, kind, literals=tuple(unique))

    def string(self, node: Mapping[str, Any], notes: list[str]) -> PyType:
        meta = _meta(node, {"minLength": "min_length", "maxLength": "max_length"})
        pattern = node.get("pattern")
        if isinstance(pattern, str):
            meta.append(f"pattern={_pystr(_python_pattern(pattern))}")
        if "format" in node:
            notes.append(f"Not enforced: `format` {_compact(node['format'])}.")
        return self.annotated("str", "str", meta)

    def number(self, node: Mapping[str, Any], type_: str) -> PyType:
        keys = {
            "minimum": "ge",
            "maximum": "le",
            "exclusiveMinimum": "gt",
            "exclusiveMaximum": "lt",
            "multipleOf": "multiple_of",
        }
        base, kind = ("int", "int") if type_ == "integer" else ("float", "float")
        return self.annotated(base, kind, _meta(node, keys))

    def array(self, node: Mapping[str, Any], name: str, where: str, notes: list[str]) -> PyType:
        items = node.get("items", True)
        if isinstance(items, list):
            item = self.fallback(notes, "tuple-form `items`")
        else:
            item = self.convert(items, name, f"{where}[]", notes)
        if node.get("uniqueItems") is True:
            notes.append("Not enforced: `uniqueItems`.")
        meta = _meta(node, {"minItems": "min_length", "maxItems": "max_length"})
        return self.annotated(f"list[{item.src}]", "array", meta)

    def object(self, node: Mapping[str, Any], name: str, where: str, notes: list[str]) -> PyType:
        if _is_struct(node):
            self.names.add(name := self.unique(name))
            return self.struct(node, name, where, tag=None)
        properties = node.get("properties")
        additional = node.get("additionalProperties", True)
        patterns = node.get("patternProperties") or {}
        meta = _meta(node, {"minProperties": "min_length", "maxProperties": "max_length"})
        if properties:
            keys = ", ".join(f"`{key}`" for key in properties)
            notes.append(f"Open object (extra keys allowed); known keys: {keys}.")
            value: PyType = ANY
        elif patterns:
            pattern, sub = next(iter(patterns.items()))
            if len(patterns) == 1 and pattern in _CATCH_ALL_PATTERNS:  # `additional` never applies
                value = self.convert(sub, name, f"{where}[*]", notes)
            else:
                value = self.fallback(notes, f"`patternProperties` {_compact(list(patterns))}")
        elif isinstance(additional, Mapping):
            value = self.convert(additional, name, f"{where}[*]", notes)
        else:
            value = ANY
        if "propertyNames" in node:
            notes.append("Not enforced: `propertyNames`.")
        return self.annotated(f"dict[str, {value.src}]", "object", meta)

    def annotated(self, base: str, kind: str, meta: list[str]) -> PyType:
        if not meta:
            return PyType(base, kind, plain=base in ("str", "int", "float"))
        self.imports.add("Annotated")
        return PyType(f"Annotated[{base}, msgspec.Meta({', '.join(meta)})]", kind)

    def union(
        self, node: Mapping[str, Any], keyword_: str, name: str, where: str, notes: list[str]
    ) -> PyType:
        branches = list(_flatten(node[keyword_], keyword_))
        objects = [b for b in branches if isinstance(b, Mapping) and _is_struct(b)]
        members: list[PyType] = []
        if len(objects) > 1:
            tag_field = _discriminator(objects)
            if tag_field is None:
                return self.fallback(notes, f"`{keyword_}` of objects without a tag property")
            for branch in branches:
                if branch in objects:
                    value = _tag_value(branch, tag_field)
                    struct_name = self.unique(name + _pascal(value))
                    self.names.add(struct_name)
                    members.append(self.struct(branch, struct_name, where, tag=(tag_field, value)))
                else:
                    members.append(self.convert(branch, name, where, notes))
        else:
            members = [self.convert(branch, name, where, notes) for branch in branches]
        return self.join(members, notes)

    def join(self, members: list[PyType], notes: list[str]) -> PyType:
        """A union of `members`, or `Any` (with a note) when msgspec cannot decode it."""
        members = [part for m in members for part in (m.members or (m,))]
        if any(m.kind == "any" for m in members):
            return ANY
        groups: dict[str, list[PyType]] = {}
        for member in members:
            group = groups.setdefault(member.kind, [])
            if all(member.src != other.src for other in group):
                group.append(member)
        merged: list[PyType] = []
        for kind, group in groups.items():
            literals = [m for m in group if m.literals is not None]
            others = [m for m in group if m.literals is None]
            if len(literals) > 1:
                values = [v for m in literals for v in (m.literals or ())]
                literals = [self._literal_type(kind, values)]
            if literals and any(m.plain for m in others):
                literals = []  # `str | Literal["a"]` is just `str`
            group = others + literals
            tagged = [m for m in group if m.tag is not None]
            if len(group) > 1 and not (
                len(tagged) == len(group) and len({m.tag[0] for m in tagged if m.tag}) == 1
            ):
                srcs = ", ".join(f"`{m.src}`" for m in group)
                return self.fallback(notes, f"union with several {kind} types ({srcs})")
            merged.extend(group)
        if not merged:
            return self.fallback(notes, "empty union")
        merged.sort(key=lambda m: m.kind == "null")  # stable; `None` last
        if len(merged) == 1:
            return merged[0]
        return PyType(" | ".join(m.src for m in merged), "union", members=tuple(merged))

    def unique(self, name: str) -> str:
        if name not in self.names and name not in self.definitions:
            return name
        n = 2
        while f"{name}{n}" in self.names or f"{name}{n}" in self.definitions:
            n += 1
        return f"{name}{n}"


# -- rendering helpers ----------------------------------------------------------------------


def _render_field(f: Field) -> str:
    src = f.type.src
    if not f.required:
        # ruff (RUF036) wants `None` last in a union.
        if src == "None":
            src = "msgspec.UnsetType | None"
        elif src.endswith(" | None"):
            src = src.removesuffix(" | None") + " | msgspec.UnsetType | None"
        else:
            src = f"{src} | msgspec.UnsetType"
    if f.py_name != f.json_name:
        default = "" if f.required else "default=msgspec.UNSET, "
        return f"{f.py_name}: {src} = msgspec.field({default}name={_pystr(f.json_name)})"
    if f.required:
        return f"{f.py_name}: {src}"
    return f"{f.py_name}: {src} = msgspec.UNSET"


def _forbidden_combination(node: Any, fields: Sequence[Field]) -> tuple[str, str] | None:
    """`(condition, message)` for a `not` that forbids a set of property values together.

    Only the shape `{"properties": {p: {"const": v}, ...}, "required": [p, ...]}` (every listed
    property required) is understood; `None` for anything else.
    """
    by_json = {f.json_name: f for f in fields}
    if isinstance(node, Mapping) and set(node) == {"required"}:
        # `not: {required: [a, b]}`: the properties may not all be present together.
        names = node["required"]
        if not isinstance(names, list) or len(names) < 2 or any(n not in by_json for n in names):
            return None
        present = [f"not isinstance(self.{by_json[n].py_name}, msgspec.UnsetType)" for n in names]
        return " and ".join(present), "cannot combine " + " with ".join(f"`{n}`" for n in names)
    if not isinstance(node, Mapping) or set(node) != {"properties", "required"}:
        return None
    props, required = node["properties"], node["required"]
    if not isinstance(props, Mapping) or not props or sorted(props) != sorted(required):
        return None
    tests: list[str] = []
    described: list[str] = []
    for prop, sub in props.items():
        if prop not in by_json or not isinstance(sub, Mapping) or set(sub) != {"const"}:
            return None
        value = sub["const"]
        if not (value is None or isinstance(value, str | int | bool)):
            return None
        op = "is" if value is None or isinstance(value, bool) else "=="
        tests.append(f"self.{by_json[prop].py_name} {op} {_pyliteral(value)}")
        described.append(f"`{prop}` = {json.dumps(value)}")
    return " and ".join(tests), "cannot combine " + " with ".join(described)


def _is_struct(node: Mapping[str, Any]) -> bool:
    return (
        (node.get("type") == "object" or "type" not in node)
        and isinstance(node.get("properties"), Mapping)
        and node.get("additionalProperties") is False
        and not node.get("patternProperties")
    )


def _flatten(branches: Sequence[Any], keyword_: str) -> list[Any]:
    """Inline nested `anyOf`/`oneOf` nodes that carry nothing else."""
    out: list[Any] = []
    for branch in branches:
        if (
            isinstance(branch, Mapping)
            and keyword_ in branch
            and not (set(branch) - _ANNOTATION_KEYS - {keyword_})
        ):
            out.extend(_flatten(branch[keyword_], keyword_))
        else:
            out.append(branch)
    return out


def _tag_value(node: Mapping[str, Any], prop: str) -> str:
    sub = node["properties"][prop]
    if "const" in sub:
        value = sub["const"]
    else:
        (value,) = sub["enum"]
    assert isinstance(value, str)
    return value


def _discriminator(objects: Sequence[Mapping[str, Any]]) -> str | None:
    """A property every branch requires as a distinct string constant, if there is one."""
    candidates: list[str] = list(objects[0].get("properties", {}))
    for prop in candidates:
        values: list[str] = []
        for branch in objects:
            sub = branch.get("properties", {}).get(prop)
            if prop not in branch.get("required", []) or not isinstance(sub, Mapping):
                break
            if isinstance(sub.get("const"), str):
                values.append(sub["const"])
            elif isinstance(sub.get("enum"), list) and len(sub["enum"]) == 1:
                values.append(sub["enum"][0])
            else:
                break
        else:
            if all(isinstance(v, str) for v in values) and len(set(values)) == len(values):
                return prop
    return None


def _python_pattern(pattern: str) -> str:
    """`pattern` for Python's `re.search`, which msgspec uses.

    A final `$` becomes `\\Z`: in ECMAScript (the schema's dialect) `$` matches only at the end,
    in Python also before a trailing newline, which would let `"abc\\n"` through.
    """
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        return pattern[:-1] + "\\Z"
    return pattern


def _meta(node: Mapping[str, Any], keys: Mapping[str, str]) -> list[str]:
    out: list[str] = []
    for schema_key, meta_key in keys.items():
        value = node.get(schema_key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            out.append(f"{meta_key}={value!r}")
    return out


def _literal_kind(value: Literalish) -> str:
    if isinstance(value, bool):
        return "bool"
    return "str" if isinstance(value, str) else "int"


def _pascal(name: str) -> str:
    parts = [p for p in re.split(r"[^0-9A-Za-z]+", name) if p]
    out = "".join(p[0].upper() + p[1:] for p in parts)
    if not out or out[0].isdigit():
        out = "V" + out
    return out


def _py_name(json_name: str, taken: set[str]) -> str:
    name = re.sub(r"\W", "_", json_name, flags=re.ASCII) or "field"
    if name[0].isdigit():
        name = "f_" + name
    if keyword.iskeyword(name) or name in _RESERVED or name.startswith("__"):
        name += "_"
    base, n = name, 2
    while name in taken:
        name = f"{base}_{n}"
        n += 1
    taken.add(name)
    return name


def _pystr(value: str) -> str:
    """A double-quoted Python string literal for `value`."""
    text = repr(value)
    if text.startswith("'") and '"' not in value:
        return '"' + text[1:-1].replace("\\'", "'") + '"'
    return text


def _pyliteral(value: Literalish | None) -> str:
    return _pystr(value) if isinstance(value, str) else repr(value)


def _compact(value: Any) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 160 else text[:157] + "..."


def _wrap(text: str) -> list[str]:
    return textwrap.wrap(
        " ".join(text.split()), width=92, break_long_words=False, break_on_hyphens=False
    ) or [""]


# -- module ---------------------------------------------------------------------------------


def _method_name(definition: str) -> str:
    """`SessionsMessagesSubscribeParams` -> `sessions.messages.subscribe`."""
    stem = definition.removesuffix("Params")
    return ".".join(word.lower() for word in re.findall(r"[A-Z][a-z0-9]*", stem))


def merge_schemas(published: Mapping[str, Any], newer: Mapping[str, Any] | None) -> dict[str, Any]:
    """`published` with `newer`'s definitions laid over its own (the newer one wins where
    both define a type). The `methods` map and the rest come from `published`."""
    merged = dict(published)
    if newer is not None:
        definitions = dict(published.get("definitions", {}))
        definitions.update(newer.get("definitions", {}))
        merged["definitions"] = definitions
        merged["x-newer"] = newer.get("title", "?")
    return merged


def render(
    schema: Mapping[str, Any],
    *,
    names: Sequence[str] | None = None,
    newer: Mapping[str, Any] | None = None,
) -> str:
    """The full source text of `runtime/protocol/_wire.py` for `schema` (and `newer`, laid over it).

    Args:
        schema: The parsed published schema document.
        names: The definitions to generate; by default `DEFINITIONS` plus whichever of
            `OPTIONAL_DEFINITIONS` the schemas have.
        newer: The parsed newer definitions document, if any (see `merge_schemas`).

    Raises:
        KeyError: A requested definition is missing from the schema.
    """
    schema = merge_schemas(schema, newer)
    gen = Generator(schema)
    if names is None:
        names = [*DEFINITIONS, *(d for d in OPTIONAL_DEFINITIONS if d in gen.definitions)]
    wanted = list(names)
    for name in wanted:
        if name not in gen.definitions:
            raise KeyError(f"definition {name!r} is missing from the schema")
        gen.definition(name, [])

    methods: Mapping[str, Any] = schema.get("methods", {})
    scopes = {method: str(info["scope"]) for method, info in methods.items()}
    params = {
        _method_name(d): d for d in wanted if d.endswith("Params") and _method_name(d) in scopes
    }

    gen.imports.update({"Any", "Final", "TypeVar"})
    typing_names = ", ".join(sorted(gen.imports))
    exported = sorted(
        [*gen.exported, "METHOD_SCOPES", "PARAMS_TYPES", "PROTOCOL_VERSION", "decode_params"]
    )
    all_lines = "\n".join(f"    {_pystr(n)}," for n in sorted(exported, key=_ruff_sort_key))

    out: list[str] = [
        "# Generated by scripts/gen_protocol.py from protocol.schema.json"
        + (" and the newer definitions" if "x-newer" in schema else "")
        + ". DO NOT EDIT.",
        f"# Schema: {schema.get('$id', '?')} ({schema.get('title', '?')}).",
        *(
            [f"# Newer definitions (winning where both define a type): {schema['x-newer']}."]
            if "x-newer" in schema
            else []
        ),
        "# Regenerate: .venv/bin/python scripts/gen_protocol.py [SCHEMA] [--newer DEFS]",
        "#   (defaults: tests/data/openclaw-protocol/protocol.schema.json and",
        "#   tests/data/openclaw-protocol/openclaw-2026.9.6-definitions.json)",
        '"""OpenClaw Gateway protocol v4 wire types, generated from OpenClaw\'s JSON schemas.',
        "",
        "Every object type is a frozen `msgspec.Struct` that rejects unknown fields. Required fields",
        "come first; an optional field is typed `T | msgspec.UnsetType`, defaults to",
        "`msgspec.UNSET` and is left out when encoded (schema defaults are not applied, so decoding",
        "and re-encoding gives back the same JSON). Field names are the JSON names.",
        "",
        "`METHOD_SCOPES` maps every protocol method to its operator scope, `PARAMS_TYPES` maps the",
        "methods generated here to their params type, and `decode_params` validates decoded JSON",
        "against one of them.",
        '"""',
        "",
        f"from typing import {typing_names}",
        "",
        "import msgspec",
        "",
        "__all__ = [",
        all_lines,
        "]",
        "",
        f"PROTOCOL_VERSION: Final = {PROTOCOL_VERSION}",
        "",
    ]
    for block in gen.blocks:
        out += ["", block, ""]
    out += ["", "METHOD_SCOPES: Final[dict[str, str]] = {"]
    out += [f"    {_pystr(m)}: {_pystr(s)}," for m, s in scopes.items()]
    out += [
        "}",
        '"""Operator scope required by each protocol method (`dynamic`: decided per call)."""',
    ]
    out += ["", "PARAMS_TYPES: Final[dict[str, type[msgspec.Struct]]] = {"]
    out += [f"    {_pystr(m)}: {d}," for m, d in params.items()]
    out += ["}", '"""Params type of each method whose params are generated here."""']
    out += [
        "",
        '_S = TypeVar("_S", bound=msgspec.Struct)',
        "",
        "",
        "def decode_params(type_: type[_S], raw: Any) -> _S:",
        '    """Validate already-decoded JSON params as `type_` (e.g. `PARAMS_TYPES[method]`).',
        "",
        "    Not a checkpoint; pure CPU work.",
        "",
        "    Args:",
        "        type_: The params Struct to build.",
        "        raw: The request's `params`, as decoded from JSON (a dict for every params type).",
        "",
        "    Returns:",
        "        The validated params.",
        "",
        "    Raises:",
        "        msgspec.ValidationError: `raw` does not match; the message names the offending",
        "            field and its path, e.g. ``Expected `int`, got `str` - at `$.timeout` ``.",
        '    """',
        "    return msgspec.convert(raw, type_)",
        "",
    ]
    return "\n".join(out)


def _ruff_sort_key(name: str) -> tuple[int, str]:
    """The order ruff's RUF022 wants for `__all__`: SCREAMING_CASE, CamelCase, then the rest."""
    if name.isupper() or (name.upper() == name and "_" in name):
        return (0, name)
    if name[:1].isupper():
        return (1, name)
    return (2, name)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("schema", nargs="?", type=Path, default=DEFAULT_SCHEMA)
    parser.add_argument(
        "--newer",
        type=str,
        default=str(DEFAULT_NEWER),
        help="newer definitions laid over SCHEMA's ('' for none)",
    )
    parser.add_argument("-o", "--output", type=Path, default=DEFAULT_OUTPUT)
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if OUTPUT is not up to date; write nothing"
    )
    args = parser.parse_args(argv)
    schema_path: Path = args.schema
    output: Path = args.output
    with schema_path.open(encoding="utf-8") as fh:
        schema = json.load(fh)
    newer = None
    if args.newer:
        with Path(args.newer).open(encoding="utf-8") as fh:
            newer = json.load(fh)
    source = render(schema, newer=newer)
    if args.check:
        current = output.read_text(encoding="utf-8") if output.exists() else None
        if current != source:
            print(f"{output} is out of date; run scripts/gen_protocol.py", file=sys.stderr)
            return 1
        return 0
    output.write_text(source, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
