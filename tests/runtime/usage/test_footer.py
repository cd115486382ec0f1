"""The `/usage` footer's modes and words, as OpenClaw's."""

from __future__ import annotations

import pytest

from runtime.llm import AssistantMessage, Message, TextContent, Usage, UserMessage
from runtime.model import parse_config
from runtime.usage import (
    PriceTable,
    effective_usage_mode,
    format_token_count,
    format_usd,
    next_usage_mode,
    normalize_usage_mode,
    usage_footer,
)


def test_mode_words_and_precedence() -> None:
    assert [normalize_usage_mode(w) for w in ("on", "TOK", "session", "no", "x", None)] == [
        "tokens",
        "tokens",
        "full",
        "off",
        None,
        None,
    ]
    assert effective_usage_mode("off", "full", None) == "off"  # an explicit off wins
    assert effective_usage_mode(None, "on", None) == "tokens"
    assert effective_usage_mode(None, {"default": "full", "discord": "off"}, "discord") == "off"
    assert effective_usage_mode(None, {"default": "full"}, "webchat") == "full"
    assert effective_usage_mode(None, None, None) == "off"
    assert [next_usage_mode(m) for m in ("off", "tokens", "full")] == ["tokens", "full", "off"]


@pytest.mark.parametrize(
    ("n", "text"),
    [(950, "950"), (1_250, "1.3k"), (12_345, "12k"), (999_999, "1.0m"), (1_500_000, "1.5m")],
)
def test_token_counts_are_compact(n: int, text: str) -> None:
    assert format_token_count(n) == text


def test_usd() -> None:
    assert (format_usd(1.234), format_usd(0.00123), format_usd(None)) == ("$1.23", "$0.0012", None)


def test_the_footer_of_a_run() -> None:
    prices = PriceTable.of(
        parse_config(
            {
                "models": {
                    "providers": {
                        "p": {
                            "api": "local",
                            "models": [{"id": "m", "cost": {"input": 2}}, {"id": "n"}],
                        }
                    }
                }
            }
        )
    )

    def call(model: str, usage: Usage) -> AssistantMessage:
        return AssistantMessage([TextContent("x")], 1, provider="p", model=model, usage=usage)

    run: list[Message] = [
        UserMessage("q", 0),
        call("m", Usage(input=1200, output=30, cacheRead=4000)),
    ]
    assert usage_footer("off", run, prices) is None
    assert (
        usage_footer("tokens", run, prices) == "Usage: 1.2k in / 30 out · cache 4.0k cached / 0 new"
    )
    assert usage_footer("full", run, prices) == (
        "Usage: 1.2k in / 30 out · cache 4.0k cached / 0 new · est $0.0024"
    )
    unpriced: list[Message] = [*run, call("n", Usage(input=10, output=1))]
    assert usage_footer("full", unpriced, prices) == (
        "Usage: 1.2k in / 31 out · cache 4.0k cached / 0 new"
    )
    assert usage_footer("tokens", [call("m", Usage())], prices) is None
