"""A model's tool arguments are coerced to the tool's schema as OpenClaw 2026.9.6 coerces them
(runtime.tools._coerce), checked against OpenClaw's own code: a recorded table of 1,200 random
cases over its tool schemas and unions (tests/data/openclaw-argument-coercion-2026.9.6.json),
the named claims below, and fresh random cases under Node 24 when it is installed."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any, Literal

import msgspec
import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.llm._types import TextContent
from runtime.tools._coerce import coerce_arguments, js_number_text
from runtime.tools._fs import ReadTool
from runtime.tools._schema_check import js_equal, schema_accepts
from runtime.tools._tool import ToolContext, ToolResult, invoke_tool, text_result
from tests.runtime.tools._coercion_cases import (
    RECORD,
    SCHEMAS,
    all_schemas,
    openclaw_coerce,
    random_cases,
)
from tests.runtime.tools._openclaw_node import require_node, run_node

N, INT, B, S, Z = ({"type": t} for t in ("number", "integer", "boolean", "string", "null"))
ARR_I = {"type": "array", "items": INT}
OBJ = {"type": "object", "properties": {"k": INT, "f": B}}
NUM_OR_STR = {"anyOf": [N, S]}
STR_OR_NUM = {"anyOf": [S, N]}

# (schema of the field, what the model sent, what the tool gets); `...` = left as sent
CLAIMS: list[tuple[dict[str, Any], Any, Any]] = [
    (INT, "5", 5),
    (INT, " 5\n", 5),
    (INT, "+5", 5),
    (INT, "5.0", 5),
    (INT, "1e3", 1000),
    (INT, "5.5", ...),
    (INT, "0x10", ...),
    (INT, "Infinity", ...),
    (INT, "9007199254740993", ...),  # not a safe integer
    (INT, "", ...),
    (INT, "five", ...),
    (INT, "true", ...),
    (INT, True, 1),
    (INT, None, 0),
    (INT, 5.0, 5),
    (N, "5.5", 5.5),
    (N, ".5", 0.5),
    (N, "-1.5e3", -1500),
    (N, "\u00a07\ufeff", 7),  # JavaScript's trim
    (N, "\x1c7", ...),  # no JavaScript white space
    (N, "\u0667", ...),  # only ASCII digits
    (N, "1e400", ...),
    (N, False, 0),
    (B, "true", True),
    (B, "false", False),
    (B, "TRUE", ...),
    (B, "1", ...),
    (B, "yes", ...),
    (B, 1, True),
    (B, 0.0, False),
    (B, 2, ...),
    (B, None, False),
    (S, 5, "5"),
    (S, 1.5, "1.5"),
    (S, 1e21, "1e+21"),
    (S, 1e-7, "1e-7"),
    (S, 5.0, "5"),
    (S, True, "true"),
    (S, None, ""),
    (S, ["a"], ...),
    (S, {"a": 1}, ...),
    (Z, "", None),
    (Z, 0, None),
    (Z, False, None),
    (Z, "null", ...),
    (ARR_I, '["1", 2]', [1, 2]),
    (ARR_I, " [ ] ", []),
    (ARR_I, "5", ...),  # a single value is no one-item array
    (ARR_I, 5, ...),
    (ARR_I, "[NaN]", ...),
    (ARR_I, ["1", "x", True], [1, "x", 1]),
    (OBJ, '{"k": "2", "f": "true"}', {"k": 2, "f": True}),
    (OBJ, '["k"]', ...),
    (OBJ, {"k": "3", "other": "4"}, {"k": 3, "other": "4"}),
    ({"type": ["number", "string"]}, "5", ...),  # already one of the types
    ({"type": ["boolean", "string"]}, 1, True),  # the first type that changes it
    ({"type": ["string", "boolean"]}, 1, "1"),
    ({"type": ["boolean", "null"]}, "", ...),  # null is tried only for null itself
    ({"type": ["boolean", "null"]}, "true", True),
    (NUM_OR_STR, "5", 5),  # the first branch that then fits
    (STR_OR_NUM, 5, "5"),
    ({"anyOf": [{**INT, "minimum": 10}, S]}, "5", ...),
    ({"anyOf": [B, Z]}, None, None),
    ({"anyOf": [{"type": "string", "enum": ["a"]}, ARR_I]}, '["7"]', [7]),
]


def _coerced(schema: dict[str, Any], value: Any) -> Any:
    args = coerce_arguments({"v": value}, {"type": "object", "properties": {"v": schema}})
    return args["v"]


@pytest.mark.parametrize(("schema", "sent", "expected"), CLAIMS)
def test_a_field_is_coerced_as_openclaw_coerces_it(
    schema: dict[str, Any], sent: Any, expected: Any
) -> None:
    got = _coerced(schema, sent)
    want = sent if expected is ... else expected
    assert js_equal(got, want) and type(got) in _same_kind(want), (got, want)


def _same_kind(value: Any) -> tuple[type, ...]:
    if isinstance(value, bool):
        return (bool,)
    if isinstance(value, int | float):
        return (int, float)
    return (type(value),)


def test_the_arguments_are_not_changed_in_place() -> None:
    args = {"v": ["1", {"k": "2"}]}
    schema = {"type": "array", "items": {"anyOf": [INT, OBJ]}}
    coerced = coerce_arguments(args, {"type": "object", "properties": {"v": schema}})
    assert coerced == {"v": [1, {"k": 2}]}
    assert args == {"v": ["1", {"k": "2"}]}


def test_whole_arguments_sent_as_a_json_string_are_parsed() -> None:
    schema = {"type": "object", "properties": {"limit": N}}
    assert coerce_arguments('{"limit": "3"}', schema) == {"limit": 3}


def _norm(value: Any) -> Any:
    """A value as JavaScript's JSON sees it: integers past 2**53 rounded, no infinities."""
    return json.loads(
        json.dumps(value),
        parse_int=lambda t: int(t) if abs(int(t)) <= 2**53 else float(t),
        parse_constant=lambda _: None,
    )


def _check(cases: list[dict[str, Any]]) -> list[str]:
    schemas = all_schemas()
    wrong = []
    for case in cases:
        schema = schemas[case["schema"]]
        ours = coerce_arguments(case["args"], schema)
        if not js_equal(_norm(ours), _norm(case["coerced"])):
            wrong.append(f"{case['schema']} {case['args']!r}: {ours!r} != {case['coerced']!r}")
        # OpenClaw hands a JSON string it could not make valid to the tool as it came
        if isinstance(case["args"], dict) and schema_accepts(ours, schema, schema) != case["valid"]:
            wrong.append(f"{case['schema']} {case['args']!r}: accepted != {case['valid']}")
    return wrong


def test_the_recorded_openclaw_table_is_matched() -> None:
    cases = json.loads(RECORD.read_text())["cases"]
    assert len(cases) == 1200
    assert sum(case["valid"] for case in cases) > 300  # not only refusals
    assert {case["schema"] for case in cases} >= {f"test:{name}" for name in SCHEMAS}
    assert _check(cases) == []


async def test_the_claims_are_openclaws(tmp_path: Path) -> None:
    require_node()
    schemas = {
        f"claim:{i}": {"type": "object", "properties": {"v": s}}
        for i, (s, _, _) in enumerate(CLAIMS)
    }
    cases = [{"schema": f"claim:{i}", "args": {"v": sent}} for i, (_, sent, _) in enumerate(CLAIMS)]
    answers = await openclaw_coerce(tmp_path, cases, extra_schemas=schemas)
    for (schema, sent, expected), answer in zip(CLAIMS, answers, strict=True):
        want = sent if expected is ... else expected
        assert js_equal(_norm(answer["coerced"]["v"]), _norm(want)), (schema, sent, answer)


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_more_random_cases_match_openclaw_under_node(tmp_path: Path, seed: int) -> None:
    require_node()
    cases = await openclaw_coerce(tmp_path, random_cases(seed, 2000))
    assert _check(cases) == []


async def test_numbers_are_written_as_javascript_writes_them(tmp_path: Path) -> None:
    require_node()
    rng = random.Random(7)
    numbers: list[float] = [
        0.1 + 0.2,
        1e21,
        1e-7,
        123456789.125,
        2.0**60,
        5e-324,
        1.7976931348623157e308,
    ]
    while len(numbers) < 2000:
        numbers.append(rng.uniform(-1, 1) * 10.0 ** rng.randint(-30, 30))
        numbers.append(float(rng.randint(-(2**62), 2**62)))
    script = f"process.stdout.write(JSON.stringify({json.dumps(numbers)}.map(String)));"
    theirs = await run_node(tmp_path / "numbers.mjs", script)
    ours = [js_number_text(n) for n in numbers]
    assert [(n, o) for n, o, t in zip(numbers, ours, theirs, strict=True) if o != t] == []
    assert js_number_text(10**30) == "1e+30" and js_number_text(-(2**53)) == "-9007199254740992"
    assert math.isnan(float("nan")) and js_number_text(float("nan")) == "NaN"


# --- every tool gets it through invoke_tool -------------------------------------------------------


class _Params(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    count: int
    ratio: float | None = None
    flag: bool | None = None
    tags: list[str] | None = None
    mode: Literal["fast", "slow"] | None = None


class _Echo:
    name = "echo"
    description = "echo"
    params = _Params
    mutating = False

    async def run(self, args: _Params, ctx: ToolContext) -> ToolResult:
        return text_result(json.dumps(msgspec.to_builtins(args)))


def _text(result: ToolResult) -> str:
    (block,) = result.content
    assert isinstance(block, TextContent)
    return block.text


async def test_a_tools_arguments_are_coerced_before_they_are_checked(ctx: ToolContext) -> None:
    sent = '{"count": "3", "ratio": "0.5", "flag": "true", "tags": "[\\"a\\", 7]", "mode": "fast"}'
    with trio.fail_after(5):
        result = await invoke_tool(_Echo(), sent, ctx)
    assert not result.is_error
    assert json.loads(_text(result)) == {
        "count": 3,
        "ratio": 0.5,
        "flag": True,
        "tags": ["a", "7"],
        "mode": "fast",
    }


@pytest.mark.parametrize(
    ("sent", "where"),
    [
        ({"count": "three"}, "count"),
        ({"count": 1, "flag": "yes"}, "flag"),
        ({"count": 1, "tags": "a"}, "tags"),
        ({"count": 1, "mode": None}, "mode"),  # null is "" for a string, which no Literal is
    ],
)
async def test_what_still_does_not_fit_is_an_error_naming_the_field(
    ctx: ToolContext, sent: dict[str, Any], where: str
) -> None:
    with trio.fail_after(5):
        result = await invoke_tool(_Echo(), sent, ctx)
    assert result.is_error
    assert _text(result).startswith('Validation failed for tool "echo":\n')
    assert f"\n  - {where}: " in _text(result)


async def test_read_takes_a_limit_sent_as_a_string(ctx: ToolContext) -> None:
    (ctx.workspace / "f.txt").write_text("one\ntwo\nthree\nfour\n")
    with trio.fail_after(5):
        result = await invoke_tool(ReadTool(), {"path": "f.txt", "limit": "2"}, ctx)
        null = await invoke_tool(ReadTool(), {"path": "f.txt", "limit": None}, ctx)
    assert _text(result).startswith("one\ntwo\n\n[") and "offset=3" in _text(result)
    # OpenClaw reads a null limit as 0, which its read makes 1
    assert _text(null).startswith("one\n\n[") and "offset=2" in _text(null)


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(["5", " 1.5 ", "true", "[1]", '{"a": "2"}', ""])
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(all_schemas())), _JSON, st.data())
def test_any_json_against_any_tool_schema_never_raises(name: str, value: Any, data: Any) -> None:
    schema = all_schemas()[name]
    props = sorted(schema.get("properties", {}))
    if props and isinstance(value, dict | type(None)):
        value = {data.draw(st.sampled_from(props)): value}
    before = json.dumps(value)
    coerced = coerce_arguments(value, schema)
    assert json.dumps(value) == before
    schema_accepts(coerced, schema, schema)
    if isinstance(value, int | float) and not isinstance(value, bool):
        assert js_number_text(value)
