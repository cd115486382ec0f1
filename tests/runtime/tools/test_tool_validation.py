"""A tool call whose arguments do not fit the tool's schema is answered as OpenClaw 2026.9.6
answers it (runtime.tools._schema_errors): `Validation failed for tool "<name>":`, TypeBox's
errors a line each, the arguments as received in JSON.stringify's form. Checked against
OpenClaw's own validateToolArguments: a recorded table of its answers over clawlane's tool
schemas and test schemas (tests/data/openclaw-tool-validation-2026.9.6.json), the named claims
below, and fresh random cases under Node 24 when it is installed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import msgspec
import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.llm._types import TextContent
from runtime.tools import tool_spec
from runtime.tools._coerce import coerce_arguments
from runtime.tools._schema_errors import js_stringify, typebox_errors, validation_failure
from runtime.tools._tool import ToolContext, ToolResult, invoke_tool, text_result
from tests.runtime.tools._openclaw_node import require_node
from tests.runtime.tools._validation_cases import (
    RECORD,
    all_schemas,
    openclaw_validate,
    random_cases,
    tool_shapes,
)

_RECORDED = json.loads(RECORD.read_text())


def _answer(name: str, schema: dict[str, Any], args: Any) -> str | None:
    """clawlane's answer, as invoke_tool makes it: coerce, then TypeBox's errors."""
    return validation_failure(name, coerce_arguments(args, schema), args, schema)


def _text(result: ToolResult) -> str:
    (block,) = result.content
    assert isinstance(block, TextContent)
    return block.text


async def _invoke(tool: Any, args: Any, ctx: ToolContext) -> ToolResult:
    with trio.fail_after(5):
        return await invoke_tool(tool, args, ctx)


@pytest.mark.parametrize("case", _RECORDED["cases"], ids=lambda c: c["schema"])
def test_each_recorded_refusal_reads_as_openclaws(case: dict[str, Any]) -> None:
    schema = _RECORDED["schemas"][case["schema"]]
    assert _answer(case["schema"], schema, case["args"]) == case["error"]


async def test_a_tool_call_with_bad_arguments_gets_openclaws_error_result(
    ctx: ToolContext,
) -> None:
    shapes = tool_shapes()
    replayed = 0
    for case in _RECORDED["cases"]:
        shape = shapes.get(case["schema"])
        if shape is None or tool_spec(shape).parameters != _RECORDED["schemas"][shape.name]:
            continue  # a test schema, or a tool's changed since: the Node test covers it
        sent_as = [json.dumps(case["args"])]  # as JSON text, and decoded (an object only)
        for sent in sent_as + ([case["args"]] if isinstance(case["args"], dict) else []):
            result = await _invoke(shape, sent, ctx)
            assert (_text(result), result.is_error, result.details) == (case["error"], True, None)
        replayed += 1
    assert (
        replayed > 150
    )  # else re-record: `.venv/bin/python -m tests.runtime.tools._validation_cases`


class _Params(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    action: Literal["list", "poll"]
    count: int | None = None


class _Tool:
    name = "process"
    description = "Test tool."
    params = _Params
    mutating = False

    async def run(self, args: _Params, ctx: ToolContext) -> ToolResult:
        return text_result("ran")


async def test_a_bogus_enum_value_is_openclaws_message_with_the_arguments(
    ctx: ToolContext,
) -> None:
    sent = '{"action": "bogus", "count": 2.0}'
    result = await _invoke(_Tool(), sent, ctx)
    assert result.is_error and result.details is None
    assert _text(result) == (
        'Validation failed for tool "process":\n'
        "  - action: must be equal to one of the allowed values\n"
        "\n"
        "Received arguments:\n"
        '{\n  "action": "bogus",\n  "count": 2\n}'
    )


async def test_a_missing_property_and_an_extra_one(ctx: ToolContext) -> None:
    result = await _invoke(_Tool(), {"cmd": "ls"}, ctx)
    assert _text(result).splitlines()[:3] == [
        'Validation failed for tool "process":',
        "  - action: must have required properties action",
        "  - cmd: schema is false",
    ]
    assert "  - root: must not have additional properties" in _text(result)


def test_typebox_keeps_eight_errors() -> None:
    schema = {"type": "object", "properties": {}, "additionalProperties": False}
    errors = typebox_errors({f"k{i}": i for i in range(20)}, schema)
    assert errors == [(f"k{i}", "schema is false") for i in range(8)]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.0, "1"),
        (-0.0, "0"),
        (1e21, "1e+21"),
        (1e-7, "1e-7"),
        (123456789012345678901, "123456789012345680000"),
        (0.1, "0.1"),
        ("é😀\u2028", '"é😀\u2028"'),
        ('"\\\n\t\x01\x7f', '"\\"\\\\\\n\\t\\u0001\x7f"'),
        ({"b": 1, "10": 2, "2": 3, "01": 4}, '{\n  "2": 3,\n  "10": 2,\n  "b": 1,\n  "01": 4\n}'),
        ([], "[]"),
        ({}, "{}"),
        ([[1], {}], "[\n  [\n    1\n  ],\n  {}\n]"),
    ],
)
def test_received_arguments_are_written_as_json_stringify_writes_them(
    value: Any, text: str
) -> None:
    assert js_stringify(value) == text


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(all_schemas())), _JSON)
def test_any_bad_arguments_give_an_answer_and_never_raise(name: str, value: Any) -> None:
    schema = all_schemas()[name]
    answer = _answer(name, schema, value)
    assert answer is None or answer.startswith(f'Validation failed for tool "{name}":\n  - ')


async def test_fresh_random_cases_are_answered_as_openclaw_answers_them(
    tmp_path: Path, ctx: ToolContext
) -> None:
    require_node()
    schemas = all_schemas()
    cases = await openclaw_validate(tmp_path, schemas, random_cases(20_261_208, 400, schemas))
    shapes = tool_shapes()
    refused = [case for case in cases if case["error"] is not None]
    assert len(refused) > 250
    for case in refused:
        assert _answer(case["schema"], schemas[case["schema"]], case["args"]) == case["error"]
        if case["schema"] in shapes:
            result = await _invoke(shapes[case["schema"]], json.dumps(case["args"]), ctx)
            assert _text(result) == case["error"]
