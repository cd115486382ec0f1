"""One agent's auth, discovered once per generation and forked per run.

`build_auth_template` reads the credentials an agent may call each provider with, in order:
`auth.profiles`, the agent's `agents.list[].auth.profiles`, its auth profile store
(`<state-dir>/agents/<agentId>/auth-profiles.json`) and `models.providers.<id>.apiKey`. The
`AuthTemplate` it returns is immutable and belongs to a generation; a run forks an `AuthStore`
from it, its own mutable view in which credentials that failed during the run are skipped.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Literal

import attrs

from ..sessions._sessions import normalize_agent_id
from ._config import ApiKeyCredential, AuthProfilesFile, OAuthCredential, TokenCredential
from ._config_types import AuthConfig, Config

CredentialKind = Literal["api_key", "token"]
CredentialSource = Literal["config", "file", "provider"]


@attrs.frozen
class AuthCredential:
    """The secret a provider is called with, and where it came from."""

    provider: str
    kind: CredentialKind
    secret: str = attrs.field(repr=False)
    profile_id: str | None = None
    source: CredentialSource = "provider"


@attrs.frozen
class AuthTemplate:
    """One agent's discovered auth, immutable: usable profiles in order, per provider."""

    agent_id: str
    profiles: Mapping[str, AuthCredential] = attrs.field(factory=lambda: MappingProxyType({}))
    order: Mapping[str, tuple[str, ...]] = attrs.field(factory=lambda: MappingProxyType({}))
    provider_keys: Mapping[str, AuthCredential] = attrs.field(factory=lambda: MappingProxyType({}))

    def credential(self, provider: str) -> AuthCredential | None:
        """The first usable credential for `provider` (profiles in order, then `apiKey`)."""
        ids = self.order.get(provider, ())
        return self.profiles[ids[0]] if ids else self.provider_keys.get(provider)

    def fork(self) -> AuthStore:
        return AuthStore(self)


@attrs.define
class AuthStore:
    """A run's own mutable view of its agent's auth: profiles that failed during the run are
    skipped for the rest of it (the template is never touched)."""

    template: AuthTemplate
    failed: dict[str, str] = attrs.field(factory=dict)

    def credential(self, provider: str) -> AuthCredential | None:
        """The first credential for `provider` that has not failed in this run."""
        for pid in self.template.order.get(provider, ()):
            if pid not in self.failed:
                return self.template.profiles[pid]
        key = self.template.provider_keys.get(provider)
        return key if key is not None and _key_id(key) not in self.failed else None

    def mark_failed(self, credential: AuthCredential, reason: str) -> None:
        self.failed[_key_id(credential)] = reason


def _key_id(credential: AuthCredential) -> str:
    return credential.profile_id or f"models.providers.{credential.provider}.apiKey"


def _usable(cred: Any, now_ms: int) -> tuple[CredentialKind, str] | None:
    if isinstance(cred, ApiKeyCredential):
        return ("api_key", cred.key) if cred.key else None
    if isinstance(cred, TokenCredential):
        if cred.expires is not None and cred.expires <= now_ms:
            return None
        return ("token", cred.token) if cred.token else None
    if isinstance(cred, OAuthCredential):
        if cred.expires is not None and cred.expires <= now_ms:
            return None
        return ("token", cred.access) if cred.access else None
    return None


def build_auth_template(
    config: Config, agent_id: str, store: AuthProfilesFile | None, *, now_ms: int
) -> AuthTemplate:
    """One agent's auth template.

    Profiles come from `auth.profiles`, the agent's `agents.list[].auth.profiles` and its
    auth profile store (the store's secret wins for the same id). Order per provider: the
    store's `order`, else the agent's `auth.order`, else `auth.order`, else the store's
    `lastGood` first and the rest by id. Expired tokens and profiles without a secret are
    skipped. `models.providers.<id>.apiKey` comes last.
    """
    agent_auth: AuthConfig | None = None
    for entry in config.agents.entries:
        if normalize_agent_id(entry.id) == agent_id:
            agent_auth = entry.auth
    usable: dict[str, AuthCredential] = {}
    providers_of: dict[str, str] = {}
    for layer in (config.auth, agent_auth):
        if layer is None:
            continue
        for pid, prof in layer.profiles.items():
            providers_of[pid] = prof.provider
            secret = prof.token if prof.mode != "api_key" else prof.key
            kind: CredentialKind = "api_key" if prof.mode == "api_key" else "token"
            if secret:
                usable[pid] = AuthCredential(prof.provider, kind, secret, pid, "config")
            else:
                usable.pop(pid, None)
    if store is not None:
        for pid, cred in store.profiles.items():
            providers_of[pid] = cred.provider
            got = _usable(cred, now_ms)
            if got is not None:
                usable[pid] = AuthCredential(cred.provider, got[0], got[1], pid, "file")
    order: dict[str, tuple[str, ...]] = {}
    for provider in sorted(set(providers_of.values())):
        explicit: list[str] | None = None
        for source in (
            store.order if store is not None else {},
            agent_auth.order if agent_auth is not None else {},
            config.auth.order,
        ):
            if provider in source:
                explicit = list(source[provider])
                break
        if explicit is None:
            ids = sorted(p for p, prov in providers_of.items() if prov == provider)
            last_good = store.lastGood.get(provider) if store is not None else None
            if last_good in ids:
                ids.remove(last_good)
                ids.insert(0, last_good)
            explicit = ids
        chosen = tuple(
            p for p in dict.fromkeys(explicit) if p in usable and usable[p].provider == provider
        )
        if chosen:
            order[provider] = chosen
    keys: dict[str, AuthCredential] = {}
    for pid, pconf in config.models.providers.items():
        if pconf.apiKey:
            keys[pid] = AuthCredential(pid, "api_key", pconf.apiKey, None, "provider")
    return AuthTemplate(
        agent_id=agent_id,
        profiles=MappingProxyType({p: usable[p] for ids in order.values() for p in ids}),
        order=MappingProxyType(order),
        provider_keys=MappingProxyType(keys),
    )
