"""What one model call cost, as OpenClaw prices it.

The provider's reported cost wins where there is one (`reported`); else the configured price
of the model (`models.providers.<provider>.models[].cost`, USD per million tokens for input,
output, cacheRead and cacheWrite), with `tieredPricing` choosing one tier by the request's
prompt (input + cacheRead + cacheWrite; `[start, end)`, an open last tier `[start]`) whose
rates then apply to every bucket of that call. A model without a price (no field set and no
tier: `cost` absent, or `{}`) leaves the call's cost missing: it is counted in
`missingCostEntries`, by `provider/model`, and adds nothing to the totals.

The reported figure is `runtime.llm.Usage.cost` (OpenClaw's `usage.cost`): the
OpenAI-compatible provider fills it from a `usage.cost` in the response (OpenRouter and
other routers send one); all zero means none.

Costs are worked out when a run ends and kept with its aggregates (a receipt: a price changed
later applies to later calls, as OpenClaw keeps recorded per-call costs).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import attrs

from ..llm import Usage
from ..model import Config, ModelCost

__all__ = [
    "CallCost",
    "Price",
    "PriceTable",
    "Rates",
    "call_cost",
    "price_of",
    "reported_cost",
    "token_total",
]


@attrs.frozen
class Rates:
    """USD per million tokens of each bucket."""

    input: float = 0.0
    output: float = 0.0
    cacheRead: float = 0.0
    cacheWrite: float = 0.0


@attrs.frozen
class _Tier:
    start: float
    end: float
    rates: Rates


@attrs.frozen
class Price:
    """A model's price: flat `rates`, or `tiers` (sorted by their start) when it has any."""

    rates: Rates
    tiers: tuple[_Tier, ...] = ()

    def select(self, prompt_tokens: int) -> Rates:
        """The rates of a call whose prompt is `prompt_tokens` long (OpenClaw's rule: the
        tier whose range holds it, else the last that starts below it, else the first)."""
        tiers = self.tiers
        if not tiers:
            return self.rates
        if prompt_tokens <= 0:
            return tiers[0].rates
        for tier in tiers:
            if tier.start <= prompt_tokens < tier.end:
                return tier.rates
        below = [t for t in tiers if prompt_tokens >= t.start]
        return (below[-1] if below else tiers[0]).rates


@attrs.frozen
class CallCost:
    """One call's cost in USD, by bucket, and in all (`total`: the buckets' sum unless a
    provider reported a total of its own)."""

    input: float
    output: float
    cacheRead: float
    cacheWrite: float
    total: float = attrs.field()

    @total.default
    def _sum(self) -> float:
        return self.input + self.output + self.cacheRead + self.cacheWrite


def reported_cost(usage: Usage) -> CallCost | None:
    """What the provider reported the call cost (`usage.cost`), None when it reported
    nothing (all zero: OpenClaw's rule, a zero placeholder is no figure)."""
    c = usage.cost
    values = (c.total, c.input, c.output, c.cacheRead, c.cacheWrite)
    if not any(values) or not all(math.isfinite(v) for v in values) or c.total < 0:
        return None
    total = c.total or (c.input + c.output + c.cacheRead + c.cacheWrite)
    return CallCost(c.input, c.output, c.cacheRead, c.cacheWrite, total)


def _finite(value: float | None) -> float:
    return value if value is not None and math.isfinite(value) else 0.0


def price_of(cost: ModelCost | None) -> Price | None:
    """`cost` as a `Price`, None when it prices nothing (absent, `{}`)."""
    if cost is None:
        return None
    tiers: list[_Tier] = []
    for tier in cost.tieredPricing or ():
        start = tier.range[0]
        if start is None or not math.isfinite(start):
            continue
        end = tier.range[1] if len(tier.range) > 1 else None
        stop = end if end is not None and math.isfinite(end) and end > start else math.inf
        rates = Rates(tier.input, tier.output, tier.cacheRead, tier.cacheWrite)
        tiers.append(_Tier(start, stop, rates))
    flat = (cost.input, cost.output, cost.cacheRead, cost.cacheWrite)
    if not tiers and all(v is None for v in flat):
        return None
    rates = Rates(*(_finite(v) for v in flat))
    return Price(rates, tuple(sorted(tiers, key=lambda t: t.start)))


@attrs.frozen
class PriceTable:
    """The configured prices by `(provider, model id)` (`PriceTable.of(config)`)."""

    prices: Mapping[tuple[str, str], Price] = attrs.field(factory=dict)

    @classmethod
    def of(cls, config: Config) -> PriceTable:
        prices: dict[tuple[str, str], Price] = {}
        for provider_id, provider in config.models.providers.items():
            for model in provider.models:
                price = price_of(model.cost)
                if price is not None:
                    prices[(provider_id, model.id)] = price
        return cls(prices)

    @classmethod
    def for_config(cls, config: Config) -> PriceTable:
        """`of(config)`, remembered for the last few configs (one a generation)."""
        found = _TABLES.get(id(config))
        if found is not None and found[0] is config:
            return found[1]
        table = cls.of(config)
        if len(_TABLES) >= 4:
            _TABLES.pop(next(iter(_TABLES)))
        _TABLES[id(config)] = (config, table)
        return table

    def get(self, provider: str, model: str) -> Price | None:
        return self.prices.get((provider, model))


_TABLES: dict[int, tuple[Config, PriceTable]] = {}


def token_total(usage: Usage) -> int:
    """The call's total tokens: the reported total, else the sum of its buckets."""
    return usage.totalTokens or (usage.input + usage.output + usage.cacheRead + usage.cacheWrite)


def call_cost(
    usage: Usage, price: Price | None, *, reported: CallCost | None = None
) -> CallCost | None:
    """What the call cost: `reported` (the provider's figure) when given, else the one in
    `usage` (`reported_cost`), else `usage` at `price`; None when none (a missing cost)."""
    if reported is not None:
        return reported
    recorded = reported_cost(usage)
    if recorded is not None:
        return recorded
    if price is None:
        return None
    rates = price.select(usage.input + usage.cacheRead + usage.cacheWrite)
    return CallCost(
        input=usage.input * rates.input / 1e6,
        output=usage.output * rates.output / 1e6,
        cacheRead=usage.cacheRead * rates.cacheRead / 1e6,
        cacheWrite=usage.cacheWrite * rates.cacheWrite / 1e6,
    )
