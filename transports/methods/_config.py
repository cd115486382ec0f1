"""The config methods: `config.get`, `config.set`, `config.patch`, `config.apply`.

Shapes follow OpenClaw (`src/gateway/server-methods/config.ts`):

- `config.get` (operator.read) answers the config file snapshot `{path, exists, raw, parsed,
  resolved, valid, config, hash, issues, warnings, legacyIssues}` with every secret replaced
  by `__OPENCLAW_REDACTED__` (a broken file: `valid: false`, its `issues`, and no `raw`), plus
  clawlane's `generation` (the serving one) and `lastError` (the last build that failed).
- `config.set` / `config.apply` (operator.admin) take `{raw, baseHash?}`: the whole config as
  JSON text. `config.patch` (operator.admin) takes `{raw, baseHash?, replacePaths?}`: a JSON
  merge patch. `baseHash` is required once the file exists and must be the hash `config.get`
  returned (`config changed since last load; re-run config.get and retry` otherwise).
  Redacted values sent back keep their secret. The config is validated and the generation
  built before anything is written; then the file is replaced atomically and the generation
  published (hot: OpenClaw restarts, clawlane does not, so `restartDelayMs`, `sessionKey`,
  `note` and `deliveryContext` are accepted and ignored). The answer is `{ok, path, config,
  hash, generation, changed}`.

In a cluster on PostgreSQL the config these methods read and write is the cluster's document
(`actors.Publisher.use_document`), not the node's file: `config.get` answers the same config
and hash on every node, and a write is a compare-and-set on the document (the file is left
alone; `path` is still the node's file).

Errors: `INVALID_REQUEST` for a bad or conflicting write (the message names the key path);
`UNAVAILABLE` when the gateway has no publisher, or the cluster's document cannot be read or
written (a store outage, retryable).
"""

from __future__ import annotations

from typing import Any

import msgspec

from actors import GENERATION_EVENT, PublishConflict, Publisher, PublishResult
from runtime.model import (
    ConfigError,
    ConfigSnapshot,
    GenerationError,
    config_to_builtins,
    redact_config,
)
from runtime.protocol import (
    UNAVAILABLE,
    ConfigApplyParams,
    ConfigGetParams,
    ConfigPatchParams,
    ConfigSetParams,
    GatewayError,
    invalid_request,
    opt,
)

from ._context import Call, MethodTable


def register(methods: MethodTable) -> None:
    """Add the config methods to a gateway's method table."""
    methods.advertise(GENERATION_EVENT)
    methods.add("config.get", config_get, ConfigGetParams)
    methods.add("config.set", config_set, ConfigSetParams, scope="operator.admin")
    methods.add("config.patch", config_patch, ConfigPatchParams, scope="operator.admin")
    methods.add("config.apply", config_apply, ConfigApplyParams, scope="operator.admin")


def _publisher(call: Call) -> Publisher:
    publisher = call.gateway.actors.publisher
    if not isinstance(publisher, Publisher):
        raise GatewayError(UNAVAILABLE, "config methods are unavailable: no publisher")
    return publisher


def snapshot_view(snapshot: ConfigSnapshot) -> dict[str, Any]:
    """The redacted `config.get` snapshot."""
    path = str(snapshot.path) if snapshot.path is not None else None
    issues = [i.to_json() for i in snapshot.issues]
    base: dict[str, Any] = {
        "path": path,
        "exists": snapshot.exists,
        "hash": snapshot.hash,
        "valid": snapshot.valid,
        "issues": issues,
        "warnings": [],
        "legacyIssues": [],
    }
    if snapshot.config is None:
        return {**base, "raw": None, "parsed": None, "resolved": {}, "config": {}}
    parsed = redact_config(snapshot.parsed)
    raw = snapshot.raw
    if raw is not None and parsed != snapshot.parsed:
        raw = msgspec.json.format(msgspec.json.encode(parsed), indent=2).decode() + "\n"
    return {
        **base,
        "raw": raw,
        "parsed": parsed,
        "resolved": redact_config(snapshot.resolved),
        "config": redact_config(config_to_builtins(snapshot.config)),
    }


async def config_get(call: Call, params: ConfigGetParams) -> dict[str, Any]:
    publisher = _publisher(call)
    try:
        snapshot = await publisher.read_snapshot()
    except ConfigError as exc:
        raise GatewayError(UNAVAILABLE, str(exc)) from exc
    view = snapshot_view(snapshot)
    view["generation"] = publisher.generation.describe()
    view["lastError"] = publisher.last_error.to_json() if publisher.last_error else None
    return view


def _invalid_config(exc: ConfigError) -> GatewayError:
    details = {"path": exc.path} if exc.path else {}
    return invalid_request(f"invalid config: {exc}", **details)


def _result(publisher: Publisher, result: PublishResult) -> dict[str, Any]:
    snapshot = result.snapshot
    assert snapshot.config is not None
    return {
        "ok": True,
        "path": str(publisher.config_path) if publisher.config_path else None,
        "config": redact_config(config_to_builtins(snapshot.config)),
        "hash": snapshot.hash,
        "changed": result.changed,
        "generation": result.generation.describe(),
    }


async def _write(call: Call, method: str, raw: str, base_hash: str | None) -> dict[str, Any]:
    publisher = _publisher(call)
    try:
        result = await publisher.write_text(raw, base_hash=base_hash, reason=method)
    except PublishConflict as exc:
        raise invalid_request(str(exc)) from exc
    except ConfigError as exc:
        raise _invalid_config(exc) from exc
    except GenerationError as exc:
        raise invalid_request(f"invalid config: {exc}") from exc
    return _result(publisher, result)


async def config_set(call: Call, params: ConfigSetParams) -> dict[str, Any]:
    return await _write(call, "config.set", params.raw, opt(params.baseHash))


async def config_apply(call: Call, params: ConfigApplyParams) -> dict[str, Any]:
    return await _write(call, "config.apply", params.raw, opt(params.baseHash))


async def config_patch(call: Call, params: ConfigPatchParams) -> dict[str, Any]:
    publisher = _publisher(call)
    try:
        result = await publisher.write_patch(
            params.raw,
            base_hash=opt(params.baseHash),
            replace_paths=opt(params.replacePaths) or (),
        )
    except PublishConflict as exc:
        raise invalid_request(str(exc)) from exc
    except ConfigError as exc:
        raise _invalid_config(exc) from exc
    except GenerationError as exc:
        raise invalid_request(f"invalid config: {exc}") from exc
    return _result(publisher, result)
