"""A call's cost as OpenClaw works it out: the reported figure first, else the configured
price per million tokens (a tier chosen by the prompt), else missing."""

from __future__ import annotations

import pytest

from runtime.llm import Usage
from runtime.model import parse_config
from runtime.usage import CallCost, PriceTable, call_cost, price_of, token_total


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
