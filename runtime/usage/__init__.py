"""Usage and cost: what each model call cost and how the Usage reports add it up.

- `_pricing`: a call's cost (`call_cost`): the provider's reported figure (`reported_cost`,
  from `runtime.llm.Usage.cost`), else the model's configured price (`PriceTable.of(config)`:
  `models.providers.<id>.models[].cost`, USD per million tokens, tiered where
  `tieredPricing` says), else missing.
- `_rollup`: a run's messages as quarter-hour buckets per model (`rollup_messages`; as
  plain rows, `rollup_rows`, which the store adds up as runs end: `actors.store._usage`).
- `_dates`: the calendar and range of a report (`resolve_calendar`, `resolve_range`: UTC,
  the gateway's time, an IANA zone or a UTC offset; `startDate`/`endDate`, `range`, `days`).
- `_report`: OpenClaw's shapes: `session_summary`, `Aggregates`, `cost_summary`;
  `_fleet`: `fleet_aggregates`, the aggregates of a report from the store's sums.
- `_transcript`: one session's `session_timeseries` and `session_logs`.
- `_footer`: the per-response footer (`usage_footer`) and `/usage`'s modes.

Errors: `DateRangeError` (a `ValueError`: a bad date, zone or offset; its message is
OpenClaw's).
"""

from ._dates import Calendar as Calendar
from ._dates import DateRange as DateRange
from ._dates import DateRangeError as DateRangeError
from ._dates import resolve_calendar as resolve_calendar
from ._dates import resolve_range as resolve_range
from ._fleet import fleet_aggregates as fleet_aggregates
from ._footer import RESET_WORDS as RESET_WORDS
from ._footer import UsageMode as UsageMode
from ._footer import effective_usage_mode as effective_usage_mode
from ._footer import format_token_count as format_token_count
from ._footer import format_usd as format_usd
from ._footer import next_usage_mode as next_usage_mode
from ._footer import normalize_usage_mode as normalize_usage_mode
from ._footer import usage_footer as usage_footer
from ._pricing import CallCost as CallCost
from ._pricing import Price as Price
from ._pricing import PriceTable as PriceTable
from ._pricing import call_cost as call_cost
from ._pricing import price_of as price_of
from ._pricing import reported_cost as reported_cost
from ._pricing import token_total as token_total
from ._report import UNKNOWN_CREATOR as UNKNOWN_CREATOR
from ._report import Aggregates as Aggregates
from ._report import StoredBucket as StoredBucket
from ._report import cost_summary as cost_summary
from ._report import empty_totals as empty_totals
from ._report import session_summary as session_summary
from ._report import totals_view as totals_view
from ._rollup import ADDED as ADDED
from ._rollup import FIELDS as FIELDS
from ._rollup import QUARTER_MS as QUARTER_MS
from ._rollup import TOTAL_COST as TOTAL_COST
from ._rollup import Bucket as Bucket
from ._rollup import BucketRow as BucketRow
from ._rollup import Rollup as Rollup
from ._rollup import quarter_of as quarter_of
from ._rollup import rollup_messages as rollup_messages
from ._rollup import rollup_rows as rollup_rows
from ._transcript import session_logs as session_logs
from ._transcript import session_timeseries as session_timeseries

__all__ = [
    "ADDED",
    "FIELDS",
    "QUARTER_MS",
    "RESET_WORDS",
    "TOTAL_COST",
    "UNKNOWN_CREATOR",
    "Aggregates",
    "Bucket",
    "BucketRow",
    "Calendar",
    "CallCost",
    "DateRange",
    "DateRangeError",
    "Price",
    "PriceTable",
    "Rollup",
    "StoredBucket",
    "UsageMode",
    "call_cost",
    "cost_summary",
    "effective_usage_mode",
    "empty_totals",
    "fleet_aggregates",
    "format_token_count",
    "format_usd",
    "next_usage_mode",
    "normalize_usage_mode",
    "price_of",
    "quarter_of",
    "reported_cost",
    "resolve_calendar",
    "resolve_range",
    "rollup_messages",
    "rollup_rows",
    "session_logs",
    "session_summary",
    "session_timeseries",
    "token_total",
    "totals_view",
    "usage_footer",
]
