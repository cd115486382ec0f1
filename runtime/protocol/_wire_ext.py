"""clawlane's additions to generated wire types (closed as in the schema, one field more).

- `AgentParams.webhook` (optional): an http(s) URL. When the run ends, its result (the
  `agent` method's final payload: `runId`, `status`, `summary`, `result`, the session and
  the times) is POSTed there, signed and retried exactly as cron webhooks are (`cron.*`
  webhook settings: `webhookSecret`, `webhookToken`, `webhookMaxAttempts`,
  `webhookTimeoutSeconds`, `webhookSsrfPolicy`). A URL that is not http(s) or that embeds
  credentials is `INVALID_REQUEST` naming `$.webhook`.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from . import _wire

__all__ = ["WEBHOOK_URL_PATTERN", "AgentParams"]

WEBHOOK_URL_PATTERN = r"^[hH][tT][tT][pP][sS]?://[^/@\s?#]+([/?#]\S*)?$"


class AgentParams(_wire.AgentParams, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    """`AgentParams` (generated) plus `webhook`."""

    webhook: (
        Annotated[str, msgspec.Meta(max_length=2048, pattern=WEBHOOK_URL_PATTERN)]
        | msgspec.UnsetType
    ) = msgspec.UNSET
