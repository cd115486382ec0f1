"""Operator scopes as OpenClaw grants and checks them (`operator-scope-compat.ts`).

A connection holds exactly the scopes it asked for (and was allowed); nothing is added to
that list. What a held scope *satisfies* is a separate rule, applied when a method (or an
event, or a pairing grant) is authorized:

- `operator.admin` satisfies every `operator.*` scope;
- `operator.write` satisfies `operator.read`, `operator.talk`, `operator.sessions.read` and
  `operator.sessions.write`;
- `operator.read` and `operator.sessions.write` satisfy `operator.sessions.read`;
- anything else only itself. A non-operator role's scopes must match exactly and carry
  the role's prefix.

Device tokens and pairing records store scopes normalized the other way round
(`normalize_device_auth_scopes`: admin adds write and read, write adds read; sorted), as
OpenClaw does. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

ADMIN: Final = "operator.admin"
READ: Final = "operator.read"
WRITE: Final = "operator.write"
PAIRING: Final = "operator.pairing"
APPROVALS: Final = "operator.approvals"
QUESTIONS: Final = "operator.questions"
TALK: Final = "operator.talk"
TALK_SECRETS: Final = "operator.talk.secrets"
SESSIONS_READ: Final = "operator.sessions.read"
SESSIONS_WRITE: Final = "operator.sessions.write"

KNOWN_OPERATOR_SCOPES: Final = frozenset(
    {ADMIN, READ, WRITE, PAIRING, APPROVALS, QUESTIONS, TALK, TALK_SECRETS}
    | {SESSIONS_READ, SESSIONS_WRITE}
)
_WRITE_IMPLIES: Final = frozenset({READ, TALK, SESSIONS_READ, SESSIONS_WRITE})


def operator_scope_satisfied(required: str, granted: Iterable[str]) -> bool:
    """Whether `granted` covers `required` (an `operator.*` scope)."""
    if not required.startswith("operator."):
        return False
    held = granted if isinstance(granted, (set, frozenset)) else set(granted)
    if required in held or ADMIN in held:
        return True
    if required in _WRITE_IMPLIES and WRITE in held:
        return True
    return required == SESSIONS_READ and (READ in held or SESSIONS_WRITE in held)


def missing_requested_scope(
    role: str, requested: Iterable[str], allowed: Iterable[str]
) -> str | None:
    """The first requested scope the role's allowed scopes do not cover, or None."""
    role = role.strip()
    held = {s.strip() for s in allowed}
    for scope in requested:
        wanted = scope.strip()
        if not wanted:
            continue
        if role == "operator":
            if not operator_scope_satisfied(wanted, held):
                return scope
        elif not (wanted.startswith(f"{role}.") and wanted in held):
            return scope
    return None


def role_scopes_allow(role: str, requested: Iterable[str], allowed: Iterable[str]) -> bool:
    return missing_requested_scope(role, requested, allowed) is None


def normalize_device_auth_scopes(scopes: Sequence[str] | None) -> list[str]:
    """Trimmed, deduplicated, sorted; admin adds write and read, write adds read."""
    out = {s.strip() for s in scopes or () if isinstance(s, str) and s.strip()}
    if ADMIN in out:
        out |= {READ, WRITE}
    elif WRITE in out:
        out.add(READ)
    return sorted(out)


def role_token_scopes(role: str, scopes: Sequence[str] | None) -> list[str]:
    """The normalized scopes a token of `role` may carry (operator: `operator.*` only)."""
    normalized = normalize_device_auth_scopes(scopes)
    if role == "operator":
        return [s for s in normalized if s.startswith("operator.")]
    return [s for s in normalized if not s.startswith("operator.")]


def merge_scopes(*lists: Sequence[str] | None) -> list[str] | None:
    """Union in first-seen order; None when no list was given, [] when all were empty."""
    seen: dict[str, None] = {}
    explicit = False
    for item in lists:
        if item is None:
            continue
        explicit = True
        for scope in item:
            if scope.strip():
                seen.setdefault(scope.strip(), None)
    if not seen:
        return [] if explicit else None
    return list(seen)
