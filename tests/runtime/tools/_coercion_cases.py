"""Random tool-call arguments for OpenClaw 2026.9.6's argument coercion, and OpenClaw's own
answer for them under Node 24.

`random_cases(seed, count)` draws arguments for OpenClaw's tool schemas (the recorded
`openclaw-tool-schemas-2026.9.6.json`) and for `SCHEMAS` (unions, lists of types, tuples,
`allOf`, `additionalProperties`), mostly with values of the wrong JSON type: numbers, booleans
and JSON as strings, `null`, strings JavaScript trims or does not. `openclaw_coerce(script,
cases)` runs OpenClaw's `coerceWithJsonSchema` (an internal function of `@openclaw/ai`'s
`validation-*.mjs`, loaded from its source with an export added) and its exported
`validateToolArguments` on each case: `coerced` is what its coercion made of the arguments,
`valid` whether the tool's schema then accepts them.

Regenerate the recorded table (`tests/data/openclaw-argument-coercion-2026.9.6.json`) with
`.venv/bin/python -m tests.runtime.tools._coercion_cases` (Node 24 and the package needed)."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

import trio

from tests.runtime.tools._openclaw_node import NODE, PACKAGE, run_node

DATA = Path(__file__).parents[2] / "data"
RECORD = DATA / "openclaw-argument-coercion-2026.9.6.json"
TOOL_SCHEMAS = DATA / "openclaw-tool-schemas-2026.9.6.json"

_OBJ = "object"
SCHEMAS: dict[str, dict[str, Any]] = {
    "types": {
        "type": _OBJ,
        "properties": {
            "n": {"type": "number"},
            "i": {"type": "integer", "minimum": 1},
            "b": {"type": "boolean"},
            "s": {"type": "string"},
            "z": {"type": "null"},
            "a": {"type": "array", "items": {"type": "integer"}},
            "o": {
                "type": _OBJ,
                "properties": {"x": {"type": "integer"}, "y": {"type": "boolean"}},
                "required": ["x"],
            },
        },
    },
    "type_lists": {
        "type": _OBJ,
        "properties": {
            "ns": {"type": ["number", "string"]},
            "sn": {"type": ["string", "number"]},
            "bn": {"type": ["boolean", "null"]},
            "nb": {"type": ["null", "boolean"]},
            "ia": {"type": ["integer", "array"], "items": {"type": "string"}},
            "on": {"type": [_OBJ, "null"], "properties": {"k": {"type": "number"}}},
        },
    },
    "unions": {
        "type": _OBJ,
        "properties": {
            "u1": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
            "u2": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            "u3": {"anyOf": [{"type": "boolean"}, {"type": "null"}]},
            "u4": {"oneOf": [{"type": "number", "minimum": 10}, {"type": "boolean"}]},
            "u5": {
                "anyOf": [
                    {"type": "string", "enum": ["a", "b"]},
                    {"type": "array", "items": {"type": "string"}, "minItems": 1},
                ]
            },
            "u6": {
                "anyOf": [
                    {
                        "type": _OBJ,
                        "properties": {"k": {"type": "integer"}},
                        "required": ["k"],
                        "additionalProperties": False,
                    },
                    {"type": "string", "minLength": 2},
                ]
            },
            "u7": {"anyOf": [{"type": "string", "const": "x"}, {"type": "number", "const": 5}]},
            "u8": {"anyOf": [{"type": "string", "pattern": "^[0-9]+$"}, {"type": "integer"}]},
        },
        "required": ["u1"],
    },
    "composed": {
        "type": _OBJ,
        "properties": {
            "m": {"allOf": [{"type": "string"}, {"type": "string", "maxLength": 3}]},
            "d": {"type": _OBJ, "additionalProperties": {"type": "integer"}},
            "t": {"type": "array", "items": [{"type": "integer"}, {"type": "boolean"}]},
            "aa": {"type": "array", "items": {"type": "array", "items": {"type": "number"}}},
        },
        "additionalProperties": {"type": "boolean"},
    },
}

# fmt: off
_STRINGS = [
    "5", " 5 ", "+5", "-5", "5.", ".5", "5.0", "5.5", "-1.5e3", "1E2", "1e400", "0x10", "0b1",
    "1_000", "Infinity", "-Infinity", "NaN", "", " ", "\u00a05\u00a0", "\ufeff5", "\u20285",
    "\x1c5", "\u0661\u0662", "9007199254740991", "9007199254740993", "1e21", "1e-7", "e5",
    "5e", "true", "false", "TRUE", "True", "1", "0", "null", "undefined", "[1,2]", '["a"]',
    ' [ "b" ] ', "[]", "[", "{}", '{"x":"3"}', '{"k":1}', '{"x":1,"y":"true"}', "[NaN]",
    "[1e400]", "[123456789012345678901]", "{'a':1}", "a", "ab", "x", "12", "abcd", "é",
    "e\u0301e\u0301",
]
# fmt: on
_NUMBERS: list[Any] = [0, 1, 2, -1, 5, 10, 1.5, 0.1, 1e21, 1e-7, 123.456, -0.0, 2**53, 1e300]


def _types(schema: dict[str, Any]) -> list[str]:
    declared = schema.get("type")
    return [declared] if isinstance(declared, str) else list(declared or [])


def _wrong(rng: random.Random) -> Any:
    pick = rng.random()
    if pick < 0.6:
        return rng.choice(_STRINGS)
    if pick < 0.8:
        return rng.choice(_NUMBERS)
    if pick < 0.9:
        return rng.choice([True, False, None])
    return rng.choice([["1", 2], [True, None, "x"], {"x": "2"}, [], {}])


def _fitting(schema: Any, rng: random.Random, depth: int) -> Any:
    if not isinstance(schema, dict):
        return _wrong(rng)
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return _value(rng.choice(schema[key]), rng, depth)
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return rng.choice(schema["enum"])
    kinds = _types(schema) or ["string"]
    kind = rng.choice(kinds)
    if kind == "object" and depth < 4:
        props = schema.get("properties") or {}
        out = {k: _value(v, rng, depth + 1) for k, v in props.items() if rng.random() < 0.5}
        if isinstance(schema.get("additionalProperties"), dict) and rng.random() < 0.3:
            out["extra"] = _value(schema["additionalProperties"], rng, depth + 1)
        return out
    if kind == "array" and depth < 4:
        items = schema.get("items")
        if isinstance(items, list):
            return [_value(s, rng, depth + 1) for s in items]
        return [_value(items, rng, depth + 1) for _ in range(rng.randrange(4))]
    if kind in ("number", "integer"):
        return rng.choice([n for n in _NUMBERS if kind == "number" or float(n).is_integer()])
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "null":
        return None
    return rng.choice(["f.txt", "a", "hello world", "12", "true", "é"])


def _value(schema: Any, rng: random.Random, depth: int) -> Any:
    """A value for `schema`: of another JSON type, as a string of JSON, or fitting."""
    pick = rng.random()
    if pick < 0.4:
        return _wrong(rng)
    fitting = _fitting(schema, rng, depth)
    if pick < 0.6 and not isinstance(fitting, str):
        return fitting if isinstance(fitting, bool) or fitting is None else json.dumps(fitting)
    return fitting


def all_schemas() -> dict[str, dict[str, Any]]:
    """OpenClaw's tool schemas (by tool name) and `SCHEMAS` (by `test:` name)."""
    tools = json.loads(TOOL_SCHEMAS.read_text())["tools"]
    schemas = {name: tool["parameters"] for name, tool in sorted(tools.items())}
    schemas.update({f"test:{name}": schema for name, schema in SCHEMAS.items()})
    return schemas


def random_cases(seed: int, count: int) -> list[dict[str, Any]]:
    """`count` cases `{schema: name, args}` (see `all_schemas`)."""
    rng = random.Random(seed)
    schemas = all_schemas()
    names = sorted(schemas)
    cases = []
    for _ in range(count):
        name = rng.choice(names)
        args = _fitting(schemas[name], rng, 0)
        pick = rng.random()
        if pick < 0.03:
            args = json.dumps(args)
        elif pick < 0.04:
            args = None
        cases.append({"schema": name, "args": args})
    return cases


_SCRIPT = """
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
const [module, input] = %s;
const compile = pathToFileURL(createRequire(module).resolve("typebox/compile")).href;
const source = readFileSync(module, "utf8").replace('"typebox/compile"', JSON.stringify(compile))
  + "\\nexport { coerceWithJsonSchema as coerceForTest, validateToolArguments as validateForTest };\\n";
const ours = await import("data:text/javascript;base64," + Buffer.from(source).toString("base64"));
const { schemas, cases } = JSON.parse(readFileSync(input, "utf8"));
const out = cases.map(({ schema, args }) => {
  const parameters = schemas[schema];
  const coerced = ours.coerceForTest(structuredClone(args), parameters);
  let valid = true;
  try { ours.validateForTest({ name: "t", parameters }, { name: "t", arguments: args }); }
  catch { valid = false; }
  return { coerced: coerced === undefined ? null : coerced, valid };
});
process.stdout.write(JSON.stringify(out));
"""


def validation_module() -> Path:
    """OpenClaw's llm-core validation module, as its agent loop imports it."""
    dist = PACKAGE.parent / "@openclaw/ai/dist"
    for module in sorted(dist.glob("validation-*.mjs")):
        if "function coerceWithJsonSchema" in module.read_text():
            return module
    raise FileNotFoundError(f"no validation module with coerceWithJsonSchema in {dist}")


async def openclaw_coerce(
    workdir: Path,
    cases: list[dict[str, Any]],
    extra_schemas: dict[str, dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Each case with OpenClaw's `coerced` and `valid` added (its `schema` named in
    `all_schemas` or `extra_schemas`)."""
    data = workdir / "coercion-cases.json"
    schemas = all_schemas() | (extra_schemas or {})
    data.write_text(json.dumps({"schemas": schemas, "cases": cases}))
    script = _SCRIPT % json.dumps([str(validation_module()), str(data)])
    answers = await run_node(workdir / "coercion.mjs", script)
    return [{**case, **answer} for case, answer in zip(cases, answers, strict=True)]


async def _record() -> None:
    if not NODE.exists():
        sys.exit(f"Node 24 not found at {NODE}")
    with trio.fail_after(300):
        workdir = Path(await trio.to_thread.run_sync(_tmpdir))
        cases = await openclaw_coerce(workdir, random_cases(RECORD_SEED, RECORD_COUNT))
    body = {
        "source": (
            "OpenClaw 2026.9.6 (npm openclaw@2026.9.6, its @openclaw/ai llm-core "
            f"{validation_module().name}): for each case, `coerced` is coerceWithJsonSchema(args, "
            "schema) and `valid` whether validateToolArguments accepts args, run under Node 24 "
            "by tests/runtime/tools/_coercion_cases.py. `schema` names a tool of "
            "openclaw-tool-schemas-2026.9.6.json or a test: schema of that module."
        ),
        "cases": cases,
    }
    RECORD.write_text(json.dumps(body, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {len(cases)} cases to {RECORD}")


def _tmpdir() -> str:
    import tempfile

    return tempfile.mkdtemp(prefix="coercion-record-")


RECORD_SEED, RECORD_COUNT = 2026_09_06, 1200
"""How the recorded cases were drawn."""

if __name__ == "__main__":
    trio.run(_record)
