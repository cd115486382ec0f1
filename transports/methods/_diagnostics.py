"""What OpenClaw's CLI reads for diagnostics: `diagnostics.stability` (`openclaw gateway
stability`, `openclaw doctor`'s exporter check) and `gateway.identity.get` (operator.read).

- `diagnostics.stability {limit?, type?, sinceSeq?}`: the registry's stability record
  (`actors.runs.StabilityRecorder`): the last `limit` (1 to 1000, default 50) diagnostic
  events, or the telemetry exporters' health with `type: "telemetry.exporter"` (one record
  per OTLP signal, `started`, `failure` or `recovered` as `runtime.telemetry.health` says
  when asked; none while telemetry is off), in OpenClaw's shape. A limit out of range is
  `INVALID_REQUEST` naming it.
- `gateway.identity.get`: this gateway process's own device identity, an ed25519 key pair
  kept in the state dir (`identity/gateway-device.json`, mode 0600, made on first use):
  `{deviceId, publicKey}` (the hex SHA-256 of the raw key, and the key as base64url), as
  OpenClaw answers it. Each node of a cluster has its own.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
import trio

from runtime import telemetry
from runtime.devices import DeviceIdentity

from ._context import Call, MethodTable

__all__ = ["DiagnosticsStabilityParams", "register"]


class DiagnosticsStabilityParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    limit: Annotated[int, msgspec.Meta(ge=1, le=1000)] | None = None
    type: Annotated[str, msgspec.Meta(min_length=1, max_length=120)] | None = None
    sinceSeq: Annotated[int, msgspec.Meta(ge=0)] | None = None


class GatewayIdentityParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    pass


def register(methods: MethodTable) -> None:
    methods.add("diagnostics.stability", diagnostics_stability, DiagnosticsStabilityParams)
    methods.add("gateway.identity.get", gateway_identity, GatewayIdentityParams)


async def diagnostics_stability(call: Call, params: DiagnosticsStabilityParams) -> dict[str, Any]:
    await trio.lowlevel.checkpoint()
    recorder = call.gateway.actors.registry.stability
    exporters = telemetry.health()  # the OTLP exporters' state now (None: telemetry off)
    for signal in (exporters or {}).get("signals", ()):
        state = (
            "failure"
            if not signal.get("ok")
            else (
                "started"
                if not signal.get("exportsOk")
                else "recovered"
                if signal.get("exportsFailed")
                else "started"
            )
        )
        recorder.exporter_health(
            "otlp",
            signal=signal["signal"],
            status=state,
            reason="export_failed" if state == "failure" else None,
        )
    return recorder.snapshot(
        limit=params.limit or 50,
        type_=(params.type or "").strip() or None,
        since_seq=params.sinceSeq,
    )


async def gateway_identity(call: Call, params: GatewayIdentityParams) -> dict[str, Any]:
    path = call.gateway.process.state_dir / "identity" / "gateway-device.json"
    identity = await trio.to_thread.run_sync(DeviceIdentity.load_or_create, path)
    return {"deviceId": identity.device_id, "publicKey": identity.public_key}
