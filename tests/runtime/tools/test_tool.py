"""invoke_tool (argument validation, failures, cancellation), sanitize_result and tool_spec."""

from __future__ import annotations

import base64
import logging
from typing import Annotated, Any, Literal

import attrs
import jsonschema
import msgspec
import pytest
import trio

from runtime.llm._types import ImageContent, TextContent, ToolSpec
from runtime.tools._builtins import MessageTool, builtin_tools
from runtime.tools._fs import ReadTool
from runtime.tools._tool import (
    Tool,
    ToolContext,
    ToolResult,
    invoke_tool,
    sanitize_result,
    text_result,
    tool_spec,
)
from runtime.tools._web import WebFetchSettings, WebSettings


class _NoParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    pass


class _Boom:
    name = "boom"
    description = "always fails"
    params = _NoParams
    mutating = False

    async def run(self, args: _NoParams, ctx: ToolContext) -> ToolResult:
        raise RuntimeError("the disk is on fire")


class _Forever:
    name = "forever"
    description = "never returns"
    params = _NoParams
    mutating = False

    def __init__(self) -> None:
        self.started = trio.Event()

    async def run(self, args: _NoParams, ctx: ToolContext) -> ToolResult:
        self.started.set()
        await trio.sleep_forever()
        raise AssertionError("unreachable")


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"path": [1]}, 'Validation failed for tool "read":\n  - path: must be string\n'),
        ('{"path": [1]}', 'Validation failed for tool "read":\n  - path: must be string\n'),
        ({"path": "a", "offset": 0}, "\n  - offset: must be >= 1\n"),
        ({}, "\n  - path: must have required properties path\n"),
        ('{"path": ', "invalid arguments for read: Input data was truncated"),
        ("[1, 2]", "\n  - root: must be object\n"),
    ],
    ids=["dict-type", "json-type", "constraint", "missing", "bad-json", "not-object"],
)
async def test_invalid_arguments_are_an_error_naming_the_field(
    ctx: ToolContext, arguments: str | dict[str, Any], message: str
) -> None:
    with trio.fail_after(5):
        result = await invoke_tool(ReadTool(), arguments, ctx)
    assert result.is_error
    assert len(result.content) == 1
    assert isinstance(result.content[0], TextContent)
    assert message in result.content[0].text


async def test_exact_message_for_a_wrong_type(ctx: ToolContext) -> None:
    with trio.fail_after(5):
        result = await invoke_tool(ReadTool(), {"path": {"name": "a"}}, ctx)
    assert result == text_result(
        'Validation failed for tool "read":\n  - path: must be string\n\n'
        'Received arguments:\n{\n  "path": {\n    "name": "a"\n  }\n}',
        is_error=True,
    )


async def test_empty_argument_text_means_no_arguments(ctx: ToolContext) -> None:
    with trio.fail_after(5):
        result = await invoke_tool(_Boom(), "  ", ctx)
    assert result.is_error
    assert result.content == [TextContent(text="boom failed: the disk is on fire")]


async def test_a_raising_tool_becomes_an_error_result_and_is_logged(
    ctx: ToolContext, caplog: pytest.LogCaptureFixture
) -> None:
    with trio.fail_after(5), caplog.at_level(logging.ERROR, logger="runtime.tools._tool"):
        result = await invoke_tool(_Boom(), {}, ctx)
    assert result == text_result("boom failed: the disk is on fire", is_error=True)
    [record] = caplog.records
    assert "tool boom failed" in record.getMessage()
    assert record.exc_info is not None


async def test_cancellation_propagates_out_of_invoke_tool(ctx: ToolContext) -> None:
    tool = _Forever()
    with trio.fail_after(5):
        with trio.CancelScope() as scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(invoke_tool, tool, {}, ctx)
                await tool.started.wait()
                scope.cancel()
        assert scope.cancelled_caught


async def test_message_tool_awaits_delivery(ctx: ToolContext) -> None:
    sent: list[str] = []

    async def send_message(text: str) -> None:
        await trio.lowlevel.checkpoint()
        sent.append(text)

    ctx = attrs.evolve(ctx, send_message=send_message)
    with trio.fail_after(5):
        result = await invoke_tool(MessageTool(), '{"text": "hello there"}', ctx)
        empty = await invoke_tool(MessageTool(), {"text": ""}, ctx)
    assert result.content == [TextContent(text="sent")]
    assert not result.is_error
    assert sent == ["hello there"]
    assert empty.is_error  # an empty message is refused before delivery


def test_result_encodes_in_the_pi_shape() -> None:
    encoded = msgspec.json.decode(msgspec.json.encode(text_result("x", is_error=True)))
    assert encoded == {"content": [{"type": "text", "text": "x"}], "isError": True, "details": None}


# --- sanitize_result -------------------------------------------------------------------------


def test_sanitize_keeps_a_small_result_as_is() -> None:
    result = text_result("short", details={"k": 1})
    assert sanitize_result(result) == result


def test_sanitize_caps_text_with_a_marker() -> None:
    result = sanitize_result(text_result("a" * 25_000, is_error=True))
    assert result.is_error
    [block] = result.content
    assert isinstance(block, TextContent)
    assert block.text == "a" * 20_000 + "…[truncated 5000 chars]"


def test_sanitize_budget_is_shared_across_blocks() -> None:
    result = sanitize_result(
        ToolResult(content=[TextContent(text="abcdef"), TextContent(text="ghij")]),
        max_chars=8,
    )
    assert result.content == [
        TextContent(text="abcdef"),
        TextContent(text="gh…[truncated 2 chars]"),
    ]


def test_sanitize_replaces_images_with_a_placeholder() -> None:
    png = b"\x89PNG\r\n\x1a\n" + bytes(12_337)
    result = sanitize_result(
        ToolResult(
            content=[
                TextContent(text="see"),
                ImageContent(data=base64.b64encode(png).decode(), mimeType="image/png"),
            ]
        )
    )
    assert result.content == [
        TextContent(text="see"),
        TextContent(text="[image: image/png, 12345 bytes]"),
    ]


# --- tool_spec -------------------------------------------------------------------------------


class _Inner(msgspec.Struct, frozen=True):
    depth: int


class _Nested(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Has a nested struct."""

    inner: _Inner
    label: Annotated[str, msgspec.Meta(description="a label")] | None = None


class _NestedTool:
    name = "nested"
    description = "nested params"
    params = _Nested
    mutating = False

    async def run(self, args: _Nested, ctx: ToolContext) -> ToolResult:
        return text_result("ok")


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        return [k for k in node if k in ("$ref", "$defs")] + [
            r for v in node.values() for r in _refs(v)
        ]
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


@pytest.mark.parametrize("tool", [*builtin_tools(), _NestedTool()], ids=lambda t: t.name)
def test_tool_spec_parameters_are_a_plain_object_schema(tool: Tool) -> None:
    spec = tool_spec(tool)
    assert isinstance(spec, ToolSpec)
    assert spec.name == tool.name
    assert spec.description == tool.description
    params = spec.parameters
    assert params["type"] == "object"
    assert isinstance(params["properties"], dict)
    assert _refs(params) == []
    assert "null" not in msgspec.json.encode(params).decode()
    jsonschema.Draft202012Validator.check_schema(params)


async def test_unknown_fields_are_an_error_where_the_params_forbid_them(
    ctx: ToolContext,
) -> None:
    """As OpenClaw's schemas say: refused with `additionalProperties: false`
    (`forbid_unknown_fields`), ignored otherwise (`read`, as OpenClaw's read ignores them)."""
    with trio.fail_after(5):
        strict = await invoke_tool(_NestedTool(), {"inner": {"depth": 1}, "bogus": True}, ctx)
    assert strict.is_error
    assert strict.content[0].text.startswith(  # type: ignore[union-attr]
        'Validation failed for tool "nested":\n  - bogus: schema is false\n'
        "  - root: must not have additional properties\n\n"
    )
    assert tool_spec(_NestedTool()).parameters["additionalProperties"] is False
    assert "additionalProperties" not in tool_spec(ReadTool()).parameters


def test_tool_spec_inlines_nested_structs_and_keeps_descriptions() -> None:
    params = tool_spec(_NestedTool()).parameters
    assert params["properties"]["inner"]["properties"] == {"depth": {"type": "integer"}}
    assert params["properties"]["label"] == {"description": "a label", "type": "string"}
    assert params["required"] == ["inner"]
    jsonschema.validate({"inner": {"depth": 1}}, params)


def test_builtin_tools_names_and_mutating_flags() -> None:
    tools = builtin_tools()
    assert [(t.name, t.mutating) for t in tools] == [
        ("ls", False),
        ("read", False),
        ("write", True),
        ("edit", True),
        ("apply_patch", True),
        ("exec", True),
        ("message", True),
    ]
    with_web = builtin_tools(WebSettings())
    assert [t.name for t in with_web[-2:]] == ["web_search", "web_fetch"]
    assert not any(t.mutating for t in with_web[-2:])
    off = WebSettings(fetch=WebFetchSettings(enabled=False), search_enabled=False)
    assert [t.name for t in builtin_tools(off)] == [t.name for t in tools]


class _Shaped(msgspec.Struct, frozen=True):
    """A docstring the model does not see."""

    kind: Literal["zeta", "alpha", "mid"]
    steps: list[_Inner] | None = None
    status: (
        Annotated[
            Literal["b", "a"],
            msgspec.Meta(
                extra_json_schema={"anyOf": [{"type": "string", "const": v} for v in ("b", "a")]}
            ),
        ]
        | None
    ) = None


class _ShapedTool(_NestedTool):
    name = "shaped"
    params = _Shaped  # type: ignore[assignment]


def test_tool_spec_shapes_schemas_as_openclaws_typebox_does() -> None:
    params = tool_spec(_ShapedTool()).parameters
    assert params == {
        "type": "object",
        "properties": {
            "kind": {"enum": ["zeta", "alpha", "mid"], "type": "string"},
            "steps": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"depth": {"type": "integer"}},
                    "required": ["depth"],
                },
            },
            "status": {
                "anyOf": [{"type": "string", "const": "b"}, {"type": "string", "const": "a"}]
            },
        },
        "required": ["kind"],
    }
