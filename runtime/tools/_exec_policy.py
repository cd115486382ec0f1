"""Whether an `exec` command runs, is refused, or waits for an operator: OpenClaw's exec policy.

The requested policy comes from the config (`requested_policy`): `tools.exec.mode` (`deny`,
`allowlist`, `ask`, `auto`, `full`; `ask` is allowlist plus asking on a miss, `auto` the same
with the auto-reviewer model asked before a human, `ExecPolicy.auto_review`: `_exec_review`) or the older `security` (`deny`, `allowlist`,
`full`) and `ask` (`off`, `on-miss`, `always`) pair, never both in one object; `askFallback`
(`deny`, `allowlist`, `full`), `autoAllowSkills`, `strictInlineEval`, `safeBins`,
`safeBinTrustedDirs`. The global `tools.exec` is overridden key by key by the agent's
(`agents.list[].tools.exec`). OpenClaw's defaults: `full` / `off` on the gateway host,
`askFallback: deny`, `strictInlineEval: false`, safe bins `cut uniq head tail tr wc`.

The host approvals document (`actors.store`'s exec approvals; `document_policy`) can only
tighten it: `effective_policy` takes the stricter of each (security `deny` < `allowlist` <
`full`, ask `off` < `on-miss` < `always`, askFallback as security), a field the document
omits taking the config's; the agent's entry overrides the document's defaults.

`decide` gives the verdict for a command (`CommandAnalysis`) and the agent's allowlist:

- security `deny`: refused.
- a command that cannot be bound (`CommandAnalysis.unbindable`: substitutions, expansions,
  redirections, ...): refused, not prompted, unless the policy is `full` / `off` (nothing to
  bind then) and strict inline eval does not apply.
- asked when ask is `always`, or `on-miss` under `allowlist` and some segment is neither on
  the allowlist nor a safe bin, or `strictInlineEval` and a segment evaluates inline code;
- else refused under `allowlist` on a miss, and allowed otherwise.

`fallback` is what an ask becomes when no operator can answer, or none does in time:
`askFallback` `deny` refuses, `allowlist` allows only an allowlist match, `full` allows what
the security allows without asking (an allowlist miss under `allowlist` is still refused, as is
an inline eval strict mode wants approved). `allow_always_entries` are what allow-always adds to
the allowlist: the resolved path with the exact arguments, never for inline eval.

Pure logic: no I/O (the analysis resolved the executables already).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, Literal, get_args

import attrs

from ._errors import ToolPolicyError
from ._exec_command import (
    DEFAULT_SAFE_BIN_TRUSTED_DIRS,
    DEFAULT_SAFE_BINS,
    AllowlistEntry,
    CommandAnalysis,
    Segment,
    entry_matches,
    safe_bin_ok,
)

__all__ = [
    "MODES",
    "Ask",
    "ExecPolicy",
    "ExecVerdict",
    "Mode",
    "Security",
    "allow_always_entries",
    "allowlist_of",
    "decide",
    "document_policy",
    "effective_policy",
    "fallback",
    "parse_allowlist",
    "requested_policy",
    "validate_document",
]

Security = Literal["deny", "allowlist", "full"]
Ask = Literal["off", "on-miss", "always"]
Mode = Literal["deny", "allowlist", "ask", "auto", "full"]
MODES: Final[Mapping[str, tuple[Security, Ask]]] = {
    "deny": ("deny", "off"),
    "allowlist": ("allowlist", "off"),
    "ask": ("allowlist", "on-miss"),
    "auto": ("allowlist", "on-miss"),
    "full": ("full", "off"),
}
_SECURITY_RANK: Final = {"deny": 0, "allowlist": 1, "full": 2}
_ASK_RANK: Final = {"off": 0, "on-miss": 1, "always": 2}
HEADLESS: Final = "Headless runs cannot wait for interactive exec approval"


@attrs.frozen
class ExecPolicy:
    """An exec policy: requested (config), the document's, or the effective one."""

    security: Security = "full"
    ask: Ask = "off"
    ask_fallback: Security = "deny"
    auto_allow_skills: bool = False
    strict_inline_eval: bool = False
    safe_bins: tuple[str, ...] = DEFAULT_SAFE_BINS
    safe_bin_trusted_dirs: tuple[str, ...] = DEFAULT_SAFE_BIN_TRUSTED_DIRS
    auto_review: bool = False
    """`mode: auto`: an allowlist miss goes to the auto-reviewer before a human."""

    def view(self) -> dict[str, Any]:
        """OpenClaw's policy fields."""
        return {
            "security": self.security,
            "ask": self.ask,
            "askFallback": self.ask_fallback,
            "autoAllowSkills": self.auto_allow_skills,
        }


@attrs.frozen
class ExecVerdict:
    """What happens to a command: `allow`, `ask` (an operator decides) or `deny` (`reason`
    says why, for the model). `matched`: every segment passed the allowlist or safe bins."""

    action: Literal["allow", "ask", "deny"]
    reason: str
    matched: bool = False


# --- the requested policy (config) -------------------------------------------------------


def _choice(value: Any, allowed: tuple[str, ...], key: str) -> Any:
    if value not in allowed:
        raise ToolPolicyError(f"{key} must be one of {', '.join(allowed)} (got {value!r})")
    return value


def _layer(layer: Any, where: str) -> dict[str, Any]:
    """The policy keys one config object sets (None: unset)."""
    if layer is None:
        return {}
    out: dict[str, Any] = {}
    mode = getattr(layer, "mode", None)
    security = getattr(layer, "security", None)
    ask = getattr(layer, "ask", None)
    if mode is not None:
        if security is not None or ask is not None:
            raise ToolPolicyError(
                f"{where}: mode cannot be combined with security/ask; "
                f"replace them with mode (e.g. security full, ask off is mode full)"
            )
        out["security"], out["ask"] = MODES[_choice(mode, tuple(MODES), f"{where}.mode")]
        out["auto_review"] = mode == "auto"
    if security is not None:
        out["security"] = _choice(security, get_args(Security), f"{where}.security")
    if ask is not None:
        out["ask"] = _choice(ask, get_args(Ask), f"{where}.ask")
    fallback_value = getattr(layer, "askFallback", None)
    if fallback_value is not None:
        out["ask_fallback"] = _choice(fallback_value, get_args(Security), f"{where}.askFallback")
    for key, name in (
        ("autoAllowSkills", "auto_allow_skills"),
        ("strictInlineEval", "strict_inline_eval"),
    ):
        value = getattr(layer, key, None)
        if value is not None:
            out[name] = bool(value)
    for key, name in (("safeBins", "safe_bins"), ("safeBinTrustedDirs", "safe_bin_trusted_dirs")):
        value = getattr(layer, key, None)
        if value is not None:
            out[name] = tuple(str(v).strip() for v in value if str(v).strip())
    return out


def requested_policy(global_exec: Any, agent_exec: Any = None) -> ExecPolicy:
    """The config's policy: `tools.exec`, then the agent's `tools.exec` key by key. Raises
    `ToolPolicyError` naming the key for a value OpenClaw does not have, or `mode` given with
    `security`/`ask` in one object."""
    fields = _layer(global_exec, "tools.exec")
    fields.update(_layer(agent_exec, "agents.list[].tools.exec"))
    if "safe_bin_trusted_dirs" in fields:
        fields["safe_bin_trusted_dirs"] = (
            DEFAULT_SAFE_BIN_TRUSTED_DIRS + fields["safe_bin_trusted_dirs"]
        )
    return ExecPolicy(**fields)


# --- the host approvals document ---------------------------------------------------------

_POLICY_KEYS: Final = {
    "security": get_args(Security),
    "ask": get_args(Ask),
    "askFallback": get_args(Security),
}


def validate_document(file: Any) -> dict[str, Any]:
    """Check an approvals document (`{version: 1, defaults, agents: {<id>: {..., allowlist}}}`)
    beyond its schema: policy values OpenClaw has, allowlist patterns not empty and
    argPatterns that compile. Returns it; raises `ToolPolicyError` naming the field."""
    if not isinstance(file, dict) or file.get("version") != 1:
        raise ToolPolicyError("file.version must be 1")
    scopes: list[tuple[str, Any]] = [("file.defaults", file.get("defaults") or {})]
    agents = file.get("agents") or {}
    if not isinstance(agents, dict):
        raise ToolPolicyError("file.agents must be an object")
    scopes += [(f"file.agents.{aid}", entry) for aid, entry in agents.items()]
    for where, scope in scopes:
        if not isinstance(scope, dict):
            raise ToolPolicyError(f"{where} must be an object")
        for key, allowed in _POLICY_KEYS.items():
            if scope.get(key) is not None:
                _choice(scope[key], allowed, f"{where}.{key}")
        for n, item in enumerate(scope.get("allowlist") or []):
            if not isinstance(item, dict) or not str(item.get("pattern", "")).strip():
                raise ToolPolicyError(f"{where}.allowlist[{n}].pattern must not be empty")
            arg_pattern = item.get("argPattern")
            if arg_pattern is not None:
                try:
                    re.compile(arg_pattern)
                except re.error as exc:
                    raise ToolPolicyError(
                        f"{where}.allowlist[{n}].argPattern is not a regular expression: {exc}"
                    ) from exc
    return file


def document_policy(file: Mapping[str, Any] | None, agent_id: str) -> dict[str, Any]:
    """The policy fields the document sets for `agent_id` (its entry over `defaults`)."""
    if not file:
        return {}
    merged: dict[str, Any] = {}
    scopes = [file.get("defaults") or {}, (file.get("agents") or {}).get(agent_id) or {}]
    for scope in scopes:
        for key in ("security", "ask", "askFallback", "autoAllowSkills"):
            if scope.get(key) is not None:
                merged[key] = scope[key]
    return merged


def parse_allowlist(items: Iterable[Mapping[str, Any]]) -> tuple[AllowlistEntry, ...]:
    return tuple(
        AllowlistEntry(
            pattern=str(item.get("pattern", "")),
            arg_pattern=item.get("argPattern"),
            id=item.get("id"),
            source=item.get("source"),
        )
        for item in items
        if isinstance(item, Mapping)
    )


def allowlist_of(file: Mapping[str, Any] | None, agent_id: str) -> tuple[AllowlistEntry, ...]:
    """The agent's allowlist in the document (OpenClaw's per-agent lists; `*` is every
    agent's)."""
    agents = (file or {}).get("agents") or {}
    items = list((agents.get(agent_id) or {}).get("allowlist") or [])
    if agent_id != "*":
        items += (agents.get("*") or {}).get("allowlist") or []
    return parse_allowlist(items)


def _stricter(a: str, b: str, rank: Mapping[str, int]) -> Any:
    return a if rank[a] <= rank[b] else b


def effective_policy(requested: ExecPolicy, document: Mapping[str, Any]) -> ExecPolicy:
    """The stricter of the config's policy and the document's fields (`document_policy`)."""
    security = _stricter(
        requested.security, document.get("security", requested.security), _SECURITY_RANK
    )
    ask = requested.ask
    if document.get("ask") is not None and _ASK_RANK[document["ask"]] > _ASK_RANK[ask]:
        ask = document["ask"]
    fallback_value = _stricter(
        requested.ask_fallback,
        document.get("askFallback", requested.ask_fallback),
        _SECURITY_RANK,
    )
    auto_allow = requested.auto_allow_skills and bool(document.get("autoAllowSkills", True))
    return attrs.evolve(
        requested,
        security=security,
        ask=ask,
        ask_fallback=fallback_value,
        auto_allow_skills=auto_allow,
    )


# --- verdicts ----------------------------------------------------------------------------


def _segment_ok(policy: ExecPolicy, segment: Segment, allowlist: Sequence[AllowlistEntry]) -> bool:
    if any(entry_matches(entry, segment) for entry in allowlist):
        return True
    return safe_bin_ok(segment, policy.safe_bins, policy.safe_bin_trusted_dirs)


def _matched(
    policy: ExecPolicy, analysis: CommandAnalysis, allowlist: Sequence[AllowlistEntry]
) -> bool:
    return bool(analysis.segments) and all(
        _segment_ok(policy, s, allowlist) for s in analysis.segments
    )


def decide(
    policy: ExecPolicy, analysis: CommandAnalysis, allowlist: Sequence[AllowlistEntry]
) -> ExecVerdict:
    """The verdict for `analysis` under `policy` (see the module docstring)."""
    if policy.security == "deny":
        return ExecVerdict("deny", "exec is denied by policy (tools.exec security deny)")
    inline = analysis.inline_eval if policy.strict_inline_eval else None
    if analysis.unbindable is not None:
        if policy.security == "full" and policy.ask == "off" and inline is None:
            return ExecVerdict("allow", "security full")
        return ExecVerdict(
            "deny",
            f"exec refused: the command uses {analysis.unbindable}, which the exec policy "
            "cannot bind to an approval; rewrite it as plain commands joined by && || ; |",
        )
    matched = _matched(policy, analysis, allowlist)
    if policy.ask == "always":
        return ExecVerdict("ask", "exec ask always", matched)
    if inline is not None:
        return ExecVerdict("ask", f"strict inline eval ({inline})", matched)
    if not matched and policy.security == "allowlist":
        if policy.ask == "on-miss":
            return ExecVerdict("ask", "allowlist miss", matched)
        return ExecVerdict("deny", _miss_reason(analysis), matched)
    return ExecVerdict("allow", "allowlist match" if matched else "security full", matched)


def _miss_reason(analysis: CommandAnalysis) -> str:
    first = analysis.segments[0].argv[0] if analysis.segments else analysis.text
    return (
        f"exec denied: {first!r} is not on the exec allowlist (tools.exec security allowlist); "
        "an operator can add it with openclaw approvals allowlist add"
    )


def fallback(
    policy: ExecPolicy, analysis: CommandAnalysis, verdict: ExecVerdict, why: str
) -> ExecVerdict:
    """What an ask becomes when no operator answers (`why`: "timeout" or "no-route")."""
    strict_inline = policy.strict_inline_eval and analysis.inline_eval is not None
    lead = HEADLESS if why == "no-route" else "exec approval timed out"
    if policy.ask_fallback == "deny" or strict_inline:
        return ExecVerdict(
            "deny", f"{lead}; askFallback {policy.ask_fallback} denied the command", verdict.matched
        )
    if policy.ask_fallback == "allowlist" or policy.security == "allowlist":
        if verdict.matched:
            return ExecVerdict("allow", f"askFallback {policy.ask_fallback}: allowlist match", True)
        return ExecVerdict(
            "deny", f"{lead}; askFallback {policy.ask_fallback}: not on the allowlist", False
        )
    return ExecVerdict("allow", "askFallback full", verdict.matched)


def allow_always_entries(analysis: CommandAnalysis) -> list[dict[str, Any]]:
    """The allowlist entries allow-always adds for `analysis`: each segment's resolved path
    with its exact arguments (`argPattern` anchored). None for inline eval or an
    unresolved executable (OpenClaw never persists those)."""
    if analysis.unbindable or analysis.inline_eval:
        return []
    entries: list[dict[str, Any]] = []
    for segment in analysis.segments:
        if segment.resolved is None:
            return []
        args = " ".join(segment.argv[1:])
        entries.append(
            {
                "pattern": segment.resolved,
                "argPattern": "^" + re.escape(args) + "$",
                "source": "allow-always",
                "lastResolvedPath": segment.resolved,
            }
        )
    return entries
