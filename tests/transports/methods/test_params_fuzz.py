"""Every registered RPC method, sent params generated from its definition in the protocol
schema, valid and hostile, over a real socket: each request gets exactly one answer (the
`agent` ack and its final: two), bad params are `INVALID_REQUEST` naming the field, no answer
carries a Python exception, the connection lives on and no run is left behind.

The methods are the gateway's own table (`gateway.methods`), not a list kept here. A method's
params come from the definition the protocol schemas give it (the newer definitions win, as
in `runtime.protocol._wire`): the one named as its registered params type, else
`<Method>Params`; a method neither schema defines is generated from its registered type's
own JSON schema (`msgspec.json.schema`). A request is a valid draw with at most one mutation:
a huge integer, `1e999`, `NaN` or a lone surrogate written raw into the frame, deep nesting,
a long string, a wrong type, an unknown field, a missing required field, or params that are
not an object. jsonschema (with the patterns read as ECMAScript reads them) says whether the
params are still valid.

Two tests: the hypothesis fuzz, and a deterministic sweep of every field of every method
with the values no field can hold (what the fuzz draws only now and then)."""

from __future__ import annotations

import json
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import hypothesis.strategies as st
import jsonschema
import msgspec
import trio
import trio.testing
from hypothesis import HealthCheck, Phase, given, settings

from runtime.protocol import MAX_PARAMS_DEPTH
from tests.conftest import NEWER_PATH, SCHEMA_PATH, _pascal, frame_checker, running_gateway
from tests.e2e._raw import Raw, raw_client
from transports.server._gateway import Gateway

# --- what is sent, what is expected ----------------------------------------------------------

HOSTILE_ONLY: Final = frozenset({"config.apply", "config.patch", "config.set"})
"""Methods sent only params that must be refused: valid ones would replace or patch the test
gateway's config (and `config.apply`/`config.patch` restart it). No method is left out;
`sessions.delete` and `sessions.reset` get valid params too (the test keeps no session of
its own: what they can hit was made by the same batch)."""

VALID_OVERRIDES: Final[dict[str, dict[str, Any]]] = {
    # A valid wait on a run that never appears lasts its whole timeout (30 s when absent).
    "agent.wait": {
        "required": ["runId", "timeoutMs"],
        "properties": {"timeoutMs": {"type": "integer", "minimum": 0, "maximum": 50}},
    },
    # Likewise a wait on a question the same batch raised (`question.request` takes the
    # caller's id): pending until answered or its 900 s pass.
    "question.waitAnswer": {
        "required": ["id", "timeoutMs"],
        "properties": {"timeoutMs": {"type": "integer", "minimum": 1, "maximum": 50}},
    },
}
"""What replaces the schema's `required` and field schemas for valid draws (mutations still
go to these fields, and the sweep's largest admitted integers skip them)."""

FIELD_HINTS: Final[dict[str, tuple[Any, ...]]] = {
    "agentId": ("main",),
    "sessionKey": ("main", "agent:main:main", "agent:main:fuzz", "global"),
    "key": ("main", "agent:main:main", "agent:main:fuzz"),
    "at": ("2099-01-01T00:00:00Z", "2000-01-01T00:00:00Z"),
}
"""Values a valid draw of a field of that name sometimes takes: what the test gateway has
(its agent, its sessions), so that requests get past "unknown agent" to the method's work."""

NORMAL_ERRORS: Final = frozenset(
    {
        "INVALID_REQUEST",  # an unknown session, agent, job, device; a combination refused
        "FORBIDDEN",
        "NOT_FOUND",
        "UNAVAILABLE",  # never with a Python exception's text (`EXCEPTION_NAME`)
        "AGENT_TIMEOUT",
        "AGENT_RESULT_NOT_FOUND",  # runs.replay of a run that is not there
    }
)
"""Codes a method may answer params that are valid with."""

RESULTS_NOT_CHECKED: Final[dict[str, str]] = {}
"""Methods whose successful results do not match their result definitions yet, and why
(none: every result is validated)."""

EXCEPTION_NAME: Final = re.compile(r"\b[A-Z][A-Za-z]*(?:Error|Exception)\b\s*:")
"""How `runtime.protocol.describe_exception` tells an exception a handler did not expect."""

SAFE_INT: Final = 2**53 - 1
"""The bound of valid integer draws where the schema has none."""
INT64: Final = (-(2**63), 2**63 - 1)
"""The largest integers params may hold: admitted, and answered as any other value."""
HUGE_INTS: Final = (10**400, -(10**400), 2**63, -(2**63) - 1, 2**64)
"""Integers no field can hold."""
RAW_NUMBERS: Final = ("1e999", "-1e999", "1E400")
"""Numbers out of a double's range, written as they are."""
NOT_JSON_NUMBERS: Final = ("NaN", "Infinity", "-Infinity")
SURROGATES: Final = ("\\ud800", "\\udfff", "\\udbff")
"""Lone UTF-16 surrogates, as the JSON escapes written into a string."""
DEPTHS: Final = (MAX_PARAMS_DEPTH + 1, 900, 990, 5000, 200_000)
DECODER_DEPTH: Final = 900
"""Deeper than this the frame decoder (on Python's stack) may refuse the frame as a whole,
before any field is known."""
LONG: Final = (300, 70_000, 4 * 1024 * 1024 + 1)
"""Lengths of long strings, in characters (up to 4 bytes each: under the frame limit)."""

_TYPE_SAMPLES: Final[dict[str, Any]] = {
    "string": "x",
    "integer": 7,
    "number": 1.5,
    "boolean": True,
    "null": None,
    "array": [1],
    "object": {"k": 1},
}
RAW: Final = "@@RAW@@"
"""Where a value is written raw into the frame's text (as `"@@RAW@@"` in the params)."""
SURROGATE: Final = "@@SURROGATE@@"


# --- the method table and its schemas --------------------------------------------------------


def _ecma(node: Any) -> Any:
    """`node` with each `pattern` as ECMAScript reads it (a final `$` only at the very end),
    as `scripts/gen_protocol.py` turns them for msgspec."""
    if isinstance(node, list):
        return [_ecma(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _ecma(v) for k, v in node.items()}
    pattern = node.get("pattern")
    if isinstance(pattern, str) and pattern.endswith("$") and not pattern.endswith("\\$"):
        out["pattern"] = pattern[:-1] + "\\Z"
    return out


def _definitions() -> dict[str, Any]:
    assert frame_checker() is not None, f"protocol schema missing at {SCHEMA_PATH}"
    defs: dict[str, Any] = dict(json.loads(SCHEMA_PATH.read_text())["definitions"])
    if NEWER_PATH.exists():
        defs.update(json.loads(NEWER_PATH.read_text())["definitions"])
    return dict(_ecma(defs))


@dataclass(frozen=True)
class Method:
    name: str
    schema: dict[str, Any]
    defs: dict[str, Any]
    closed: bool
    """Its params type refuses unknown fields (False: an open type, or none): params the
    schema refuses must be refused."""
    validator: Any


def _method(name: str, params: type[Any] | None, defs: dict[str, Any]) -> Method:
    config = getattr(params, "__struct_config__", None)
    closed = bool(getattr(config, "forbid_unknown_fields", False))
    schema: dict[str, Any] | None = None
    for candidate in (getattr(params, "__name__", ""), _pascal(name) + "Params"):
        if candidate in defs:
            schema = defs[candidate]
            break
    if schema is None and params is None:
        schema = {"type": "object"}
    elif schema is None:
        schema = _ecma(msgspec.json.schema(params))
        defs = schema.pop("$defs", {})
    validator = jsonschema.Draft7Validator({**schema, "definitions": defs, "$defs": defs})
    return Method(name, schema, defs, closed, validator)


async def _read_table(root: Path) -> list[tuple[str, type[Any] | None]]:
    async with running_gateway(root) as gw:
        table = gw.methods
        return [(name, table.params_type(name)) for name in table.names()]


def registered_methods(root: Path) -> list[Method]:
    """Every method of a gateway's table, with its params schema."""
    defs = _definitions()
    return [_method(name, params, defs) for name, params in trio.run(_read_table, root)]


# --- valid values from a schema --------------------------------------------------------------

json_leaf = (
    st.none()
    | st.booleans()
    | st.integers(-SAFE_INT, SAFE_INT)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
json_any = st.recursive(
    json_leaf,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)


def _resolve(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = defs[schema["$ref"].rsplit("/", 1)[-1]]
    return schema


def values(schema: dict[str, Any], defs: dict[str, Any], depth: int = 0) -> st.SearchStrategy[Any]:
    """Values meant to match `schema` (patterns, `oneOf` and `not` are tried, not
    guaranteed: jsonschema has the last word)."""
    schema = _resolve(schema, defs)
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            return st.one_of([values(s, defs, depth) for s in schema[key]])
    kind = schema.get("type")
    if isinstance(kind, list):
        return st.one_of([values({**schema, "type": k}, defs, depth) for k in kind])
    if kind == "string":
        return _strings(schema)
    if kind == "integer":
        lo, hi = schema.get("minimum", -SAFE_INT), schema.get("maximum", SAFE_INT)
        return st.integers(max(lo, -SAFE_INT), min(hi, SAFE_INT))
    if kind == "number":
        lo, hi = schema.get("minimum", -1e15), schema.get("maximum", 1e15)
        return st.floats(lo, hi, allow_nan=False, allow_infinity=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        lo = schema.get("minItems", 0)
        items = values(schema.get("items", {}), defs, depth + 1) if depth < 4 else json_leaf
        unique = schema.get("uniqueItems")
        return st.lists(
            items,
            min_size=lo,
            max_size=min(schema.get("maxItems", lo + 2), lo + 2),
            unique_by=(lambda v: json.dumps(v, sort_keys=True)) if unique else None,
        )
    if kind == "object" or "properties" in schema:
        return _objects(schema, defs, depth)
    return json_any


def _strings(schema: dict[str, Any]) -> st.SearchStrategy[str]:
    lo = schema.get("minLength", 0)
    hi = schema.get("maxLength", 1 << 30)
    pattern = schema.get("pattern")
    if pattern is None:
        return st.text(min_size=lo, max_size=min(hi, lo + 16))
    return st.from_regex(pattern).filter(lambda s: lo <= len(s) <= hi)


def _hinted(name: str, strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    hints = FIELD_HINTS.get(name)
    return strategy if hints is None else st.sampled_from(hints) | strategy


def _objects(schema: dict[str, Any], defs: dict[str, Any], depth: int) -> st.SearchStrategy[Any]:
    """The required fields and up to four optional ones (and a few extra keys where the
    schema admits them)."""
    props: dict[str, Any] = schema.get("properties", {})
    required = list(schema.get("required", []))
    optional = [k for k in props if k not in required] if depth < 4 else []
    extra: dict[str, Any] | None = None
    if isinstance(schema.get("additionalProperties"), dict):
        extra = schema["additionalProperties"]
    elif schema.get("patternProperties"):
        extra = next(iter(schema["patternProperties"].values()))
    elif "additionalProperties" not in schema and not props:
        extra = {}

    def build(chosen: list[str]) -> st.SearchStrategy[dict[str, Any]]:
        fields = {
            k: _hinted(k, values(props.get(k, {}), defs, depth + 1)) for k in [*required, *chosen]
        }
        base = st.fixed_dictionaries(fields)
        if extra is None:
            return base
        keys = st.text(min_size=1, max_size=8)
        more = st.dictionaries(keys, values(extra, defs, depth + 1), max_size=2)
        return st.tuples(more, base).map(lambda pair: {**pair[0], **pair[1]})

    if not optional:
        return build([])
    return st.lists(st.sampled_from(optional), max_size=4, unique=True).flatmap(build)


def _allowed_types(schema: dict[str, Any], defs: dict[str, Any]) -> set[str] | None:
    """The JSON types `schema` admits; None when it admits any."""
    schema = _resolve(schema, defs)
    if "const" in schema or "enum" in schema:
        found = {_json_type(v) for v in schema.get("enum", [schema.get("const")])}
        return found | ({"number"} if "integer" in found else set())
    for key in ("anyOf", "oneOf"):
        if key in schema:
            union: set[str] = set()
            for sub in schema[key]:
                sub_types = _allowed_types(sub, defs)
                if sub_types is None:
                    return None
                union |= sub_types
            return union
    kind = schema.get("type")
    if kind is None:
        return {"object"} if "properties" in schema else None
    kinds = set(kind) if isinstance(kind, list) else {kind}
    return kinds | ({"integer"} if "number" in kinds else set())


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


# --- requests --------------------------------------------------------------------------------

UNIVERSAL: Final = frozenset({"huge_int", "raw_number", "not_json_number", "surrogate", "deep"})
"""Mutations every method refuses, whatever its params type, before looking at anything else
(the frame decode, `runtime.protocol.check_params_values`)."""
MUTATIONS: Final = (
    *sorted(UNIVERSAL),
    "long",
    "wrong_type",
    "unknown_field",
    "missing_required",
    "not_object",
)


@dataclass
class Request:
    method: str
    params: Any
    mutation: str
    """What was done to a valid draw ("none": nothing)."""
    key: str | None = None
    """The top-level key the mutation is at: what a refusal must name."""
    raw: dict[str, str] = field(default_factory=dict)
    """Placeholders in the params' JSON and the raw text each stands for."""
    closed: bool = True
    base_valid: bool = True
    """Whether the params were valid before the mutation."""
    schema_valid: bool = True
    depth: int = 0
    """How deep the `deep` mutation nests."""

    def text(self, req_id: str) -> str:
        frame = json.dumps(
            {"type": "req", "id": req_id, "method": self.method, "params": self.params},
            ensure_ascii=False,
        )
        for placeholder, token in self.raw.items():
            frame = frame.replace(placeholder, token)
        return frame

    @property
    def must_refuse(self) -> bool:
        return self.mutation in UNIVERSAL or (self.closed and not self.schema_valid)

    @property
    def must_name_key(self) -> bool:
        """Whether the refusal must name `key`: when the shared decoding refuses it first
        (a universal mutation; a type, presence or name the params type checks, in params
        valid otherwise), not for a value a handler checks after others (a long string
        where the schema has an enum the params type holds as `str`), nor for nesting the
        frame decoder refuses whole."""
        if self.key is None or not self.base_valid or self.mutation == "long":
            return False
        return not (self.mutation == "deep" and self.depth > DECODER_DEPTH)

    def describe(self) -> str:
        shown = json.dumps(self.params)
        if len(shown) > 300:
            shown = f"{shown[:300]}... ({len(shown)} chars)"
        tokens = {
            k: v if len(v) < 40 else f"{v[:20]}...({len(v)} chars)" for k, v in self.raw.items()
        }
        return f"{self.method} [{self.mutation} at {self.key!r}] {shown} {tokens or ''}"

    def __repr__(self) -> str:
        return self.describe()

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(self.describe())


@st.composite
def requests(draw: st.DrawFn, method: Method) -> Request:
    """A valid draw of `method`'s params and at most one mutation (always one for the
    methods in `HOSTILE_ONLY`, and one that makes them invalid)."""
    props: dict[str, Any] = _resolve(method.schema, method.defs).get("properties", {})
    valid_schema = method.schema
    override = VALID_OVERRIDES.get(method.name)
    if override is not None:
        valid_schema = {
            **method.schema,
            "required": override["required"],
            "properties": {**props, **override["properties"]},
        }
    params = draw(values(valid_schema, method.defs))
    hostile = method.name in HOSTILE_ONLY
    mutation = draw(st.sampled_from(MUTATIONS if hostile else ("none", "none", *MUTATIONS)))
    if mutation not in ("none", "not_object") and not isinstance(params, dict):
        params = {}  # an object to mutate (valid params may be null)
    request = Request(method.name, params, mutation, closed=method.closed)
    request.base_valid = method.validator.is_valid({} if params is None else params)
    if mutation != "none":
        _mutate(draw, request, props, method)
    final = {} if request.params is None else request.params  # null params: none
    request.schema_valid = not request.raw and method.validator.is_valid(final)
    if hostile and not request.must_refuse:
        request.mutation, request.params, request.key = "not_object", [], None
        request.schema_valid = False
    return request


def _mutate(draw: st.DrawFn, request: Request, props: dict[str, Any], method: Method) -> None:
    mutation, params = request.mutation, request.params
    if mutation == "not_object":
        request.params = draw(st.sampled_from([[], "params", 5, True, [{}]]))
        return
    keys = sorted(set(props) | set(params)) or ["x"]
    key = request.key = draw(st.sampled_from(keys))
    types = {k: _allowed_types(props.get(k, {}), method.defs) for k in keys}
    if mutation == "huge_int":
        params[key] = draw(st.sampled_from(HUGE_INTS))
    elif mutation in ("raw_number", "not_json_number", "deep"):
        params[key] = RAW
        if mutation == "deep":
            depth = request.depth = draw(st.sampled_from(DEPTHS))
            opener, inner, closer = draw(st.sampled_from([("[", "", "]"), ('{"a":', "1", "}")]))
            token = opener * depth + inner + closer * depth
        else:
            tokens = RAW_NUMBERS if mutation == "raw_number" else NOT_JSON_NUMBERS
            token = draw(st.sampled_from(tokens))
        request.raw[f'"{RAW}"'] = token
    elif mutation == "surrogate":
        strings = [k for k, t in types.items() if t is None or "string" in t]
        key = request.key = draw(st.sampled_from(strings)) if strings else key
        params[key] = f"ab{SURROGATE}c"
        request.raw[SURROGATE] = draw(st.sampled_from(SURROGATES))
    elif mutation == "long":
        char = draw(st.sampled_from(["x", "\u00e9", "\U0001f600"]))
        params[key] = char * draw(st.sampled_from(LONG))
    elif mutation == "wrong_type":
        allowed = types[key] if key in props else None
        if allowed is None:
            mutation = request.mutation = "unknown_field"  # any type goes there
        else:
            wrong = [t for t in _TYPE_SAMPLES if t not in allowed]
            params[key] = _TYPE_SAMPLES[draw(st.sampled_from(wrong))]
    if mutation == "unknown_field":
        names = ["zzUnknown", "__proto__", "constructor", "a" * 300]
        key = request.key = draw(st.sampled_from(names))
        params[key] = draw(json_leaf)
    elif mutation == "missing_required":
        required = [
            k for k in _resolve(method.schema, method.defs).get("required", []) if k in params
        ]
        if required:
            key = request.key = draw(st.sampled_from(required))
            del params[key]
        else:
            request.mutation, request.key = "none", None


# --- the sweep -------------------------------------------------------------------------------


def _minimal(schema: dict[str, Any], defs: dict[str, Any], name: str = "") -> Any:
    """A simple value meant to match `schema` (a hint first), for a request to reach its
    handler with one field set to the value tried."""
    schema = _resolve(schema, defs)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            return _minimal(schema[key][0], defs, name)
    kind = schema.get("type")
    kind = kind[0] if isinstance(kind, list) else kind
    if kind == "string":
        hint = FIELD_HINTS.get(name, ("",))[0]
        return hint if isinstance(hint, str) and hint else "x" * max(1, schema.get("minLength", 1))
    if kind in ("integer", "number"):
        return max(schema.get("minimum", 1), 1)
    if kind == "boolean":
        return False
    if kind == "array":
        return [_minimal(schema.get("items", {}), defs)] * schema.get("minItems", 0)
    if kind == "object" or "properties" in schema:
        props = schema.get("properties", {})
        return {k: _minimal(props.get(k, {}), defs, k) for k in schema.get("required", [])}
    return None


def sweep(method: Method) -> list[Request]:
    """For each field of `method` (`x` when it has none): the integers no field can hold
    where an integer may go and the largest ones admitted (`INT64`, which must reach the
    handler and be answered as any other value), `1e999` where a number may go; `NaN`, a
    lone surrogate and nesting one level too deep at one field."""
    props: dict[str, Any] = _resolve(method.schema, method.defs).get("properties", {})
    base = _minimal(method.schema, method.defs)
    base = base if isinstance(base, dict) else {}
    types = {k: _allowed_types(v, method.defs) for k, v in props.items()} or {"x": None}
    first = next(iter(types))
    strings = [k for k, t in types.items() if t is None or "string" in t] or [first]
    waits = VALID_OVERRIDES.get(method.name, {}).get("properties", {})

    def mutated(mutation: str, key: str, value: Any, raw: dict[str, str] | None = None) -> Request:
        params = {**base, key: value}
        request = Request(method.name, params, mutation, key, raw or {}, method.closed)
        if mutation == "admitted_int":
            request.base_valid = method.validator.is_valid(base)
            request.schema_valid = method.validator.is_valid(params)
        return request

    out: list[Request] = []
    for key, allowed in types.items():
        if allowed is None or "integer" in allowed:
            out += [mutated("huge_int", key, v) for v in HUGE_INTS]
            if key not in waits:  # 2**63 - 1 ms is a wait without end, rightly
                out += [mutated("admitted_int", key, v) for v in INT64]
        if allowed is None or "number" in allowed:
            out.append(mutated("raw_number", key, RAW, {f'"{RAW}"': "1e999"}))
    out.append(mutated("not_json_number", first, RAW, {f'"{RAW}"': "NaN"}))
    out.append(mutated("surrogate", strings[0], f"a{SURROGATE}", {SURROGATE: "\\ud800"}))
    nested = "[" * MAX_PARAMS_DEPTH + "]" * MAX_PARAMS_DEPTH
    out.append(mutated("deep", first, RAW, {f'"{RAW}"': nested}))
    return out


# --- the exchange ----------------------------------------------------------------------------


@dataclass
class Outcome:
    problems: list[str] = field(default_factory=list)
    answers: dict[str, int] = field(default_factory=dict)
    """How many `res` frames each request had when its answer was complete."""


def _check(request: Request, answer: dict[str, Any], outcome: Outcome) -> None:
    what = request.describe()
    error = answer.get("error") or {}
    code, message = error.get("code"), str(error.get("message", ""))
    if EXCEPTION_NAME.search(message):
        outcome.problems.append(f"a Python exception in the answer: {code} {message!r}\n  {what}")
    elif request.must_refuse:
        if answer["ok"] or code != "INVALID_REQUEST":
            outcome.problems.append(f"not refused: {json.dumps(answer)[:300]}\n  {what}")
        elif request.must_name_key and str(request.key) not in message:
            outcome.problems.append(
                f"the error does not name {request.key!r}: {message!r}\n  {what}"
            )
    elif not answer["ok"] and code not in NORMAL_ERRORS:
        outcome.problems.append(f"unexpected code {code}: {message!r}\n  {what}")


async def _answer(raw: Raw, req_id: str, method: str) -> list[dict[str, Any]]:
    """The request's answer: one `res`; for an accepted `agent` run, its ack and final."""
    first = await raw.response(req_id)
    if method == "agent" and first["ok"] and first["payload"].get("status") == "accepted":
        return [first, await raw.response(req_id, 2)]
    return [first]


async def exchange(batch: list[Request], root: Path) -> Outcome:
    """Send `batch` one request at a time on one connection to a fresh gateway, `health`
    after each; then remove the cron jobs it added, wait for its runs, and count answers."""
    outcome = Outcome()
    async with running_gateway(root) as gw, raw_client(gw) as raw:
        for n, request in enumerate(batch):
            req_id = f"f{n}"
            answers: list[dict[str, Any]] = []
            with trio.move_on_after(10):
                await raw.ws.send_message(request.text(req_id))
                answers = await _answer(raw, req_id, request.method)
            if not answers:
                outcome.problems.append(f"no answer in 10 s\n  {request.describe()}")
                continue
            outcome.answers[req_id] = len(answers)
            _check(request, answers[-1], outcome)
            with trio.fail_after(10):
                health = await raw.response(await raw.send("health", {}, req_id=f"h{n}"))
            assert health["ok"], f"health refused after {request.describe()}: {health}"
        await _remove_cron_jobs(raw)
        await _wait_runs(gw, outcome)
        with trio.fail_after(10):  # anything still on its way is in by now
            await raw.response(await raw.send("health", {}, req_id="last"))
        methods = {f"f{n}": request.method for n, request in enumerate(batch)}
        for n, request in enumerate(batch):
            got = len(raw.responses(f"f{n}"))
            if got != outcome.answers.get(f"f{n}", got):
                outcome.problems.append(f"{got} answers\n  {request.describe()}")
        _validate_frames(raw.frames, methods, outcome)
    return outcome


def _validate_frames(
    frames: list[dict[str, Any]], methods: dict[str, str], outcome: Outcome
) -> None:
    """Every frame against the protocol schema; a successful result against its method's."""
    checker = frame_checker()
    assert checker is not None
    for frame in frames:
        method = methods.get(str(frame.get("id", "")))
        try:
            checker.check(frame, None if method in RESULTS_NOT_CHECKED else method)
        except AssertionError as exc:
            outcome.problems.append(f"{method}: {str(exc)[:400]}")


async def _remove_cron_jobs(raw: Raw) -> None:
    """Remove the cron jobs the batch added (they would start runs after it)."""
    with trio.fail_after(10):
        listed = await raw.response(await raw.send("cron.list", {"includeDisabled": True}))
        assert listed["ok"], listed
        for job in listed["payload"]["jobs"]:
            removed = await raw.response(await raw.send("cron.remove", {"id": job["id"]}))
            assert removed["ok"], removed


async def _wait_runs(gw: Gateway, outcome: Outcome) -> None:
    """Every run the batch started ends (the local model answers at once); a run still
    active 10 s on is one left behind."""
    with trio.move_on_after(10):
        while gw.registry.active():
            for record in gw.registry.active():
                await record.done.wait()
        await trio.testing.wait_all_tasks_blocked()
    left = [(r.run_id, r.session_key, r.status) for r in gw.registry.active()]
    if left:
        outcome.problems.append(f"runs still active after the batch: {left}")


# --- the tests -------------------------------------------------------------------------------


def test_every_method_answers_fuzzed_params_once_and_the_gateway_carries_on(
    tmp_path: Path,
) -> None:
    methods = registered_methods(tmp_path / "table")
    batches = st.tuples(*[requests(m) for m in methods]).map(list)

    # An example is a batch of one request per method (~100) on a fresh gateway; a failure
    # lists every bad answer of its batch, so it is not shrunk (that would take minutes).
    @settings(
        max_examples=15,
        deadline=None,
        phases=[Phase.explicit, Phase.reuse, Phase.generate],
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.filter_too_much,
        ],
    )
    @given(batches)
    def one_batch(batch: list[Request]) -> None:
        with tempfile.TemporaryDirectory() as root:
            outcome = trio.run(exchange, batch, Path(root))
        assert not outcome.problems, "\n".join(outcome.problems)

    one_batch()


def test_every_field_of_every_method_refuses_values_no_field_can_hold(tmp_path: Path) -> None:
    """What the fuzz draws only now and then, for every field: before the shared rules,
    `agent.wait`, `sessions.send` and `sessions.steer` answered `timeoutMs` 10**400 with
    `UNAVAILABLE OverflowError`, `cron.runs` (`offset`) and `sessions.list`
    (`activeMinutes`, 2**63 - 1 too) with SQLite's `OverflowError`; 2**63 was a wait without
    end; `1e999`, `NaN` and lone surrogates were refused without naming a field; open params
    took any integer and any nesting."""
    methods = registered_methods(tmp_path / "table")
    batch = [request for method in methods for request in sweep(method)]
    outcome = trio.run(exchange, batch, tmp_path / "sweep")
    assert not outcome.problems, "\n".join(outcome.problems)
