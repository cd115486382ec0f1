"""Tool-call arguments that do not fit a tool's schema, and OpenClaw 2026.9.6's own answer for
them under Node 24.

`random_cases(seed, count)` draws arguments for clawlane's tool schemas (`tool_schemas`: each
tool's `tool_spec` parameters) and for `SCHEMAS` (bounds, strict nested objects, unions,
`$ref`, `if`, pattern properties, `_coercion_cases.SCHEMAS`), then spoils them: required
properties dropped, properties added (some named as array indices, to test key order), values
of the wrong type, enum misses, numbers and lengths out of bounds, a root that is no object.
`openclaw_validate(workdir, schemas, cases)` runs OpenClaw's exported `validateToolArguments`
(its llm-core `validation-*.mjs`, as its agent loop calls it) on each: `error` is the message
it throws, None when it accepts the arguments.

Regenerate the recorded table (`tests/data/openclaw-tool-validation-2026.9.6.json`) with
`.venv/bin/python -m tests.runtime.tools._validation_cases` (Node 24 and the package needed)."""

from __future__ import annotations

import json
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

import msgspec
import trio

from runtime.tools import tool_spec
from tests.runtime.tools._coercion_cases import SCHEMAS as COERCION_SCHEMAS
from tests.runtime.tools._coercion_cases import _fitting, validation_module
from tests.runtime.tools._openclaw_node import NODE, run_node

DATA = Path(__file__).parents[2] / "data"
RECORD = DATA / "openclaw-tool-validation-2026.9.6.json"

_OBJ = "object"
_STRICT_ITEM: dict[str, Any] = {
    "type": _OBJ,
    "properties": {
        "id": {"type": "integer"},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["id"],
    "additionalProperties": False,
}
SCHEMAS: dict[str, dict[str, Any]] = {
    "bounds": {
        "type": _OBJ,
        "properties": {
            "n": {"type": "number", "minimum": 1, "maximum": 10.5},
            "e": {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 5, "multipleOf": 2},
            "f": {"type": "number", "multipleOf": 0.5},
            "s": {"type": "string", "minLength": 2, "maxLength": 4, "pattern": "^[a-z]+$"},
            "a": {
                "type": "array",
                "items": {"type": "string"},
                "minItems": 1,
                "maxItems": 2,
                "uniqueItems": True,
            },
            "o": {
                "type": _OBJ,
                "minProperties": 1,
                "maxProperties": 2,
                "propertyNames": {"pattern": "^[a-z]+$"},
            },
        },
        "required": ["n", "s"],
        "additionalProperties": False,
    },
    "nested": {
        "type": _OBJ,
        "properties": {
            "mode": {"type": "string", "enum": ["fast", "slow"]},
            "item": _STRICT_ITEM,
            "items": {"type": "array", "items": _STRICT_ITEM},
            "grid": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}},
            "meta": {
                "type": _OBJ,
                "properties": {"deep": {"type": _OBJ, "properties": {"x": {"type": "boolean"}}}},
                "required": ["deep"],
            },
        },
        "required": ["mode", "item"],
        "additionalProperties": False,
    },
    "choices": {
        "type": _OBJ,
        "properties": {
            "one": {"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 0}]},
            "any": {
                "anyOf": [{"type": "string", "const": "auto"}, {"type": "integer", "minimum": 1}]
            },
            "all": {
                "allOf": [{"type": "string", "minLength": 1}, {"type": "string", "maxLength": 3}]
            },
            "not": {"not": {"type": "string"}},
            "mixed": {"enum": ["a", 1, None, True]},
            "ref": {"$ref": "#/$defs/point"},
            "cond": {
                "type": _OBJ,
                "if": {"properties": {"kind": {"const": "a"}}, "required": ["kind"]},
                "then": {"required": ["a"]},
                "else": {"required": ["b"]},
            },
        },
        "required": ["one"],
        "$defs": {
            "point": {
                "type": _OBJ,
                "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                "required": ["x", "y"],
                "additionalProperties": False,
            }
        },
    },
    "patterns": {
        "type": _OBJ,
        "properties": {"name": {"type": "string"}},
        "patternProperties": {"^n_": {"type": "number"}},
        "additionalProperties": {"type": "integer"},
        "dependentRequired": {"name": ["id"]},
    },
    "tuple": {
        "type": "array",
        "items": [{"type": "integer"}, {"type": "string"}],
        "additionalItems": {"type": "boolean"},
    },
}
SCHEMAS.update({f"coercion:{name}": schema for name, schema in COERCION_SCHEMAS.items()})


def _tool_classes() -> list[Any]:
    from runtime.heartbeat._respond import HeartbeatRespondTool
    from runtime.memory._tools import MemoryGetTool, MemorySearchTool
    from runtime.tools import _sessions_tools as sessions
    from runtime.tools._ask import AskUserTool
    from runtime.tools._automations import AutomationsTool
    from runtime.tools._builtins import MessageTool
    from runtime.tools._edit import EditTool
    from runtime.tools._exec import ExecTool
    from runtime.tools._fs import LsTool, ReadTool, WriteTool
    from runtime.tools._gateway import GatewayTool
    from runtime.tools._patch import ApplyPatchTool
    from runtime.tools._process_tool import ProcessTool
    from runtime.tools._progress import ProgressCardTool
    from runtime.tools._search import ToolCallTool, ToolDescribeTool
    from runtime.tools._web import WebFetchTool, WebSearchTool

    return [
        *(LsTool, ReadTool, WriteTool, EditTool, ApplyPatchTool, ExecTool, ProcessTool),
        *(MessageTool, WebFetchTool, WebSearchTool, AskUserTool, ProgressCardTool, GatewayTool),
        *(AutomationsTool, HeartbeatRespondTool, MemoryGetTool, MemorySearchTool),
        *(ToolCallTool, ToolDescribeTool),
        *(sessions.SessionsListTool, sessions.SessionsHistoryTool, sessions.SessionsSendTool),
        *(sessions.SessionStatusTool, sessions.AgentsListTool, sessions.SessionsSpawnTool),
        *(sessions.SubagentsTool, sessions.AgentsWaitTool, sessions.SessionsYieldTool),
    ]


class ToolShape:
    """A tool's name, description, params and `open_arguments` (read from its class), with a
    `run` that only says it ran: enough for `tool_spec` and `invoke_tool`, with no
    `prepare_arguments` (OpenClaw's `validateToolArguments` gets the arguments as sent)."""

    mutating = False

    def __init__(self, cls: Any) -> None:
        self.name: str = cls.name
        description = cls.__dict__.get("description")
        self.description: str = description if isinstance(description, str) else ""
        self.params: type[msgspec.Struct] = cls.params
        self.open_arguments: bool = getattr(cls, "open_arguments", False)

    async def run(self, args: Any, ctx: Any) -> Any:
        from runtime.tools import text_result

        return text_result("ran")


def tool_shapes() -> dict[str, ToolShape]:
    return {shape.name: shape for shape in map(ToolShape, _tool_classes())}


def tool_schemas() -> dict[str, dict[str, Any]]:
    """clawlane's tools' parameter schemas by name."""
    return {name: dict(tool_spec(shape).parameters) for name, shape in tool_shapes().items()}


def all_schemas() -> dict[str, dict[str, Any]]:
    """`tool_schemas()` and `SCHEMAS` (by `test:` name)."""
    return tool_schemas() | {f"test:{name}": schema for name, schema in SCHEMAS.items()}


# fmt: off
_WRONG: list[Any] = [
    "bogus", "", "5", "x" * 12, "é\u2028\"q\"\\\n\t\x01\x7f😀", 0, 1, -1, 1.0, 2.5, 0.1, -0.0,
    1e21, 1e-7, 123456789012345678901, 2**60, True, False, None, [], {}, [1, "2", None],
    {"2": 1, "10": 2, "1": 3, "b": 4, "a": 5}, [[1, 2.0], ["x"]], {"nested": {"deep": [True]}},
]
_EXTRA_KEYS = ["extra", "bogus", "10", "2", "0", "01", "é", "a/b", "n_x", "id", "kind"]
# fmt: on


def _spoil(value: Any, schema: Any, rng: random.Random, depth: int) -> Any:
    """`value` (fit for `schema`) with a few things wrong."""
    if not isinstance(schema, dict) or depth > 5:
        return rng.choice(_WRONG) if rng.random() < 0.3 else value
    if rng.random() < 0.12:
        if isinstance(schema.get("enum"), list) or "const" in schema:
            return rng.choice(["bogus", 7, "FAST"])
        return rng.choice(_WRONG)
    if isinstance(value, dict):
        out = dict(value)
        props: dict[str, Any] = schema.get("properties") or {}
        for key in list(out):
            if rng.random() < 0.5:
                out[key] = _spoil(
                    out[key], props.get(key, schema.get("additionalProperties")), rng, depth + 1
                )
        for key in schema.get("required") or []:
            if key in out and rng.random() < 0.25:
                del out[key]
        for _ in range(rng.choice([0, 0, 0, 1, 1, 2, 9])):
            out[rng.choice(_EXTRA_KEYS)] = rng.choice(_WRONG)
        return out
    if isinstance(value, list):
        items = schema.get("items")
        out_list = [
            _spoil(
                item,
                items[i] if isinstance(items, list) and i < len(items) else items,
                rng,
                depth + 1,
            )
            if rng.random() < 0.5
            else item
            for i, item in enumerate(value)
        ]
        if rng.random() < 0.3:
            out_list += [rng.choice(_WRONG) for _ in range(rng.randrange(1, 4))]
        return out_list
    if isinstance(value, int | float) and not isinstance(value, bool) and rng.random() < 0.5:
        return rng.choice([-5, 0, 3, 7, 11, 1e9, 0.25, 2**60])
    if isinstance(value, str) and rng.random() < 0.5:
        return rng.choice(["", "A", "abcdef", "ab", "a b", "x" * 300])
    return value


def random_cases(seed: int, count: int, schemas: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """`count` cases `{schema: name, args}` over `schemas`."""
    rng = random.Random(seed)
    names = sorted(schemas)
    cases = []
    for _ in range(count):
        name = rng.choice(names)
        args = _spoil(_fitting(schemas[name], rng, 0), schemas[name], rng, 0)
        if rng.random() < 0.02:
            args = rng.choice([5, "text", [1, 2], None, True])
        cases.append({"schema": name, "args": args})
    return cases


_SCRIPT = """
import { readFileSync } from "node:fs";
const [module, input] = %s;
const exports = await import(module);
const validate = Object.values(exports).find((f) => f.name === "validateToolArguments");
const { schemas, cases } = JSON.parse(readFileSync(input, "utf8"));
const out = cases.map(({ schema, args }) => {
  try {
    validate({ name: schema, parameters: schemas[schema] }, { name: schema, arguments: args });
    return null;
  } catch (error) {
    return error.message;
  }
});
process.stdout.write(JSON.stringify(out));
"""


async def openclaw_validate(
    workdir: Path, schemas: dict[str, dict[str, Any]], cases: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Each case with `error`: what OpenClaw's `validateToolArguments` threw (the tool named
    as its schema), None when it accepted the arguments."""
    data = workdir / "validation-cases.json"
    data.write_text(json.dumps({"schemas": schemas, "cases": cases}))
    script = _SCRIPT % json.dumps([str(validation_module()), str(data)])
    answers = await run_node(workdir / "validation.mjs", script)
    return [{**case, "error": error} for case, error in zip(cases, answers, strict=True)]


RECORD_SEED, RECORD_DRAWN = 2026_09_06, 450
"""How the recorded cases were drawn (those OpenClaw refuses are kept)."""


async def _record() -> None:
    if not NODE.exists():
        sys.exit(f"Node 24 not found at {NODE}")
    schemas = all_schemas()
    with trio.fail_after(300):
        workdir = Path(tempfile.mkdtemp(prefix="validation-record-"))
        cases = await openclaw_validate(
            workdir, schemas, random_cases(RECORD_SEED, RECORD_DRAWN, schemas)
        )
    refused = [case for case in cases if case["error"] is not None]
    used = {case["schema"] for case in refused}
    lines = ",\n".join(json.dumps(case, ensure_ascii=False) for case in refused)
    source = (
        "OpenClaw 2026.9.6 (npm openclaw@2026.9.6, its @openclaw/ai llm-core "
        f"{validation_module().name}, TypeBox 1.3.30): `error` is what validateToolArguments "
        "threw for the tool named `schema` (parameters in `schemas`) called with `args`, run "
        "under Node 24 by tests/runtime/tools/_validation_cases.py; `test:` schemas are that "
        "module's, the others clawlane's tools' tool_spec parameters."
    )
    head = json.dumps(
        {"source": source, "schemas": {k: schemas[k] for k in sorted(used)}}, ensure_ascii=False
    )
    RECORD.write_text(head[:-1] + ',\n"cases": [\n' + lines + "\n]}\n")
    print(f"wrote {len(refused)} of {len(cases)} cases to {RECORD}")


if __name__ == "__main__":
    trio.run(_record)
