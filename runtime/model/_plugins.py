"""Plugin loading: Python modules that register hooks, tools and agent harnesses.

A plugin is a module exposing `register(api: PluginApi) -> None` (or `async def`). Its id is
the module's `PLUGIN_ID` string when it has one, else the module's own name (the file stem
for a path). `load_plugins` imports each spec (a dotted module name, or a `.py` file or
package directory path), calls its `register` and records what it registered in the
`PluginRegistry`, whose `version` changes on every registration and removal so the model
runtime generation can be rebuilt.

A plugin that fails to import, or whose `register` raises, is reported (`ok=False`) and logged
with its name; everything it registered before failing is rolled back, and the other plugins
still load. Nothing here raises for a bad plugin; `ValueError`/`TypeError` come only from a
plugin's own calls on its `PluginApi` (duplicate tool name, reserved harness id...), and end
up in that plugin's load result.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import logging
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from types import MappingProxyType, ModuleType
from typing import Any, Final, Protocol

import attrs

from ..hooks._registry import HookHandler, HookRegistration, HookRegistry

__all__ = [
    "RESERVED_HARNESS_IDS",
    "HarnessSpec",
    "PluginApi",
    "PluginLoadResult",
    "PluginRecord",
    "PluginRegistry",
    "PluginSnapshot",
    "PluginTool",
    "load_plugins",
]

log = logging.getLogger("clawlane.plugins")

#: Built-in runtime ids (and their legacy alias) that a plugin harness may not take.
RESERVED_HARNESS_IDS: Final = frozenset({"openclaw", "pi"})


class PluginTool(Protocol):
    """What the plugin registry needs of a tool: a name (see `runtime.tools.Tool` for the
    rest of the contract)."""

    @property
    def name(self) -> str: ...


@attrs.frozen
class HarnessSpec:
    """An agent harness a plugin provides.

    `supports(route)` says whether it can run a provider route (`{provider, modelId}`);
    under `auto` selection the supporting harness with the highest `priority` wins (ties by
    id). `run` is the async entry point the harness selection calls.
    """

    id: str
    supports: Callable[[Any], bool]
    priority: int
    run: Callable[..., Awaitable[Any]]


@attrs.frozen
class PluginRecord:
    """A loaded plugin: where it came from and what it registered."""

    id: str
    spec: str
    module: str
    hooks: int
    tools: tuple[str, ...]
    harnesses: tuple[str, ...]


@attrs.frozen
class PluginLoadResult:
    """The outcome of loading one spec; `error` says why when `ok` is False."""

    spec: str
    ok: bool
    plugin_id: str | None = None
    error: str | None = None
    hooks: int = 0
    tools: tuple[str, ...] = ()
    harnesses: tuple[str, ...] = ()


@attrs.frozen
class PluginSnapshot:
    """What the plugins provide, at one `version` (for building a generation)."""

    version: int
    tools: tuple[Any, ...]
    harnesses: tuple[HarnessSpec, ...]


@attrs.define(eq=False)
class PluginApi:
    """The handle a plugin's `register` receives.

    Everything registered through it is tracked, so a failed load or
    `PluginRegistry.unload_plugin` removes exactly what this plugin added. After the plugin is
    unloaded every call raises `RuntimeError`.
    """

    id: str
    logger: logging.Logger
    _hooks: HookRegistry = attrs.field(alias="hooks")
    _registry: PluginRegistry = attrs.field(alias="registry")
    _hook_regs: list[HookRegistration] = attrs.field(init=False, factory=list)
    _tool_names: list[str] = attrs.field(init=False, factory=list)
    _harness_ids: list[str] = attrs.field(init=False, factory=list)
    _closed: bool = attrs.field(init=False, default=False)

    def on(self, hook_name: str, handler: HookHandler, priority: int = 0) -> None:
        """Register a hook handler (sync or async) for this plugin.

        Raises:
            ValueError: unknown hook name (the message names it).
        """
        self._check_open()
        self._hook_regs.append(
            self._hooks.register(hook_name, handler, priority=priority, plugin_id=self.id)
        )
        self._registry._bump()

    def register_tool(self, tool: Any) -> None:
        """Offer a tool (a `runtime.tools.Tool`) to agents.

        Raises:
            TypeError: the tool has no string `name`.
            ValueError: another tool already has that name.
        """
        self._check_open()
        self._registry._add_tool(self.id, tool)
        self._tool_names.append(tool.name)

    def register_harness(self, spec: HarnessSpec) -> None:
        """Offer an agent harness.

        Raises:
            TypeError: `spec` is not a `HarnessSpec`.
            ValueError: empty, reserved or already registered id.
        """
        self._check_open()
        self._registry._add_harness(self.id, spec)
        self._harness_ids.append(spec.id)

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"plugin {self.id!r} is unloaded")

    def _record(self, spec: str, module: str) -> PluginRecord:
        return PluginRecord(
            id=self.id,
            spec=spec,
            module=module,
            hooks=len(self._hook_regs),
            tools=tuple(self._tool_names),
            harnesses=tuple(self._harness_ids),
        )

    def _rollback(self) -> None:
        """Remove everything registered through this handle and close it."""
        self._closed = True
        changed = bool(self._hook_regs or self._tool_names or self._harness_ids)
        for reg in self._hook_regs:
            self._hooks.unregister(reg)
        for name in self._tool_names:
            self._registry._tools.pop(name, None)
        for harness_id in self._harness_ids:
            self._registry._harnesses.pop(harness_id, None)
        self._hook_regs.clear()
        self._tool_names.clear()
        self._harness_ids.clear()
        if changed:
            self._registry._bump()


@attrs.frozen
class _Owned:
    plugin_id: str
    value: Any


@attrs.define(eq=False)
class PluginRegistry:
    """The loaded plugins, their tools and harnesses.

    `version` changes on every registration and removal (hooks included), so whoever builds
    the model runtime generation can tell when to rebuild.
    """

    version: int = attrs.field(init=False, default=0)
    _plugins: dict[str, tuple[PluginRecord, PluginApi]] = attrs.field(init=False, factory=dict)
    _tools: dict[str, _Owned] = attrs.field(init=False, factory=dict)
    _harnesses: dict[str, _Owned] = attrs.field(init=False, factory=dict)

    @property
    def plugins(self) -> MappingProxyType[str, PluginRecord]:
        return MappingProxyType({pid: rec for pid, (rec, _api) in self._plugins.items()})

    def tools(self) -> tuple[Any, ...]:
        """Plugin tools in registration order."""
        return tuple(owned.value for owned in self._tools.values())

    def harnesses(self) -> tuple[HarnessSpec, ...]:
        """Plugin harnesses in registration order."""
        return tuple(owned.value for owned in self._harnesses.values())

    def tool_owner(self, name: str) -> str | None:
        owned = self._tools.get(name)
        return owned.plugin_id if owned else None

    def snapshot(self) -> PluginSnapshot:
        return PluginSnapshot(self.version, self.tools(), self.harnesses())

    def unload_plugin(self, plugin_id: str) -> bool:
        """Remove a loaded plugin and everything it registered (hooks, tools, harnesses);
        False if no plugin has that id. Not a checkpoint."""
        entry = self._plugins.pop(plugin_id, None)
        if entry is None:
            return False
        record, api = entry
        api._rollback()
        if record.module.startswith(_FILE_MODULE_PREFIX):
            sys.modules.pop(record.module, None)
        self._bump()
        log.info("plugin %r unloaded", plugin_id)
        return True

    def _bump(self) -> None:
        self.version += 1

    def _add_tool(self, plugin_id: str, tool: Any) -> None:
        name = getattr(tool, "name", None)
        if not isinstance(name, str) or not name:
            raise TypeError(f"tool {tool!r} has no name")
        if name in self._tools:
            owner = self._tools[name].plugin_id
            raise ValueError(f"tool {name!r} is already registered by plugin {owner!r}")
        self._tools[name] = _Owned(plugin_id, tool)
        self._bump()

    def _add_harness(self, plugin_id: str, spec: HarnessSpec) -> None:
        if not isinstance(spec, HarnessSpec):
            raise TypeError(f"register_harness takes a HarnessSpec, got {type(spec).__name__}")
        if not spec.id:
            raise ValueError("harness id must not be empty")
        if spec.id in RESERVED_HARNESS_IDS:
            raise ValueError(f"harness id {spec.id!r} is reserved for the built-in runtime")
        if spec.id in self._harnesses:
            owner = self._harnesses[spec.id].plugin_id
            raise ValueError(f"harness {spec.id!r} is already registered by plugin {owner!r}")
        self._harnesses[spec.id] = _Owned(plugin_id, spec)
        self._bump()

    def _add_plugin(self, record: PluginRecord, api: PluginApi) -> None:
        self._plugins[record.id] = (record, api)
        self._bump()


# --- loading -----------------------------------------------------------------------------

_FILE_MODULE_PREFIX: Final = "_clawlane_plugin_"


class _LoadError(Exception):
    """A plugin could not be loaded; the message says why (already logged)."""


def _is_path(spec: str | Path) -> bool:
    return isinstance(spec, Path) or spec.endswith(".py") or "/" in spec or "\\" in spec


def _import(spec: str | Path) -> ModuleType:
    """Import a plugin module by dotted name or file/package path."""
    if not _is_path(spec):
        return importlib.import_module(str(spec))
    path = Path(spec).resolve()
    search: list[str] | None = None
    if path.is_dir():
        search = [str(path)]
        path = path / "__init__.py"
    if not path.is_file():
        raise FileNotFoundError(f"no plugin file at {path}")
    stem = (path.parent.name if search else path.stem).replace("-", "_")
    digest = hashlib.sha1(str(path).encode(), usedforsecurity=False).hexdigest()[:10]
    name = f"{_FILE_MODULE_PREFIX}{stem}_{digest}"
    module_spec = importlib.util.spec_from_file_location(
        name, path, submodule_search_locations=search
    )
    if module_spec is None or module_spec.loader is None:
        raise ImportError(f"cannot import a plugin from {path}")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def _plugin_id(spec: str | Path, module: ModuleType) -> str:
    declared = getattr(module, "PLUGIN_ID", None)
    if declared is not None:
        if not isinstance(declared, str) or not declared.strip() or declared != declared.strip():
            raise _LoadError(f"PLUGIN_ID must be a non-empty string, got {declared!r}")
        return declared
    if _is_path(spec):
        path = Path(spec)
        return path.name if path.is_dir() else path.stem
    return str(spec).rpartition(".")[2]


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


async def _load_one(
    spec: str | Path, hooks: HookRegistry, registry: PluginRegistry
) -> PluginLoadResult:
    label = str(spec)
    try:
        module = _import(spec)
    except Exception as exc:
        log.error("plugin %s failed to import: %s", label, _describe(exc), exc_info=exc)
        return PluginLoadResult(label, False, error=f"import failed: {_describe(exc)}")
    try:
        plugin_id = _plugin_id(spec, module)
        register = getattr(module, "register", None)
        if not callable(register):
            raise _LoadError("module has no register(api) function")
        if plugin_id in registry._plugins:
            raise _LoadError(f"a plugin with id {plugin_id!r} is already loaded")
    except _LoadError as exc:
        _forget(module)
        log.error("plugin %s cannot be loaded: %s", label, exc)
        return PluginLoadResult(label, False, error=str(exc))

    api = PluginApi(
        plugin_id,
        logging.getLogger(f"clawlane.plugins.{plugin_id}"),
        hooks=hooks,
        registry=registry,
    )
    try:
        result = register(api)
        if inspect.isawaitable(result):
            await result
    except BaseException as exc:
        api._rollback()
        _forget(module)
        if not isinstance(exc, Exception):
            raise
        log.error(
            "plugin %r (%s) failed in register(); its registrations were rolled back: %s",
            plugin_id,
            label,
            _describe(exc),
            exc_info=exc,
        )
        return PluginLoadResult(
            label, False, plugin_id=plugin_id, error=f"register failed: {_describe(exc)}"
        )
    record = api._record(label, module.__name__)
    registry._add_plugin(record, api)
    log.info(
        "plugin %r loaded from %s: %d hooks, tools %s, harnesses %s",
        plugin_id,
        label,
        record.hooks,
        list(record.tools),
        list(record.harnesses),
    )
    return PluginLoadResult(
        label,
        True,
        plugin_id=plugin_id,
        hooks=record.hooks,
        tools=record.tools,
        harnesses=record.harnesses,
    )


def _forget(module: ModuleType) -> None:
    if module.__name__.startswith(_FILE_MODULE_PREFIX):
        sys.modules.pop(module.__name__, None)


async def load_plugins(
    specs: Sequence[str | Path], hooks: HookRegistry, registry: PluginRegistry
) -> list[PluginLoadResult]:
    """Load plugins in order; one result per spec, in the same order.

    Imports run on the trio thread (module execution is the plugin's code and blocks); an
    async `register` is awaited, so this is a checkpoint only if one is. Cancellation rolls
    back the plugin being registered and propagates.
    """
    results = []
    for spec in specs:
        results.append(await _load_one(spec, hooks, registry))
    return results
