"""What the agent's `gateway` tool reads (`runtime.tools.ConfigReader`): the gateway's config
as `config.get` answers it and its schema as `config.schema.lookup` does, secrets redacted,
read through the same functions as those methods. `attach` hands it to the gateway's runs
(`TurnServices.config_reader`) when the method table is made; the publisher it reads is
looked up at each call (the gateway sets it once it starts)."""

from __future__ import annotations

from typing import Any

from actors import Publisher
from runtime.model import ConfigError, lookup_config_schema

from ._config import snapshot_view
from ._config_form import _built
from ._context import Host

__all__ = ["GatewayConfigReader", "attach"]


class GatewayConfigReader:
    """`runtime.tools.ConfigReader` over one gateway's publisher and config form."""

    def __init__(self, gateway: Host) -> None:
        self._gateway = gateway

    async def config_snapshot(self) -> dict[str, Any]:
        """The redacted snapshot `config.get` answers. A checkpoint. Raises
        `runtime.model.ConfigError` (the file cannot be read) or `RuntimeError` (the
        gateway has not started its publisher)."""
        publisher = self._gateway.actors.publisher
        if not isinstance(publisher, Publisher):
            raise RuntimeError("the gateway's config is not available yet")
        try:
            snapshot = await publisher.read_snapshot()
        except ConfigError as exc:
            raise RuntimeError(f"the config cannot be read: {exc}") from exc
        return snapshot_view(snapshot)

    async def schema_lookup(self, path: str) -> dict[str, Any] | None:
        """`config.schema.lookup`'s answer for `path`, or None. A checkpoint."""
        return lookup_config_schema(await _built(), path)


def attach(gateway: Host) -> None:
    """Give the gateway's runs their `gateway` tool's reader. Not a checkpoint."""
    gateway.actors.supervisor.services.config_reader = GatewayConfigReader(gateway)
