"""Validation of values against the 2026.9.6 clients' protocol definitions (the in-repo copy
in `tests/data/openclaw-protocol/`)."""

from __future__ import annotations

import functools
import json
from typing import Any

from tests.conftest import NEWER_PATH


@functools.cache
def _definitions() -> dict[str, Any]:
    data = json.loads(NEWER_PATH.read_text())
    return dict(data["definitions"])


def definitions() -> dict[str, Any]:
    """The 2026.9.6 definitions by name (a copy: the caller may change it)."""
    return dict(_definitions())


def validate(name: str, value: Any) -> None:
    import jsonschema

    validator = jsonschema.Draft7Validator(
        {"$ref": f"#/definitions/{name}", "definitions": _definitions()}
    )
    errors = [f"{list(e.path)}: {e.message}" for e in validator.iter_errors(value)]
    assert not errors, errors[:5]
