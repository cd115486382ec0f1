"""`clawlane loadtest`: drive a gateway with many sessions over real WebSockets and report.

- `_run`: `run_loadtest(options)`: sessions, runs, pacing, and the final `LoadtestReport`.
- `_conn`: the load tool's side of the wire: a lean WebSocket client on `websocket._codec`
  and the request/answer bookkeeping (`LoadtestOptions`, `LoadtestError`).
- `_gateway`: the gateway a load test drives when none is running: in this process or
  spawned (`spawn_gateway_process`).
- `_report`: the progress line and the report's tables.
- `_parser`: the command's arguments (`add_loadtest_parser`), for the CLI's parser.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Final

from ._parser import add_loadtest_parser as add_loadtest_parser

if TYPE_CHECKING:
    from ._conn import LoadtestError as LoadtestError
    from ._conn import LoadtestOptions as LoadtestOptions
    from ._gateway import spawn_gateway_process as spawn_gateway_process
    from ._report import LoadtestReport as LoadtestReport
    from ._run import loadtest_main as loadtest_main
    from ._run import run_loadtest as run_loadtest

_LAZY: Final = {
    "LoadtestError": "._conn",
    "LoadtestOptions": "._conn",
    "spawn_gateway_process": "._gateway",
    "LoadtestReport": "._report",
    "loadtest_main": "._run",
    "run_loadtest": "._run",
}
"""Names resolved on first use (`__getattr__`): every `clawlane` command builds the
`loadtest` parser, and only `clawlane loadtest` needs the load tool."""

__all__ = [
    "LoadtestError",
    "LoadtestOptions",
    "LoadtestReport",
    "add_loadtest_parser",
    "loadtest_main",
    "run_loadtest",
    "spawn_gateway_process",
]


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
