"""Every problem of a config at once, "did you mean" for misspelt keys, and the JSON Schema
generated from the config types."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from runtime.model._config import ConfigError, parse_config
from runtime.model._config_check import config_issues, config_schema, did_you_mean


def issues(raw: Any, env: dict[str, str] | None = None) -> list[tuple[str, str]]:
    return [(i.path, i.message) for i in config_issues(raw, env=env or {})]


def test_every_structural_problem_is_reported_with_its_path() -> None:
    found = issues(
        {
            "gatway": {},
            "gateway": {"port": "high", "bnd": "x", "auth": {"mode": "tokn"}},
            "agents": {
                "defaults": {"maxConcurrent": 0, "model": {"primery": "a/b"}},
                "list": [{"name": "no id"}, {"id": "b", "worksapce": "w"}],
            },
            "models": {
                "providers": {
                    "openai": {
                        "api": "openai",
                        "baseURL": "x",
                        "apiKey": "${CLAWLANE_T_NOPE}",
                        "models": [{"id": "m", "contextWindow": -1}],
                    }
                }
            },
        }
    )
    assert found == [
        ("models.providers.openai.apiKey", "environment variable CLAWLANE_T_NOPE is not set"),
        ("gatway", 'unknown key (did you mean "gateway"?)'),
        ("gateway.bnd", 'unknown key (did you mean "bind"?)'),
        ("gateway.port", "Expected `int`, got `str`"),
        ("gateway.auth.mode", "Invalid enum value 'tokn' (did you mean \"token\"?)"),
        ("models.providers.openai.baseURL", 'unknown key (did you mean "baseUrl"?)'),
        (
            "models.providers.openai.api",
            "Invalid enum value 'openai' (expected one of: openai-completions, "
            "openai-responses, anthropic-messages, local)",
        ),
        ("models.providers.openai.models[0].contextWindow", "Expected `int` >= 1"),
        ("agents.defaults.model.primery", 'unknown key (did you mean "primary"?)'),
        ("agents.defaults.maxConcurrent", "Expected `int` >= 1"),
        ("agents.list[0].id", "missing required key"),
        ("agents.list[1].worksapce", 'unknown key (did you mean "workspace"?)'),
    ]


def test_keys_under_free_form_maps_are_named_and_dotted_keys_are_bracketed() -> None:
    found = issues({"agents": {"defaults": {"models": {"openai/gpt-4.1": {"alais": "g"}}}}})
    assert found == [
        ("agents.defaults.models[openai/gpt-4.1].alais", 'unknown key (did you mean "alias"?)')
    ]


def test_checks_that_need_a_decoded_config_follow_once_the_structure_is_sound() -> None:
    assert issues({"agents": {"list": [{"id": "a"}, {"id": "a"}]}}) == [
        ("agents.list[1].id", "duplicate agent id 'a'")
    ]
    assert issues({"models": {"providers": {"x": {"api": "openai-completions"}}}}) == [
        ("models.providers.x.baseUrl", "baseUrl is required")
    ]


def test_a_valid_config_has_no_issues_and_the_root_must_be_an_object() -> None:
    assert issues({"gateway": {"port": 1}, "$schema": "./s.json"}) == []
    assert (
        issues({"gateway": {"auth": {"token": "${CLAWLANE_T_SET}"}}}, {"CLAWLANE_T_SET": "x"}) == []
    )
    assert issues([1, 2]) == [("", "the config must be a JSON object")]


def test_the_gateway_start_error_has_the_same_suggestion() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config({"agents": {"defaults": {"maxConcurent": 3}}})
    assert str(info.value) == (
        'config error at agents.defaults.maxConcurent: unknown key (did you mean "maxConcurrent"?)'
    )


@pytest.mark.parametrize(
    ("key", "known", "hint"),
    [
        ("prot", ["port", "bind", "auth"], ' (did you mean "port"?)'),
        ("BaseURL", ["baseUrl", "apiKey"], ' (did you mean "baseUrl"?)'),
        ("max_concurrent", ["maxConcurrent"], ' (did you mean "maxConcurrent"?)'),
        ("zzz", ["port", "bind"], ""),
    ],
)
def test_did_you_mean(key: str, known: list[str], hint: str) -> None:
    assert did_you_mean(key, known) == hint


def test_the_schema_accepts_what_the_decoder_accepts_and_refuses_what_it_refuses() -> None:
    schema = config_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    good = {
        "$schema": "./clawlane.schema.json",
        "gateway": {"port": 18789, "bind": "127.0.0.1", "auth": {"mode": "none"}},
        "agents": {
            "defaults": {"model": "local/echo", "timeoutSeconds": 600},
            "list": [{"id": "main", "default": True}],
        },
        "models": {"providers": {"local": {"api": "local", "models": [{"id": "echo"}]}}},
        "messages": {"queue": {"mode": "collect"}},
    }
    parse_config(good)
    assert list(validator.iter_errors(good)) == []
    for bad in (
        {"gateway": {"prot": 1}},
        {"gateway": {"port": 70000}},
        {"agents": {"list": [{"name": "no id"}]}},
        {"messages": {"queue": {"mode": "sometimes"}}},
    ):
        with pytest.raises(ConfigError):
            parse_config(bad)
        assert list(validator.iter_errors(bad)), bad
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema is not config_schema()  # a fresh copy each call


@pytest.mark.parametrize("value", [-1, 2**63, 1.5, "128MiB"])
def test_the_idle_context_bound_refuses_what_is_not_a_byte_count(value: object) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config({"gateway": {"idleContextsMaxBytes": value}})
    assert info.value.path == "gateway.idleContextsMaxBytes"
    assert parse_config({}).gateway.idleContextsMaxBytes == 128 * 1024 * 1024
    assert parse_config({"gateway": {"idleContextsMaxBytes": 0}}).gateway.idleContextsMaxBytes == 0


@pytest.mark.parametrize("value", [0, -5, 2**40, 1.5, "10m"])
def test_the_idle_session_time_refuses_what_is_not_a_count_of_seconds(value: object) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config({"gateway": {"idleSessionSeconds": value}})
    assert info.value.path == "gateway.idleSessionSeconds"
    assert parse_config({}).gateway.idleSessionSeconds == 600
    assert parse_config({"gateway": {"idleSessionSeconds": 30}}).gateway.idleSessionSeconds == 30
