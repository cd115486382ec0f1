"""runtime.hooks"""

from ._events import GatewayStartEvent as GatewayStartEvent
from ._events import GatewayStopEvent as GatewayStopEvent
from ._events import SessionEndEvent as SessionEndEvent
from ._events import SessionStartEvent as SessionStartEvent
from ._internal import InternalHookEvent as InternalHookEvent

__all__ = [
    "GatewayStartEvent",
    "GatewayStopEvent",
    "InternalHookEvent",
    "SessionEndEvent",
    "SessionStartEvent",
]
