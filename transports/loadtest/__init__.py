"""`clawlane loadtest`: drive a gateway with many sessions over real WebSockets and report.

- `_run`: `run_loadtest(options)`: sessions, runs, pacing, and the final `LoadtestReport`.
- `_conn`: the load tool's side of the wire: a lean WebSocket client on `websocket._codec`
  and the request/answer bookkeeping (`LoadtestOptions`, `LoadtestError`).
- `_gateway`: the gateway a load test drives when none is running: in this process or
  spawned (`spawn_gateway_process`).
- `_report`: the progress line and the report's tables.
"""

from ._conn import LoadtestError as LoadtestError
from ._conn import LoadtestOptions as LoadtestOptions
from ._gateway import spawn_gateway_process as spawn_gateway_process
from ._report import LoadtestReport as LoadtestReport
from ._run import add_loadtest_parser as add_loadtest_parser
from ._run import loadtest_main as loadtest_main
from ._run import run_loadtest as run_loadtest

__all__ = [
    "LoadtestError",
    "LoadtestOptions",
    "LoadtestReport",
    "add_loadtest_parser",
    "loadtest_main",
    "run_loadtest",
    "spawn_gateway_process",
]
