"""Tests for the generated protocol v4 wire types (`runtime.protocol._wire`) and their generator."""

from __future__ import annotations

import importlib.util
import json
import sys
import types
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.protocol import _wire
from runtime.protocol._wire import (
    METHOD_SCOPES,
    PARAMS_TYPES,
    AgentEvent,
    AgentParams,
    ChatHistoryParams,
    ConnectParams,
    ConnectParamsClient,
    HelloOk,
    HelloOkSnapshotUpdateScheduleInstallGitBehind,
    HelloOkSnapshotUpdateScheduleTargetGit,
    ModelsListParams,
    SessionsUsageParams,
    UsersPrefsGetParams,
    decode_params,
)
from tests.conftest import NEWER_PATH, SCHEMA_PATH

REPO_ROOT = Path(__file__).resolve().parents[3]
GENERATOR = REPO_ROOT / "scripts" / "gen_protocol.py"
WIRE = REPO_ROOT / "runtime" / "protocol" / "_wire.py"
SCHEMA = SCHEMA_PATH
NEWER = NEWER_PATH


def _load_generator() -> types.ModuleType:
    spec = importlib.util.spec_from_file_location("_gen_protocol_under_test", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while decorating
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


@pytest.fixture(scope="module")
def gen() -> types.ModuleType:
    return _load_generator()


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    with SCHEMA.open(encoding="utf-8") as fh:
        loaded: dict[str, Any] = json.load(fh)
    return loaded


def _validator(schema: dict[str, Any], definition: str) -> Any:
    import jsonschema

    root = {"$ref": f"#/definitions/{definition}", "definitions": schema["definitions"]}
    return jsonschema.Draft7Validator(root)


# -- samples -----------------------------------------------------------------------------------

AGENT_PARAMS: dict[str, Any] = {
    "message": "summarise the thread",
    "idempotencyKey": "run-1",
    "agentId": "main",
    "sessionKey": "agent:main:main",
    "timeout": 30_000,
    "deliver": False,
    "promptMode": "minimal",
    "attachments": [{"type": "image", "url": "https://example.invalid/a.png"}],
    "inputProvenance": {"kind": "external_user", "sourceChannel": "cli"},
    "swarmOutputSchema": {"type": "object", "properties": {}},
    "label": "nightly",
}

CONNECT_PARAMS: dict[str, Any] = {
    "minProtocol": 4,
    "maxProtocol": 4,
    "client": {"id": "cli", "version": "1.2.3", "platform": "linux", "mode": "cli"},
    "role": "operator",
    "scopes": ["operator.read", "operator.write"],
    "permissions": {"exec": True},
    "auth": {"token": "secret"},
    "computerUse": {"anything": [1, 2, 3]},
}

HELLO_OK: dict[str, Any] = {
    "type": "hello-ok",
    "protocol": 4,
    "server": {"version": "0.1.0", "connId": "c-1"},
    "features": {"methods": ["agent", "chat.send"], "events": ["agent", "chat", "tick"]},
    "snapshot": {
        "presence": [{"ts": 1_700_000_000_000, "host": "box", "mode": "cli"}],
        "health": {"ok": True, "ts": 1_700_000_000_000, "channels": {"cli": {"up": True}}},
        "stateVersion": {"presence": 1, "health": 1},
        "uptimeMs": 12,
        "appliedConfigHash": None,
        "updateSchedule": {
            "channel": "stable",
            "autoEnabled": False,
            "install": {"kind": "git", "git": {"status": "behind", "commitsBehind": 3}},
            "target": {
                "kind": "git",
                "upstreamRef": "origin/main",
                "upstreamSha": "abc123",
                "commitsBehind": 3,
            },
        },
    },
    "auth": {"role": "operator", "scopes": ["operator.read"]},
    "policy": {"maxPayload": 26_214_400, "maxBufferedBytes": 52_428_800, "tickIntervalMs": 30_000},
}

AGENT_EVENT: dict[str, Any] = {
    "runId": "run-1",
    "seq": 7,
    "stream": "assistant",
    "ts": 1_700_000_000_123,
    "data": {"text": "hello", "delta": True},
}


# -- the generated file ---------------------------------------------------------------------------


def test_generated_module_is_up_to_date_with_the_schema(
    gen: types.ModuleType, tmp_path: Path
) -> None:
    out = tmp_path / "_wire.py"
    assert gen.main([str(SCHEMA), "--newer", str(NEWER), "-o", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == WIRE.read_text(encoding="utf-8"), (
        "runtime/protocol/_wire.py is stale: run `.venv/bin/python scripts/gen_protocol.py`"
    )


def test_generation_is_deterministic(gen: types.ModuleType, schema: dict[str, Any]) -> None:
    assert gen.render(schema) == gen.render(json.loads(json.dumps(schema)))


def test_method_scopes_cover_every_schema_method(schema: dict[str, Any]) -> None:
    assert {m: info["scope"] for m, info in schema["methods"].items()} == METHOD_SCOPES


def test_every_exported_name_exists_and_every_struct_is_decodable() -> None:
    assert _wire.PROTOCOL_VERSION == 4
    for name in _wire.__all__:
        value = getattr(_wire, name)
        if isinstance(value, type) and issubclass(value, msgspec.Struct):
            msgspec.json.Decoder(value)  # raises TypeError on a type msgspec cannot decode


def test_params_types_map_methods_to_their_params_structs() -> None:
    assert PARAMS_TYPES["agent"] is AgentParams
    assert PARAMS_TYPES["agent.wait"] is _wire.AgentWaitParams
    assert PARAMS_TYPES["chat.send"] is _wire.ChatSendParams
    assert PARAMS_TYPES["sessions.messages.subscribe"] is _wire.SessionsMessagesSubscribeParams
    assert PARAMS_TYPES["connect"] is ConnectParams
    assert set(PARAMS_TYPES) <= set(METHOD_SCOPES)
    assert METHOD_SCOPES["chat.send"] == "operator.write"


# -- validation ---------------------------------------------------------------------------------


def test_valid_params_convert() -> None:
    params = decode_params(AgentParams, AGENT_PARAMS)
    assert params.message == "summarise the thread"
    assert params.timeout == 30_000
    assert params.inputProvenance != msgspec.UNSET
    assert params.model is msgspec.UNSET


def test_unknown_field_is_rejected_by_name() -> None:
    with pytest.raises(msgspec.ValidationError, match="unknown field `bogus`"):
        decode_params(AgentParams, {**AGENT_PARAMS, "bogus": 1})


def test_unknown_nested_field_is_rejected_with_its_path() -> None:
    raw = {**CONNECT_PARAMS, "client": {**CONNECT_PARAMS["client"], "extra": 1}}
    with pytest.raises(msgspec.ValidationError, match=r"unknown field `extra` - at `\$\.client`"):
        decode_params(ConnectParams, raw)


def test_mistyped_field_names_its_path() -> None:
    with pytest.raises(
        msgspec.ValidationError, match=r"Expected `int`, got `str` - at `\$\.timeout`"
    ):
        decode_params(AgentParams, {**AGENT_PARAMS, "timeout": "soon"})


def test_constraints_are_enforced() -> None:
    with pytest.raises(msgspec.ValidationError, match=r"\$\.message"):
        decode_params(AgentParams, {**AGENT_PARAMS, "message": ""})  # minLength 1
    with pytest.raises(msgspec.ValidationError, match=r"\$\.timeout"):
        decode_params(AgentParams, {**AGENT_PARAMS, "timeout": -1})  # minimum 0
    with pytest.raises(msgspec.ValidationError, match=r"\$\.client\.mode"):
        raw = {**CONNECT_PARAMS, "client": {**CONNECT_PARAMS["client"], "mode": "root"}}
        decode_params(ConnectParams, raw)


def test_patterns_are_anchored_like_the_schema_dialect() -> None:
    assert decode_params(SessionsUsageParams, {"startDate": "2026-01-31"}).startDate == "2026-01-31"
    with pytest.raises(msgspec.ValidationError, match=r"\$\.startDate"):
        decode_params(SessionsUsageParams, {"startDate": "2026-01-31\n"})


def test_a_forbidden_combination_from_not_is_enforced() -> None:
    assert decode_params(ModelsListParams, {"preparedOnly": True, "refresh": False})
    with pytest.raises(msgspec.ValidationError, match="cannot combine"):
        decode_params(ModelsListParams, {"preparedOnly": True, "refresh": True})


def test_a_forbidden_pair_of_present_fields_is_enforced() -> None:
    assert decode_params(ModelsListParams, {"sessionKey": "agent:main:main"})
    with pytest.raises(msgspec.ValidationError, match="cannot combine `sessionKey`"):
        decode_params(ModelsListParams, {"sessionKey": "k", "authProfileId": "p"})


def test_the_newer_definitions_win_where_both_schemas_define_a_type() -> None:
    # What the 2026.9.6 clients send and the 2026.9.1 schema lacks.
    assert decode_params(ModelsListParams, {"sessionKey": "agent:main:main"}).sessionKey
    history = decode_params(ChatHistoryParams, {"sessionKey": "main", "maxBytes": 4096})
    assert history.maxBytes == 4096
    # Types only the newer file has.
    assert decode_params(UsersPrefsGetParams, {"keys": ["theme"]}).keys == ["theme"]
    assert "UsersPrefsGetParams" in _wire.__all__


def test_the_merge_takes_the_newer_definition_and_keeps_the_published_methods(
    gen: types.ModuleType, schema: dict[str, Any]
) -> None:
    newer = json.loads(NEWER.read_text(encoding="utf-8"))
    merged = gen.merge_schemas(schema, newer)
    assert merged["definitions"]["ModelsListParams"] == newer["definitions"]["ModelsListParams"]
    assert merged["methods"] == schema["methods"]
    only_published = set(schema["definitions"]) - set(newer["definitions"])
    assert only_published <= set(merged["definitions"])


def test_tagged_unions_decode_to_the_branch_named_by_the_tag() -> None:
    hello = msgspec.convert(HELLO_OK, HelloOk)
    schedule = hello.snapshot.updateSchedule
    assert not isinstance(schedule, msgspec.UnsetType)
    assert isinstance(schedule.target, HelloOkSnapshotUpdateScheduleTargetGit)
    assert not isinstance(schedule.install, msgspec.UnsetType)
    assert isinstance(schedule.install.git, HelloOkSnapshotUpdateScheduleInstallGitBehind)


# -- encoding -------------------------------------------------------------------------------------


def test_unset_optional_fields_are_omitted_and_schema_defaults_not_applied() -> None:
    params = ConnectParams(
        minProtocol=4,
        maxProtocol=4,
        client=ConnectParamsClient(id="cli", version="1", platform="linux", mode="cli"),
    )
    encoded = msgspec.json.decode(msgspec.json.encode(params))
    assert encoded == {
        "minProtocol": 4,
        "maxProtocol": 4,
        "client": {"id": "cli", "version": "1", "platform": "linux", "mode": "cli"},
    }
    assert "caps" not in encoded  # the schema's `default: []` is not applied


def test_explicit_null_is_kept_apart_from_unset() -> None:
    hello = msgspec.convert(HELLO_OK, HelloOk)
    assert hello.snapshot.appliedConfigHash is None
    assert msgspec.to_builtins(hello)["snapshot"]["appliedConfigHash"] is None


@pytest.mark.parametrize(
    ("type_", "raw"),
    [(AgentParams, AGENT_PARAMS), (ConnectParams, CONNECT_PARAMS), (HelloOk, HELLO_OK)],
    ids=["AgentParams", "ConnectParams", "HelloOk"],
)
def test_encode_decode_round_trip_is_identity(
    type_: type[msgspec.Struct], raw: dict[str, Any]
) -> None:
    value = msgspec.convert(raw, type_)
    encoded = msgspec.json.encode(value)
    assert msgspec.json.decode(encoded, type=type_) == value
    assert msgspec.json.decode(encoded) == raw


@pytest.mark.parametrize(
    ("definition", "type_", "raw"),
    [
        ("HelloOk", HelloOk, HELLO_OK),
        ("AgentEvent", AgentEvent, AGENT_EVENT),
        ("AgentParams", AgentParams, AGENT_PARAMS),
        ("ConnectParams", ConnectParams, CONNECT_PARAMS),
    ],
    ids=["HelloOk", "AgentEvent", "AgentParams", "ConnectParams"],
)
def test_encoded_values_validate_against_the_published_schema(
    schema: dict[str, Any], definition: str, type_: type[msgspec.Struct], raw: dict[str, Any]
) -> None:
    validator = _validator(schema, definition)
    encoded = msgspec.json.decode(msgspec.json.encode(msgspec.convert(raw, type_)))
    errors = [e.message for e in validator.iter_errors(encoded)]
    assert errors == []


# -- properties -----------------------------------------------------------------------------------

_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
_agent_fields = sorted(AgentParams.__struct_encode_fields__)
_agent_params = st.dictionaries(
    st.sampled_from(_agent_fields) | st.text(max_size=8), _json, max_size=6
) | st.fixed_dictionaries(
    {"message": st.text(max_size=4), "idempotencyKey": st.text(min_size=1, max_size=4)},
    optional={
        "timeout": st.integers(min_value=-2, max_value=2**40) | _json,
        "deliver": st.booleans() | _json,
        "promptMode": st.sampled_from(["full", "minimal", "none", "max"]),
        "attachments": st.lists(_json, max_size=2),
        "inputProvenance": st.fixed_dictionaries(
            {"kind": st.sampled_from(["external_user", "inter_session", "nobody"])},
            optional={"sourceTool": st.text(max_size=4), "extra": _json},
        ),
        "swarmOutputSchema": st.dictionaries(st.text(max_size=4), _json, max_size=2),
        "label": st.text(max_size=4),
    },
)


@settings(database=None, max_examples=200)
@given(_agent_params)
def test_convert_of_arbitrary_json_only_raises_validation_error(raw: dict[str, Any]) -> None:
    try:
        value = msgspec.convert(raw, AgentParams)
    except msgspec.ValidationError:
        return
    # Whatever converts, encodes back to the same JSON (nothing added, nothing dropped).
    assert msgspec.json.decode(msgspec.json.encode(value)) == raw
    assert msgspec.json.decode(msgspec.json.encode(value), type=AgentParams) == value


# -- the generator on a small schema --------------------------------------------------------------

_MINI_SCHEMA: dict[str, Any] = {
    "methods": {"demo.run": {"since": "2026.7", "scope": "operator.read"}},
    "definitions": {
        "Mode": {"enum": ["fast", "slow"]},
        "DemoRunParams": {
            "type": "object",
            "required": ["from"],
            "additionalProperties": False,
            "properties": {
                "from": {"type": "string", "minLength": 1},
                "list": {"type": "integer", "minimum": 0},
                "mode": {"$ref": "#/definitions/Mode"},
                "my-key": {"type": ["boolean", "null"]},
                "either": {
                    "anyOf": [
                        {"type": "object", "properties": {"a": {}}, "additionalProperties": False},
                        {"type": "object", "properties": {"b": {}}, "additionalProperties": False},
                    ]
                },
                "tuple": {"type": "array", "items": [{"type": "string"}]},
            },
        },
    },
}


def test_generator_renames_unsafe_names_and_falls_back_to_any_with_a_comment(
    gen: types.ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = gen.render(_MINI_SCHEMA, names=["DemoRunParams"])
    module = types.ModuleType("_mini_wire")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(source, "<mini wire>", "exec"), module.__dict__)

    params_type = module.PARAMS_TYPES["demo.run"]
    assert params_type is module.DemoRunParams
    assert module.METHOD_SCOPES == {"demo.run": "operator.read"}
    assert "Mode" in module.__all__
    assert source.count("Any: not representable in msgspec") == 2  # untagged objects, tuple items

    raw = {"from": "x", "list": 3, "mode": "fast", "my-key": None, "either": {"zzz": 1}}
    value = module.decode_params(params_type, raw)
    assert (value.from_, value.list_, value.my_key) == ("x", 3, None)
    assert msgspec.json.decode(msgspec.json.encode(value)) == raw
    with pytest.raises(msgspec.ValidationError, match=r"\$\.mode"):
        module.decode_params(params_type, {"from": "x", "mode": "medium"})


def test_generator_check_mode_reports_a_stale_file_and_writes_nothing(
    gen: types.ModuleType, tmp_path: Path
) -> None:
    out = tmp_path / "_wire.py"
    out.write_text("stale\n", encoding="utf-8")
    assert gen.main([str(SCHEMA), "-o", str(out), "--check"]) == 1
    assert out.read_text(encoding="utf-8") == "stale\n"
    assert gen.main([str(SCHEMA), "--newer", str(NEWER), "-o", str(out)]) == 0
    assert gen.main([str(SCHEMA), "-o", str(out), "--check"]) == 0


_json_payloads = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=8,
)


@given(event=st.text(min_size=1, max_size=12), payload=_json_payloads)
def test_an_event_frame_encodes_to_the_bytes_of_the_whole_struct(event: str, payload: Any) -> None:
    from runtime.protocol._frames import EventFrame, encode, encode_event

    assert encode_event(event, payload) == encode(EventFrame(event=event, payload=payload))
