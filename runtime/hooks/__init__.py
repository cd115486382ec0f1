"""runtime.hooks"""

from ._hooks import GatewayStartEvent as GatewayStartEvent
from ._hooks import GatewayStopEvent as GatewayStopEvent
from ._hooks import InternalHookEvent as InternalHookEvent
from ._hooks import SessionEndEvent as SessionEndEvent
from ._hooks import SessionStartEvent as SessionStartEvent

__all__ = [
    "GatewayStartEvent",
    "GatewayStopEvent",
    "InternalHookEvent",
    "SessionEndEvent",
    "SessionStartEvent",
]
