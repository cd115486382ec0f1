"""What a tool is, how it is offered to a model, and how one call of it runs.

A tool is any object with `name`, `description`, `params` (a msgspec `Struct` type: the
arguments), `mutating` and `async run(args, ctx)`. `tool_spec` exports it for a provider;
`invoke_tool` decodes the model's arguments into `params`, runs it, and turns every failure
into an error `ToolResult` the model can read. `sanitize_result` shrinks a result for events
and logs (text cap, images replaced by a placeholder); the transcript keeps the full result.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Literal, Protocol, Union, get_args, get_origin

import msgspec
from attrs import field, frozen

from runtime.llm._types import ImageContent, Message, TextContent, ToolSpec, UserContent

from ._coerce import coerce_arguments
from ._schema_errors import has_null, validation_failure

__all__ = [
    "Tool",
    "ToolContext",
    "ToolResult",
    "invoke_tool",
    "sanitize_result",
    "text_result",
    "thrown_message",
    "thrown_result",
    "tool_spec",
]

logger = logging.getLogger(__name__)


@frozen
class ToolContext:
    """What a tool may know and do beyond its arguments, for one call in one run.

    `on_update` is synchronous and must not block: it hands a partial result to the agent loop,
    which emits it as a `tool` `update` event (`partialResult`). `send_message` delivers the
    `message` tool's text (the caller records what was sent); it is a checkpoint.
    """

    workspace: Path
    agent_id: str
    session_key: str
    session_id: str
    run_id: str
    on_update: Callable[[Any], None]
    send_message: Callable[[str], Awaitable[None]]
    env: Mapping[str, str] = field(factory=dict)
    """The run's environment for commands: what its eligible skills require (their `env`
    requirements, from the gateway's environment), on top of the exec allowlist."""
    end_turn: Callable[[str, str | None], None] | None = None
    """`end_turn(message, acknowledgment)`: the run ends its turn once this call's result is
    in (OpenClaw's `onYield`, what `sessions_yield` asks): no further model turn, `message`
    kept as private context for the session's next turn. None where a run cannot yield.
    Synchronous."""
    on_kept: Callable[[Callable[[], None]], None] | None = None
    """`on_kept(commit)`: run `commit` once this call's result is kept (in the run's
    messages, which its transcript keeps even when the run is aborted later), and never
    when the run ends before (an abort between the call's return and its result): what a
    call may only do once the model is sure to see its result (OpenClaw's tool result
    acknowledgement; `process` taking a job's queued completion back). None where no run
    keeps the result: the tool commits at once. Synchronous; a commit must not raise."""
    context_window: int | None = None
    """The run's model's context window in tokens, where known (`read` sizes its pages by
    it, as OpenClaw's does)."""
    image_max_side: int | None = None
    """`agents.defaults.imageMaxDimensionPx`: the longest side an image in a tool result
    keeps (None: OpenClaw's 1200 px; `_images`)."""
    run_messages: Callable[[], tuple[Message, ...]] | None = None
    """`run_messages()`: the run's messages so far, which its session's transcript holds
    only once the run ends: its user message, then what the model and the tools said (this
    call's assistant message included). OpenClaw keeps them as they come, so what reads a
    session's recent lines (`automations`' `contextMessages`) adds them. None where no run
    tells them."""


class ToolResult(msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename="camel"):
    """The outcome of one tool call: content for the model, and details for clients.

    Encodes as `{content, isError, details}` (the pi-ai tool result shape).
    """

    content: list[UserContent]
    is_error: bool = False
    details: dict[str, Any] | None = None


def text_result(
    text: str, *, is_error: bool = False, details: dict[str, Any] | None = None
) -> ToolResult:
    """A result holding one text block."""
    return ToolResult(content=[TextContent(text=text)], is_error=is_error, details=details)


def thrown_result(tool: str, message: str) -> ToolResult:
    """The error result OpenClaw's agent gives when a tool throws (its tool adapter's
    `buildToolExecutionErrorResult`): `{status: "error", tool, error}` as two-space JSON text,
    the same object as details. `tool` is the tool's own name (not the alias the model used).
    The file tools, `apply_patch` and `web_fetch` answer their failures so, as OpenClaw's
    throw them."""
    payload = {"status": "error", "tool": tool, "error": message}
    text = json.dumps(payload, indent=2, ensure_ascii=False)
    return ToolResult(content=[TextContent(text=text)], is_error=True, details=payload)


def thrown_message(details: Any, tool: str | None = None) -> str | None:
    """The message of details in the shape `thrown_result` makes (`{status: "error", tool,
    error}`, of `tool` when given), else None."""
    if not isinstance(details, dict) or list(details) != ["status", "tool", "error"]:
        return None
    message = details["error"]
    if details["status"] != "error" or not isinstance(message, str):
        return None
    return message if tool is None or details["tool"] == tool else None


class Tool(Protocol):
    """A tool the agent can call.

    `params` is a msgspec `Struct` type describing the arguments (decoded strictly: unknown
    fields are errors, so declare it with `forbid_unknown_fields=True`); its docstring and
    field `Meta(description=...)` end up in the JSON Schema the model sees. `mutating` says
    whether a call changes anything outside the conversation (files, processes, messages).

    `run` receives an instance of `params`. It may raise: `invoke_tool` reports the error to
    the model. It must let `trio.Cancelled` through and leave nothing running behind it.

    A tool may also have `prepare_arguments(arguments) -> arguments` (OpenClaw's
    `prepareArguments`): it gets the model's decoded arguments before they are checked against
    `params`, to accept an older or looser form (`edit`'s top-level `oldText`/`newText`). It
    must not raise, and must give back what it got when there is nothing to prepare.
    A tool with `open_arguments = True` is offered with `additionalProperties: true` (as
    OpenClaw's cron tool is): its `prepare_arguments` takes what its `params` do not name.
    """

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def params(self) -> type[msgspec.Struct]: ...

    @property
    def mutating(self) -> bool: ...

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult: ...


# --- the spec a provider sees --------------------------------------------------------------


def tool_spec(tool: Tool) -> ToolSpec:
    """Export `tool` for a provider: its parameters as a plain JSON Schema object.

    The top-level `$ref` is inlined, so `parameters` is `{"type": "object", "properties":
    ..., "required": [...], ...}`; nested structs are inlined too (a recursive one keeps its
    `$defs`). Optional fields (`X | None = None`) are shown as plain `X`: models may omit them
    (a `null` they send anyway is coerced as OpenClaw coerces it: 0, "" or false for a number,
    string or boolean; for an array or object it is refused, as OpenClaw refuses it). The rest
    is shaped as OpenClaw's TypeBox schemas are: a struct's name and docstring are left out
    (they are for readers of the code; the model reads the tool's description and the fields'
    `Meta` descriptions), an empty `required` too; an `enum` of strings says `"type": "string"` and
    lists the values in the order the `Literal` declares them (msgspec sorts them). A field whose
    `Meta(extra_json_schema=...)` gives an `anyOf` or a `const` is shown by that instead of its
    `enum` (OpenClaw writes some literals as `anyOf` of `const`s).
    """
    key = (tool.params, tool.name, tool.description)
    cached = _SPECS.get(key)
    if cached is not None:
        return cached
    spec = _tool_spec(tool)
    if len(_SPECS) < 4096:
        _SPECS[key] = spec
    return spec


_SPECS: dict[tuple[type, str, str], ToolSpec] = {}
"""Specs by (params type, name, description): building one costs a schema walk, and the
same tools are offered to every run."""


def _tool_spec(tool: Tool) -> ToolSpec:
    schema = msgspec.json.schema(tool.params)
    defs: dict[str, Any] = schema.pop("$defs", {})
    inlined = _inline(schema, defs, frozenset())
    if not isinstance(inlined, dict) or inlined.get("type") != "object":
        raise TypeError(f"tool {tool.name!r}: params must be a msgspec Struct type")
    inlined.setdefault("properties", {})
    _declared_order(inlined, tool.params, frozenset())
    if getattr(tool, "open_arguments", False):  # other arguments are taken (and ignored)
        inlined["additionalProperties"] = True
    if _has_ref(inlined):
        inlined["$defs"] = defs
    return ToolSpec(name=tool.name, description=tool.description, parameters=inlined)


def _inline(node: Any, defs: dict[str, Any], seen: frozenset[str]) -> Any:
    if isinstance(node, list):
        return [_inline(item, defs, seen) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        name = ref.removeprefix("#/$defs/")
        if name in seen or name not in defs:
            return node
        struct = _inline(defs[name], defs, seen | {name})
        for key in ("title", "description"):  # the struct's name and docstring
            struct.pop(key, None)
        return {**struct, **{k: _inline(v, defs, seen) for k, v in node.items() if k != "$ref"}}
    out = {key: _inline(value, defs, seen) for key, value in node.items()}
    if out.get("required") == []:
        del out["required"]
    values = out.get("enum")
    if isinstance(values, list) and ("anyOf" in out or "const" in out):
        del out["enum"]  # a Literal written as OpenClaw writes it (`Meta(extra_json_schema)`)
    elif "type" not in out and isinstance(values, list) and all(isinstance(v, str) for v in values):
        out["type"] = "string"
    props = out.get("properties")
    if isinstance(props, dict):
        required = set(out.get("required", ()))
        for key, prop in props.items():
            if key not in required and isinstance(prop, dict):
                props[key] = _drop_null_branch(prop)
    return out


def _declared_order(node: Any, tp: Any, seen: frozenset[type]) -> None:
    """Put each `enum` of `node` (the inlined schema of `tp`) in its `Literal`'s order."""
    while True:  # Annotated[X, ...] -> X; X | None -> X
        if get_origin(tp) is Annotated:
            tp = get_args(tp)[0]
            continue
        if get_origin(tp) in (Union, UnionType):
            rest = [a for a in get_args(tp) if a is not type(None)]
            if len(rest) == 1:
                tp = rest[0]
                continue
        break
    if not isinstance(node, dict):
        return
    if get_origin(tp) is Literal:
        if sorted(map(repr, node.get("enum", ()))) == sorted(map(repr, get_args(tp))):
            node["enum"] = list(get_args(tp))
    elif get_origin(tp) is list:
        _declared_order(node.get("items"), get_args(tp)[0], seen)
    elif isinstance(tp, type) and issubclass(tp, msgspec.Struct) and tp not in seen:
        props = node.get("properties", {})
        for field in msgspec.structs.fields(tp):
            _declared_order(props.get(field.encode_name), field.type, seen | {tp})


def _drop_null_branch(prop: dict[str, Any]) -> dict[str, Any]:
    """`{"anyOf": [X, {"type": "null"}], "default": null}` → `X` (keeping a description)."""
    branches = prop.get("anyOf")
    if not isinstance(branches, list) or prop.get("default", ...) is not None:
        return prop
    rest = [b for b in branches if b != {"type": "null"}]
    if len(rest) == len(branches) or not rest:
        return prop
    simplified: dict[str, Any] = dict(rest[0]) if len(rest) == 1 else {"anyOf": rest}
    for key, value in prop.items():
        if key not in ("anyOf", "default"):
            simplified.setdefault(key, value)
    return simplified


def _has_ref(node: Any) -> bool:
    if isinstance(node, dict):
        return "$ref" in node or any(_has_ref(v) for v in node.values())
    if isinstance(node, list):
        return any(_has_ref(v) for v in node)
    return False


# --- one call --------------------------------------------------------------------------------


async def invoke_tool(tool: Tool, arguments: str | dict[str, Any], ctx: ToolContext) -> ToolResult:
    """Validate `arguments` against `tool.params`, run the tool, and return its result.

    `arguments` is the JSON text a model produced (an empty string means `{}`) or an already
    decoded object, prepared by the tool's `prepare_arguments` if it has one, then coerced to
    the tool's parameter schema as OpenClaw coerces them (`runtime.tools._coerce`: `"5"` for a
    number is 5, `5` for a string is `"5"`, `"true"` for a boolean is true, a JSON string for
    an array or object is parsed, `null` is that type's empty value). Arguments that still do
    not fit give OpenClaw's error result (`runtime.tools._schema_errors`): `Validation failed
    for tool "read":`, a line per TypeBox error (`  - path: must be string`), and the
    arguments as received; the tool does not run (a `null` left for an optional array or
    object too, which msgspec would take as None). What only msgspec refuses, and JSON that
    does not parse, give `invalid arguments for read: <msgspec's message>`. A tool that
    raises gives an error result with the message (and is logged).

    Never raises, except `trio.Cancelled` (and other `BaseException`s): cancellation reaches
    the tool, which cleans up, and then propagates. A checkpoint when the tool runs.
    The result is not sanitized: call `sanitize_result` for events.
    """
    prepare = getattr(tool, "prepare_arguments", None)
    try:
        if isinstance(arguments, str):
            arguments = msgspec.json.decode(arguments.strip() or "{}")
        if prepare is not None:
            arguments = prepare(arguments)
        parameters = tool_spec(tool).parameters
        coerced = coerce_arguments(arguments, parameters)
    except msgspec.DecodeError as exc:
        return text_result(f"invalid arguments for {tool.name}: {exc}", is_error=True)
    try:
        args: Any = msgspec.convert(coerced, type=tool.params)
    except msgspec.ValidationError as exc:  # only now is TypeBox's list of errors made
        text = validation_failure(tool.name, coerced, arguments, parameters)
        return text_result(text or f"invalid arguments for {tool.name}: {exc}", is_error=True)
    if has_null(coerced):  # an optional field's None passes msgspec, not OpenClaw's schema
        text = validation_failure(tool.name, coerced, arguments, parameters)
        if text is not None:
            return text_result(text, is_error=True)
    try:
        return await tool.run(args, ctx)
    except Exception as exc:
        logger.exception(
            "tool %s failed (run %s, session %s)", tool.name, ctx.run_id, ctx.session_key
        )
        message = str(exc) or type(exc).__name__
        return text_result(f"{tool.name} failed: {message}", is_error=True)


# --- sanitizing for events ---------------------------------------------------------------


def sanitize_result(result: ToolResult, *, max_chars: int = 20_000) -> ToolResult:
    """A copy of `result` fit for events and logs.

    Text blocks share a budget of `max_chars` characters, in order; the block that crosses it
    is cut and ends with `…[truncated N chars]` (N = characters removed), and later blocks keep
    only that marker. Each image becomes a text placeholder `[image: image/png, 12345 bytes]`
    (decoded size). `is_error` and `details` are kept as they are.
    """
    budget = max_chars
    content: list[UserContent] = []
    for block in result.content:
        if isinstance(block, ImageContent):
            placeholder = f"[image: {block.mimeType}, {_base64_size(block.data)} bytes]"
            content.append(TextContent(text=placeholder))
            continue
        text = block.text
        if len(text) <= budget:
            budget -= len(text)
            content.append(block)
            continue
        cut = len(text) - budget
        content.append(TextContent(text=f"{text[:budget]}…[truncated {cut} chars]"))
        budget = 0
    return ToolResult(content=content, is_error=result.is_error, details=result.details)


def _base64_size(data: str) -> int:
    stripped = "".join(data.split())
    padding = len(stripped) - len(stripped.rstrip("="))
    return max(0, len(stripped) * 3 // 4 - padding)
