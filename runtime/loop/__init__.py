"""runtime.loop"""

from ._agent import RunProgress as RunProgress
from ._agent import SteerInbox as SteerInbox
from ._agent import now_ms as now_ms
from ._agent import provider_clean as provider_clean
from ._toolrunner import RunTools as RunTools

__all__ = [
    "RunProgress",
    "RunTools",
    "SteerInbox",
    "now_ms",
    "provider_clean",
]
