"""The gateway's three roles as the methods see it (`transports.methods.Host`): each reads
through to the `Gateway`, which keeps its own attributes for its own code (some are set
after it is built: the publisher, cron, webhooks, recovery), so a role always says what
the gateway holds now."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import attrs
import trio

from actors import (
    CronScheduler,
    EventHub,
    PluginApprovals,
    ProgressCards,
    Publisher,
    Questions,
    RecoveryReport,
    RunRegistry,
    RunWebhooks,
    Supervisor,
)
from runtime.devices import PairingStore
from runtime.users import UserPrefs

from ..access import AuthSettings
from ..methods import Connected, Sampler

__all__ = ["GatewayActors", "GatewayProcess", "GatewayTrust"]


class GatewayParts(Protocol):
    """What the roles read of `_gateway.Gateway` (which imports this module)."""

    @property
    def supervisor(self) -> Supervisor: ...
    @property
    def hub(self) -> EventHub: ...
    @property
    def registry(self) -> RunRegistry: ...
    @property
    def cron(self) -> CronScheduler | None: ...
    @property
    def webhooks(self) -> RunWebhooks | None: ...
    @property
    def publisher(self) -> Publisher | None: ...
    @property
    def recovery(self) -> RecoveryReport | None: ...
    @property
    def approvals(self) -> PluginApprovals: ...
    @property
    def questions(self) -> Questions: ...
    @property
    def cards(self) -> ProgressCards: ...
    @property
    def auth(self) -> AuthSettings: ...
    @property
    def pairing(self) -> PairingStore: ...
    @property
    def user_prefs(self) -> UserPrefs: ...
    @property
    def version(self) -> str: ...
    @property
    def boot_id(self) -> str: ...
    @property
    def started(self) -> float: ...
    @property
    def state_dir(self) -> Path: ...
    @property
    def config_path(self) -> Path | None: ...
    @property
    def listeners(self) -> Sequence[trio.SocketListener]: ...
    @property
    def connections(self) -> Mapping[str, Connected]: ...
    @property
    def sampler(self) -> Sampler: ...

    def pairing_event(self, event: str, payload: dict[str, Any]) -> None: ...
    def connected_device_ids(self) -> set[str]: ...
    def prefs_changed(self, entries: dict[str, Any]) -> None: ...
    def disconnect_device(
        self, device_id: str, reason: str, *, role: str | None = None
    ) -> None: ...
    def now_ms(self) -> int: ...
    def presence(self) -> list[dict[str, Any]]: ...
    async def cluster_view(self) -> dict[str, Any] | None: ...


@attrs.frozen
class GatewayActors:
    """What runs (`methods.Actors`)."""

    _gw: GatewayParts

    @property
    def supervisor(self) -> Supervisor:
        return self._gw.supervisor

    @property
    def hub(self) -> EventHub:
        return self._gw.hub

    @property
    def registry(self) -> RunRegistry:
        return self._gw.registry

    @property
    def cron(self) -> CronScheduler | None:
        return self._gw.cron

    @property
    def webhooks(self) -> RunWebhooks | None:
        return self._gw.webhooks

    @property
    def publisher(self) -> Publisher | None:
        return self._gw.publisher

    @property
    def recovery(self) -> RecoveryReport | None:
        return self._gw.recovery

    @property
    def approvals(self) -> PluginApprovals:
        return self._gw.approvals

    @property
    def questions(self) -> Questions:
        return self._gw.questions

    @property
    def cards(self) -> ProgressCards:
        return self._gw.cards


@attrs.frozen
class GatewayTrust:
    """Who may do what (`methods.Trust`)."""

    _gw: GatewayParts

    @property
    def auth(self) -> AuthSettings:
        return self._gw.auth

    @property
    def pairing(self) -> PairingStore:
        return self._gw.pairing

    @property
    def user_prefs(self) -> UserPrefs:
        return self._gw.user_prefs

    def pairing_event(self, event: str, payload: dict[str, Any]) -> None:
        self._gw.pairing_event(event, payload)

    def connected_device_ids(self) -> set[str]:
        return self._gw.connected_device_ids()

    def prefs_changed(self, entries: dict[str, Any]) -> None:
        self._gw.prefs_changed(entries)

    def disconnect_device(self, device_id: str, reason: str, *, role: str | None = None) -> None:
        self._gw.disconnect_device(device_id, reason, role=role)


@attrs.frozen
class GatewayProcess:
    """This process as a node (`methods.Process`)."""

    _gw: GatewayParts

    @property
    def version(self) -> str:
        return self._gw.version

    @property
    def boot_id(self) -> str:
        return self._gw.boot_id

    @property
    def started(self) -> float:
        return self._gw.started

    @property
    def state_dir(self) -> Path:
        return self._gw.state_dir

    @property
    def config_path(self) -> Path | None:
        return self._gw.config_path

    @property
    def listeners(self) -> Sequence[trio.SocketListener]:
        return self._gw.listeners

    @property
    def connections(self) -> Mapping[str, Connected]:
        return self._gw.connections

    @property
    def sampler(self) -> Sampler:
        return self._gw.sampler

    def now_ms(self) -> int:
        return self._gw.now_ms()

    def presence(self) -> list[dict[str, Any]]:
        return self._gw.presence()

    async def cluster_view(self) -> dict[str, Any] | None:
        return await self._gw.cluster_view()
