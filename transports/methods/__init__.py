"""The RPC methods, below the connection and the gateway.

A handler sees the gateway and the connection calling it through `Call` (`call.gateway`:
a `Host`, `call.conn`: a `Client`, both defined in `_context`), never through `Gateway` or
`ClientConnection`: those import this package, not the other way round. A `Host` is three
roles: `actors` (`Actors`: what runs), `trust` (`Trust`: who may do what) and `process`
(`Process`: this process as a node), e.g. `call.gateway.actors.supervisor`.

- `Methods`: the method table (validate params, check the scope, run the handler, answer);
  each method module adds its handlers with its `register`: `_agent` (`agent`, with its
  task-free path `start_agent`), `_sessions` (`chat.*`, `sessions.*`, `runs.replay`, with
  `_submit` and `_slash`), `_config`, `_devices`, `_cron`, `_approvals`
  (`plugin.approval.*`), `_clients`, `_controlui`, `_dashboard` (and its chart's `Sampler`),
  `_usage` (`sessions.usage`, `.timeseries`, `.logs`, `usage.cost`: the Usage page and
  `openclaw gateway usage-cost`, from the store's usage aggregates), `_agents`
  (`agents.create/update/delete`: the config's `agents.list`, compare-and-set),
  `_agent_files` (`agents.files.*`, `agents.workspace.*`: an agent's bootstrap files and
  its workspace, confined to it), `_config_form` (`config.schema`, `config.schema.lookup`,
  `config.openFile`: the Control UI's config form), `_branches` (`sessions.rewind`,
  `sessions.fork`, `sessions.branches.list/switch`), `_previews` (`sessions.preview`),
  `_session_search` (`sessions.search`: full text over the transcripts, the store's
  index), `_session_bulk` (`sessions.patchMany`, `sessions.cleanup`), `_session_groups`
  (`sessions.groups.*`: the sidebar's groups, a session's `category`), with `_owners`
  (in a cluster each session's part done by its owner, `Call.router`), `_session_placement`
  (`sessions.move`), `_session_files` (`sessions.files.list/get`: what a session touched,
  its workspace, confined), `_session_diff` (`sessions.diff`: the workspace checkout's
  changes, by git), `_diagnostics`
  (`diagnostics.stability`, `gateway.identity.get`), `_memory` (`memory.search`,
  `doctor.memory.*`), `_heartbeat` (`last-heartbeat`, `set-heartbeats`, `wake`,
  `system-event`: the agents' heartbeats, `actors.heartbeat`); views in `_views` and `_status`.
- What the reader does before a handler task exists: `Methods.route` (`_routing`: the
  cluster's router when the gateway is a node, `agent`'s task-free path `start_agent`, a
  place in the session's order for the other methods that start runs), then
  `Methods.serve` in the request's task; what startup does: `restore_idempotency`.

What OpenClaw's clients get (its CLI, terminal UI and Control UI, 2026.9.6):

- Answered in the schemas' shapes, besides `agent`, `chat.*`, `sessions.*`, `config.*`,
  `cron.*`, `device.*`: `agents.list`, `agent.identity.get`, `sessions.create` (the TUI's
  `/new`), `sessions.describe` (the TUI footer's model and tokens), `commands.list`,
  `logs.tail`, `chat.startup`, `chat.metadata`, `models.authStatus`,
  `sessions.branches.list`, `sessions.viewers.set`, `system.info`, `users.prefs.get/set` (kept
  in the state dir's `users/prefs.json`, or in a cluster in PostgreSQL), `skills.status`,
  `plugins.list`, `tools.catalog`, `tools.effective` (an agent's Tools panel: what a run in
  that session is offered after the agent's tools policy), `diagnostics.lanes`,
  `environments.list`; `status` and `health` in OpenClaw's shapes with clawlane's figures
  under `clawlane` (`_status`). `hello-ok.features.capabilities`: `published-model-catalog`,
  `session-scoped-model-catalog`, `session-scoped-chat-metadata`; `presence` events list the
  UIs connected. Operator `admin` may call every method.
- Plugin approvals (`_approvals`): `plugin.approval.request`, `.waitDecision`, `.resolve`,
  `.list` (scope `operator.approvals`), and the `plugin.approval.requested` / `.resolved`
  events to the connections holding that scope; a run's tool call that a plugin's
  `before_tool_call` wants approved waits for them (`actors.approvals`).
- Exec approvals (`_exec_approvals`): `exec.approvals.get` / `.set` (the host approvals
  document, compare-and-set by its hash), `exec.approval.request`, `.waitDecision`,
  `.resolve`, `.get`, `.list`, the kind-agnostic `approval.get`, `.resolve`, `.history`, and
  the `exec.approval.requested` / `.resolved` events; a run's `exec` that the exec policy
  asks about waits for them (`actors.ExecApprovals`); `/approve` in `chat.send` (`_slash`);
  the standing grants for cron runs, `exec.approval.grants.list` / `.revoke` (`_exec_grants`).
- Questions (`_questions`): `question.request`, `.waitAnswer`, `.resolve`, `.get`, `.list`
  (scope `operator.questions`), and the `question.requested` / `.resolved` events to the
  connections holding it; a run's `ask_user` waits for the answer (`actors.Questions`).
- Progress cards (`_cards`): `progressCard.get` / `.put` and the `progressCard.changed`
  event; a run's `progress_card` writes the same card (`actors.ProgressCards`).
- `tools.invoke` (`_tools_invoke`): an operator invokes one of an agent's tools directly,
  under its policy and hooks (`invoke_gateway_tool`, `InvokeOutcome`; HTTP's
  `POST /tools/invoke` goes through the same function).
- Features clawlane does not have answer with the schema's empty value:
  `openclaw.approval.list`,
  `taskSuggestions.list`, `tasks.list`, `talk.catalog`,
  `sessions.catalog.list`, `board.get`, `projects.list`,
  `channels.status`, `node.list`, `usage.status`, `hooks.status`,
  `channels.pairing.list`,
  `skills.search`, `skills.library.list`, `plugins.catalog.browse`, `webSearch.status`.
  Not answered (`unknown method`): `themes.list` and the other panels
  of features clawlane does not have.
- Transcript rows keep the client's idempotency key (`<runId>:user`), returned as
  `idempotencyKey` and `__openclaw.idempotencyKey` by `chat.history`, `chat.startup` and
  `session.message`, so a reloaded page shows each turn once. A message steered into a
  running run records `steerTargetRunId` and the run's text continues in a new paragraph.
  `session.message` goes to a session's watchers (`sessions.messages.subscribe`) and to the
  session-list subscribers (`sessions.subscribe`), on any node. Both cut each text as
  OpenClaw's display does (`runtime.sessions.cap_row`: `chat.history`'s `maxChars`, else
  8,000) and leave out the rows it hides (heartbeats, a subagent's completion prompts).
- Slash commands in `chat.send` (`_slash`, the list in `runtime.agent._slash`) answer at once
  without the model (a `chat` `final` from `openclaw/gateway-injected`, both lines in the
  transcript), except `/new`, `/reset` (a fresh session, then a run) and `/stop`.
- `openclaw status` probes only a gateway its own config names: give it
  `{"gateway": {"mode": "local", "port": 18789, "auth": {"mode": "token", "token": "T"}}}` in
  `$OPENCLAW_CONFIG_PATH`.
"""

from ._agent import restore_idempotency as restore_idempotency
from ._agent import start_agent as start_agent
from ._context import Actors as Actors
from ._context import Call as Call
from ._context import Cancellable as Cancellable
from ._context import Client as Client
from ._context import Connected as Connected
from ._context import Host as Host
from ._context import Process as Process
from ._context import Trust as Trust
from ._dashboard import Sampler as Sampler
from ._routing import Forwarder as Forwarder
from ._routing import Route as Route
from ._status import health_view as health_view
from ._submit import ORDERED_METHODS as ORDERED_METHODS
from ._submit import reserve_ticket as reserve_ticket
from ._table import Methods as Methods
from ._tools_invoke import InvokeOutcome as InvokeOutcome
from ._tools_invoke import invoke_gateway_tool as invoke_gateway_tool

__all__ = [
    "ORDERED_METHODS",
    "Actors",
    "Call",
    "Cancellable",
    "Client",
    "Connected",
    "Forwarder",
    "Host",
    "InvokeOutcome",
    "Methods",
    "Process",
    "Route",
    "Sampler",
    "Trust",
    "health_view",
    "invoke_gateway_tool",
    "reserve_ticket",
    "restore_idempotency",
    "start_agent",
]
