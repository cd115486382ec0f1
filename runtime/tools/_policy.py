"""Which tools an agent may use, decided as OpenClaw decides it: layers of allow and deny.

A `ToolScope` is one place of the config that sets tools: the global `tools`, an agent's
`tools`, or a `byProvider` entry of either (keyed `provider` or `provider/model`). Each has
OpenClaw's keys: `profile`, `allow`, `alsoAllow`, `deny` (and `byProvider` for the first two).

`ToolPolicy.resolve` turns them into OpenClaw's pipeline of steps; a tool is offered only when
every step permits it (so a later scope can narrow, never widen):

1. the profile (the agent's, else the global one), its list widened by `alsoAllow` (the
   agent's, else the global one); `full` or none: no step;
2. the provider profile (the agent's `byProvider` match, else the global one), widened by
   that entry's `alsoAllow`;
3. the global `allow`/`alsoAllow`/`deny`, 4. the global provider entry's, 5. the agent's,
   6. the agent's provider entry's.

In one step, `deny` always wins; an absent or empty `allow` permits everything else;
`alsoAllow` alone means "everything, and these". An `allow` that permits `write` also
permits `apply_patch`, as in OpenClaw. Entries are tool names or aliases (`bash`,
`apply-patch`, `cron`), `group:` names from `TOOL_GROUPS`, `group:plugins` (every tool that
is not an OpenClaw core tool), `*`, or glob patterns (`web_*`), compared case-insensitively.

`unknown_entries` says which entries name nothing OpenClaw defines (the config check reports
them with their key). A `ToolScope` itself only refuses a `group:` name or a profile that
OpenClaw does not define (`ToolPolicyError`): a plain name may be a plugin's tool.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import TypeVar

from attrs import field, frozen

from ._catalog import (
    CORE_TOOLS,
    PROFILES,
    SPECIAL_ENTRIES,
    TOOL_GROUPS,
    normalize_tool_name,
)
from ._errors import ToolPolicyError
from ._tool import Tool

__all__ = [
    "PolicyStep",
    "ToolPolicy",
    "ToolScope",
    "expand_tool_names",
    "provider_scope",
    "unknown_entries",
]

_T = TypeVar("_T", bound=Tool)
_GLOB = frozenset("*?[")


def expand_tool_names(entries: Iterable[str]) -> frozenset[str]:
    """Normalize `entries` and replace each `group:` name by its members.

    Raises `ToolPolicyError` naming every unknown group (`group:plugins` stays as it is).
    """
    unknown: list[str] = []
    names = _expand(entries, unknown)
    if unknown:
        known = ", ".join(sorted([*TOOL_GROUPS, "group:plugins"]))
        raise ToolPolicyError(f"unknown tool group(s): {', '.join(unknown)} (known: {known})")
    return names


def _expand(entries: Iterable[str], unknown: list[str]) -> frozenset[str]:
    out: set[str] = set()
    for entry in entries:
        key = normalize_tool_name(entry)
        if not key:
            continue
        if not key.startswith("group:") or key == "group:plugins":
            out.add(key)
        elif key in TOOL_GROUPS:
            out.update(TOOL_GROUPS[key])
        elif key not in unknown:
            unknown.append(key)
    return frozenset(out)


def unknown_entries(entries: Iterable[str], *, also_known: Collection[str] = ()) -> list[str]:
    """The entries (as written) that name nothing OpenClaw defines: not a core tool or alias,
    a group, `*`, `group:plugins`, `bundle-mcp`, a glob pattern, or one of `also_known`."""
    known = {normalize_tool_name(k) for k in also_known}
    out: list[str] = []
    for entry in entries:
        key = normalize_tool_name(entry)
        if (
            key in CORE_TOOLS
            or key in TOOL_GROUPS
            or key in SPECIAL_ENTRIES
            or key in known
            or any(c in _GLOB for c in key)
        ):
            continue
        out.append(entry)
    return out


def _tuple(value: Sequence[str] | None) -> tuple[str, ...] | None:
    # A lone string is one entry, not a sequence of one-letter names.
    if value is None:
        return None
    return (value,) if isinstance(value, str) else tuple(value)


def _check_profile(profile: str | None) -> str | None:
    if profile is None:
        return None
    key = profile.strip().lower()
    if key not in PROFILES:
        raise ToolPolicyError(f"unknown tool profile: {profile!r} (known: {', '.join(PROFILES)})")
    return key


@frozen
class ToolScope:
    """One scope's tool settings, OpenClaw's keys: `profile`, `allow`, `alsoAllow`, `deny`,
    `byProvider` (provider or `provider/model` → its own scope, without `byProvider`)."""

    profile: str | None = field(default=None, converter=_check_profile)
    allow: tuple[str, ...] | None = field(default=None, converter=_tuple)
    also_allow: tuple[str, ...] | None = field(default=None, converter=_tuple)
    deny: tuple[str, ...] | None = field(default=None, converter=_tuple)
    by_provider: Mapping[str, ToolScope] = field(factory=dict)

    def __attrs_post_init__(self) -> None:
        unknown: list[str] = []
        for entries in (self.allow, self.also_allow, self.deny):
            _expand(entries or (), unknown)
        if unknown:
            expand_tool_names(unknown)  # raises, naming them


def provider_scope(scope: ToolScope | None, model_ref: str | None) -> ToolScope | None:
    """`scope`'s `byProvider` entry for `model_ref` (`provider/model`): the `provider/model`
    key first, then the provider's; keys compare case-insensitively."""
    if scope is None or not scope.by_provider or not model_ref:
        return None
    provider, _, model = model_ref.strip().lower().partition("/")
    lookup = {key.strip().lower(): value for key, value in scope.by_provider.items()}
    for key in (f"{provider}/{model}" if model else None, provider):
        if key and key in lookup:
            return lookup[key]
    return None


@frozen
class PolicyStep:
    """One filter of the pipeline: `allow` (None or empty: everything) and `deny` (wins),
    both expanded and normalized; `label` names the config it came from."""

    label: str
    allow: frozenset[str] | None
    deny: frozenset[str]

    def permits(self, key: str) -> bool:
        """Whether the normalized name `key` passes this step."""
        if _matches(key, self.deny):
            return False
        if not self.allow:
            return True
        if _matches(key, self.allow):
            return True
        return key == "apply_patch" and _matches("write", self.allow)


def _matches(name: str, patterns: frozenset[str]) -> bool:
    if name in patterns:
        return True
    if "group:plugins" in patterns and name not in CORE_TOOLS:
        return True
    return any(fnmatch.fnmatchcase(name, p) for p in patterns if any(c in _GLOB for c in p))


def _step(label: str, allow: Iterable[str] | None, deny: Iterable[str] | None) -> PolicyStep:
    return PolicyStep(
        label,
        None if allow is None else expand_tool_names(allow),
        expand_tool_names(deny or ()),
    )


def _pick(scope: ToolScope | None, label: str) -> PolicyStep | None:
    """OpenClaw's allow/alsoAllow/deny of one scope as a step (None: it sets none)."""
    if scope is None:
        return None
    also = scope.also_allow or ()
    allow: tuple[str, ...] | None = None
    if scope.allow is not None:
        base = scope.allow if scope.allow or not also else ("*",)
        allow = (*base, *also)
    elif also:
        allow = ("*", *also)
    if allow is None and scope.deny is None:
        return None
    return _step(label, allow, scope.deny)


def _profile_step(
    profile: str | None, also_allow: tuple[str, ...] | None, label: str
) -> PolicyStep | None:
    if profile is None:
        return None
    members = PROFILES[profile]
    if members is None:  # full
        return None
    return _step(f"{label} ({profile})", (*members, *(also_allow or ())), ())


@frozen
class ToolPolicy:
    """The steps a tool name must pass (every one), and the profile they started from.

    `ToolPolicy()` permits everything. Build one with `resolve` (scopes from the config) or
    `of` (one scope). Pure; never blocks.
    """

    steps: tuple[PolicyStep, ...] = ()
    profile: str | None = None

    @classmethod
    def of(
        cls,
        profile: str | None = None,
        allow: Sequence[str] | None = None,
        deny: Sequence[str] | None = None,
        also_allow: Sequence[str] | None = None,
    ) -> ToolPolicy:
        """The policy of one global scope with these settings."""
        return cls.resolve(ToolScope(profile, allow, also_allow, deny))

    @classmethod
    def resolve(
        cls,
        global_scope: ToolScope | None,
        agent_scope: ToolScope | None = None,
        *,
        agent_id: str | None = None,
        model_ref: str | None = None,
    ) -> ToolPolicy:
        """OpenClaw's pipeline for a run of `agent_scope`'s agent on `model_ref`
        (`provider/model`; None: no provider entry applies). See the module docstring."""
        g, a = global_scope, agent_scope
        gp, ap = provider_scope(g, model_ref), provider_scope(a, model_ref)
        profile = a.profile if a and a.profile else (g.profile if g else None)
        also = a.also_allow if a and a.also_allow is not None else (g.also_allow if g else None)
        provider_profile = ap.profile if ap and ap.profile else (gp.profile if gp else None)
        provider_also = ap.also_allow if ap and ap.also_allow is not None else None
        if provider_also is None and gp is not None:
            provider_also = gp.also_allow
        agent = f"agents.{agent_id}.tools" if agent_id else "agent tools"
        candidates = (
            _profile_step(profile, also, "tools.profile"),
            _profile_step(provider_profile, provider_also, "tools.byProvider.profile"),
            _pick(g, "tools.allow"),
            _pick(gp, "tools.byProvider.allow"),
            _pick(a, f"{agent}.allow"),
            _pick(ap, f"{agent}.byProvider.allow"),
        )
        return cls(tuple(s for s in candidates if s is not None), profile)

    def permits(self, name: str) -> bool:
        """Whether the tool called `name` (or an alias of it) may be offered and run."""
        key = normalize_tool_name(name)
        return all(step.permits(key) for step in self.steps)

    def filter(self, tools: Iterable[_T]) -> list[_T]:
        """The tools this policy permits, in their original order."""
        return [tool for tool in tools if self.permits(tool.name)]

    def permitted_core_tools(self) -> list[str]:
        """The OpenClaw core tool ids this policy permits, in OpenClaw's order (whether or
        not clawlane has them)."""
        return [tid for tid in CORE_TOOLS if self.permits(tid)]
