"""Validation of values against the 2026.9.6 clients' protocol definitions (skipped where
the shared protocol folder is not beside the checkout)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import NEWER_PATH


def definitions() -> dict[str, Any]:
    if not NEWER_PATH.exists():
        pytest.skip("the protocol definitions are not on this machine")
    data = json.loads(NEWER_PATH.read_text())
    return dict(data["definitions"])


def validate(name: str, value: Any) -> None:
    import jsonschema

    defs = definitions()
    validator = jsonschema.Draft7Validator({"$ref": f"#/definitions/{name}", "definitions": defs})
    errors = [f"{list(e.path)}: {e.message}" for e in validator.iter_errors(value)]
    assert not errors, errors[:5]
