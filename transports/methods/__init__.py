"""The RPC methods, below the connection and the gateway.

A handler sees the gateway and the connection calling it through `Call` (`call.gateway`:
a `Host`, `call.conn`: a `Client`, both defined in `_context`), never through `Gateway` or
`ClientConnection`: those import this package, not the other way round.

- `Methods`: the method table (validate params, check the scope, run the handler, answer);
  each method module adds its handlers with its `register`: `_agent` (`agent`, with its
  task-free path `start_agent`), `_sessions` (`chat.*`, `sessions.*`, `runs.replay`, with
  `_submit` and `_slash`), `_config`, `_devices`, `_cron`, `_clients`, `_controlui`,
  `_dashboard` (and its chart's `Sampler`); views in `_views` and `_status`.
- What the reader does before a handler task exists: `start_agent`, `reserve_ticket`
  (`ORDERED_METHODS`); what startup does: `restore_idempotency`.
"""

from ._agent import restore_idempotency as restore_idempotency
from ._agent import start_agent as start_agent
from ._context import Call as Call
from ._context import Cancellable as Cancellable
from ._context import Client as Client
from ._context import Connected as Connected
from ._context import Host as Host
from ._dashboard import Sampler as Sampler
from ._status import health_view as health_view
from ._submit import ORDERED_METHODS as ORDERED_METHODS
from ._submit import reserve_ticket as reserve_ticket
from ._table import Methods as Methods

__all__ = [
    "ORDERED_METHODS",
    "Call",
    "Cancellable",
    "Client",
    "Connected",
    "Host",
    "Methods",
    "Sampler",
    "health_view",
    "reserve_ticket",
    "restore_idempotency",
    "start_agent",
]
