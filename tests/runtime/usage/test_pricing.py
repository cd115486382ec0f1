"""A call's cost as OpenClaw works it out: the reported figure first, else the configured
price per million tokens (a tier chosen by the prompt), else missing."""

from __future__ import annotations

import pytest

from runtime.llm import Usage, UsageCost
from runtime.model import parse_config
from runtime.usage import CallCost, PriceTable, call_cost, price_of, reported_cost, token_total


def table(cost: dict[str, object] | None) -> PriceTable:
    model: dict[str, object] = {"id": "m"}
    if cost is not None:
        model["cost"] = cost
    config = parse_config({"models": {"providers": {"p": {"api": "local", "models": [model]}}}})
    return PriceTable.of(config)


def test_a_flat_price_bills_each_bucket_per_million_tokens() -> None:
    price = table({"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75}).get("p", "m")
    cost = call_cost(Usage(input=1000, output=200, cacheRead=5000, cacheWrite=100), price)
    assert cost == CallCost(input=0.003, output=0.003, cacheRead=0.0015, cacheWrite=0.000375)
    assert cost is not None and cost.total == pytest.approx(0.007875)


def test_no_price_is_a_missing_cost_and_an_explicit_zero_is_a_price() -> None:
    assert table(None).get("p", "m") is None
    assert table({}).get("p", "m") is None
    zero = table({"input": 0}).get("p", "m")
    assert zero is not None
    cost = call_cost(Usage(input=10, output=10), zero)
    assert cost is not None and cost.total == 0
    assert call_cost(Usage(input=10), None) is None


def test_a_reported_cost_wins_over_the_price() -> None:
    price = table({"input": 3, "output": 15}).get("p", "m")
    reported = CallCost(input=0.5, output=0.25, cacheRead=0, cacheWrite=0)
    assert call_cost(Usage(input=1, output=1), price, reported=reported) is reported
    assert call_cost(Usage(input=1), None, reported=reported) is reported


def test_a_tier_is_chosen_by_the_whole_prompt_and_prices_every_bucket() -> None:
    tiers = [
        {"input": 1, "output": 2, "cacheRead": 0.1, "cacheWrite": 1, "range": [0, 200_000]},
        {"input": 2, "output": 4, "cacheRead": 0.2, "cacheWrite": 2, "range": [200_000]},
    ]
    price = table({"tieredPricing": tiers}).get("p", "m")
    small = call_cost(Usage(input=100_000, output=1000, cacheRead=50_000), price)
    assert small is not None and small.total == pytest.approx(0.1 + 0.002 + 0.005)
    # 150k input + 60k cache read = 210k prompt tokens: the second tier, for every bucket
    large = call_cost(Usage(input=150_000, output=1000, cacheRead=60_000), price)
    assert large is not None and large.total == pytest.approx(0.3 + 0.004 + 0.012)
    assert price is not None and price.select(0).input == 1


def test_tiers_are_sorted_and_a_bad_end_is_open() -> None:
    model = (
        parse_config(
            {
                "models": {
                    "providers": {
                        "p": {
                            "api": "local",
                            "models": [
                                {
                                    "id": "m",
                                    "cost": {
                                        "tieredPricing": [
                                            {
                                                "input": 9,
                                                "output": 9,
                                                "cacheRead": 9,
                                                "cacheWrite": 9,
                                                "range": [1000, 10],
                                            },
                                            {
                                                "input": 1,
                                                "output": 1,
                                                "cacheRead": 1,
                                                "cacheWrite": 1,
                                                "range": [0, 1000],
                                            },
                                        ]
                                    },
                                }
                            ],
                        }
                    }
                }
            }
        )
        .models.providers["p"]
        .models[0]
    )
    price = price_of(model.cost)
    assert price is not None
    assert [t.start for t in price.tiers] == [0, 1000]
    assert price.select(5_000_000).input == 9


def test_the_total_is_the_reported_one_else_the_sum() -> None:
    assert token_total(Usage(input=1, output=2, cacheRead=3, cacheWrite=4)) == 10
    assert token_total(Usage(input=1, output=2, totalTokens=7)) == 7


def test_a_cost_in_the_usage_is_the_providers_and_an_all_zero_one_is_none() -> None:
    price = table({"input": 3, "output": 15}).get("p", "m")
    billed = Usage(input=1000, output=100, cost=UsageCost(total=0.25))
    assert reported_cost(billed) == CallCost(0, 0, 0, 0, 0.25)
    for p in (price, None):  # it wins over the price, and there is no missing cost
        cost = call_cost(billed, p)
        assert cost is not None and cost.total == 0.25
    split = Usage(input=1, cost=UsageCost(input=0.1, output=0.2))
    found = reported_cost(split)
    assert found is not None and (found.input, found.output) == (0.1, 0.2)
    assert found.total == pytest.approx(0.3)
    assert reported_cost(Usage(input=5)) is None  # zeros: a placeholder, not a figure
    cost = call_cost(Usage(input=1_000_000), price)
    assert cost is not None and cost.total == 3.0


def test_the_openai_compatible_provider_passes_a_reported_cost_on() -> None:
    from runtime.llm._openai_completions import _Usage, _usage

    usage = _usage(_Usage(prompt_tokens=120, completion_tokens=30, cost=0.0042))
    assert usage.cost == UsageCost(total=0.0042) and usage.input == 120
    assert _usage(_Usage(prompt_tokens=1, completion_tokens=1)).cost == UsageCost()
    assert _usage(_Usage(prompt_tokens=1, cost=-1.0)).cost == UsageCost()
