"""The config's form schema (`config.schema`) and its lookup (`config.schema.lookup`)."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from runtime.model import config_form_schema, lookup_config_schema, parse_config
from runtime.model._config_form import label_of

SAMPLE: dict[str, Any] = {
    "gateway": {"port": 18789, "auth": {"mode": "token", "token": "T"}},
    "models": {
        "providers": {
            "local": {"api": "local", "models": [{"id": "echo"}]},
            "remote": {
                "api": "openai-completions",
                "baseUrl": "http://127.0.0.1:9/v1",
                "apiKey": "sk-x",
                "models": [{"id": "big", "cost": {"input": 1, "output": 2}}],
            },
        }
    },
    "agents": {
        "defaults": {"model": {"primary": "local/echo"}},
        "list": [{"id": "main", "name": "Main", "identity": {"emoji": "x"}}],
    },
}


def test_the_form_schema_has_no_references_and_accepts_what_the_config_accepts() -> None:
    form = config_form_schema()
    text = json.dumps(form.schema)
    assert "$ref" not in text and "$defs" not in text
    assert form.schema["title"] == "OpenClawConfig"
    assert "$schema" not in form.schema["properties"]
    parse_config(SAMPLE)  # the config takes it ...
    jsonschema.Draft7Validator(form.schema).validate(SAMPLE)  # ... and so does the form
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft7Validator(form.schema).validate({"gateway": {"port": "x"}})


def test_hints_label_every_key_and_mark_the_secrets() -> None:
    hints = config_form_schema().hints
    assert hints["agents"] == {"label": "Agents", "group": "Agents", "order": 60}
    assert hints["models.providers.*.apiKey"] == {"label": "API Key", "sensitive": True}
    assert hints["gateway.auth.token"]["sensitive"] is True
    assert hints["agents.list[].identity.emoji"]["label"] == "Emoji"
    assert not hints["gateway.port"].get("sensitive")
    assert label_of("timeoutSeconds") == "Timeout Seconds" and label_of("baseUrl") == "Base URL"


def test_lookup_walks_maps_arrays_and_refuses_what_is_not_there() -> None:
    form = config_form_schema()
    root = lookup_config_schema(form, ".")
    assert root is not None and root["path"] == "."
    assert {c["key"] for c in root["children"]} >= {"gateway", "models", "agents"}
    provider = lookup_config_schema(form, "models.providers.remote")
    assert provider is not None
    key = next(c for c in provider["children"] if c["key"] == "apiKey")
    assert key["hint"]["sensitive"] is True and key["hintPath"] == "models.providers.*.apiKey"
    assert key["path"] == "models.providers.remote.apiKey" and key["hasChildren"] is False
    item = lookup_config_schema(form, "agents.list[0]")
    assert item is not None and item["path"] == "agents.list.0"
    ident = next(c for c in item["children"] if c["key"] == "id")
    assert ident["required"] is True and ident["type"] == "string"
    port = lookup_config_schema(form, "gateway.port")
    assert port is not None and port["schema"]["type"] == "integer"
    assert port["schema"]["maximum"] == 65535 and port["children"] == []
    for bad in ("nope", "gateway.nope", "gateway.port.x", "", "constructor", "a." * 40):
        assert lookup_config_schema(form, bad) is None, bad
