"""What an operator reads: the gateway's log lines and the ring `logs.tail` serves.

- `_oplog`: `log_event`, an event name and its fields, rendered only when a handler wants
  them (text: logfmt after the message; `--log-format json`: one object a line, the fields
  as keys; `transports.server._logging` writes them to stderr at `--log-level`, `info` by
  default).
- `_logring`: the recent lines in OpenClaw's record shape, for `logs.tail` (`openclaw logs`):
  a ring of at most 5,000 lines and 4 MiB; with `logging.file` also that file (rotated at
  `logging.maxFileBytes`, one `.1` archive), which `logs.tail` then reads, so a restart keeps
  them. `logging.level` (`trace` ... `silent`) filters what is kept of what the process logs.
  `gateway --workers N` without `logging.file` uses `<state-dir>/logs/gateway.log`, which
  every worker appends to, so `openclaw logs` through any worker shows the whole gateway.

The operator's loggers: `clawlane.gateway` (where the token file is, where it listens, the
auth mode, the state dir, the signal that stops it); `clawlane.connections` (`connection
opened` / `closed` / `refused`, `slow consumer closed`; `transports.server._connlog`);
`clawlane.runs` (`run started` / `run ended` at DEBUG as OpenClaw logs its runs, an aborted
run's end at INFO, a failed one's at WARNING; `actors.runs._runlog`); `clawlane.providers`
(`provider retry`, `model fallback`, `model fallback exhausted`); `clawlane.publisher`
(`generation published`, `generation build failed`, `config write drops the file's
comments`). Other libraries log from WARNING up unless the level is `debug`.
"""

from ._logring import TAIL_DEFAULT_LIMIT as TAIL_DEFAULT_LIMIT
from ._logring import TAIL_DEFAULT_MAX_BYTES as TAIL_DEFAULT_MAX_BYTES
from ._logring import LogRing as LogRing
from ._logring import install_log_ring as install_log_ring
from ._oplog import LogEvent as LogEvent
from ._oplog import log_event as log_event

__all__ = [
    "TAIL_DEFAULT_LIMIT",
    "TAIL_DEFAULT_MAX_BYTES",
    "LogEvent",
    "LogRing",
    "install_log_ring",
    "log_event",
]
