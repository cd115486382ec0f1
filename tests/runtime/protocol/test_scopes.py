"""What a held operator scope satisfies (OpenClaw's `operator-scope-compat.ts`)."""

from __future__ import annotations

import pytest

from runtime.protocol._scopes import (
    merge_scopes,
    missing_requested_scope,
    normalize_device_auth_scopes,
    operator_scope_satisfied,
    role_scopes_allow,
    role_token_scopes,
)


@pytest.mark.parametrize(
    ("required", "held", "ok"),
    [
        ("operator.read", ["operator.read"], True),
        ("operator.read", ["operator.write"], True),
        ("operator.write", ["operator.read"], False),
        ("operator.pairing", ["operator.admin"], True),
        ("operator.anything.new", ["operator.admin"], True),
        ("operator.pairing", ["operator.write"], False),
        ("operator.talk", ["operator.write"], True),
        ("operator.sessions.read", ["operator.read"], True),
        ("operator.sessions.write", ["operator.write"], True),
        ("operator.sessions.write", ["operator.read"], False),
        ("operator.talk.secrets", ["operator.talk"], False),
        ("node.camera", ["operator.admin"], False),
        ("operator.read", [], False),
    ],
)
def test_what_a_scope_satisfies(required, held, ok) -> None:
    assert operator_scope_satisfied(required, held) is ok


def test_role_checks_and_the_first_missing_scope() -> None:
    assert role_scopes_allow("operator", ["operator.read", "operator.pairing"], ["operator.admin"])
    assert missing_requested_scope(
        "operator", ["operator.read", "operator.pairing"], ["operator.write"]
    ) == ("operator.pairing")
    assert role_scopes_allow("node", ["node.camera"], ["node.camera"])
    assert not role_scopes_allow("node", ["operator.read"], ["operator.read"])
    assert role_scopes_allow("operator", [" ", ""], [])


def test_stored_scopes_are_normalized_as_openclaw_stores_them() -> None:
    assert normalize_device_auth_scopes(["operator.admin"]) == [
        "operator.admin",
        "operator.read",
        "operator.write",
    ]
    assert normalize_device_auth_scopes([" operator.write ", "operator.write"]) == [
        "operator.read",
        "operator.write",
    ]
    assert normalize_device_auth_scopes(None) == []
    assert role_token_scopes("operator", ["operator.read", "node.x"]) == ["operator.read"]
    assert role_token_scopes("node", ["operator.read", "node.x"]) == ["node.x"]
    assert merge_scopes(None, None) is None and merge_scopes([], None) == []
    assert merge_scopes(["b", "a"], ["a", "c"]) == ["b", "a", "c"]
