"""runtime.logs"""

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
