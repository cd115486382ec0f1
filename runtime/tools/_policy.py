"""Which tools an agent may use: profiles, groups, allow and deny lists.

A policy is decided from names only, before any tool runs:

1. `profile` sets the ceiling: `minimal` (read, message), `coding` (read, write, edit, exec,
   message), `messaging` (message), `full` or None (everything, plugin tools included).
2. `allow`, when set, narrows that further to the names it lists; None keeps the profile's set.
3. `deny` removes names, and always wins.

`allow` and `deny` entries are tool names, `group:` names from `TOOL_GROUPS`, `*`, or glob
patterns (`web_*`). Names compare case-insensitively; `bash` is an alias of `exec`. An unknown
profile or `group:` name is a configuration error: `ToolPolicyError` when the policy is built.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping, Sequence
from typing import TypeVar

from attrs import field, frozen

from ._errors import ToolPolicyError
from ._tool import Tool

__all__ = ["PROFILES", "TOOL_ALIASES", "TOOL_GROUPS", "ToolPolicy", "expand_tool_names"]

TOOL_GROUPS: Mapping[str, tuple[str, ...]] = {
    "group:fs": ("read", "write", "edit"),
    "group:runtime": ("exec",),
    "group:messaging": ("message",),
}

# None: no ceiling (every tool, plugin tools included).
PROFILES: Mapping[str, tuple[str, ...] | None] = {
    "minimal": ("read", "message"),
    "coding": ("group:fs", "group:runtime", "group:messaging"),
    "messaging": ("group:messaging",),
    "full": None,
}

TOOL_ALIASES: Mapping[str, str] = {"bash": "exec"}

_T = TypeVar("_T", bound=Tool)


def normalize_tool_name(name: str) -> str:
    """The canonical form of a tool name: trimmed, lower-case, aliases resolved."""
    key = name.strip().lower()
    return TOOL_ALIASES.get(key, key)


def expand_tool_names(entries: Iterable[str]) -> frozenset[str]:
    """Normalize `entries` and replace each `group:` name by its members.

    Raises `ToolPolicyError` naming every unknown group.
    """
    unknown: list[str] = []
    names = _expand(entries, unknown)
    _raise_unknown(unknown)
    return names


def _expand(entries: Iterable[str], unknown: list[str]) -> frozenset[str]:
    out: set[str] = set()
    for entry in entries:
        key = normalize_tool_name(entry)
        if not key.startswith("group:"):
            out.add(key)
        elif key in TOOL_GROUPS:
            out.update(TOOL_GROUPS[key])
        elif key not in unknown:
            unknown.append(key)
    return frozenset(out)


def _raise_unknown(unknown: list[str]) -> None:
    if unknown:
        known = ", ".join(sorted(TOOL_GROUPS))
        raise ToolPolicyError(f"unknown tool group(s): {', '.join(unknown)} (known: {known})")


def _matches(name: str, patterns: frozenset[str]) -> bool:
    if name in patterns:
        return True
    return any(fnmatch.fnmatchcase(name, p) for p in patterns if any(c in p for c in "*?["))


def _tuple(value: Sequence[str] | None) -> tuple[str, ...] | None:
    return None if value is None else _tuple_required(value)


def _tuple_required(value: Sequence[str]) -> tuple[str, ...]:
    # A lone string is one entry, not a sequence of one-letter names.
    return (value,) if isinstance(value, str) else tuple(value)


@frozen
class ToolPolicy:
    """A tool policy: `profile` ceiling, optional `allow` list, `deny` list (deny wins).

    Validated when built: an unknown profile or `group:` name raises `ToolPolicyError`.
    """

    profile: str | None = None
    allow: tuple[str, ...] | None = field(default=None, converter=_tuple)
    deny: tuple[str, ...] = field(default=(), converter=_tuple_required)
    _ceiling: frozenset[str] | None = field(init=False, repr=False, eq=False)
    _allowed: frozenset[str] | None = field(init=False, repr=False, eq=False)
    _denied: frozenset[str] = field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        ceiling: frozenset[str] | None = None
        if self.profile is not None:
            key = self.profile.strip().lower()
            if key not in PROFILES:
                known = ", ".join(PROFILES)
                raise ToolPolicyError(f"unknown tool profile: {self.profile!r} (known: {known})")
            members = PROFILES[key]
            ceiling = None if members is None else expand_tool_names(members)
        unknown: list[str] = []
        allowed = None if self.allow is None else _expand(self.allow, unknown)
        denied = _expand(self.deny, unknown)
        _raise_unknown(unknown)
        object.__setattr__(self, "_ceiling", ceiling)
        object.__setattr__(self, "_allowed", allowed)
        object.__setattr__(self, "_denied", denied)

    @classmethod
    def merge(cls, base: ToolPolicy, override: ToolPolicy | None) -> ToolPolicy:
        """`base` (the defaults) with an agent's `override` applied.

        Each of the override's `profile`, `allow` and `deny` replaces the base's when set
        (`profile`/`allow` not None, `deny` not empty). An override cannot clear a default
        `deny` list; it can only replace it with another one.
        """
        if override is None:
            return base
        return cls(
            profile=override.profile if override.profile is not None else base.profile,
            allow=override.allow if override.allow is not None else base.allow,
            deny=override.deny if override.deny else base.deny,
        )

    def permits(self, name: str) -> bool:
        """Whether the tool called `name` may be offered and run. Pure; never blocks."""
        key = normalize_tool_name(name)
        if _matches(key, self._denied):
            return False
        if self._ceiling is not None and key not in self._ceiling:
            return False
        return self._allowed is None or _matches(key, self._allowed)

    def filter(self, tools: Iterable[_T]) -> list[_T]:
        """The tools this policy permits, in their original order."""
        return [tool for tool in tools if self.permits(tool.name)]
