"""The config form of OpenClaw's Control UI: `config.schema`, `config.schema.lookup`
(operator.read) and `config.openFile` (operator.admin).

- `config.schema` answers `{schema, uiHints, version, generatedAt}`
  (`runtime.model.config_form_schema`: draft-07, references inlined, labels, help and the
  sensitive paths the form masks); built once per process, copied per answer. With it the
  Control UI renders its form instead of only the raw editor; the form saves through
  `config.set`/`config.patch`, validated and published like any other write.
- `config.schema.lookup {path}` answers the node at a dotted path with its hint and children
  (`runtime.model.lookup_config_schema`); a path the schema does not have is
  `INVALID_REQUEST` (`config schema path not found`).
- `config.openFile` would open the config file in an editor on the gateway's host. clawlane
  never starts a program for a remote client: it answers as OpenClaw's gateway does on a
  host without a desktop, `{ok: false, path, error}` naming the file.
"""

from __future__ import annotations

import datetime
import functools
from typing import Any

import msgspec
import trio

from runtime.model import ConfigForm, config_form_schema, lookup_config_schema
from runtime.protocol import (
    ConfigGetParams,
    ConfigSchemaLookupParams,
    ConfigSchemaParams,
    invalid_request,
)

from ._context import Call, MethodTable

__all__ = ["register"]


def register(methods: MethodTable) -> None:
    methods.add("config.schema", config_schema, ConfigSchemaParams)
    methods.add("config.schema.lookup", config_schema_lookup, ConfigSchemaLookupParams)
    methods.add("config.openFile", config_open_file, ConfigGetParams, scope="operator.admin")


@functools.cache
def _form() -> ConfigForm:
    return config_form_schema()


async def _built() -> ConfigForm:
    """The form schema, built in a worker thread the first time (tens of milliseconds)."""
    return await trio.to_thread.run_sync(_form)


async def config_schema(call: Call, params: ConfigSchemaParams) -> dict[str, Any]:
    form = await _built()
    return {
        "schema": msgspec.json.decode(msgspec.json.encode(form.schema)),
        "uiHints": msgspec.json.decode(msgspec.json.encode(form.hints)),
        "version": call.gateway.process.version,
        "generatedAt": datetime.datetime.now(datetime.UTC).isoformat().replace("+00:00", "Z"),
    }


async def config_schema_lookup(call: Call, params: ConfigSchemaLookupParams) -> dict[str, Any]:
    found = lookup_config_schema(await _built(), params.path)
    if found is None:
        raise invalid_request("config schema path not found", path=params.path)
    return found


async def config_open_file(call: Call, params: ConfigGetParams) -> dict[str, Any]:
    await trio.lowlevel.checkpoint()
    path = call.gateway.process.config_path
    where = (
        str(path)
        if path is not None
        else "(no config file: the gateway runs on its built-in config)"
    )
    return {
        "ok": False,
        "path": where,
        "error": (
            "Cannot open file in headless environment. "
            f"File path: {where}. clawlane does not start programs on the gateway's host for "
            "a client; edit the file there, or use config.set / config.patch."
        ),
    }
